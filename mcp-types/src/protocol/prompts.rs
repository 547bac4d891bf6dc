//! Prompts: `prompts/list`, `prompts/get`.

use super::common::{CacheScope, Cursor, Icon, JsonObject, ResultType, Role};
use super::content::ContentBlock;
use crate::meta::Meta;
use crate::model::wire_object;

wire_object! {
    /// A prompt template a server offers.
    pub struct Prompt {
        /// Unique name.
        req name: String,
        /// Display name (2025-06-18+).
        opt title: String,
        /// Description.
        opt description: String,
        /// Arguments the template takes.
        opt arguments: Vec<PromptArgument>,
        /// Icons (2025-11-25+).
        opt icons: Vec<Icon>,
        /// Metadata (2025-06-18+).
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// An argument of a prompt template.
    pub struct PromptArgument {
        /// Argument name.
        req name: String,
        /// Display name (2025-06-18+).
        opt title: String,
        /// Description.
        opt description: String,
        /// Whether it must be given.
        opt required: bool,
    }
}

wire_object! {
    /// Result of `prompts/list`.
    pub struct ListPromptsResult {
        /// The prompts on this page.
        req prompts: Vec<Prompt>,
        /// Cursor of the next page.
        opt next_cursor: Cursor,
        /// 2026-07-28 cache lifetime in milliseconds (kept as sent: clients treat a negative value as 0).
        opt ttl_ms: serde_json::Number,
        /// 2026-07-28 cache scope.
        opt cache_scope: CacheScope,
        /// 2026-07-28 result type.
        opt result_type: ResultType,
        /// Result metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// Params of `prompts/get`.
    pub struct GetPromptRequestParams {
        /// Prompt name.
        req name: String,
        /// Argument values (strings on the wire; kept raw).
        opt arguments: JsonObject,
        /// 2026-07-28: answers to the server's `inputRequests`.
        opt input_responses: JsonObject,
        /// 2026-07-28: the server's `requestState`, echoed exactly.
        opt request_state: String,
        /// Request metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// One message of a prompt.
    pub struct PromptMessage {
        /// Who says it.
        req role: Role,
        /// What is said.
        req content: ContentBlock,
    }
}

wire_object! {
    /// Result of `prompts/get`.
    pub struct GetPromptResult {
        /// Description of the prompt.
        opt description: String,
        /// The messages.
        req messages: Vec<PromptMessage>,
        /// 2026-07-28 result type.
        opt result_type: ResultType,
        /// Result metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}
