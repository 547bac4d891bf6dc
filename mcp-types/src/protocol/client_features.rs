//! What a server may ask of a client: sampling, elicitation, roots.
//!
//! In the legacy era these are server→client requests; in 2026-07-28 they travel
//! inside an [`crate::protocol::InputRequiredResult`].

use serde_json::Value;

use super::common::{JsonObject, ResultType, Role};
use super::content::SamplingContent;
use super::tasks::TaskMetadata;
use super::tools::Tool;
use crate::meta::Meta;
use crate::model::{open_enum, wire_object};

wire_object! {
    /// A message in a sampling conversation.
    pub struct SamplingMessage {
        /// Who says it.
        req role: Role,
        /// One block, or several (2025-11-25+).
        req content: SamplingContent,
        /// Metadata (2025-11-25+).
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// A model name hint.
    pub struct ModelHint {
        /// A (sub)string of a model name.
        opt name: String,
    }
}

wire_object! {
    /// The server's preferences for model selection.
    pub struct ModelPreferences {
        /// Model name hints, in order of preference.
        opt hints: Vec<ModelHint>,
        /// 0..1 weight of cost.
        opt cost_priority: serde_json::Number,
        /// 0..1 weight of speed.
        opt speed_priority: serde_json::Number,
        /// 0..1 weight of intelligence.
        opt intelligence_priority: serde_json::Number,
    }
}

wire_object! {
    /// Params of `sampling/createMessage`.
    pub struct CreateMessageRequestParams {
        /// The conversation.
        req messages: Vec<SamplingMessage>,
        /// Model preferences.
        opt model_preferences: ModelPreferences,
        /// System prompt.
        opt system_prompt: String,
        /// `none`, `thisServer` or `allServers`.
        opt include_context: String,
        /// Sampling temperature.
        opt temperature: serde_json::Number,
        /// Token limit.
        req max_tokens: u64,
        /// Stop sequences.
        opt stop_sequences: Vec<String>,
        /// Provider-specific metadata.
        opt metadata: JsonObject,
        /// Tools the model may use (2025-11-25+).
        opt tools: Vec<Tool>,
        /// Tool choice (2025-11-25+), kept raw.
        #[serde(deserialize_with = "crate::serde_util::present")]
        opt tool_choice: Value,
        /// 2025-11-25: run as a task.
        opt task: TaskMetadata,
        /// Request metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// Result of `sampling/createMessage`.
    pub struct CreateMessageResult {
        /// Who says it (the assistant).
        req role: Role,
        /// What the model produced.
        req content: SamplingContent,
        /// The model used.
        req model: String,
        /// Why sampling stopped.
        opt stop_reason: String,
        /// 2026-07-28 result type.
        opt result_type: ResultType,
        /// Result metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// Params of `elicitation/create`, form mode (2025-06-18+) or URL mode (2025-11-25+).
    pub struct ElicitRequestParams {
        /// `form` (default) or `url`.
        opt mode: String,
        /// What to ask the user.
        req message: String,
        /// Form mode: the schema of the answer, kept raw.
        #[serde(deserialize_with = "crate::serde_util::present")]
        opt requested_schema: Value,
        /// URL mode: where to send the user.
        opt url: String,
        /// URL mode: id of this elicitation (2025-11-25).
        opt elicitation_id: String,
        /// 2025-11-25: run as a task.
        opt task: TaskMetadata,
        /// Request metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

open_enum! {
    /// What the user did with an elicitation.
    pub enum ElicitAction {
        /// `accept`
        Accept = "accept",
        /// `decline`
        Decline = "decline",
        /// `cancel`
        Cancel = "cancel",
    }
}

wire_object! {
    /// Result of `elicitation/create`.
    pub struct ElicitResult {
        /// The user's action.
        req action: ElicitAction,
        /// The submitted form (on accept).
        opt content: JsonObject,
        /// 2026-07-28 result type.
        opt result_type: ResultType,
        /// Result metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// Params of `notifications/elicitation/complete` (2025-11-25).
    pub struct ElicitationCompleteNotificationParams {
        /// The URL-mode elicitation that finished.
        req elicitation_id: String,
        /// Notification metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// A root the client exposes.
    pub struct Root {
        /// `file://` URI.
        req uri: String,
        /// Display name.
        opt name: String,
        /// Metadata (2025-06-18+).
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// Result of `roots/list`.
    pub struct ListRootsResult {
        /// The roots.
        req roots: Vec<Root>,
        /// 2026-07-28 result type.
        opt result_type: ResultType,
        /// Result metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// One property of an elicitation form's `requestedSchema`: a string, number, boolean or
    /// enum (single- or multi-select, titled or not) schema. One struct covers every variant;
    /// which members are set tells them apart.
    pub struct PrimitiveSchemaDefinition {
        /// `string`, `number`, `integer`, `boolean` or `array` (multi-select).
        #[serde(rename = "type")]
        req kind: String,
        /// Display name.
        opt title: String,
        /// Description.
        opt description: String,
        /// Default value.
        #[serde(deserialize_with = "crate::serde_util::present")]
        opt default: Value,
        /// Allowed values (untitled enum).
        #[serde(rename = "enum")]
        opt enum_values: Vec<Value>,
        /// Display names of `enum` values (legacy titled enum).
        opt enum_names: Vec<String>,
        /// Titled options (`[{const, title}]`).
        opt one_of: Vec<Value>,
        /// Item schema (multi-select).
        #[serde(deserialize_with = "crate::serde_util::present")]
        opt items: Value,
        /// String format (`email`, `uri`, `date`, `date-time`).
        opt format: String,
        /// Minimum string length.
        opt min_length: u64,
        /// Maximum string length.
        opt max_length: u64,
        /// Minimum number.
        opt minimum: serde_json::Number,
        /// Maximum number.
        opt maximum: serde_json::Number,
        /// Minimum selections.
        opt min_items: u64,
        /// Maximum selections.
        opt max_items: u64,
    }
}
