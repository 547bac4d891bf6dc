//! [`Aggregator`]: many upstream MCP servers behind one [`ServerHandler`].
//!
//! Each upstream is an `mcp-client` connection (stdio child, Streamable HTTP or HTTP+SSE,
//! or an in-process server), in whichever era it speaks. The catalog of their tools,
//! prompts, resources and templates is merged in a deterministic order (upstreams by
//! key, then each upstream's own order); calls are routed by table lookup to the owning
//! upstream under the tool's real name. What an upstream says is kept as it said it
//! (the typed model is lossless); the server session translates each answer to the host's
//! revision. An upstream that fails is reported in the results of calls to it, restarted
//! with backoff, and never disturbs the others.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use mcp_client::http::HttpConfig;
use mcp_client::{
    CallOptions, ChildTransport, Client, ClientError, ClientOptions, EraChoice, StdioCommand,
};
use mcp_revisions::Translator;
use mcp_server::{ListChanged, Outcome, RawResult, RequestContext, ServerHandler};
use mcp_types::protocol::*;
use mcp_types::raw::RawObject;
use mcp_types::transport::memory_pair;
use mcp_types::{codes, ErrorObject};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::bridge::{new_state, Bridge, Calls, Flight, Step, STATE_PREFIX};

mod call;
mod fast;
mod links;
mod tasks;
use crate::naming::{Namespacing, Prefixed};
use crate::policy::{may_be_destructive, Confirm, Confirmation, Surface, ToolFilter, Verdict};
use crate::sessions::{HostLinks, SessionMode};

/// How to reach an upstream.
#[derive(Clone)]
pub enum UpstreamTransport {
    /// A child process on stdio.
    Stdio(StdioCommand),
    /// An HTTP endpoint (Streamable HTTP, else HTTP+SSE).
    Http(HttpConfig),
    /// A server in this process (demos, tests): a fresh connection at each start.
    InProcess(mcp_server::Server),
}

impl std::fmt::Debug for UpstreamTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpstreamTransport::Stdio(c) => write!(f, "stdio {:?}", c.command),
            UpstreamTransport::Http(h) => write!(f, "http {}", h.url),
            UpstreamTransport::InProcess(_) => f.write_str("in-process"),
        }
    }
}

/// One upstream server.
#[derive(Clone, Debug)]
pub struct UpstreamConfig {
    /// The configuration key (names the upstream in errors and logs).
    pub key: String,
    /// The namespace of its names; default: the key, sanitised. `Some("")` exposes names
    /// unprefixed.
    pub namespace: Option<String>,
    /// Whether its tool annotations are trusted (TOOL-15); untrusted ones are kept raw
    /// but a policy must not rely on them.
    pub trusted: bool,
    /// How to reach it.
    pub transport: UpstreamTransport,
    /// Pins the revision to speak with it; default: detect its era and negotiate.
    pub revision: Option<mcp_types::Revision>,
    /// Which of its tools are exposed (default: all).
    pub tools: ToolFilter,
    /// How hosts share it, if it speaks a legacy revision (default: a session per host).
    pub session: SessionMode,
}

impl UpstreamConfig {
    /// An upstream named `key`, with the defaults: namespace from the key, untrusted,
    /// era detected, every tool exposed.
    pub fn new(key: impl Into<String>, transport: UpstreamTransport) -> Self {
        UpstreamConfig {
            key: key.into(),
            namespace: None,
            trusted: false,
            transport,
            revision: None,
            tools: ToolFilter::default(),
            session: SessionMode::default(),
        }
    }
}

/// How the aggregator behaves.
#[derive(Clone)]
pub struct AggregatorOptions {
    /// Exposed names.
    pub namespacing: Arc<dyn Namespacing>,
    /// Longest an upstream may take to answer one call (a timeout cancels it upstream).
    pub call_timeout: Duration,
    /// Longest an upstream may take to start and answer its handshake.
    pub connect_timeout: Duration,
    /// First and longest wait between restarts of a failed upstream.
    pub restart_backoff: (Duration, Duration),
    /// Items per page of a merged list (0: everything in one page). Cursors name a
    /// version of the catalog; one issued before a list change is refused with `-32602`.
    pub page_size: usize,
    /// Decides calls to tools that may be destructive (TOOL-17); `None`: no gate.
    pub confirm: Option<Arc<dyn Confirm>>,
    /// What hosts see in `tools/list` (TOOL-24).
    pub surface: Surface,
    /// Longest a legacy upstream's request (sampling, elicitation) handed to a host waits
    /// for the host's answer; after it the upstream gets an error and the call is cancelled.
    pub input_timeout: Duration,
}

impl std::fmt::Debug for AggregatorOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AggregatorOptions")
            .field("call_timeout", &self.call_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("restart_backoff", &self.restart_backoff)
            .field("page_size", &self.page_size)
            .field("confirm", &self.confirm.is_some())
            .field("surface", &self.surface)
            .field("input_timeout", &self.input_timeout)
            .finish_non_exhaustive()
    }
}

impl Default for AggregatorOptions {
    fn default() -> Self {
        AggregatorOptions {
            namespacing: Arc::new(Prefixed::default()),
            call_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(30),
            restart_backoff: (Duration::from_millis(500), Duration::from_secs(30)),
            page_size: 0,
            confirm: None,
            surface: Surface::Direct,
            input_timeout: Duration::from_secs(300),
        }
    }
}

/// How one upstream is doing ([`Aggregator::status`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UpstreamStatus {
    /// Its configuration key.
    pub key: String,
    /// Whether its shared connection is up.
    pub connected: bool,
    /// Why it last failed, until it connects again.
    pub last_error: Option<String>,
    /// Upstream sessions open (or opening) for hosts ([`SessionMode::PerHost`]).
    pub host_sessions: usize,
}

/// Why the aggregator could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    /// Two upstreams end up with the same namespace.
    #[error("upstreams `{first}` and `{second}` both use the namespace `{namespace}`")]
    NamespaceCollision {
        /// The namespace.
        namespace: String,
        /// One key.
        first: String,
        /// The other.
        second: String,
    },
    /// Two names end up exposed the same.
    #[error("`{first}` and `{second}` are both exposed as `{exposed}`")]
    NameCollision {
        /// The exposed name.
        exposed: String,
        /// `key/name` of one.
        first: String,
        /// `key/name` of the other.
        second: String,
    },
}

struct Upstream {
    config: UpstreamConfig,
    namespace: String,
    client: RwLock<Option<Client>>,
    last_error: Mutex<Option<String>>,
    /// Host calls in flight on the shared connection, for routing a legacy upstream's
    /// requests.
    calls: Arc<Calls>,
    /// The sessions of hosts that have one of their own here ([`SessionMode::PerHost`]).
    links: Option<Arc<HostLinks>>,
}

impl Upstream {
    fn client(&self) -> Option<Client> {
        self.client.read().ok().and_then(|c| c.clone())
    }

    fn unavailable(&self) -> String {
        let why = self
            .last_error
            .lock()
            .ok()
            .and_then(|e| e.clone())
            .unwrap_or_else(|| "not connected".into());
        format!("upstream `{}` is unavailable: {why}", self.config.key)
    }
}

/// One upstream's part of the catalog.
#[derive(Default, Clone)]
struct Listing {
    tools: Vec<Tool>,
    prompts: Vec<Prompt>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
    /// When a 2026 upstream's `ttlMs` (if it gave a positive one) says to list again.
    stale_at: Option<std::time::Instant>,
}

/// Called when a merged list changes.
type ChangeListener = Arc<dyn Fn(ListChanged) + Send + Sync>;

struct Inner {
    upstreams: Vec<Arc<Upstream>>,
    options: AggregatorOptions,
    listings: RwLock<Vec<Listing>>,
    /// Bumped on every catalog change; cursors carry it.
    generation: std::sync::atomic::AtomicU64,
    on_change: Mutex<Option<ChangeListener>>,
    stopped: AtomicBool,
    /// Upstream calls waiting for a host's answers, by the `requestState` given to it.
    parked: Mutex<HashMap<String, Flight>>,
    /// Exposed tool name → (upstream, tool), for the catalog generation it was built from.
    routes: RwLock<Option<(u64, Arc<Routes>)>>,
    /// Upstream tasks shown to hosts, by gateway task id.
    tasks: tasks::TaskTable,
}

type Routes = HashMap<String, Arc<call::Route>>;

/// Upstream MCP servers composed into one server. Cheap to clone.
#[derive(Clone)]
pub struct Aggregator {
    inner: Arc<Inner>,
}

/// A tool as hosts see it: its exposed name, and `taskSupport: "optional"` where the
/// upstream says `"required"` (the gateway runs such a tool as a task itself for a host
/// that calls it plainly, and relays the task to a host that asks for one).
fn as_exposed(exposed: String, mut t: Tool) -> Tool {
    t.name = exposed;
    if t.task_support() == TaskSupport::Required {
        if let Some(e) = &mut t.execution {
            e.task_support = Some(TaskSupport::Optional);
        }
    }
    t
}

/// The key of the gateway's own confirmation request among a round's input requests.
const CONFIRM_KEY: &str = "gateway_confirm";

fn tool_error(text: String) -> CallToolResult {
    CallToolResult {
        content: vec![ContentBlock::text(text)],
        is_error: Some(true),
        ..Default::default()
    }
}

impl Aggregator {
    /// Starts every upstream concurrently and builds the catalog. An upstream that fails
    /// to start does not fail the aggregator (it is retried in the background); clashing
    /// namespaces or exposed names do.
    pub async fn start(
        configs: Vec<UpstreamConfig>,
        options: AggregatorOptions,
    ) -> Result<Aggregator, StartError> {
        let mut sorted = configs;
        sorted.sort_by(|a, b| a.key.cmp(&b.key));
        let mut by_namespace: HashMap<String, String> = HashMap::new();
        let mut upstreams = Vec::new();
        for c in sorted {
            let namespace = c
                .namespace
                .clone()
                .unwrap_or_else(|| options.namespacing.namespace_for_key(&c.key));
            let ns_key = crate::naming::sanitize_namespace(&namespace);
            if !namespace.is_empty() {
                if let Some(first) = by_namespace.insert(ns_key.clone(), c.key.clone()) {
                    return Err(StartError::NamespaceCollision {
                        namespace: ns_key,
                        first,
                        second: c.key,
                    });
                }
            }
            let links = match &c.session {
                SessionMode::PerHost(limits) => Some(Arc::new(HostLinks::new(limits.clone()))),
                _ => None,
            };
            upstreams.push(Arc::new(Upstream {
                links,
                config: c,
                namespace,
                client: RwLock::new(None),
                last_error: Mutex::new(None),
                calls: Arc::new(Calls::default()),
            }));
        }
        let inner = Arc::new(Inner {
            listings: RwLock::new(vec![Listing::default(); upstreams.len()]),
            generation: std::sync::atomic::AtomicU64::new(1),
            upstreams,
            options,
            on_change: Mutex::new(None),
            stopped: AtomicBool::new(false),
            parked: Mutex::new(HashMap::new()),
            routes: RwLock::new(None),
            tasks: tasks::TaskTable::default(),
        });
        let agg = Aggregator { inner };
        let starts: Vec<_> = (0..agg.inner.upstreams.len())
            .map(|i| {
                let agg = agg.clone();
                tokio::spawn(async move { agg.connect(i).await })
            })
            .collect();
        for s in starts {
            let _ = s.await;
        }
        agg.check_collisions()?;
        for i in 0..agg.inner.upstreams.len() {
            let agg = agg.clone();
            tokio::spawn(async move { agg.supervise(i).await });
        }
        Ok(agg)
    }

    /// Calls `f` whenever a merged list changes (wire it to
    /// [`mcp_server::Server::notify_list_changed`]).
    pub fn on_list_changed(&self, f: impl Fn(ListChanged) + Send + Sync + 'static) {
        if let Ok(mut g) = self.inner.on_change.lock() {
            *g = Some(Arc::new(f));
        }
    }

    /// Closes every upstream (children are killed) and stops restarting them.
    pub async fn shutdown(&self) {
        self.inner.stopped.store(true, Ordering::SeqCst);
        for u in &self.inner.upstreams {
            let client = u.client.write().ok().and_then(|mut c| c.take());
            if let Some(c) = client {
                c.close().await;
            }
            if let Some(links) = &u.links {
                links.close_all().await;
            }
        }
    }

    /// The merged tools as hosts see them (exposed names), in catalog order.
    pub fn tools(&self) -> Vec<Tool> {
        self.tool_entries()
            .into_iter()
            .map(|(exposed, _, t)| as_exposed(exposed, t))
            .collect()
    }

    /// `(namespace, key, connected)` of each upstream, in catalog order.
    pub(crate) fn upstream_names(&self) -> Vec<(String, String, bool)> {
        self.inner
            .upstreams
            .iter()
            .map(|u| {
                (
                    u.namespace.clone(),
                    u.config.key.clone(),
                    u.client().is_some(),
                )
            })
            .collect()
    }

    /// `(namespace, tool with its exposed name)`, in catalog order.
    pub(crate) fn namespaced_tools(&self) -> Vec<(String, Tool)> {
        self.tool_entries()
            .into_iter()
            .map(|(exposed, i, t)| {
                (
                    self.inner.upstreams[i].namespace.clone(),
                    as_exposed(exposed, t),
                )
            })
            .collect()
    }

    /// How each upstream is doing, in catalog order.
    pub fn status(&self) -> Vec<UpstreamStatus> {
        self.inner
            .upstreams
            .iter()
            .map(|u| UpstreamStatus {
                key: u.config.key.clone(),
                connected: u.client().is_some(),
                last_error: u.last_error.lock().ok().and_then(|e| e.clone()),
                host_sessions: u.links.as_ref().map_or(0, |l| l.len()),
            })
            .collect()
    }

    fn changed(&self, what: ListChanged) {
        let f = self.inner.on_change.lock().ok().and_then(|g| g.clone());
        if let Some(f) = f {
            f(what);
        }
    }

    /// The shared connection to `u`.
    async fn open_shared(&self, u: &Upstream) -> Result<Client, String> {
        let era = match u.config.revision {
            None => EraChoice::Detect,
            Some(r) if r.era() == mcp_types::Era::Modern => EraChoice::Modern,
            Some(r) => EraChoice::Legacy(r),
        };
        // A legacy upstream learns these once, at `initialize`: declare what the gateway
        // can bridge; each request is then checked against the host of the call.
        let capabilities = ClientCapabilities {
            sampling: Some(Map::new()),
            elicitation: Some(Map::new()),
            ..Default::default()
        };
        self.open(u, u.calls.clone(), capabilities, era).await
    }

    /// A connection to `u` declaring `capabilities`, its requests routed among `calls`.
    async fn open(
        &self,
        u: &Upstream,
        calls: Arc<Calls>,
        capabilities: ClientCapabilities,
        era: EraChoice,
    ) -> Result<Client, String> {
        let config = &u.config;
        let bridge = || Bridge {
            calls: calls.clone(),
            wait: self.inner.options.input_timeout,
            upstream: config.key.as_str().into(),
        };
        let options = ClientOptions {
            era,
            capabilities,
            request_timeout: Some(self.inner.options.call_timeout),
            ..Default::default()
        };
        let connect = async {
            match &config.transport {
                UpstreamTransport::Stdio(cmd) => {
                    let t = ChildTransport::spawn(cmd)
                        .map_err(|e| format!("cannot start `{}`: {e}", cmd.command))?;
                    Client::connect(t, bridge(), options)
                        .await
                        .map_err(|e| e.to_string())
                }
                UpstreamTransport::Http(h) => {
                    mcp_client::connect_http(h.clone(), bridge(), options)
                        .await
                        .map_err(|e| e.to_string())
                }
                UpstreamTransport::InProcess(server) => {
                    let (a, b) = memory_pair(64);
                    let server = server.clone();
                    tokio::spawn(async move { server.serve(b).await });
                    Client::connect(a, bridge(), options)
                        .await
                        .map_err(|e| e.to_string())
                }
            }
        };
        match tokio::time::timeout(self.inner.options.connect_timeout, connect).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "no handshake within {:?}",
                self.inner.options.connect_timeout
            )),
        }
    }

    /// Connects upstream `i` and lists what it offers; false when it failed.
    async fn connect(&self, i: usize) -> bool {
        let u = self.inner.upstreams[i].clone();
        match self.open_shared(&u).await {
            Ok(client) => {
                let listing = list_all(&client).await;
                tracing::info!(upstream = %u.config.key, revision = %client.revision(), tools = listing.tools.len(), "upstream connected");
                if let Ok(mut c) = u.client.write() {
                    *c = Some(client);
                }
                if let Ok(mut e) = u.last_error.lock() {
                    *e = None;
                }
                self.set_listing(i, listing);
                true
            }
            Err(e) => {
                tracing::warn!(upstream = %u.config.key, "upstream failed: {e}");
                if let Ok(mut le) = u.last_error.lock() {
                    *le = Some(e);
                }
                false
            }
        }
    }

    /// Keeps upstream `i` alive: relists on its list-changed notifications, and restarts it
    /// with backoff when its connection ends.
    async fn supervise(&self, i: usize) {
        let u = self.inner.upstreams[i].clone();
        let (min, max) = self.inner.options.restart_backoff;
        let mut backoff = min;
        while !self.inner.stopped.load(Ordering::SeqCst) {
            let Some(client) = u.client() else {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(max);
                if self.connect(i).await {
                    backoff = min;
                    self.announce_all();
                }
                continue;
            };
            let mut notes = client.notifications();
            if client.revision().era() == mcp_types::Era::Modern {
                // A 2026 upstream tells of list changes only on a subscription stream.
                let _listen = client.listen(SubscriptionFilter {
                    tools_list_changed: Some(true),
                    prompts_list_changed: Some(true),
                    resources_list_changed: Some(true),
                    ..Default::default()
                });
            }
            loop {
                let note = tokio::select! {
                    n = notes.recv() => n.ok(),
                    () = tokio::time::sleep(Duration::from_millis(500)) => None,
                };
                if let Some(TypedNotification::Bare(_)) = note {
                    // A list_changed of some kind: relist this upstream.
                    let listing = list_all(&client).await;
                    self.set_listing(i, listing);
                    self.announce_all();
                }
                if client.close_reason().is_some() || self.inner.stopped.load(Ordering::SeqCst) {
                    break;
                }
            }
            if self.inner.stopped.load(Ordering::SeqCst) {
                return;
            }
            let reason = client
                .close_reason()
                .map(|r| r.to_string())
                .unwrap_or_default();
            tracing::warn!(upstream = %u.config.key, "upstream connection ended ({reason}); restarting");
            if let Ok(mut c) = u.client.write() {
                *c = None;
            }
            if let Ok(mut e) = u.last_error.lock() {
                *e = Some(format!("connection ended: {reason}"));
            }
            self.set_listing(i, Listing::default());
            self.announce_all();
        }
    }

    /// Replaces upstream `i`'s part of the catalog; a new generation of the catalog begins.
    fn set_listing(&self, i: usize, listing: Listing) {
        if let Ok(mut l) = self.inner.listings.write() {
            l[i] = listing;
        }
        self.inner.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// The upstream and tool behind an exposed name.
    fn route(&self, name: &str) -> Option<Arc<call::Route>> {
        self.routes().get(name).cloned()
    }

    /// The route index of the current catalog, rebuilt only when the catalog changed (a
    /// call must not copy the whole catalog).
    fn routes(&self) -> Arc<Routes> {
        let generation = self.inner.generation.load(Ordering::SeqCst);
        let cached = self.inner.routes.read().ok().and_then(|r| r.clone());
        let routes = match cached {
            Some((g, routes)) if g == generation => routes,
            _ => {
                let routes: Arc<Routes> = Arc::new(
                    self.tool_entries()
                        .into_iter()
                        .map(|(exposed, i, t)| (exposed, Arc::new(call::Route::new(i, t))))
                        .collect(),
                );
                if let Ok(mut r) = self.inner.routes.write() {
                    *r = Some((generation, routes.clone()));
                }
                routes
            }
        };
        routes
    }

    fn announce_all(&self) {
        self.inner.generation.fetch_add(1, Ordering::SeqCst);
        for c in [
            ListChanged::Tools,
            ListChanged::Prompts,
            ListChanged::Resources,
        ] {
            self.changed(c);
        }
    }

    fn check_collisions(&self) -> Result<(), StartError> {
        let mut seen: HashMap<String, String> = HashMap::new();
        for (exposed, i, original) in self.tool_entries() {
            let who = format!("{}/{}", self.inner.upstreams[i].config.key, original.name);
            if let Some(first) = seen.insert(exposed.clone(), who.clone()) {
                return Err(StartError::NameCollision {
                    exposed,
                    first,
                    second: who,
                });
            }
        }
        Ok(())
    }

    /// One part of each upstream's listing, in upstream order (copying only that part).
    fn read_listings<T>(&self, part: impl Fn(&Listing) -> T) -> Vec<T> {
        self.inner
            .listings
            .read()
            .map(|l| l.iter().map(part).collect())
            .unwrap_or_default()
    }

    /// Whether hosts can reach a task now: a 2025-11-25 host, through a listed tool that
    /// may run as a task; a 2026 host, through such a tool or an upstream that declares
    /// the tasks extension (it decides per call). A capability nothing can reach is not
    /// declared.
    fn task_reach(&self) -> (bool, bool) {
        let task_tools = self
            .routes()
            .values()
            .any(|r| r.tool.task_support() != TaskSupport::Forbidden);
        let extension = self.inner.upstreams.iter().any(|u| {
            u.client().is_some_and(|c| {
                mcp_revisions::features::has_tasks_extension(c.revision())
                    && c.server()
                        .capabilities
                        .extensions
                        .as_ref()
                        .is_some_and(|e| e.contains_key(TASKS_EXTENSION))
            })
        });
        // The dispatcher's own tools declare no task support.
        let direct = self.inner.options.surface == Surface::Direct;
        (task_tools && direct, task_tools || extension)
    }

    /// `(exposed name, upstream index, tool as the upstream sent it)`, in catalog order.
    fn tool_entries(&self) -> Vec<(String, usize, Tool)> {
        let listings = self.read_listings(|l| l.tools.clone());
        let naming = &self.inner.options.namespacing;
        let mut seen = BTreeMap::new();
        let mut out = Vec::new();
        for (i, tools) in listings.into_iter().enumerate() {
            let u = &self.inner.upstreams[i];
            let ns = &u.namespace;
            for t in tools {
                if !u.config.tools.permits(&t.name) {
                    continue;
                }
                let exposed = naming.expose(ns, &t.name);
                if seen
                    .insert(exposed.clone(), i)
                    .is_some_and(|prev| prev != i)
                {
                    tracing::warn!(tool = %exposed, "name clash after a list change; the later tool is hidden");
                    continue;
                }
                out.push((exposed, i, t));
            }
        }
        out
    }

    fn prompt_entries(&self) -> Vec<(String, usize, Prompt)> {
        let listings = self.read_listings(|l| l.prompts.clone());
        let naming = &self.inner.options.namespacing;
        listings
            .into_iter()
            .enumerate()
            .flat_map(|(i, prompts)| {
                let ns = self.inner.upstreams[i].namespace.clone();
                prompts
                    .into_iter()
                    .map(move |p| (naming.expose(&ns, &p.name), i, p))
            })
            .collect()
    }

    /// The upstream owning a resource URI: one that listed it, else one with a matching template.
    fn resource_owner(&self, uri: &str) -> Option<usize> {
        let listings = self.inner.listings.read().ok()?;
        listings
            .iter()
            .position(|l| l.resources.iter().any(|r| r.uri == uri))
            .or_else(|| {
                listings.iter().position(|l| {
                    l.templates
                        .iter()
                        .any(|t| template_matches(&t.uri_template, uri))
                })
            })
    }

    /// One page of a merged list. The cursor is `<generation>.<offset>`; a cursor from
    /// another generation of the catalog is stale.
    fn page<T>(
        &self,
        items: Vec<T>,
        cursor: Option<&str>,
    ) -> Result<(Vec<T>, Option<String>), ErrorObject> {
        let generation = self.inner.generation.load(Ordering::SeqCst);
        let start = match cursor {
            None => 0,
            Some(c) => {
                let parsed = c
                    .split_once('.')
                    .and_then(|(g, o)| Some((g.parse::<u64>().ok()?, o.parse::<usize>().ok()?)));
                match parsed {
                    Some((g, o)) if g == generation && o <= items.len() => o,
                    Some(_) => {
                        return Err(ErrorObject::new(
                            codes::INVALID_PARAMS,
                            "Invalid cursor: the list changed since it was issued; list again",
                        ))
                    }
                    None => {
                        return Err(ErrorObject::new(
                            codes::INVALID_PARAMS,
                            format!("Invalid cursor: {c:?}"),
                        ))
                    }
                }
            }
        };
        let size = self.inner.options.page_size;
        if size == 0 {
            return Ok((items.into_iter().skip(start).collect(), None));
        }
        let total = items.len();
        let page: Vec<T> = items.into_iter().skip(start).take(size).collect();
        let next = (start + size < total).then(|| format!("{generation}.{}", start + size));
        Ok((page, next))
    }

    /// Lists again the upstreams whose `ttlMs` has run out.
    async fn refresh_stale(&self) {
        let now = std::time::Instant::now();
        let stale: Vec<usize> = self
            .inner
            .listings
            .read()
            .map(|l| {
                l.iter()
                    .enumerate()
                    .filter(|(_, x)| x.stale_at.is_some_and(|t| t <= now))
                    .map(|(i, _)| i)
                    .collect()
            })
            .unwrap_or_default();
        for i in stale {
            if let Some(client) = self.inner.upstreams[i].client() {
                let listing = list_all(&client).await;
                self.set_listing(i, listing);
            }
        }
    }

    /// A call to the tool hosts know as `name`, from typed arguments (the dispatcher's
    /// `call_tool`): the call relay's, answered typed.
    pub(crate) async fn call_exposed(
        &self,
        ctx: &RequestContext,
        name: &str,
        arguments: Option<Map<String, Value>>,
        meta: Option<Map<String, Value>>,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        let internal = |e: serde_json::Error| {
            ErrorObject::new(codes::INTERNAL_ERROR, format!("Internal error: {e}"))
        };
        let mut params = RawObject::new();
        params.insert_str("name", name);
        if let Some(a) = &arguments {
            params.insert_json("arguments", a).map_err(internal)?;
        }
        if let Some(m) = &meta {
            params.insert_json("_meta", m).map_err(internal)?;
        }
        Ok(match self.relay_call(ctx, &params).await? {
            Outcome::Complete(r) => {
                Outcome::Complete(serde_json::from_str(r.body.get()).map_err(|e| {
                    ErrorObject::new(
                        codes::INTERNAL_ERROR,
                        format!("upstream result for {name} is invalid: {e}"),
                    )
                })?)
            }
            Outcome::InputRequired(ir) => Outcome::InputRequired(ir),
            Outcome::Task(t) => Outcome::Task(t),
        })
    }

    /// Waits (up to the connect timeout plus the longest backoff) for upstream `i` to be
    /// connected again after its connection dropped.
    async fn reconnected(&self, i: usize) -> bool {
        let u = &self.inner.upstreams[i];
        let limit = self.inner.options.connect_timeout + self.inner.options.restart_backoff.1;
        let deadline = tokio::time::Instant::now() + limit;
        while tokio::time::Instant::now() < deadline {
            if u.client().is_some_and(|c| c.close_reason().is_none()) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }

    /// The key of the upstream whose filtered-out tool would be exposed as `name`.
    fn denied_upstream(&self, name: &str) -> Option<String> {
        let listings = self.inner.listings.read().ok()?;
        let naming = &self.inner.options.namespacing;
        listings.iter().enumerate().find_map(|(i, l)| {
            let u = &self.inner.upstreams[i];
            l.tools
                .iter()
                .any(|t| {
                    !u.config.tools.permits(&t.name) && naming.expose(&u.namespace, &t.name) == name
                })
                .then(|| u.config.key.clone())
        })
    }

    /// The confirmation gate (TOOL-17): `None` to go ahead, else what to answer instead.
    /// Only a first round is gated: a retry carrying `inputResponses` continues a call the
    /// host already confirmed (or is answering this gate).
    async fn confirmation(
        &self,
        ctx: &RequestContext,
        exposed: &str,
        key: &str,
        tool: &Tool,
        trusted: bool,
        arguments: impl FnOnce() -> Option<Map<String, Value>>,
    ) -> Option<Outcome<CallToolResult>> {
        let hook = self.inner.options.confirm.as_ref()?;
        if let Some(answer) = ctx.input_response(CONFIRM_KEY) {
            let accepted = answer.get("action").and_then(Value::as_str) == Some("accept")
                && answer.pointer("/content/confirm").and_then(Value::as_bool) == Some(true);
            return (!accepted).then(|| {
                Outcome::Complete(tool_error(format!(
                    "The user declined the call to {exposed}; nothing was done."
                )))
            });
        }
        if !ctx.input_responses().is_empty() || !may_be_destructive(tool, trusted) {
            return None;
        }
        let arguments = arguments();
        let call = Confirmation {
            upstream: key,
            exposed,
            tool,
            arguments: arguments.as_ref(),
        };
        match hook.confirm(&call).await {
            Verdict::Allow => None,
            Verdict::Refuse(why) => Some(Outcome::Complete(tool_error(format!(
                "The call to {exposed} was refused: {why}"
            )))),
            Verdict::AskHost if ctx.client_capabilities().elicitation.is_none() => {
                Some(Outcome::Complete(tool_error(format!(
                    "The call to {exposed} needs the user's confirmation (it may be destructive), \
                     and this host cannot ask: it did not declare elicitation."
                ))))
            }
            Verdict::AskHost => {
                let mut requests = Map::new();
                requests.insert(
                    CONFIRM_KEY.into(),
                    json!({
                        "method": method::ELICITATION_CREATE,
                        "params": {
                            "message": format!(
                                "Allow the call to {} (upstream `{key}`)? It may change or delete data.",
                                tool.display_name()
                            ),
                            "requestedSchema": {
                                "type": "object",
                                "properties": {"confirm": {"type": "boolean", "title": "Allow this call"}},
                                "required": ["confirm"]
                            }
                        }
                    }),
                );
                Some(Outcome::InputRequired(InputRequiredResult {
                    input_requests: Some(requests),
                    ..Default::default()
                }))
            }
        }
    }

    /// Sends a request upstream for the host of `ctx` (or resumes one parked for this host's
    /// answers), relaying what flows while it runs. `params` are of the union model: they
    /// get the hop's `_meta` and are translated to the upstream's revision here.
    async fn upstream_call(
        &self,
        i: usize,
        method_name: &str,
        params: Value,
        ctx: &RequestContext,
    ) -> Result<Value, ClientError> {
        let params = self.hop_value_params(i, method_name, params, ctx)?;
        let mut params = RawObject::from_raw(&params).map_err(|e| ClientError::InvalidResult {
            method: method_name.into(),
            reason: e.to_string(),
        })?;
        if let Some(client) = self.inner.upstreams[i].client() {
            client.add_envelope(&mut params);
        }
        let answer = self.upstream_call_raw(i, method_name, params, ctx).await?;
        serde_json::from_str(answer.get()).map_err(|e| ClientError::InvalidResult {
            method: method_name.into(),
            reason: e.to_string(),
        })
    }

    /// [`Self::upstream_call`] with params already in the upstream's revision, answered
    /// as the upstream wrote it.
    async fn upstream_call_raw(
        &self,
        i: usize,
        method_name: &str,
        params: RawObject<'_>,
        ctx: &RequestContext,
    ) -> Result<Box<RawValue>, ClientError> {
        let flight = match ctx.request_state().filter(|s| s.starts_with(STATE_PREFIX)) {
            Some(state) => self.resume(state, method_name, ctx)?,
            None => {
                let link = self.link(i, ctx).await?;
                self.launch(link, method_name, params, ctx)
            }
        };
        self.drive(flight, ctx).await
    }

    /// Union-model params with what the upstream hears of this host (its capabilities and
    /// log level, the answers and state of a retry), in the upstream's revision.
    fn hop_value_params(
        &self,
        i: usize,
        method_name: &str,
        mut params: Value,
        ctx: &RequestContext,
    ) -> Result<Box<RawValue>, ClientError> {
        let revision = self.upstream_revision(i)?;
        if let Value::Object(p) = &mut params {
            // What the upstream may ask for, and hear, is what this host declared (unless
            // the caller set what the gateway itself takes on: the tasks extension).
            let meta = p.entry("_meta").or_insert_with(|| json!({}));
            if let Value::Object(m) = meta {
                m.entry(mcp_types::meta::CLIENT_CAPABILITIES)
                    .or_insert_with(|| json!(ctx.client_capabilities()));
                if let Some(level) = ctx.log_level() {
                    m.insert(mcp_types::meta::LOG_LEVEL.into(), json!(level));
                }
            }
            let mut responses = ctx.input_responses().clone();
            responses.remove(CONFIRM_KEY);
            if !responses.is_empty() {
                p.insert("inputResponses".into(), Value::Object(responses));
            }
            if let Some(state) = ctx.request_state() {
                p.insert("requestState".into(), json!(state));
            }
        }
        let translated = Translator::canonical_to(revision).params(method_name, params)?;
        serde_json::value::to_raw_value(&translated).map_err(|e| ClientError::InvalidResult {
            method: method_name.into(),
            reason: e.to_string(),
        })
    }

    /// Sends a request on `link` as a flight for the host of `ctx` to drive.
    fn launch(
        &self,
        link: crate::sessions::Link,
        method_name: &str,
        params: RawObject<'_>,
        ctx: &RequestContext,
    ) -> Flight {
        let crate::sessions::Link { client, calls } = link;
        // Progress is relayed only to a host that asked for it.
        let (tx, progress) = match ctx.wants_progress() {
            true => {
                let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
                (Some(tx), Some(rx))
            }
            false => (None, None),
        };
        let cancel = Arc::new(tokio::sync::Notify::new());
        let opts = CallOptions {
            timeout: Some(self.inner.options.call_timeout),
            progress: tx,
            return_input_required: true,
            cancel: Some(cancel.clone()),
        };
        // A held `tasks/result` gets the requests its upstream task makes.
        let task = (method_name == method::TASKS_RESULT)
            .then(|| params.get_str("taskId").map(|t| t.into_owned()))
            .flatten();
        let slot = calls.enter(ctx.client_capabilities_arc(), task);
        let request = client.prepare_raw(method_name, params, &opts);
        let call = Box::pin(async move { client.send_raw(request, &opts).await });
        Flight {
            method: method_name.to_owned(),
            call,
            progress,
            cancel,
            slot,
            pending: Vec::new(),
            asked: 0,
        }
    }

    /// Takes the call parked under `state` and hands it the host's answers.
    fn resume(
        &self,
        state: &str,
        method_name: &str,
        ctx: &RequestContext,
    ) -> Result<Flight, ClientError> {
        let flight = self
            .inner
            .parked
            .lock()
            .ok()
            .and_then(|mut p| p.remove(state))
            // A task run for a tools/call is resumed by the host's tools/call retry.
            .filter(|f| {
                f.method == method_name
                    || (method_name == method::TOOLS_CALL && f.method == method::TASKS_RESULT)
            });
        let Some(mut flight) = flight else {
            return Err(ClientError::Server(ErrorObject::new(
                codes::INVALID_PARAMS,
                "requestState is unknown, expired, already used or for another request",
            )));
        };
        flight.answer(ctx.input_responses());
        Ok(flight)
    }

    /// Relays progress and logs while the upstream works; hands its requests to the host
    /// (parking the call until the host answers); cancels it when the host cancels.
    async fn drive(
        &self,
        mut f: Flight,
        ctx: &RequestContext,
    ) -> Result<Box<RawValue>, ClientError> {
        loop {
            let step = tokio::select! {
                step = f.next() => step,
                // The host cancelled (a notification, or a closed 2026 stream): so do we.
                () = ctx.cancelled() => {
                    f.cancel.notify_one();
                    return (&mut f.call).await;
                }
            };
            match step {
                Step::Done(r) => return r,
                // What flows during a call is boxed: most calls have none, and their state
                // stays small without it.
                Step::Progress(p) => {
                    let progress = p.progress.as_f64().unwrap_or_default();
                    let total = p.total.and_then(|t| t.as_f64());
                    Box::pin(ctx.progress(progress, total, p.message.as_deref())).await;
                }
                Step::Events { logs, asks } => {
                    for l in logs {
                        Box::pin(ctx.log(l.level, l.logger.as_deref(), l.data)).await;
                    }
                    if !asks.is_empty() {
                        let requests = f.hand_over(asks);
                        let state = self.park(f);
                        let answer = json!({
                            "resultType": "input_required",
                            "inputRequests": requests,
                            "requestState": state,
                        });
                        return serde_json::value::to_raw_value(&answer).map_err(|e| {
                            ClientError::InvalidResult {
                                method: "inputRequests".into(),
                                reason: e.to_string(),
                            }
                        });
                    }
                }
            }
        }
    }

    /// Keeps a call until the host retries with `requestState`, at most `input_timeout`.
    fn park(&self, flight: Flight) -> String {
        let state = new_state();
        if let Ok(mut p) = self.inner.parked.lock() {
            p.insert(state.clone(), flight);
        }
        let inner = Arc::downgrade(&self.inner);
        let key = state.clone();
        let wait = self.inner.options.input_timeout;
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            let expired = inner
                .upgrade()
                .and_then(|i| i.parked.lock().ok().and_then(|mut p| p.remove(&key)));
            if let Some(f) = expired {
                tracing::warn!(method = %f.method, "a host never answered an upstream's request; the call is cancelled");
                let Flight {
                    call,
                    cancel,
                    pending,
                    ..
                } = f;
                // The upstream's questions fail, and the request, driven once more, sends
                // its cancellation upstream.
                drop(pending);
                cancel.notify_one();
                let _ = tokio::time::timeout(Duration::from_secs(5), call).await;
            }
        });
        state
    }
}

/// The task id of a `tools/call` answered with a task (2025-11-25 `CreateTaskResult`, or
/// the 2026 extension's `resultType: "task"`).
fn created_task_id(v: &Value) -> Option<String> {
    v.pointer("/task/taskId")
        .or_else(|| (v.get("resultType")? == "task").then(|| v.get("taskId"))?)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Whether `uri` fits an RFC 6570 level-1 template (`{var}` matches one or more characters
/// other than `/`).
fn template_matches(template: &str, uri: &str) -> bool {
    let mut rest = uri;
    let mut parts = template.split('{');
    let Some(first) = parts.next() else {
        return false;
    };
    let Some(r) = rest.strip_prefix(first) else {
        return false;
    };
    rest = r;
    for part in parts {
        let Some((_, literal)) = part.split_once('}') else {
            return false;
        };
        let end = if literal.is_empty() {
            rest.find('/').unwrap_or(rest.len())
        } else {
            match rest.find(literal) {
                Some(e) => e,
                None => return false,
            }
        };
        if end == 0 {
            return false;
        }
        rest = &rest[end..];
        match rest.strip_prefix(literal) {
            Some(r) => rest = r,
            None => return false,
        }
    }
    rest.is_empty()
}

async fn list_all(client: &Client) -> Listing {
    let caps = client.server().capabilities.clone();
    let mut l = Listing::default();
    if caps.tools.is_some() && client.revision().era() == mcp_types::Era::Modern {
        // The upstream's own caching hint for its list (private scope: the gateway's
        // connection is its one audience).
        let first = client
            .request(method::TOOLS_LIST, json!({}), &CallOptions::default())
            .await;
        let ttl = first
            .ok()
            .and_then(|v| v.get("ttlMs").and_then(Value::as_u64))
            .filter(|t| *t > 0);
        l.stale_at = ttl.map(|t| std::time::Instant::now() + Duration::from_millis(t));
    }
    if caps.tools.is_some() {
        l.tools = client.list_tools().await.unwrap_or_default();
    }
    if caps.prompts.is_some() {
        l.prompts = client.list_prompts().await.unwrap_or_default();
    }
    if caps.resources.is_some() {
        l.resources = client.list_resources().await.unwrap_or_default();
        l.templates = client.list_resource_templates().await.unwrap_or_default();
    }
    l
}

fn call_failure(upstream: &str, e: ClientError) -> Result<Outcome<CallToolResult>, ErrorObject> {
    match e {
        // The upstream's own protocol answer (an unknown tool, bad params) goes through.
        ClientError::Server(e) => Err(e),
        ClientError::Timeout(t) => Ok(Outcome::Complete(tool_error(format!(
            "upstream `{upstream}` did not answer within {t:?}; the call was cancelled"
        )))),
        other => Ok(Outcome::Complete(tool_error(format!(
            "upstream `{upstream}` failed: {other}"
        )))),
    }
}

/// A failed request other than a tool call, as the host's error: the upstream's own
/// protocol error as it is, anything else an internal error naming the upstream.
fn upstream_error(upstream: &str, e: ClientError) -> ErrorObject {
    match e {
        ClientError::Server(e) => e,
        other => ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("upstream `{upstream}` failed: {other}"),
        ),
    }
}

/// An upstream's `InputRequiredResult`, relayed: a 2026 host answers it itself; for a
/// legacy host the server session turns its requests into real ones.
fn input_required(upstream: &str, v: &Value) -> Result<Option<InputRequiredResult>, ErrorObject> {
    if v.get("resultType").and_then(Value::as_str) != Some("input_required") {
        return Ok(None);
    }
    let mut ir: InputRequiredResult = decode(upstream, v.clone())?;
    strip_hop_meta(&mut ir.meta);
    Ok(Some(ir))
}

fn decode<T: serde::de::DeserializeOwned>(upstream: &str, v: Value) -> Result<T, ErrorObject> {
    serde_json::from_value(v).map_err(|e| {
        ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("upstream `{upstream}` sent an invalid result: {e}"),
        )
    })
}

/// Drops per-hop keys from an upstream result's `_meta`: the host's answer comes from the
/// gateway, which names itself, and the upstream's task ids are not the host's;
/// everything else in `_meta` is kept.
fn strip_hop_meta(meta: &mut Option<Map<String, Value>>) {
    if let Some(m) = meta {
        for k in HOP_META {
            m.remove(k);
        }
        if m.is_empty() {
            *meta = None;
        }
    }
}

/// The per-hop `_meta` keys of an upstream's result.
const HOP_META: [&str; 2] = [mcp_types::meta::SERVER_INFO, mcp_types::meta::RELATED_TASK];

/// [`strip_hop_meta`] on a result still in raw form.
fn strip_hop_meta_raw(result: &mut Map<String, Value>) {
    if let Some(Value::Object(m)) = result.get_mut("_meta") {
        for k in HOP_META {
            m.remove(k);
        }
        if m.is_empty() {
            result.remove("_meta");
        }
    }
}

fn forward_meta(meta: Option<Map<String, Value>>) -> Option<Map<String, Value>> {
    // The host's progress token is ours to keep (the upstream gets its own), and the 2026
    // envelope is per hop: the gateway's client writes its own.
    meta.map(|mut m| {
        for k in [
            mcp_types::meta::PROGRESS_TOKEN,
            mcp_types::meta::PROTOCOL_VERSION,
            mcp_types::meta::CLIENT_CAPABILITIES,
            mcp_types::meta::CLIENT_INFO,
            mcp_types::meta::LOG_LEVEL,
        ] {
            m.remove(k);
        }
        m
    })
    .filter(|m| !m.is_empty())
}

#[async_trait]
impl ServerHandler for Aggregator {
    fn capabilities(&self) -> ServerCapabilities {
        let (legacy_tasks, extension) = self.task_reach();
        let lc = || {
            Some(ListChangedCapability {
                list_changed: Some(true),
                ..Default::default()
            })
        };
        ServerCapabilities {
            tools: lc(),
            prompts: lc(),
            resources: Some(ResourcesCapability {
                list_changed: Some(true),
                ..Default::default()
            }),
            completions: Some(Map::new()),
            // Upstream tasks are relayed to hosts that take them, declared only where a
            // host can reach one (each session keeps what the host's revision has:
            // `tasks` to 2025-11-25, the extension to 2026).
            tasks: legacy_tasks.then(|| {
                json!({"cancel": {}, "requests": {"tools": {"call": {}}}})
                    .as_object()
                    .cloned()
                    .unwrap_or_default()
            }),
            extensions: extension
                .then(|| json!({TASKS_EXTENSION: {}}).as_object().cloned())
                .flatten(),
            ..Default::default()
        }
    }

    async fn get_task(
        &self,
        ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<Task, ErrorObject> {
        self.relay_get_task(ctx, &p.task_id).await
    }

    async fn task_result(
        &self,
        ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<Outcome<Value>, ErrorObject> {
        self.relay_task_result(ctx, &p.task_id).await
    }

    async fn cancel_task(
        &self,
        ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<Task, ErrorObject> {
        self.relay_cancel_task(ctx, &p.task_id).await
    }

    async fn update_task(
        &self,
        ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<(), ErrorObject> {
        self.relay_update_task(ctx, &p.task_id, p.input_responses)
            .await
    }

    async fn list_tools(
        &self,
        _ctx: &RequestContext,
        p: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        self.refresh_stale().await;
        let tools = match self.inner.options.surface {
            Surface::Direct => self.tools(),
            Surface::Dispatcher => crate::dispatcher::tools(),
        };
        let (tools, next_cursor) = self.page(tools, p.cursor.as_deref())?;
        Ok(ListToolsResult {
            tools,
            next_cursor,
            ..Default::default()
        })
    }

    async fn call_tool(
        &self,
        ctx: &RequestContext,
        p: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        if self.inner.options.surface == Surface::Dispatcher {
            if let Some(out) = crate::dispatcher::call(self, ctx, &p).await {
                return out;
            }
        }
        self.call_exposed(ctx, &p.name, p.arguments, p.meta).await
    }

    fn calls_now(&self) -> bool {
        true
    }

    /// The common call goes without a task of its own (see `aggregator/fast.rs`).
    fn call_tool_now(
        &self,
        call: mcp_server::Call,
        params: &RawObject<'_>,
    ) -> Option<mcp_server::Call> {
        self.call_now(call, params)
    }

    /// The relay path: the host's params go on raw (see [`Aggregator::relay_call`]); the
    /// dispatcher's own tools, which the gateway answers itself, are decoded.
    async fn call_tool_raw(
        &self,
        ctx: &RequestContext,
        params: &RawObject<'_>,
    ) -> Result<Outcome<RawResult>, ErrorObject> {
        let own = self.inner.options.surface == Surface::Dispatcher
            && params
                .get_str("name")
                .is_some_and(|n| crate::dispatcher::is_own_tool(&n));
        if !own {
            return self.relay_call(ctx, params).await;
        }
        let p: CallToolRequestParams =
            serde_json::from_str(params.to_cow().get()).map_err(|e| {
                ErrorObject::new(
                    codes::INVALID_PARAMS,
                    format!("Invalid params for tools/call: {e}"),
                )
            })?;
        Ok(match self.call_tool(ctx, p).await? {
            Outcome::Complete(r) => Outcome::Complete(RawResult::canonical(&r)?),
            Outcome::InputRequired(ir) => Outcome::InputRequired(ir),
            Outcome::Task(t) => Outcome::Task(t),
        })
    }

    async fn list_prompts(
        &self,
        _ctx: &RequestContext,
        p: PaginatedRequestParams,
    ) -> Result<ListPromptsResult, ErrorObject> {
        let prompts = self
            .prompt_entries()
            .into_iter()
            .map(|(exposed, _, mut p)| {
                p.name = exposed;
                p
            })
            .collect();
        let (prompts, next_cursor) = self.page(prompts, p.cursor.as_deref())?;
        Ok(ListPromptsResult {
            prompts,
            next_cursor,
            ..Default::default()
        })
    }

    async fn get_prompt(
        &self,
        ctx: &RequestContext,
        p: GetPromptRequestParams,
    ) -> Result<Outcome<GetPromptResult>, ErrorObject> {
        let Some((_, i, prompt)) = self
            .prompt_entries()
            .into_iter()
            .find(|(e, _, _)| *e == p.name)
        else {
            return Err(ErrorObject::new(
                codes::INVALID_PARAMS,
                format!("Unknown prompt: {}", p.name),
            ));
        };
        let key = self.inner.upstreams[i].config.key.clone();
        let params = GetPromptRequestParams {
            name: prompt.name,
            arguments: p.arguments,
            meta: forward_meta(p.meta),
            ..Default::default()
        };
        match self
            .upstream_call(i, method::PROMPTS_GET, json!(params), ctx)
            .await
        {
            Ok(v) => {
                if let Some(ir) = input_required(&key, &v)? {
                    return Ok(Outcome::InputRequired(ir));
                }
                let mut r: GetPromptResult = decode(&key, v)?;
                strip_hop_meta(&mut r.meta);
                r.result_type = None;
                Ok(Outcome::Complete(r))
            }
            Err(e) => Err(upstream_error(&key, e)),
        }
    }

    async fn list_resources(
        &self,
        _ctx: &RequestContext,
        _p: PaginatedRequestParams,
    ) -> Result<ListResourcesResult, ErrorObject> {
        Ok(ListResourcesResult {
            resources: self.read_listings(|l| l.resources.clone()).concat(),
            ..Default::default()
        })
    }

    async fn list_resource_templates(
        &self,
        _ctx: &RequestContext,
        _p: PaginatedRequestParams,
    ) -> Result<ListResourceTemplatesResult, ErrorObject> {
        Ok(ListResourceTemplatesResult {
            resource_templates: self.read_listings(|l| l.templates.clone()).concat(),
            ..Default::default()
        })
    }

    async fn read_resource(
        &self,
        ctx: &RequestContext,
        p: ResourceRequestParams,
    ) -> Result<Outcome<ReadResourceResult>, ErrorObject> {
        let Some(i) = self.resource_owner(&p.uri) else {
            return Err(ErrorObject::new(
                codes::RESOURCE_NOT_FOUND,
                format!("Resource not found: {}", p.uri),
            )
            .with_data(json!({"uri": p.uri})));
        };
        let key = self.inner.upstreams[i].config.key.clone();
        let params = ResourceRequestParams {
            uri: p.uri.clone(),
            meta: forward_meta(p.meta),
            ..Default::default()
        };
        match self
            .upstream_call(i, method::RESOURCES_READ, json!(params), ctx)
            .await
        {
            Ok(v) => {
                if let Some(ir) = input_required(&key, &v)? {
                    return Ok(Outcome::InputRequired(ir));
                }
                let mut r: ReadResourceResult = decode(&key, v)?;
                strip_hop_meta(&mut r.meta);
                // The gateway sets its own caching hints for its hosts.
                r.ttl_ms = None;
                r.cache_scope = None;
                r.result_type = None;
                Ok(Outcome::Complete(r))
            }
            Err(e) => Err(upstream_error(&key, e)),
        }
    }

    async fn subscribe(
        &self,
        ctx: &RequestContext,
        p: ResourceRequestParams,
        subscribe: bool,
    ) -> Result<(), ErrorObject> {
        let Some(i) = self.resource_owner(&p.uri) else {
            return Err(ErrorObject::new(
                codes::RESOURCE_NOT_FOUND,
                format!("Resource not found: {}", p.uri),
            )
            .with_data(json!({"uri": p.uri})));
        };
        let legacy_upstream = self.inner.upstreams[i]
            .client()
            .is_some_and(|c| c.revision().era() == mcp_types::Era::Legacy);
        if legacy_upstream {
            let m = if subscribe {
                method::RESOURCES_SUBSCRIBE
            } else {
                method::RESOURCES_UNSUBSCRIBE
            };
            let key = self.inner.upstreams[i].config.key.clone();
            self.upstream_call(i, m, json!({"uri": p.uri}), ctx)
                .await
                .map_err(|e| upstream_error(&key, e))?;
        }
        Ok(())
    }

    async fn complete(
        &self,
        ctx: &RequestContext,
        mut p: CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorObject> {
        let owner = match p.reference.kind.as_str() {
            "ref/prompt" => {
                let name = p.reference.name.clone().unwrap_or_default();
                let found = self
                    .prompt_entries()
                    .into_iter()
                    .find(|(e, _, _)| *e == name);
                found.map(|(_, i, prompt)| {
                    p.reference.name = Some(prompt.name);
                    i
                })
            }
            _ => p.reference.uri.as_deref().and_then(|u| {
                self.resource_owner(u).or_else(|| {
                    let listings = self.inner.listings.read().ok()?;
                    listings
                        .iter()
                        .position(|l| l.templates.iter().any(|t| t.uri_template == u))
                })
            }),
        };
        let Some(i) = owner else {
            return Ok(CompleteResult::default());
        };
        let key = self.inner.upstreams[i].config.key.clone();
        p.meta = forward_meta(p.meta);
        match self
            .upstream_call(i, method::COMPLETION_COMPLETE, json!(p), ctx)
            .await
        {
            Ok(v) => {
                let mut r: CompleteResult = decode(&key, v)?;
                strip_hop_meta(&mut r.meta);
                Ok(r)
            }
            Err(e) => Err(upstream_error(&key, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::template_matches;

    #[test]
    fn templates_match_level_one_expressions() {
        assert!(template_matches(
            "test://template/{id}/data",
            "test://template/123/data"
        ));
        assert!(!template_matches(
            "test://template/{id}/data",
            "test://template//data"
        ));
        assert!(!template_matches(
            "test://template/{id}/data",
            "test://other/123/data"
        ));
        assert!(template_matches("file:///{path}", "file:///a"));
    }
}
