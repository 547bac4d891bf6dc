//! What a server implements: [`ServerHandler`], and the [`RequestContext`] every
//! handler method gets.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use mcp_revisions::{features, Translator};
use mcp_types::protocol::*;
use mcp_types::raw::RawObject;
use mcp_types::rpc::Peer;
use mcp_types::{codes, ErrorObject, Revision};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

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

    /// `tools/call` with its params still raw: the session has read only what it needs
    /// (`_meta`, `inputResponses`, `requestState`, `task`), and `arguments` and every other
    /// member are as the client wrote them. A relay overrides this to pass them on exactly
    /// and answer with its upstream's result as it came ([`RawResult::in_revision`]).
    /// Default: decodes the params and calls [`ServerHandler::call_tool`].
    async fn call_tool_raw(
        &self,
        ctx: &RequestContext,
        params: &RawObject<'_>,
    ) -> Result<Outcome<RawResult>, ErrorObject> {
        let p: CallToolRequestParams =
            serde_json::from_str(params.to_cow().get()).map_err(|e| {
                ErrorObject::new(
                    codes::INVALID_PARAMS,
                    format!("Invalid params for {}: {e}", method::TOOLS_CALL),
                )
            })?;
        Ok(match self.call_tool(ctx, p).await? {
            Outcome::Complete(r) => Outcome::Complete(RawResult::canonical(&r)?),
            Outcome::InputRequired(ir) => Outcome::InputRequired(ir),
            Outcome::Task(t) => Outcome::Task(t),
        })
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

/// Sends notifications to the client that made a request, in its revision.
#[derive(Clone)]
pub(crate) struct Notifier {
    pub(crate) peer: Peer,
    pub(crate) revision: Revision,
    pub(crate) changes: tokio::sync::broadcast::Sender<crate::ListChanged>,
}

impl Notifier {
    /// Sends a notification in the client's revision; false once the connection is gone.
    pub(crate) async fn notify(&self, method_name: &str, params: Value) -> bool {
        let params = match Translator::canonical_to(self.revision).params(method_name, params) {
            Ok(p) => p,
            Err(e) => {
                tracing::debug!(method = method_name, revision = %self.revision, "notification not sent: {e}");
                return true;
            }
        };
        let raw = serde_json::value::to_raw_value(&params).ok();
        if self.peer.notify(method_name, raw).await.is_err() {
            tracing::debug!(
                method = method_name,
                "notification not sent: connection closed"
            );
            return false;
        }
        true
    }
}

/// What a handler knows about the request it is serving, and how it talks back.
#[derive(Clone)]
pub struct RequestContext {
    pub(crate) revision: Revision,
    pub(crate) client_capabilities: Arc<ClientCapabilities>,
    pub(crate) client_info: Option<Arc<Implementation>>,
    pub(crate) input_responses: Map<String, Value>,
    pub(crate) request_state: Option<String>,
    pub(crate) progress_token: Option<ProgressToken>,
    /// The last progress value sent for this request (progress must only increase).
    pub(crate) progress_sent: Arc<std::sync::Mutex<Option<f64>>>,
    pub(crate) task: Option<TaskMetadata>,
    /// The task whose `tasks/result` this is: requests made for it name it (2025-11-25).
    pub(crate) related_task: Option<String>,
    pub(crate) log_level: Option<LoggingLevel>,
    pub(crate) notifier: Notifier,
    pub(crate) cancelled: Arc<Cancellation>,
}

/// The cancelled state of one in-flight request, awaitable.
#[derive(Debug, Default)]
pub(crate) struct Cancellation {
    flag: AtomicBool,
    notify: tokio::sync::Notify,
}

impl Cancellation {
    pub(crate) fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Registered before the check, so a cancel between the two still wakes us.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

fn severity(level: &LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
        LoggingLevel::Other(_) => 1,
    }
}

impl RequestContext {
    /// The revision this request is served in.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    /// The capabilities the client declared (at `initialize`, or on this 2026 request).
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.client_capabilities
    }

    /// The client's self-description, if it gave one.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.client_info.as_deref()
    }

    /// The capabilities the client declared, shared (cheap to keep past the request).
    pub fn client_capabilities_arc(&self) -> Arc<ClientCapabilities> {
        self.client_capabilities.clone()
    }

    /// The client's answer to the input request named `key`, on a retry.
    pub fn input_response(&self, key: &str) -> Option<&Value> {
        self.input_responses.get(key)
    }

    /// Every answer to input requests on this round (empty on a first call).
    pub fn input_responses(&self) -> &Map<String, Value> {
        &self.input_responses
    }

    /// The log level the client wants for this request (legacy: `logging/setLevel`;
    /// 2026-07-28: the request's `logLevel`), if any.
    pub fn log_level(&self) -> Option<&LoggingLevel> {
        self.log_level.as_ref()
    }

    /// Whether this request may be answered with [`Outcome::Task`]: a 2026-07-28 client
    /// that declared the tasks extension, or a 2025-11-25 client that asked for a task.
    pub fn accepts_task(&self) -> bool {
        if features::has_tasks_extension(self.revision) {
            self.client_capabilities
                .extensions
                .as_ref()
                .is_some_and(|e| e.contains_key(TASKS_EXTENSION))
        } else {
            features::has_task_param(self.revision) && self.task.is_some()
        }
    }

    /// The 2025-11-25 `task` param: the client asked for this request to run as a task
    /// (`None` in other revisions, where the param means nothing).
    pub fn task_requested(&self) -> Option<&TaskMetadata> {
        self.task.as_ref()
    }

    /// The `requestState` of this round, on a retry.
    pub fn request_state(&self) -> Option<&str> {
        self.request_state.as_deref()
    }

    /// Whether the client asked for progress on this request (gave a `progressToken`).
    pub fn wants_progress(&self) -> bool {
        self.progress_token.is_some()
    }

    /// The last progress value sent for this request, if any.
    pub fn last_progress(&self) -> Option<f64> {
        self.progress_sent.lock().ok().and_then(|l| *l)
    }

    /// Whether the client cancelled this request.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.is_cancelled()
    }

    /// Resolves once the client cancels this request (at once if it already has); select
    /// on it to stop long work promptly.
    pub async fn cancelled(&self) {
        self.cancelled.wait().await
    }

    /// Announces that a list changed, to every connected client that listens (see
    /// [`crate::Server::notify_list_changed`]).
    pub fn list_changed(&self, what: crate::ListChanged) {
        let _ = self.notifier.changes.send(what);
    }

    /// Reports progress, if the client asked for it (a `progressToken`). The spec wants
    /// each value greater than the last: one that is not (or is not a finite number) is
    /// dropped, its message with it.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.progress_token else {
            return;
        };
        if let Ok(mut last) = self.progress_sent.lock() {
            if !progress.is_finite() || last.is_some_and(|l| progress <= l) {
                tracing::debug!(progress, "progress not sent: not above the last value");
                return;
            }
            *last = Some(progress);
        }
        let mut params = serde_json::json!({"progressToken": token, "progress": progress});
        if let Some(t) = total {
            params["total"] = t.into();
        }
        if let Some(m) = message {
            params["message"] = m.into();
        }
        self.notifier.notify(method::PROGRESS, params).await;
    }

    /// Sends a log message if the client wants this level (legacy: `logging/setLevel`;
    /// 2026-07-28: the request's `logLevel`, and nothing when it has none).
    pub async fn log(&self, level: LoggingLevel, logger: Option<&str>, data: Value) {
        let wanted = match &self.log_level {
            Some(min) => severity(&level) >= severity(min),
            // A 2026-07-28 request without a level asked for no log messages.
            None => !features::per_request_meta(self.revision),
        };
        if !wanted {
            return;
        }
        let mut params = serde_json::json!({"level": level, "data": data});
        if let Some(l) = logger {
            params["logger"] = l.into();
        }
        self.notifier.notify(method::LOGGING_MESSAGE, params).await;
    }
}
