//! What a server implements: [`ServerHandler`], its [`Outcome`]s and raw results.

use async_trait::async_trait;
use mcp_types::protocol::*;
use mcp_types::raw::RawObject;
use mcp_types::{codes, ErrorObject, Revision};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::{Call, RequestContext};

/// A final result, or (2026-07-28 style) a request for more input.
///
/// Handlers are written once, multi-round-trip style: return [`Outcome::InputRequired`]
/// and read the answers from [`RequestContext::input_response`] when called again. A
/// 2026-07-28 client receives the `InputRequiredResult` and retries; for a legacy client
/// the server sends the input requests as real server→client requests and calls the
/// handler again with the answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    /// The final result.
    Complete(T),
    /// More input is needed.
    InputRequired(InputRequiredResult),
    /// The request runs on as a task; the client follows it with `tasks/get`. Only for a
    /// client that can take one ([`RequestContext::accepts_task`]); any other gets an error.
    Task(Box<Task>),
}

impl<T> From<T> for Outcome<T> {
    fn from(t: T) -> Self {
        Outcome::Complete(t)
    }
}

/// A result as raw JSON text, with the revision it is written in: what a relaying handler
/// answers with, so that what its upstream sent reaches the client exactly (the session
/// translates it to the client's revision, changing only what that revision needs).
#[derive(Debug, Clone)]
pub struct RawResult {
    /// The revision the result is written in; `None` for a value of this crate's union
    /// model (any revision's members), which the session translates as such.
    pub revision: Option<Revision>,
    /// The result object.
    pub body: Box<RawValue>,
}

impl RawResult {
    /// A result written in `revision` (an upstream's answer, as it came).
    pub fn in_revision(revision: Revision, body: Box<RawValue>) -> Self {
        RawResult {
            revision: Some(revision),
            body,
        }
    }

    /// A typed result of the union model, encoded.
    pub fn canonical<T: serde::Serialize>(result: &T) -> Result<Self, ErrorObject> {
        let body = serde_json::value::to_raw_value(result)
            .map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, format!("Internal error: {e}")))?;
        Ok(RawResult {
            revision: None,
            body,
        })
    }
}

/// Which list a `*/list` request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    ResourceTemplates,
}

impl ListKind {
    /// The list a method asks for, if it is one of the four.
    pub fn of_method(name: &str) -> Option<Self> {
        Some(match name {
            method::TOOLS_LIST => ListKind::Tools,
            method::PROMPTS_LIST => ListKind::Prompts,
            method::RESOURCES_LIST => ListKind::Resources,
            method::RESOURCES_TEMPLATES_LIST => ListKind::ResourceTemplates,
            _ => return None,
        })
    }

    /// The result member that holds its items (`tools`, `prompts`, …).
    pub fn items_key(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources => "resources",
            ListKind::ResourceTemplates => "resourceTemplates",
        }
    }
}

/// The error for a method the handler does not implement.
pub fn method_not_found(method_name: &str) -> ErrorObject {
    ErrorObject::new(
        codes::METHOD_NOT_FOUND,
        format!("Method not found: {method_name}"),
    )
}

/// What an MCP server does. Every method has a default: lists are empty, and a request
/// for something the server does not offer is answered with the spec's error.
#[async_trait]
pub trait ServerHandler: Send + Sync + 'static {
    /// What the server offers (tools, prompts, resources, logging, completions, …).
    fn capabilities(&self) -> ServerCapabilities;

    /// `tools/list`.
    async fn list_tools(
        &self,
        _ctx: &RequestContext,
        _params: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        Ok(ListToolsResult::default())
    }

    /// One page of a list as raw JSON: what a relay overrides to pass on its upstreams'
    /// definitions exactly (each item as it was listed, in the union model; the session
    /// translates the page to the client's revision, changing only what that revision
    /// needs). Default: the typed method for `kind`, encoded.
    async fn list_raw(
        &self,
        ctx: &RequestContext,
        kind: ListKind,
        params: PaginatedRequestParams,
    ) -> Result<RawResult, ErrorObject> {
        match kind {
            ListKind::Tools => RawResult::canonical(&self.list_tools(ctx, params).await?),
            ListKind::Prompts => RawResult::canonical(&self.list_prompts(ctx, params).await?),
            ListKind::Resources => RawResult::canonical(&self.list_resources(ctx, params).await?),
            ListKind::ResourceTemplates => {
                RawResult::canonical(&self.list_resource_templates(ctx, params).await?)
            }
        }
    }

    /// `tools/call`. An unknown tool is a `-32602` error; a tool that fails is a result
    /// with `isError: true`.
    async fn call_tool(
        &self,
        _ctx: &RequestContext,
        params: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        Err(ErrorObject::new(
            codes::INVALID_PARAMS,
            format!("Unknown tool: {}", params.name),
        ))
    }

    /// `tools/call`, the one entry for the method: `call` is the request, to answer once
    /// ([`Call::respond`] from anywhere, [`Call::spawn`] on a task, or
    /// [`Call::serve_typed`] with [`ServerHandler::call_tool`]); `params` are its params,
    /// read one level deep (the session has read only what it acts on: `_meta`,
    /// `inputResponses`, `requestState`, `task`), and the handler's to keep or edit: a
    /// relay writes its upstream's params from them without a copy, and answers with
    /// its upstream's result as it came ([`RawResult::in_revision`]).
    ///
    /// Called where the request was read, often on the connection's read loop: it must
    /// not block or wait (hand what waits to a task). A call asking for input is handed
    /// over again with the client's answers in its context.
    ///
    /// Default: [`Call::serve_typed`].
    fn call_tool_raw(&self, call: Call, params: RawObject<'_>) {
        let _ = params;
        call.serve_typed();
    }

    /// The arguments of tool `name` that a 2026-07-28 client mirrors into `Mcp-Param-*`
    /// headers (the `x-mcp-header` annotations of its `inputSchema`), which the HTTP
    /// endpoint checks against the body before the call reaches the handler. Asked on
    /// every HTTP `tools/call`, so answer from what was read when the tool was listed;
    /// `principal` is who asks (answer as for an unknown tool if they may not see it).
    /// Default: none.
    fn header_params(
        &self,
        name: &str,
        principal: Option<&crate::auth::Principal>,
    ) -> Vec<mcp_types::headers::HeaderParam> {
        let _ = (name, principal);
        Vec::new()
    }

    /// `prompts/list`.
    async fn list_prompts(
        &self,
        _ctx: &RequestContext,
        _params: PaginatedRequestParams,
    ) -> Result<ListPromptsResult, ErrorObject> {
        Ok(ListPromptsResult::default())
    }

    /// `prompts/get`.
    async fn get_prompt(
        &self,
        _ctx: &RequestContext,
        params: GetPromptRequestParams,
    ) -> Result<Outcome<GetPromptResult>, ErrorObject> {
        Err(ErrorObject::new(
            codes::INVALID_PARAMS,
            format!("Unknown prompt: {}", params.name),
        ))
    }

    /// `resources/list`.
    async fn list_resources(
        &self,
        _ctx: &RequestContext,
        _params: PaginatedRequestParams,
    ) -> Result<ListResourcesResult, ErrorObject> {
        Ok(ListResourcesResult::default())
    }

    /// `resources/templates/list`.
    async fn list_resource_templates(
        &self,
        _ctx: &RequestContext,
        _params: PaginatedRequestParams,
    ) -> Result<ListResourceTemplatesResult, ErrorObject> {
        Ok(ListResourceTemplatesResult::default())
    }

    /// `resources/read`.
    async fn read_resource(
        &self,
        _ctx: &RequestContext,
        params: ResourceRequestParams,
    ) -> Result<Outcome<ReadResourceResult>, ErrorObject> {
        Err(
            ErrorObject::new(codes::RESOURCE_NOT_FOUND, "Resource not found")
                .with_data(serde_json::json!({"uri": params.uri})),
        )
    }

    /// `resources/subscribe` / `resources/unsubscribe` (legacy era).
    async fn subscribe(
        &self,
        _ctx: &RequestContext,
        _params: ResourceRequestParams,
        _subscribe: bool,
    ) -> Result<(), ErrorObject> {
        Err(method_not_found("resources/subscribe"))
    }

    /// `tasks/get`: the state of a task this server created (2025-11-25 and the
    /// 2026-07-28 extension, which carries a finished task's `result` or `error` inline).
    async fn get_task(
        &self,
        _ctx: &RequestContext,
        _params: TaskRequestParams,
    ) -> Result<Task, ErrorObject> {
        Err(method_not_found(method::TASKS_GET))
    }

    /// `tasks/result` (2025-11-25): what the task's request returns, once the task ends.
    async fn task_result(
        &self,
        _ctx: &RequestContext,
        _params: TaskRequestParams,
    ) -> Result<Outcome<Value>, ErrorObject> {
        Err(method_not_found(method::TASKS_RESULT))
    }

    /// `tasks/cancel`: the task's state after the cancellation (a 2026 client hears only
    /// an acknowledgement).
    async fn cancel_task(
        &self,
        _ctx: &RequestContext,
        _params: TaskRequestParams,
    ) -> Result<Task, ErrorObject> {
        Err(method_not_found(method::TASKS_CANCEL))
    }

    /// `tasks/update` (2026-07-28 extension): answers to a task's `inputRequests`.
    async fn update_task(
        &self,
        _ctx: &RequestContext,
        _params: TaskRequestParams,
    ) -> Result<(), ErrorObject> {
        Err(method_not_found(method::TASKS_UPDATE))
    }

    /// `completion/complete`.
    async fn complete(
        &self,
        _ctx: &RequestContext,
        _params: CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorObject> {
        Err(method_not_found("completion/complete"))
    }
}
