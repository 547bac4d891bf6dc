//! Shapes shared by many messages: implementation info, icons, annotations, capabilities, pagination.

use serde_json::{Map, Value};

use crate::meta::Meta;
use crate::model::{open_enum, wire_object};

/// An opaque pagination cursor.
pub type Cursor = String;

/// A progress token (string or number), kept exactly.
pub type ProgressToken = crate::RequestId;

/// A JSON object kept raw (capability sub-objects, schemas, arguments).
pub type JsonObject = Map<String, Value>;

wire_object! {
    /// Name and version of an MCP implementation (`clientInfo`, `serverInfo`).
    pub struct Implementation {
        /// Programmatic name.
        req name: String,
        /// Version string.
        req version: String,
        /// Display name (2025-06-18+).
        opt title: String,
        /// Human-readable description (2025-11-25+).
        opt description: String,
        /// Icons (2025-11-25+).
        opt icons: Vec<Icon>,
        /// Website (2025-11-25+).
        opt website_url: String,
    }
}

wire_object! {
    /// An icon a client may show (2025-11-25+).
    pub struct Icon {
        /// URI of the image (`https:` or `data:`).
        req src: String,
        /// MIME type override.
        opt mime_type: String,
        /// Sizes such as `"48x48"` or `"any"`.
        opt sizes: Vec<String>,
        /// `light` or `dark`.
        opt theme: String,
    }
}

open_enum! {
    /// The sender or recipient of a message in a conversation.
    pub enum Role {
        /// `user`
        User = "user",
        /// `assistant`
        Assistant = "assistant",
    }
}

open_enum! {
    /// Syslog severities used by MCP logging.
    pub enum LoggingLevel {
        /// `debug`
        Debug = "debug",
        /// `info`
        Info = "info",
        /// `notice`
        Notice = "notice",
        /// `warning`
        Warning = "warning",
        /// `error`
        Error = "error",
        /// `critical`
        Critical = "critical",
        /// `alert`
        Alert = "alert",
        /// `emergency`
        Emergency = "emergency",
    }
}

open_enum! {
    /// 2026-07-28 `resultType`: tells a final result from a request for more input.
    pub enum ResultType {
        /// `complete`: the final result. An absent `resultType` means this.
        Complete = "complete",
        /// `input_required`: an [`crate::protocol::InputRequiredResult`].
        InputRequired = "input_required",
        /// `task` (tasks extension): a [`crate::protocol::ExtCreateTaskResult`].
        Task = "task",
    }
}

open_enum! {
    /// 2026-07-28 `cacheScope` of a cacheable result.
    pub enum CacheScope {
        /// `private`: reuse only within the same authorization context.
        Private = "private",
        /// `public`: may be shared across authorization contexts.
        Public = "public",
    }
}

wire_object! {
    /// Hints about how a client should use a piece of content or a resource.
    pub struct Annotations {
        /// Who the content is for.
        opt audience: Vec<Role>,
        /// Importance from 0 to 1 (kept as the exact JSON number).
        opt priority: serde_json::Number,
        /// ISO 8601 time of last modification (2025-06-18+).
        opt last_modified: String,
    }
}

wire_object! {
    /// Params of any request that takes only `_meta` (and of `ping`).
    pub struct RequestParams {
        /// Request metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// Params of a paginated list request.
    pub struct PaginatedRequestParams {
        /// Where to continue from.
        opt cursor: Cursor,
        /// Request metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// A result with no content of its own (`ping`, `logging/setLevel`, …).
    pub struct EmptyResult {
        /// 2026-07-28 result type.
        opt result_type: ResultType,
        /// Result metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// `listChanged` capability flag object.
    pub struct ListChangedCapability {
        /// Whether list-changed notifications are sent.
        opt list_changed: bool,
    }
}

wire_object! {
    /// The server's `resources` capability.
    pub struct ResourcesCapability {
        /// Whether `resources/subscribe` is supported (legacy era).
        opt subscribe: bool,
        /// Whether list-changed notifications are sent.
        opt list_changed: bool,
    }
}

wire_object! {
    /// What a client supports.
    pub struct ClientCapabilities {
        /// Non-standard capabilities.
        opt experimental: JsonObject,
        /// Roots (`roots/list`).
        opt roots: ListChangedCapability,
        /// Sampling (`sampling/createMessage`).
        opt sampling: JsonObject,
        /// Elicitation (2025-06-18+).
        opt elicitation: JsonObject,
        /// Tasks (2025-11-25).
        opt tasks: JsonObject,
        /// Extensions (2026-07-28), keyed by extension id.
        opt extensions: JsonObject,
    }
}

impl ClientCapabilities {
    /// Whether the client declared a capability an input request needs (sampling,
    /// elicitation or roots: the three kinds of `InputRequest`). A client that declared
    /// none of them is never asked for input, so a request of its never runs a second
    /// round.
    pub fn answers_input_requests(&self) -> bool {
        self.sampling.is_some() || self.elicitation.is_some() || self.roots.is_some()
    }
}

wire_object! {
    /// What a server supports.
    pub struct ServerCapabilities {
        /// Non-standard capabilities.
        opt experimental: JsonObject,
        /// Log messages.
        opt logging: JsonObject,
        /// Argument completion (2025-03-26+).
        opt completions: JsonObject,
        /// Prompts.
        opt prompts: ListChangedCapability,
        /// Resources.
        opt resources: ResourcesCapability,
        /// Tools.
        opt tools: ListChangedCapability,
        /// Tasks (2025-11-25).
        opt tasks: JsonObject,
        /// Extensions (2026-07-28), keyed by extension id.
        opt extensions: JsonObject,
    }
}
