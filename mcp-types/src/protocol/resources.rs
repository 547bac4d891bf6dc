//! Resources: list, templates, read, subscriptions (legacy era), updates.

use super::common::{Annotations, CacheScope, Cursor, Icon, JsonObject, ResultType};
use super::content::ResourceContents;
use crate::meta::Meta;
use crate::model::wire_object;

wire_object! {
    /// A resource a server offers.
    pub struct Resource {
        /// URI.
        req uri: String,
        /// Programmatic name.
        req name: String,
        /// Display name (2025-06-18+).
        opt title: String,
        /// Description.
        opt description: String,
        /// MIME type.
        opt mime_type: String,
        /// Size in bytes (2025-03-26+).
        opt size: u64,
        /// Display hints.
        opt annotations: Annotations,
        /// Icons (2025-11-25+).
        opt icons: Vec<Icon>,
        /// Metadata (2025-06-18+).
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// A URI template for resources.
    pub struct ResourceTemplate {
        /// RFC 6570 URI template.
        req uri_template: String,
        /// Programmatic name.
        req name: String,
        /// Display name (2025-06-18+).
        opt title: String,
        /// Description.
        opt description: String,
        /// MIME type.
        opt mime_type: String,
        /// Display hints.
        opt annotations: Annotations,
        /// Icons (2025-11-25+).
        opt icons: Vec<Icon>,
        /// Metadata (2025-06-18+).
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// Result of `resources/list`.
    pub struct ListResourcesResult {
        /// The resources on this page.
        req resources: Vec<Resource>,
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
    /// Result of `resources/templates/list`.
    pub struct ListResourceTemplatesResult {
        /// The templates on this page.
        req resource_templates: Vec<ResourceTemplate>,
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
    /// Params of `resources/read`, `resources/subscribe` and `resources/unsubscribe`.
    pub struct ResourceRequestParams {
        /// The resource URI.
        req uri: String,
        /// 2026-07-28: answers to the server's `inputRequests` (`resources/read`).
        opt input_responses: JsonObject,
        /// 2026-07-28: the server's `requestState`, echoed exactly (`resources/read`).
        opt request_state: String,
        /// Request metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// Result of `resources/read`.
    pub struct ReadResourceResult {
        /// The contents.
        req contents: Vec<ResourceContents>,
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
    /// Params of `notifications/resources/updated`.
    pub struct ResourceUpdatedNotificationParams {
        /// The resource that changed.
        req uri: String,
        /// Notification metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}
