//! The aggregator as a [`ServerHandler`]: each method wired to the catalog (lists, pages,
//! owners), the call relay, the flights that carry other requests upstream, and tasks.

use super::id::{PerUpstream, UpstreamId};
use async_trait::async_trait;
use mcp_server::{ListKind, Outcome, RawResult, RequestContext, ServerHandler};
use mcp_types::protocol::*;
use mcp_types::raw::{Exact, RawObject};
use mcp_types::{codes, ErrorObject};
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

use crate::policy::Surface;

use super::answers::{decode, forward_meta, input_required, strip_hop_meta, upstream_error};
use super::pages::{page_result, renamed, typed_page};
use super::Aggregator;

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
                // Honoured where some upstream can (`resources/subscribe` for a legacy
                // host, `resourceSubscriptions` on a 2026 host's listen stream).
                subscribe: self
                    .inner
                    .upstreams
                    .ids()
                    .any(|i| self.subscribes(i))
                    .then_some(true),
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

    /// Every list is written from the items as their upstreams listed them (TOOL-07).
    async fn list_raw(
        &self,
        ctx: &RequestContext,
        kind: ListKind,
        p: PaginatedRequestParams,
    ) -> Result<RawResult, ErrorObject> {
        let cursor = p.cursor.as_deref();
        let catalog = &self.inner.catalog;
        match kind {
            ListKind::Tools => {
                let (tools, next) = catalog.page(self.tools_listed(ctx).await, cursor)?;
                page_result(kind, &tools, next.as_deref())
            }
            ListKind::Prompts => {
                let (prompts, next) = catalog.page(self.prompts_listed(ctx), cursor)?;
                page_result(kind, &prompts, next.as_deref())
            }
            ListKind::Resources => {
                let all = self.reached(ctx, self.listings_for(ctx, |l| l.resources.clone()));
                let (resources, next) = catalog.page(all, cursor)?;
                page_result(kind, &resources, next.as_deref())
            }
            ListKind::ResourceTemplates => {
                let all = self.reached(ctx, self.listings_for(ctx, |l| l.templates.clone()));
                let (templates, next) = catalog.page(all, cursor)?;
                page_result(kind, &templates, next.as_deref())
            }
            _ => Err(mcp_server::method_not_found("this list")),
        }
    }

    async fn list_tools(
        &self,
        ctx: &RequestContext,
        p: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        typed_page(self.list_raw(ctx, ListKind::Tools, p).await?)
    }

    async fn call_tool(
        &self,
        ctx: &RequestContext,
        p: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        if self.seen(ctx).surface() == Surface::Dispatcher {
            if let Some(out) = crate::dispatcher::call(self, ctx, &p).await {
                return out;
            }
        }
        self.call_exposed(ctx, &p.name, p.arguments, p.meta).await
    }

    /// The upstream's annotations, as it listed the tool: hosts mirror them, and the
    /// gateway checks what they mirror before relaying.
    fn header_params(
        &self,
        name: &str,
        principal: Option<&mcp_server::auth::Principal>,
    ) -> Vec<mcp_types::headers::HeaderParam> {
        let seen = self.inner.visibility.seen_by(principal);
        self.inner
            .catalog
            .route(name)
            .filter(|r| seen.sees_tool(r.upstream, name))
            .map(|r| r.header_params.clone())
            .unwrap_or_default()
    }

    /// The gates first (`aggregator/gates.rs`), once: a refusal is answered at once; the
    /// common call goes without a task of its own (`aggregator/fast.rs`); any other is
    /// driven on one.
    fn call_tool_raw(&self, call: mcp_server::Call, params: RawObject<'_>) {
        let ctx = call.context();
        let seen = self.seen(ctx);
        let admitted = match super::gates::tool_name(&params) {
            // The gateway answers them itself, with the typed `call_tool`.
            Ok(name) if super::gates::is_own_tool(&seen, &name) => return call.serve_typed(),
            Ok(name) => self.admit(ctx, &seen, &name),
            Err(e) => Err(e),
        };
        let admitted = match admitted {
            Ok(a) => a,
            Err(e) => return call.respond(Err(e)),
        };
        let call = match admitted.driven(ctx) {
            None => match self.call_now(call, params, &admitted) {
                None => return,
                Some(call) => call,
            },
            Some(_) => call,
        };
        let agg = self.clone();
        call.spawn(move |req| async move {
            let params = req.params()?;
            let name = super::gates::tool_name(&params)?;
            agg.relay_admitted(req.context(), &params, &name, admitted)
                .await
        });
    }

    async fn list_prompts(
        &self,
        ctx: &RequestContext,
        p: PaginatedRequestParams,
    ) -> Result<ListPromptsResult, ErrorObject> {
        typed_page(self.list_raw(ctx, ListKind::Prompts, p).await?)
    }

    async fn get_prompt(
        &self,
        ctx: &RequestContext,
        p: GetPromptRequestParams,
    ) -> Result<Outcome<GetPromptResult>, ErrorObject> {
        let Some((_, i, prompt)) = self
            .prompt_entries_for(ctx)
            .into_iter()
            .find(|(e, i, _)| *e == p.name && self.seen(ctx).reaches(*i))
        else {
            return Err(ErrorObject::new(
                codes::INVALID_PARAMS,
                format!("Unknown prompt: {}", p.name),
            ));
        };
        let params = GetPromptRequestParams {
            name: prompt.name.clone(),
            arguments: p.arguments,
            meta: forward_meta(p.meta),
            ..Default::default()
        };
        self.relay_typed(
            ctx,
            i,
            method::PROMPTS_GET,
            json!(params),
            |r: &mut GetPromptResult| {
                strip_hop_meta(&mut r.meta);
                r.result_type = None;
            },
        )
        .await
    }

    async fn list_resources(
        &self,
        ctx: &RequestContext,
        p: PaginatedRequestParams,
    ) -> Result<ListResourcesResult, ErrorObject> {
        typed_page(self.list_raw(ctx, ListKind::Resources, p).await?)
    }

    async fn list_resource_templates(
        &self,
        ctx: &RequestContext,
        p: PaginatedRequestParams,
    ) -> Result<ListResourceTemplatesResult, ErrorObject> {
        typed_page(self.list_raw(ctx, ListKind::ResourceTemplates, p).await?)
    }

    async fn read_resource(
        &self,
        ctx: &RequestContext,
        p: ResourceRequestParams,
    ) -> Result<Outcome<ReadResourceResult>, ErrorObject> {
        let i = self.owner_of_resource(ctx, &p.uri)?;
        if !self.seen(ctx).reaches(i) {
            return Err(self.not_found(&p.uri));
        }
        let params = ResourceRequestParams {
            uri: p.uri.clone(),
            meta: forward_meta(p.meta),
            ..Default::default()
        };
        self.relay_typed(
            ctx,
            i,
            method::RESOURCES_READ,
            json!(params),
            |r: &mut ReadResourceResult| {
                strip_hop_meta(&mut r.meta);
                // The gateway sets its own caching hints for its hosts.
                r.ttl_ms = None;
                r.cache_scope = None;
                r.result_type = None;
            },
        )
        .await
    }

    /// Kept in the subscription table (`aggregator/subscriptions.rs`); the owning
    /// upstream's `notifications/resources/updated` then reach exactly its subscribers.
    async fn subscribe(
        &self,
        ctx: &RequestContext,
        p: ResourceRequestParams,
        subscribe: bool,
    ) -> Result<(), ErrorObject> {
        let owner = self
            .resource_owner_for(ctx, &p.uri)
            .or_else(|| self.inner.catalog.template_owner(&p.uri));
        if owner.is_some_and(|i| !self.seen(ctx).reaches(i)) {
            return Err(self.not_found(&p.uri));
        }
        self.resource_subscription(ctx, p.uri, subscribe).await
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
                    .prompt_entries_for(ctx)
                    .into_iter()
                    .find(|(e, _, _)| *e == name);
                found.map(|(_, i, prompt)| {
                    p.reference.name = Some(prompt.name.clone());
                    i
                })
            }
            _ => p.reference.uri.as_deref().and_then(|u| {
                self.resource_owner_for(ctx, u)
                    .or_else(|| self.inner.catalog.template_owner(u))
            }),
        };
        let Some(i) = owner.filter(|i| self.seen(ctx).reaches(*i)) else {
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

impl Aggregator {
    /// The upstream that listed resource `uri`, or the error a host gets for an unknown one.
    pub(super) fn owner_of_resource(
        &self,
        ctx: &RequestContext,
        uri: &str,
    ) -> Result<UpstreamId, ErrorObject> {
        self.resource_owner_for(ctx, uri)
            .ok_or_else(|| self.not_found(uri))
    }

    fn not_found(&self, uri: &str) -> ErrorObject {
        ErrorObject::new(
            codes::RESOURCE_NOT_FOUND,
            format!("Resource not found: {uri}"),
        )
        .with_data(json!({"uri": uri}))
    }

    /// The tools the host of `ctx` is listed, as it sees them (its view, its surface).
    async fn tools_listed(&self, ctx: &RequestContext) -> Vec<Exact<Tool>> {
        self.refresh_stale().await;
        let seen = self.seen(ctx);
        match seen.surface() {
            _ if seen.nothing() => Vec::new(),
            Surface::Direct => self.tools_seen(ctx, &seen),
            Surface::Dispatcher => crate::dispatcher::tools()
                .into_iter()
                .filter_map(|t| Exact::encode(t).ok())
                .collect(),
        }
    }

    /// The prompts the host of `ctx` is listed, under their exposed names.
    fn prompts_listed(&self, ctx: &RequestContext) -> Vec<Exact<Prompt>> {
        let seen = self.seen(ctx);
        self.prompt_entries_for(ctx)
            .into_iter()
            .filter(|(_, i, _)| seen.reaches(*i))
            .map(|(exposed, _, p)| renamed(p, &exposed))
            .collect()
    }

    /// The items of the upstreams the request's principal reaches, in catalog order.
    fn reached<T>(&self, ctx: &RequestContext, per_upstream: PerUpstream<Vec<T>>) -> Vec<T> {
        let seen = self.seen(ctx);
        per_upstream
            .into_iter_ids()
            .filter(|(i, _)| seen.reaches(*i))
            .flat_map(|(_, items)| items)
            .collect()
    }

    /// Request `method_name` of upstream `i` for the host of `ctx`: the questions it asks
    /// instead of answering, or its result, decoded and then made the gateway's by `tidy`.
    async fn relay_typed<T: DeserializeOwned>(
        &self,
        ctx: &RequestContext,
        i: UpstreamId,
        method_name: &str,
        params: Value,
        tidy: impl FnOnce(&mut T),
    ) -> Result<Outcome<T>, ErrorObject> {
        let key = self.upstream_key(i);
        let v = self
            .upstream_call(i, method_name, params, ctx)
            .await
            .map_err(|e| upstream_error(key, e))?;
        if let Some(ir) = input_required(key, &v)? {
            return Ok(Outcome::InputRequired(ir));
        }
        let mut r = decode(key, v)?;
        tidy(&mut r);
        Ok(Outcome::Complete(r))
    }
}
