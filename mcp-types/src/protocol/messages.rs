//! Method names, and typed decoding of params and results by method.
//!
//! A result carries no name of its own: it is decoded by the method of the
//! request it answers ([`TypedResult::decode`]), plus the 2026-07-28
//! `resultType` discriminator where the spec defines one. Nothing here guesses a
//! type from a payload's shape.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::*;

/// Every MCP method name, request and notification, of every revision and the tasks extension.
pub mod method {
    macro_rules! names {
        ($($(#[$m:meta])* $id:ident = $s:literal;)*) => { $( $(#[$m])* pub const $id: &str = $s; )* };
    }
    names! {
        /// Legacy handshake.
        INITIALIZE = "initialize";
        /// Legacy handshake completion.
        INITIALIZED = "notifications/initialized";
        /// Liveness check (legacy era).
        PING = "ping";
        /// 2026-07-28 discovery.
        DISCOVER = "server/discover";
        /// 2026-07-28 notification stream.
        SUBSCRIPTIONS_LISTEN = "subscriptions/listen";
        /// 2026-07-28 stream acknowledgement.
        SUBSCRIPTIONS_ACKNOWLEDGED = "notifications/subscriptions/acknowledged";
        /// List tools.
        TOOLS_LIST = "tools/list";
        /// Call a tool.
        TOOLS_CALL = "tools/call";
        /// Tool list changed.
        TOOLS_LIST_CHANGED = "notifications/tools/list_changed";
        /// List prompts.
        PROMPTS_LIST = "prompts/list";
        /// Get a prompt.
        PROMPTS_GET = "prompts/get";
        /// Prompt list changed.
        PROMPTS_LIST_CHANGED = "notifications/prompts/list_changed";
        /// List resources.
        RESOURCES_LIST = "resources/list";
        /// List resource templates.
        RESOURCES_TEMPLATES_LIST = "resources/templates/list";
        /// Read a resource.
        RESOURCES_READ = "resources/read";
        /// Subscribe to a resource (legacy era).
        RESOURCES_SUBSCRIBE = "resources/subscribe";
        /// Unsubscribe (legacy era).
        RESOURCES_UNSUBSCRIBE = "resources/unsubscribe";
        /// Resource list changed.
        RESOURCES_LIST_CHANGED = "notifications/resources/list_changed";
        /// A subscribed resource changed.
        RESOURCES_UPDATED = "notifications/resources/updated";
        /// Argument completion.
        COMPLETION_COMPLETE = "completion/complete";
        /// Set the log level (legacy era).
        LOGGING_SET_LEVEL = "logging/setLevel";
        /// A log message.
        LOGGING_MESSAGE = "notifications/message";
        /// Sampling.
        SAMPLING_CREATE_MESSAGE = "sampling/createMessage";
        /// Elicitation (2025-06-18+).
        ELICITATION_CREATE = "elicitation/create";
        /// URL elicitation finished (2025-11-25).
        ELICITATION_COMPLETE = "notifications/elicitation/complete";
        /// List roots.
        ROOTS_LIST = "roots/list";
        /// Roots changed (legacy era).
        ROOTS_LIST_CHANGED = "notifications/roots/list_changed";
        /// Progress.
        PROGRESS = "notifications/progress";
        /// Cancellation.
        CANCELLED = "notifications/cancelled";
        /// Task status (2025-11-25 and extension).
        TASKS_GET = "tasks/get";
        /// Task payload (2025-11-25).
        TASKS_RESULT = "tasks/result";
        /// List tasks (2025-11-25).
        TASKS_LIST = "tasks/list";
        /// Cancel a task (2025-11-25 and extension).
        TASKS_CANCEL = "tasks/cancel";
        /// Answer a task's input requests (extension).
        TASKS_UPDATE = "tasks/update";
        /// Task status changed (2025-11-25).
        TASKS_STATUS = "notifications/tasks/status";
        /// Task status changed (extension).
        TASKS_NOTIFICATION = "notifications/tasks";
    }
}

/// Why a payload could not be decoded as the type its method calls for.
#[derive(Debug, thiserror::Error)]
#[error("invalid {what} for `{method}`: {source}")]
#[non_exhaustive]
pub struct DecodeError {
    /// `params` or `result`.
    pub what: &'static str,
    /// The method.
    pub method: String,
    /// What serde said.
    #[source]
    pub source: serde_json::Error,
}

fn decode<T: DeserializeOwned>(
    what: &'static str,
    method: &str,
    raw: Option<&RawValue>,
) -> Result<T, DecodeError> {
    serde_json::from_str(raw.map_or("{}", RawValue::get)).map_err(|source| DecodeError {
        what,
        method: method.to_owned(),
        source,
    })
}

/// The params of a method this crate does not know, as a `Value`; an error (never `None`)
/// when they do not read as one (a number beyond `f64`, say), so nothing is dropped unseen.
fn raw_value(
    what: &'static str,
    method: &str,
    raw: Option<&RawValue>,
) -> Result<Option<Value>, DecodeError> {
    raw.map(|r| decode(what, method, Some(r))).transpose()
}

macro_rules! typed_enum {
    (
        $(#[$m:meta])*
        pub enum $name:ident ($what:literal) {
            $( $(#[$vm:meta])* $variant:ident($ty:ty) = $($method:path)|+ ),* $(,)?
        }
    ) => {
        $(#[$m])*
        // A decoded payload lives briefly; boxing variants would add an allocation per message.
        #[allow(clippy::large_enum_variant)]
        #[derive(Debug, Clone, PartialEq)]
        pub enum $name {
            $( $(#[$vm])* $variant($ty), )*
            /// A method this crate does not know; params kept raw.
            Other {
                /// The method.
                method: String,
                /// The params, if any.
                params: Option<Value>,
            },
        }

        impl $name {
            /// Decodes `params` by `method`.
            pub fn decode(method: &str, params: Option<&RawValue>) -> Result<Self, DecodeError> {
                Ok(match method {
                    $( $($method)|+ => $name::$variant(decode($what, method, params)?), )*
                    _ => $name::Other { method: method.to_owned(), params: raw_value($what, method, params)? },
                })
            }

            /// Encodes the payload back to JSON.
            pub fn to_value(&self) -> Value {
                match self {
                    $( $name::$variant(p) => to_value(p), )*
                    $name::Other { params, .. } => params.clone().unwrap_or(Value::Null),
                }
            }
        }
    };
}

fn to_value<T: Serialize>(t: &T) -> Value {
    // Wire types serialize infallibly: all map keys are strings.
    serde_json::to_value(t).unwrap_or(Value::Null)
}

typed_enum! {
    /// The params of any request, typed by method.
    pub enum TypedRequest("params") {
        /// `initialize`
        Initialize(InitializeRequestParams) = method::INITIALIZE,
        /// Requests whose params hold only `_meta`.
        Bare(RequestParams) = method::PING | method::DISCOVER,
        /// Paginated list requests.
        List(PaginatedRequestParams) = method::TOOLS_LIST | method::PROMPTS_LIST | method::RESOURCES_LIST
            | method::RESOURCES_TEMPLATES_LIST | method::ROOTS_LIST | method::TASKS_LIST,
        /// `tools/call`
        CallTool(CallToolRequestParams) = method::TOOLS_CALL,
        /// `prompts/get`
        GetPrompt(GetPromptRequestParams) = method::PROMPTS_GET,
        /// `resources/read`, `resources/subscribe`, `resources/unsubscribe`
        Resource(ResourceRequestParams) = method::RESOURCES_READ | method::RESOURCES_SUBSCRIBE | method::RESOURCES_UNSUBSCRIBE,
        /// `completion/complete`
        Complete(CompleteRequestParams) = method::COMPLETION_COMPLETE,
        /// `logging/setLevel`
        SetLevel(SetLevelRequestParams) = method::LOGGING_SET_LEVEL,
        /// `sampling/createMessage`
        CreateMessage(CreateMessageRequestParams) = method::SAMPLING_CREATE_MESSAGE,
        /// `elicitation/create`
        Elicit(ElicitRequestParams) = method::ELICITATION_CREATE,
        /// `subscriptions/listen`
        Listen(SubscriptionsListenRequestParams) = method::SUBSCRIPTIONS_LISTEN,
        /// `tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/update`
        Task(TaskRequestParams) = method::TASKS_GET | method::TASKS_RESULT | method::TASKS_CANCEL | method::TASKS_UPDATE,
    }
}

typed_enum! {
    /// The params of any notification, typed by method.
    pub enum TypedNotification("params") {
        /// Notifications whose params hold only `_meta`.
        Bare(RequestParams) = method::INITIALIZED | method::TOOLS_LIST_CHANGED | method::PROMPTS_LIST_CHANGED
            | method::RESOURCES_LIST_CHANGED | method::ROOTS_LIST_CHANGED,
        /// `notifications/cancelled`
        Cancelled(CancelledNotificationParams) = method::CANCELLED,
        /// `notifications/progress`
        Progress(ProgressNotificationParams) = method::PROGRESS,
        /// `notifications/message`
        Log(LoggingMessageNotificationParams) = method::LOGGING_MESSAGE,
        /// `notifications/resources/updated`
        ResourceUpdated(ResourceUpdatedNotificationParams) = method::RESOURCES_UPDATED,
        /// `notifications/elicitation/complete`
        ElicitationComplete(ElicitationCompleteNotificationParams) = method::ELICITATION_COMPLETE,
        /// `notifications/tasks/status`, `notifications/tasks`
        TaskStatus(Task) = method::TASKS_STATUS | method::TASKS_NOTIFICATION,
        /// `notifications/subscriptions/acknowledged`
        SubscriptionsAcknowledged(SubscriptionsListenRequestParams) = method::SUBSCRIPTIONS_ACKNOWLEDGED,
    }
}

/// A result, typed by the method of the request it answers.
#[allow(clippy::large_enum_variant)] // short-lived, as above
#[derive(Debug, Clone, PartialEq)]
pub enum TypedResult {
    /// `initialize`
    Initialize(InitializeResult),
    /// `server/discover`
    Discover(DiscoverResult),
    /// `ping`, `logging/setLevel`, `resources/(un)subscribe`, `tasks/update`, extension `tasks/cancel`
    Empty(EmptyResult),
    /// `tools/list`
    ListTools(ListToolsResult),
    /// `tools/call`
    CallTool(CallToolResult),
    /// `prompts/list`
    ListPrompts(ListPromptsResult),
    /// `prompts/get`
    GetPrompt(GetPromptResult),
    /// `resources/list`
    ListResources(ListResourcesResult),
    /// `resources/templates/list`
    ListResourceTemplates(ListResourceTemplatesResult),
    /// `resources/read`
    ReadResource(ReadResourceResult),
    /// `completion/complete`
    Complete(CompleteResult),
    /// `sampling/createMessage`
    CreateMessage(CreateMessageResult),
    /// `elicitation/create`
    Elicit(ElicitResult),
    /// `roots/list`
    ListRoots(ListRootsResult),
    /// `subscriptions/listen`
    Listen(SubscriptionsListenResult),
    /// 2026-07-28 `resultType: "input_required"` (tools/call, prompts/get, resources/read).
    InputRequired(InputRequiredResult),
    /// 2025-11-25 answer to a task-augmented request.
    CreateTask(CreateTaskResult),
    /// `tasks/get`, 2025-11-25 `tasks/cancel`, and the extension's `resultType: "task"` answer to `tools/call`.
    Task(Task),
    /// 2025-11-25 `tasks/list`
    ListTasks(ListTasksResult),
    /// 2025-11-25 `tasks/result`: the underlying request's result, kept raw.
    TaskPayload(Value),
    /// A method this crate does not know; result kept raw.
    Other(Value),
}

/// Methods whose 2026-07-28 result may be an [`InputRequiredResult`].
pub const INPUT_REQUIRED_METHODS: [&str; 3] = [
    method::TOOLS_CALL,
    method::PROMPTS_GET,
    method::RESOURCES_READ,
];

impl TypedResult {
    /// Decodes `result` as the answer to a request for `method`.
    pub fn decode(method: &str, result: &RawValue) -> Result<Self, DecodeError> {
        let raw = Some(result);
        if INPUT_REQUIRED_METHODS.contains(&method) {
            match peek_result_type(result).as_deref() {
                Some("input_required") => {
                    return Ok(TypedResult::InputRequired(decode("result", method, raw)?))
                }
                Some("task") if method == method::TOOLS_CALL => {
                    return Ok(TypedResult::Task(decode("result", method, raw)?))
                }
                _ => {}
            }
        }
        Ok(match method {
            method::INITIALIZE => TypedResult::Initialize(decode("result", method, raw)?),
            method::DISCOVER => TypedResult::Discover(decode("result", method, raw)?),
            method::PING
            | method::LOGGING_SET_LEVEL
            | method::RESOURCES_SUBSCRIBE
            | method::RESOURCES_UNSUBSCRIBE
            | method::TASKS_UPDATE => TypedResult::Empty(decode("result", method, raw)?),
            method::TOOLS_LIST => TypedResult::ListTools(decode("result", method, raw)?),
            method::TOOLS_CALL => TypedResult::CallTool(decode("result", method, raw)?),
            method::PROMPTS_LIST => TypedResult::ListPrompts(decode("result", method, raw)?),
            method::PROMPTS_GET => TypedResult::GetPrompt(decode("result", method, raw)?),
            method::RESOURCES_LIST => TypedResult::ListResources(decode("result", method, raw)?),
            method::RESOURCES_TEMPLATES_LIST => {
                TypedResult::ListResourceTemplates(decode("result", method, raw)?)
            }
            method::RESOURCES_READ => TypedResult::ReadResource(decode("result", method, raw)?),
            method::COMPLETION_COMPLETE => TypedResult::Complete(decode("result", method, raw)?),
            method::SAMPLING_CREATE_MESSAGE => {
                TypedResult::CreateMessage(decode("result", method, raw)?)
            }
            method::ELICITATION_CREATE => TypedResult::Elicit(decode("result", method, raw)?),
            method::ROOTS_LIST => TypedResult::ListRoots(decode("result", method, raw)?),
            method::SUBSCRIPTIONS_LISTEN => TypedResult::Listen(decode("result", method, raw)?),
            method::TASKS_GET => TypedResult::Task(decode("result", method, raw)?),
            method::TASKS_CANCEL => match peek_result_type(result).as_deref() {
                // The extension acknowledges with an empty result; 2025-11-25 returns the task.
                Some("complete") => TypedResult::Empty(decode("result", method, raw)?),
                _ => TypedResult::Task(decode("result", method, raw)?),
            },
            method::TASKS_LIST => TypedResult::ListTasks(decode("result", method, raw)?),
            method::TASKS_RESULT => TypedResult::TaskPayload(decode("result", method, raw)?),
            _ => TypedResult::Other(decode("result", method, raw)?),
        })
    }

    /// Decodes the answer to a 2025-11-25 task-augmented request (one sent with `params.task`).
    pub fn decode_task_created(method: &str, result: &RawValue) -> Result<Self, DecodeError> {
        decode("result", method, Some(result)).map(TypedResult::CreateTask)
    }

    /// Encodes the result back to JSON.
    pub fn to_value(&self) -> Value {
        match self {
            TypedResult::Initialize(r) => to_value(r),
            TypedResult::Discover(r) => to_value(r),
            TypedResult::Empty(r) => to_value(r),
            TypedResult::ListTools(r) => to_value(r),
            TypedResult::CallTool(r) => to_value(r),
            TypedResult::ListPrompts(r) => to_value(r),
            TypedResult::GetPrompt(r) => to_value(r),
            TypedResult::ListResources(r) => to_value(r),
            TypedResult::ListResourceTemplates(r) => to_value(r),
            TypedResult::ReadResource(r) => to_value(r),
            TypedResult::Complete(r) => to_value(r),
            TypedResult::CreateMessage(r) => to_value(r),
            TypedResult::Elicit(r) => to_value(r),
            TypedResult::ListRoots(r) => to_value(r),
            TypedResult::Listen(r) => to_value(r),
            TypedResult::InputRequired(r) => to_value(r),
            TypedResult::CreateTask(r) => to_value(r),
            TypedResult::Task(r) => to_value(r),
            TypedResult::ListTasks(r) => to_value(r),
            TypedResult::TaskPayload(v) | TypedResult::Other(v) => v.clone(),
        }
    }
}

/// Reads only the top-level `resultType` of a raw result.
pub fn peek_result_type(result: &RawValue) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Peek {
        #[serde(rename = "resultType")]
        result_type: Option<String>,
    }
    serde_json::from_str::<Peek>(result.get()).ok()?.result_type
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).expect("raw")
    }

    #[test]
    fn results_are_decoded_by_method_not_shape() {
        // The same bytes mean different things for different methods.
        let r = raw(r#"{"_meta":{}}"#);
        assert!(matches!(
            TypedResult::decode("ping", &r),
            Ok(TypedResult::Empty(_))
        ));
        assert!(
            TypedResult::decode("tools/list", &r).is_err(),
            "tools/list result needs `tools`"
        );
        let r = raw(r#"{"resultType":"input_required","requestState":"s"}"#);
        assert!(matches!(
            TypedResult::decode("tools/call", &r),
            Ok(TypedResult::InputRequired(_))
        ));
        let r = raw(r#"{"content":[]}"#);
        assert!(matches!(
            TypedResult::decode("tools/call", &r),
            Ok(TypedResult::CallTool(_))
        ));
        let r = raw(r#"{"x":1}"#);
        assert!(matches!(
            TypedResult::decode("vendor/thing", &r),
            Ok(TypedResult::Other(_))
        ));
    }

    #[test]
    fn unknown_methods_keep_their_params_or_say_why_not() {
        let p = raw(r#"{"x":[1,"a"]}"#);
        assert_eq!(
            TypedRequest::decode("vendor/thing", Some(&p)).expect("decodes"),
            TypedRequest::Other {
                method: "vendor/thing".into(),
                params: Some(serde_json::json!({"x": [1, "a"]}))
            }
        );
        // Found by the `typed` fuzz target: params no `Value` holds were dropped silently.
        let p = raw(r#"{"x":1e400}"#);
        let e = TypedRequest::decode("vendor/thing", Some(&p)).unwrap_err();
        assert_eq!(e.method, "vendor/thing");
        assert!(TypedNotification::decode("vendor/thing", Some(&p)).is_err());
    }

    #[test]
    fn wrong_types_are_errors_that_name_the_method() {
        let e = TypedRequest::decode("tools/call", Some(&raw(r#"{"name":5}"#))).unwrap_err();
        assert_eq!(e.method, "tools/call");
        assert!(e.to_string().contains("tools/call"));
    }
}
