//! The aggregator as a [`ServerHandler`]: each method wired to the catalog (lists, pages,
//! owners), the call relay, the flights that carry other requests upstream, and tasks.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_server::{ListKind, Outcome, RawResult, RequestContext, ServerHandler};
use mcp_types::protocol::*;
use mcp_types::raw::{Exact, RawObject};
use mcp_types::{codes, ErrorObject};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::policy::Surface;

use super::answers::{decode, forward_meta, resource_not_found, strip_hop_meta, upstream_error};
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
                    .pool
                    .upstreams()
                    .iter()
                    .any(|u| u.subscribes())
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
        self.inner
            .relay
            .tasks()
            .relay_get_task(ctx, &p.task_id)
            .await
    }

    async fn task_result(
        &self,
        ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<Outcome<Value>, ErrorObject> {
        self.inner
            .relay
            .tasks()
            .relay_task_result(ctx, &p.task_id)
            .await
    }

    async fn cancel_task(
        &self,
        ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<Task, ErrorObject> {
        self.inner
            .relay
            .tasks()
            .relay_cancel_task(ctx, &p.task_id)
            .await
    }

    async fn update_task(
        &self,
        ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<(), ErrorObject> {
        self.inner
            .relay
            .tasks()
            .relay_update_task(ctx, &p.task_id, p.input_responses)
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
                let (tools, next) = catalog.page(kind, self.tools_listed(ctx).await, cursor)?;
                page_result(kind, &tools, next.as_deref())
            }
            ListKind::Prompts => {
                let (prompts, next) = catalog.page(kind, self.prompts_listed(ctx), cursor)?;
                page_result(kind, &prompts, next.as_deref())
            }
            ListKind::Resources => {
                let all = self
                    .inner
                    .visibility
                    .seen(ctx)
                    .reached(self.inner.own.listings_for(ctx, |l| l.resources.clone()));
                let (resources, next) = catalog.page(kind, all, cursor)?;
                page_result(kind, &resources, next.as_deref())
            }
            ListKind::ResourceTemplates => {
                let all = self
                    .inner
                    .visibility
                    .seen(ctx)
                    .reached(self.inner.own.listings_for(ctx, |l| l.templates.clone()));
                let (templates, next) = catalog.page(kind, all, cursor)?;
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
        if self.inner.visibility.seen(ctx).surface() == Surface::Dispatcher {
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

    /// The call relay's (`aggregator/relay/`).
    fn call_tool_raw(&self, call: mcp_server::Call, params: RawObject<'_>) {
        self.inner.relay.serve(call, params);
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
        self.prompt(ctx, p).await
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
        self.resource(ctx, p).await
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
            .inner
            .own
            .resource_owner_for(ctx, &p.uri)
            .or_else(|| self.inner.catalog.template_owner(&p.uri));
        if owner.is_some_and(|i| !self.inner.visibility.seen(ctx).reaches(i)) {
            return Err(resource_not_found(&p.uri));
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
                    .inner
                    .own
                    .prompt_entries_for(ctx)
                    .into_iter()
                    .find(|(e, _, _)| *e == name);
                found.map(|(_, i, prompt)| {
                    p.reference.name = Some(prompt.name.clone());
                    i
                })
            }
            _ => p.reference.uri.as_deref().and_then(|u| {
                self.inner
                    .own
                    .resource_owner_for(ctx, u)
                    .or_else(|| self.inner.catalog.template_owner(u))
            }),
        };
        let Some(i) = owner.filter(|i| self.inner.visibility.seen(ctx).reaches(*i)) else {
            return Ok(CompleteResult::default());
        };
        let key = self.inner.pool.key(i).to_owned();
        p.meta = forward_meta(p.meta);
        match self
            .inner
            .relay
            .flights()
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
    /// The tools the host of `ctx` is listed, as it sees them (its view, its surface).
    async fn tools_listed(&self, ctx: &RequestContext) -> Vec<Arc<RawValue>> {
        self.inner.keeper.refresh_stale().await;
        let seen = self.inner.visibility.seen(ctx);
        match seen.surface() {
            _ if seen.nothing() => Vec::new(),
            Surface::Direct => self.inner.own.tools_seen(ctx, &seen),
            Surface::Dispatcher => crate::dispatcher::tools()
                .into_iter()
                .filter_map(|t| serde_json::value::to_raw_value(&t).ok())
                .map(Arc::from)
                .collect(),
        }
    }

    /// The prompts the host of `ctx` is listed, under their exposed names.
    fn prompts_listed(&self, ctx: &RequestContext) -> Vec<Exact<Prompt>> {
        let seen = self.inner.visibility.seen(ctx);
        self.inner
            .own
            .prompt_entries_for(ctx)
            .into_iter()
            .filter(|(_, i, _)| seen.reaches(*i))
            .map(|(exposed, _, p)| renamed(p, &exposed))
            .collect()
    }
}

/// Resource subscriptions, kept in their table (`aggregator/subscriptions.rs`).
impl Aggregator {
    /// `resources/subscribe` (`subscribe`) or `resources/unsubscribe` of `uri` for the
    /// subscriber of `ctx`: a legacy host's session, or the 2026-07-28 listen stream that
    /// asks. An unsubscribe of what the subscriber does not hold is a success.
    pub(super) async fn resource_subscription(
        &self,
        ctx: &RequestContext,
        uri: String,
        subscribe: bool,
    ) -> Result<(), ErrorObject> {
        let Some(subscriber) = ctx.subscriber() else {
            return Err(ErrorObject::new(
                codes::INVALID_REQUEST,
                "resource subscriptions need a session (or a subscriptions/listen stream) to deliver updates to",
            ));
        };
        let table = &self.inner.held.subscriptions;
        if !subscribe {
            table.unsubscribe(subscriber.id(), &uri).await;
            return Ok(());
        }
        let i = self.inner.own.owner_of_resource(ctx, &uri)?;
        let key = self.inner.pool.key(i);
        if !self.inner.pool.get(i).subscribes() {
            return Err(ErrorObject::new(
                codes::INVALID_REQUEST,
                format!("upstream `{key}`, which serves {uri}, offers no resource subscriptions"),
            )
            .with_data(json!({"uri": uri})));
        }
        let link = self
            .inner
            .relay
            .flights()
            .links()
            .link(i, ctx, super::links::Need::State)
            .await
            .map_err(|e| upstream_error(key, e))?;
        table.subscribe(key, link, subscriber, uri).await
    }

    /// How many resource subscriptions hosts hold through the gateway now.
    pub fn resource_subscriptions(&self) -> usize {
        self.inner.held.subscriptions.len()
    }
}
