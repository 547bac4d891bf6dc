//! A gateway whose configuration changes while it serves: [`Live`] is the server's
//! handler, and hands every request to the [`Aggregator`] of the configuration in force.
//! [`Live::reload`] makes the next one from a new configuration (the upstreams whose
//! configuration did not change are taken over as they run, process and connection
//! included), switches to it, tells each host of a list change it can see, and retires
//! the one before: calls in flight on the upstreams it alone had finish, up to a limit,
//! before those close. Host connections and sessions are the server's and go on.
//!
//! What a retired aggregator held for hosts stays reachable for a while: a task made
//! before the reload is still found, and a call parked for a host's answers resumes
//! (`tasks/*` and such calls fall back to the aggregators before). Resource
//! subscriptions are shared by the generations: those on a kept upstream go on, those on
//! a closed one end with its connection.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_server::{Call, ListChanged, Outcome, RawResult, RequestContext, Server, ServerHandler};
use mcp_types::protocol::*;
use mcp_types::raw::RawObject;
use mcp_types::ErrorObject;
use parking_lot::RwLock;
use serde_json::Value;

use crate::views::{Scope, Views};
use crate::{Aggregator, AggregatorOptions, StartError, UpstreamConfig};

/// How many retired aggregators `tasks/*` still look in.
const RETIRED_KEPT: usize = 2;

/// The handler of a server whose aggregator a reload replaces (see the module). Cheap to
/// clone.
#[derive(Clone)]
pub struct Live {
    state: Arc<RwLock<State>>,
    /// One reload at a time: two from the same aggregator would both take its upstreams.
    reloading: Arc<tokio::sync::Mutex<()>>,
}

struct State {
    current: Aggregator,
    retired: Vec<Aggregator>,
    server: Option<Server>,
}

/// What a reload changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reloaded {
    /// Upstreams started (new, or changed and so started again).
    pub started: Vec<String>,
    /// Upstreams closed (removed, or changed), after their calls finished.
    pub closed: Vec<String>,
    /// The lists whose `list_changed` went to the hosts that see them.
    pub announced: Vec<ListChanged>,
}

impl Live {
    /// Serves `aggregator` until a reload replaces it.
    pub fn new(aggregator: Aggregator) -> Live {
        Live {
            state: Arc::new(RwLock::new(State {
                current: aggregator,
                retired: Vec::new(),
                server: None,
            })),
            reloading: Arc::default(),
        }
    }

    /// The aggregator in force.
    pub fn current(&self) -> Aggregator {
        self.state.read().current.clone()
    }

    /// A server in front of it, announcing list changes to its hosts, the aggregator in
    /// force's and a reload's alike. Options without a downgrade policy of their own get
    /// the aggregator in force's ([`AggregatorOptions::downgrade_policy`]).
    pub fn server(&self, options: mcp_server::ServerOptions) -> Server {
        let options = self.current().server_options(options);
        let server = Server::with_options(self.clone(), options);
        {
            let mut s = self.state.write();
            s.current.announce_through(server.clone());
            s.server = Some(server.clone());
        }
        server
    }

    /// Applies a new configuration (see the module): `unchanged` says which upstreams'
    /// configuration is as before; `drain` bounds how long calls in flight on a closing
    /// upstream get. An error (clashing names, say) leaves everything as it was.
    pub async fn reload(
        &self,
        configs: Vec<UpstreamConfig>,
        options: AggregatorOptions,
        unchanged: impl Fn(&UpstreamConfig) -> bool,
        drain: Duration,
    ) -> Result<Reloaded, StartError> {
        let _one = self.reloading.lock().await;
        let before = self.current();
        let next = before.reconfigured(configs, options, unchanged).await?;
        let server = self.state.read().server.clone();
        if let Some(server) = &server {
            next.announce_through(server.clone());
        }
        {
            let mut s = self.state.write();
            let old = std::mem::replace(&mut s.current, next.clone());
            s.retired.insert(0, old);
            s.retired.truncate(RETIRED_KEPT);
        }
        let mut differing = before.differing_upstreams(&next);
        if views_differ(&before, &next) {
            // Who sees what changed for some principals: each host hears of it.
            differing.clear();
        }
        let mut report = Reloaded::default();
        if let Some(server) = &server {
            report.announced = announce(server, &before, &next, &differing);
        }
        let closed = before.retire(&next, drain).await;
        report.started = differing
            .into_iter()
            .filter(|k| next.status().iter().any(|s| &s.key == k))
            .collect();
        report.closed = closed;
        Ok(report)
    }

    /// The aggregators to look for a task in, newest first.
    fn generations(&self) -> Vec<Aggregator> {
        let s = self.state.read();
        std::iter::once(s.current.clone())
            .chain(s.retired.iter().cloned())
            .collect()
    }
}

/// Whether the views may differ: they are not the same object (pass the views in force
/// in the next options when they are unchanged, as the gateway program does, and only
/// hosts whose view reaches an upstream that came or went hear of a change).
fn views_differ(before: &Aggregator, next: &Aggregator) -> bool {
    match (before.views(), next.views()) {
        (None, None) => false,
        (Some(a), Some(b)) => !Arc::ptr_eq(&a, &b),
        _ => true,
    }
}

/// `list_changed` for each list that differs between `before` and `next`, to the hosts
/// whose view reaches one of the `differing` upstreams (to every host without views, or
/// with `differing` empty: the views themselves changed).
fn announce(
    server: &Server,
    before: &Aggregator,
    next: &Aggregator,
    differing: &[String],
) -> Vec<ListChanged> {
    let kinds = [
        ListChanged::Tools,
        ListChanged::Prompts,
        ListChanged::Resources,
    ];
    let (was, is) = (before.shown(), next.shown());
    let changed: Vec<ListChanged> = kinds
        .into_iter()
        .zip(was.iter().zip(&is))
        .filter(|(_, (a, b))| a != b)
        .map(|(k, _)| k)
        .collect();
    let views: Vec<Arc<dyn Views>> = [before.views(), next.views()]
        .into_iter()
        .flatten()
        .collect();
    for what in &changed {
        if views.is_empty() || differing.is_empty() {
            server.notify_list_changed(*what);
            continue;
        }
        let (views, keys) = (views.clone(), differing.to_vec());
        server.notify_list_changed_to(*what, move |p| {
            views.iter().any(|v| {
                let scope = Scope::of(Some(v), p);
                keys.iter().any(|k| scope.sees_upstream(k))
            })
        });
    }
    changed
}

/// The first answer a generation has for a task, newest first; else the newest's error.
macro_rules! in_generations {
    ($live:expr, |$agg:ident| $call:expr) => {{
        let mut first_error = None;
        let mut found = None;
        for $agg in $live.generations() {
            match $call.await {
                Ok(v) => {
                    found = Some(v);
                    break;
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match (found, first_error) {
            (Some(v), _) => Ok(v),
            (None, Some(e)) => Err(e),
            (None, None) => Err(ErrorObject::new(
                mcp_types::codes::INTERNAL_ERROR,
                "no aggregator",
            )),
        }
    }};
}

#[async_trait]
impl ServerHandler for Live {
    fn capabilities(&self) -> ServerCapabilities {
        self.current().capabilities()
    }
    async fn list_tools(
        &self,
        ctx: &RequestContext,
        p: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        self.current().list_tools(ctx, p).await
    }
    async fn list_raw(
        &self,
        ctx: &RequestContext,
        kind: mcp_server::ListKind,
        p: PaginatedRequestParams,
    ) -> Result<RawResult, ErrorObject> {
        self.current().list_raw(ctx, kind, p).await
    }
    async fn call_tool(
        &self,
        ctx: &RequestContext,
        p: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        self.current().call_tool(ctx, p).await
    }
    fn call_tool_raw(&self, call: Call, params: RawObject<'_>) {
        // A call parked for the host's answers resumes where it was parked.
        let parked = call
            .context()
            .request_state()
            .is_some_and(|s| s.starts_with(crate::bridge::STATE_PREFIX));
        if !parked {
            return self.current().call_tool_raw(call, params);
        }
        let live = self.clone();
        call.spawn(move |req| async move {
            let (ctx, params) = (req.context(), req.params()?);
            in_generations!(live, |agg| agg.call_on_task(ctx, &params))
        });
    }
    fn header_params(
        &self,
        name: &str,
        principal: Option<&mcp_server::auth::Principal>,
    ) -> Vec<mcp_types::headers::HeaderParam> {
        self.current().header_params(name, principal)
    }
    async fn list_prompts(
        &self,
        ctx: &RequestContext,
        p: PaginatedRequestParams,
    ) -> Result<ListPromptsResult, ErrorObject> {
        self.current().list_prompts(ctx, p).await
    }
    async fn get_prompt(
        &self,
        ctx: &RequestContext,
        p: GetPromptRequestParams,
    ) -> Result<Outcome<GetPromptResult>, ErrorObject> {
        self.current().get_prompt(ctx, p).await
    }
    async fn list_resources(
        &self,
        ctx: &RequestContext,
        p: PaginatedRequestParams,
    ) -> Result<ListResourcesResult, ErrorObject> {
        self.current().list_resources(ctx, p).await
    }
    async fn list_resource_templates(
        &self,
        ctx: &RequestContext,
        p: PaginatedRequestParams,
    ) -> Result<ListResourceTemplatesResult, ErrorObject> {
        self.current().list_resource_templates(ctx, p).await
    }
    async fn read_resource(
        &self,
        ctx: &RequestContext,
        p: ResourceRequestParams,
    ) -> Result<Outcome<ReadResourceResult>, ErrorObject> {
        self.current().read_resource(ctx, p).await
    }
    async fn subscribe(
        &self,
        ctx: &RequestContext,
        p: ResourceRequestParams,
        subscribe: bool,
    ) -> Result<(), ErrorObject> {
        self.current().subscribe(ctx, p, subscribe).await
    }
    async fn get_task(
        &self,
        ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<Task, ErrorObject> {
        in_generations!(self, |agg| agg.get_task(ctx, p.clone()))
    }
    async fn task_result(
        &self,
        ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<Outcome<Value>, ErrorObject> {
        in_generations!(self, |agg| agg.task_result(ctx, p.clone()))
    }
    async fn cancel_task(
        &self,
        ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<Task, ErrorObject> {
        in_generations!(self, |agg| agg.cancel_task(ctx, p.clone()))
    }
    async fn update_task(
        &self,
        ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<(), ErrorObject> {
        in_generations!(self, |agg| agg.update_task(ctx, p.clone()))
    }
    async fn complete(
        &self,
        ctx: &RequestContext,
        p: CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorObject> {
        self.current().complete(ctx, p).await
    }
}

/// Readiness is the aggregator in force's.
impl mcp_server::http::Health for Live {
    fn readiness(&self) -> mcp_server::http::Readiness {
        self.current().readiness()
    }
}

/// Metrics are kept across reloads; their upstreams are those in force.
impl mcp_server::http::Metrics for Live {
    fn render(&self) -> String {
        mcp_server::http::Metrics::render(&self.current())
    }

    fn content_type(&self) -> &'static str {
        crate::metrics::CONTENT_TYPE
    }
}
