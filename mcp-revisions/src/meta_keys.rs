//! The `_meta` keys MCP itself defines, and the revisions that define them.

use mcp_types::meta;

use crate::shapes::RevisionSet;

/// `(key, revisions)` for every MCP-defined `_meta` key.
pub static META_KEYS: &[(&str, RevisionSet)] = &[
    (meta::PROGRESS_TOKEN, RevisionSet::ALL),
    (meta::RELATED_TASK, RevisionSet::parse("...X.")),
    (meta::MODEL_IMMEDIATE_RESPONSE, RevisionSet::parse("...X.")),
    (meta::PROTOCOL_VERSION, RevisionSet::parse("....X")),
    (meta::CLIENT_CAPABILITIES, RevisionSet::parse("....X")),
    (meta::CLIENT_INFO, RevisionSet::parse("....X")),
    (meta::LOG_LEVEL, RevisionSet::parse("....X")),
    (meta::SERVER_INFO, RevisionSet::parse("....X")),
    (meta::SUBSCRIPTION_ID, RevisionSet::parse("....X")),
];

/// The revisions that define `key`, if MCP defines it.
pub fn revisions_of(key: &str) -> Option<RevisionSet> {
    META_KEYS.iter().find(|(k, _)| *k == key).map(|(_, r)| *r)
}
