//! The keys each object of the configuration may hold: anything else is an error that
//! names the key and the nearest known one, because a misspelt policy (`denyTool` for
//! `denyTools`) silently ignored would expose what the operator meant to hide.

use serde_json::{Map, Value};

/// The top level.
pub(super) const ROOT: &[&str] = &["mcpServers", "gateway"];

/// One entry of `mcpServers`. `type` and `disabled` are read because other hosts' files
/// (Cursor, VS Code, Cline) carry them.
pub(super) const SERVER: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "type",
    "disabled",
    "namespace",
    "trusted",
    "protocolVersion",
    "allowTools",
    "denyTools",
    "session",
    "maxHostSessions",
    "hostSessionIdleSeconds",
    "callTimeoutSeconds",
    "maxMessageBytes",
    "overrides",
    "auth",
    "required",
];

/// A `url` server's `auth`.
pub(super) const UPSTREAM_AUTH: &[&str] = &[
    "type",
    "clientId",
    "clientSecret",
    "clientSecretEnv",
    "privateKeyFile",
    "signingAlgorithm",
    "keyId",
    "clientMetadataUrl",
    "redirectUri",
    "scopes",
    "tokenStore",
    "tokenFile",
    "dpop",
    "issuer",
];

/// One entry of a server's `overrides`.
pub(super) const OVERRIDE: &[&str] = &["name", "title", "description", "annotations"];

/// The `gateway` object.
pub(super) const GATEWAY: &[&str] = &[
    "auth",
    "views",
    "pins",
    "stdioSubject",
    "separator",
    "maxNameLength",
    "confirmDestructive",
    "surface",
    "callTimeoutSeconds",
];

/// `gateway.auth`.
pub(super) const AUTH: &[&str] = &[
    "resource",
    "authorizationServers",
    "requiredScopes",
    "scopesSupported",
    "jwt",
    "apiKeys",
];

/// `gateway.auth.jwt`.
pub(super) const JWT: &[&str] = &[
    "issuer",
    "audience",
    "jwksFile",
    "jwksUri",
    "algorithms",
    "leewaySeconds",
];

/// One of `gateway.auth.apiKeys`.
pub(super) const API_KEY: &[&str] = &["name", "key", "keyEnv", "subject", "scopes"];

/// `gateway.pins`.
pub(super) const PINS: &[&str] = &["file", "onChange", "unpinned"];

/// One of `gateway.views`.
pub(super) const VIEW: &[&str] = &[
    "name",
    "subjects",
    "scopes",
    "credentials",
    "upstreams",
    "allowTools",
    "denyTools",
    "surface",
];

/// The first member of `obj` not in `known`, with what to say about it.
pub(super) fn unknown(obj: &Map<String, Value>, known: &[&str]) -> Option<(String, String)> {
    let key = obj.keys().find(|k| !known.contains(&k.as_str()))?;
    let problem = match nearest(key, known) {
        Some(near) => format!("unknown key `{key}`; did you mean `{near}`?"),
        None => format!("unknown key `{key}`; known keys here: {}", known.join(", ")),
    };
    Some((key.clone(), problem))
}

/// The known key closest to `key` (ignoring case), if it is close enough to be a typo:
/// at most a third of its length in edits.
fn nearest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    let key = key.to_ascii_lowercase();
    known
        .iter()
        .map(|k| (edit_distance(&key, &k.to_ascii_lowercase()), *k))
        .filter(|(d, k)| *d <= k.len().max(3) / 3)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

/// Why a `separator` cannot be used, if it cannot: it goes into every exposed name, so it
/// must keep names inside what the strictest hosts accept (`[A-Za-z0-9_-]`, TOOL-03).
pub(super) fn bad_separator(s: &str) -> Option<String> {
    if s.is_empty() || s.chars().count() > 4 {
        return Some("must be 1 to 4 characters".into());
    }
    s.chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
        .map(|c| format!("{c:?} is not allowed: use letters, digits, `_` or `-` (TOOL-03)"))
}

/// Why an exposed tool name an operator chose cannot be used, if so: 1 to 64 characters
/// of `[A-Za-z0-9_.-]` (the spec's set, TOOL-01/03).
pub(super) fn bad_tool_name(n: &str) -> Option<String> {
    if n.is_empty() || n.chars().count() > 64 {
        return Some("must be 1 to 64 characters".into());
    }
    n.chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .map(|c| {
            format!("{c:?} is not allowed in a tool name: use letters, digits, `_`, `-` or `.`")
        })
}

/// Why a tool-name pattern cannot match anything an operator means, if so.
pub(super) fn bad_pattern(p: &str) -> Option<String> {
    if p.is_empty() {
        return Some("an empty pattern matches no tool".into());
    }
    p.chars()
        .find(|c| c.is_whitespace() || c.is_control())
        .map(|c| format!("pattern {p:?} holds {c:?}, which no tool name has"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_are_matched_to_the_key_meant() {
        assert_eq!(nearest("denyTool", SERVER), Some("denyTools"));
        assert_eq!(nearest("allowtools", SERVER), Some("allowTools"));
        assert_eq!(nearest("comand", SERVER), Some("command"));
        assert_eq!(nearest("seperator", GATEWAY), Some("separator"));
        assert_eq!(nearest("frobnicate", SERVER), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn separators_and_patterns_are_checked() {
        assert_eq!(bad_separator("__"), None);
        assert_eq!(bad_separator("-"), None);
        assert!(bad_separator("").is_some());
        assert!(bad_separator(".").unwrap().contains("TOOL-03"));
        assert!(bad_separator("::").is_some());
        assert!(bad_separator("_____").is_some());
        assert_eq!(bad_pattern("write_*"), None);
        assert!(bad_pattern("").is_some());
        assert!(bad_pattern("read file").is_some());
    }
}
