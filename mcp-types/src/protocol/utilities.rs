//! Completion, logging, progress and cancellation.

use serde_json::Value;

use super::common::{JsonObject, LoggingLevel, ProgressToken, ResultType};
use crate::meta::Meta;
use crate::model::wire_object;
use crate::RequestId;

wire_object! {
    /// What `completion/complete` completes for: a prompt (`ref/prompt`) or a resource template
    /// (`ref/resource`).
    pub struct CompleteReference {
        /// `ref/prompt` or `ref/resource`.
        #[serde(rename = "type")]
        req kind: String,
        /// Prompt name.
        opt name: String,
        /// Prompt display name (2025-06-18+).
        opt title: String,
        /// Resource template URI.
        opt uri: String,
    }
}

wire_object! {
    /// The argument being completed.
    pub struct CompleteArgument {
        /// Argument name.
        req name: String,
        /// Value typed so far.
        req value: String,
    }
}

wire_object! {
    /// Already-resolved arguments (2025-06-18+).
    pub struct CompleteContext {
        /// Argument values by name.
        opt arguments: JsonObject,
    }
}

wire_object! {
    /// Params of `completion/complete`.
    pub struct CompleteRequestParams {
        /// What to complete for.
        #[serde(rename = "ref")]
        req reference: CompleteReference,
        /// The argument.
        req argument: CompleteArgument,
        /// Context (2025-06-18+).
        opt context: CompleteContext,
        /// Request metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// The completions.
    pub struct Completion {
        /// Up to 100 values.
        req values: Vec<String>,
        /// Total number of matches.
        opt total: serde_json::Number,
        /// Whether more exist.
        opt has_more: bool,
    }
}

wire_object! {
    /// Result of `completion/complete`.
    pub struct CompleteResult {
        /// The completions.
        req completion: Completion,
        /// 2026-07-28 result type.
        opt result_type: ResultType,
        /// Result metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// Params of `logging/setLevel` (legacy era).
    pub struct SetLevelRequestParams {
        /// Minimum level to send.
        req level: LoggingLevel,
        /// Request metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// Params of `notifications/message`.
    pub struct LoggingMessageNotificationParams {
        /// Severity.
        req level: LoggingLevel,
        /// Logger name.
        opt logger: String,
        /// Any JSON.
        req data: Value,
        /// Notification metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// Params of `notifications/progress`.
    pub struct ProgressNotificationParams {
        /// The token from the request's `_meta.progressToken`.
        req progress_token: ProgressToken,
        /// Progress so far: a JSON number, kept exactly as sent.
        req progress: serde_json::Value,
        /// Total, if known.
        opt total: serde_json::Number,
        /// Human-readable message (2025-03-26+).
        opt message: String,
        /// Notification metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// Params of `notifications/cancelled`.
    pub struct CancelledNotificationParams {
        /// The request to cancel (optional in 2025-11-25, where tasks use `tasks/cancel`).
        opt request_id: RequestId,
        /// Why.
        opt reason: String,
        /// Notification metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}
