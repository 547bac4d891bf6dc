//! Starting a conversation: `initialize` (legacy era), `server/discover` and
//! `subscriptions/listen` (2026-07-28).

use super::common::{
    CacheScope, ClientCapabilities, Implementation, ResultType, ServerCapabilities,
};
use crate::meta::Meta;
use crate::model::wire_object;

wire_object! {
    /// Params of `initialize` (legacy era).
    pub struct InitializeRequestParams {
        /// The newest version the client supports (a string: it may be one we do not know).
        req protocol_version: String,
        /// The client's capabilities.
        req capabilities: ClientCapabilities,
        /// The client.
        req client_info: Implementation,
        /// Request metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// Result of `initialize` (legacy era).
    pub struct InitializeResult {
        /// The version the server chose.
        req protocol_version: String,
        /// The server's capabilities.
        req capabilities: ServerCapabilities,
        /// The server.
        req server_info: Implementation,
        /// Guidance for the model.
        opt instructions: String,
        /// Result metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// Result of `server/discover` (2026-07-28).
    pub struct DiscoverResult {
        /// Every protocol version the server speaks.
        req supported_versions: Vec<String>,
        /// The server's capabilities.
        req capabilities: ServerCapabilities,
        /// Guidance for the model.
        opt instructions: String,
        /// Cache lifetime in milliseconds.
        opt ttl_ms: serde_json::Number,
        /// Cache scope.
        opt cache_scope: CacheScope,
        /// Result type.
        opt result_type: ResultType,
        /// Result metadata (carries `io.modelcontextprotocol/serverInfo`).
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// Which notifications a `subscriptions/listen` stream carries (2026-07-28).
    pub struct SubscriptionFilter {
        /// `notifications/tools/list_changed`.
        opt tools_list_changed: bool,
        /// `notifications/prompts/list_changed`.
        opt prompts_list_changed: bool,
        /// `notifications/resources/list_changed`.
        opt resources_list_changed: bool,
        /// `notifications/resources/updated` for these URIs.
        opt resource_subscriptions: Vec<String>,
    }
}

wire_object! {
    /// Params of `subscriptions/listen` (2026-07-28) and of
    /// `notifications/subscriptions/acknowledged`.
    pub struct SubscriptionsListenRequestParams {
        /// The notifications wanted (or, in the acknowledgement, granted).
        req notifications: SubscriptionFilter,
        /// Request metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// Result of `subscriptions/listen`, sent when the stream ends (2026-07-28).
    pub struct SubscriptionsListenResult {
        /// Result type.
        opt result_type: ResultType,
        /// Result metadata (carries `io.modelcontextprotocol/subscriptionId`).
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}
