//! [`Switch`]: a handler that can be replaced while it serves, so that a server whose
//! configuration changes keeps its connections and sessions. Each request goes to the
//! handler in force when it arrives; requests already being served finish with the one
//! they began with. A switch answers health probes and metric scrapes with its handler's
//! too, when the handler has them.
//!
//! ```
//! use mcp_server::{ServerHandler, Switch};
//! use mcp_types::protocol::ServerCapabilities;
//!
//! struct Version(u32);
//!
//! impl ServerHandler for Version {
//!     fn capabilities(&self) -> ServerCapabilities {
//!         ServerCapabilities::default()
//!     }
//! }
//!
//! let switch = Switch::new(Version(1));
//! let server = mcp_server::Server::new(switch.clone());
//! let before = switch.replace(Version(2));
//! assert_eq!((before.0, switch.current().0), (1, 2));
//! # drop(server);
//! ```

use std::sync::Arc;

use async_trait::async_trait;
use mcp_types::protocol::*;
use mcp_types::raw::RawObject;
use mcp_types::ErrorObject;
use parking_lot::RwLock;
use serde_json::Value;

use crate::{Call, ListKind, Outcome, RawResult, RequestContext, ServerHandler};

/// A handler that [`Switch::replace`] replaces while it serves (see the module). Cheap
/// to clone: clones switch together.
pub struct Switch<H> {
    current: Arc<RwLock<Arc<H>>>,
}

impl<H> Clone for Switch<H> {
    fn clone(&self) -> Self {
        Switch {
            current: self.current.clone(),
        }
    }
}

impl<H: ServerHandler> Switch<H> {
    /// Serves with `handler` until it is replaced.
    pub fn new(handler: H) -> Self {
        Switch {
            current: Arc::new(RwLock::new(Arc::new(handler))),
        }
    }

    /// The handler in force.
    pub fn current(&self) -> Arc<H> {
        self.current.read().clone()
    }

    /// Serves every request from now on with `next`; gives the handler it replaces.
    pub fn replace(&self, next: H) -> Arc<H> {
        std::mem::replace(&mut *self.current.write(), Arc::new(next))
    }
}

#[async_trait]
impl<H: ServerHandler> ServerHandler for Switch<H> {
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
        kind: ListKind,
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
        self.current().call_tool_raw(call, params)
    }
    fn header_params(
        &self,
        name: &str,
        principal: Option<&crate::auth::Principal>,
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
        self.current().get_task(ctx, p).await
    }
    async fn task_result(
        &self,
        ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<Outcome<Value>, ErrorObject> {
        self.current().task_result(ctx, p).await
    }
    async fn cancel_task(
        &self,
        ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<Task, ErrorObject> {
        self.current().cancel_task(ctx, p).await
    }
    async fn update_task(
        &self,
        ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<(), ErrorObject> {
        self.current().update_task(ctx, p).await
    }
    async fn complete(
        &self,
        ctx: &RequestContext,
        p: CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorObject> {
        self.current().complete(ctx, p).await
    }
}

impl<H: ServerHandler + crate::http::Health> crate::http::Health for Switch<H> {
    fn readiness(&self) -> crate::http::Readiness {
        self.current().readiness()
    }
}

impl<H: ServerHandler + crate::http::Metrics> crate::http::Metrics for Switch<H> {
    fn render(&self) -> String {
        self.current().render()
    }

    fn content_type(&self) -> &'static str {
        self.current().content_type()
    }
}
