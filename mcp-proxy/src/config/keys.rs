//! The keys each object of the configuration may hold: anything else is an error that
//! names the key and the nearest known one, because a misspelt policy (`denyTool` for
//! `denyTools`) silently ignored would expose what the operator meant to hide.

use serde_json::{Map, Value};

use std::sync::LazyLock;

use super::file;

/// A list of the keys one object may hold, read from the file's schema ([`file`]).
pub(super) type Known = LazyLock<Vec<String>>;

/// The top level.
pub(super) static ROOT: Known = LazyLock::new(file::keys_of::<file::ConfigFile>);

/// One entry of `mcpServers`. `type` and `disabled` are there because other hosts' files
/// (Cursor, VS Code, Cline) carry them.
pub(super) static SERVER: Known = LazyLock::new(file::keys_of::<file::Server>);

/// A `url` server's `auth`.
pub(super) static UPSTREAM_AUTH: Known = LazyLock::new(file::keys_of::<file::UpstreamAuth>);

/// One entry of a server's `overrides`.
pub(super) static OVERRIDE: Known = LazyLock::new(file::keys_of::<file::ToolOverride>);

/// The `gateway` object.
pub(super) static GATEWAY: Known = LazyLock::new(file::keys_of::<file::Gateway>);

/// `gateway.http`.
pub(super) static HTTP: Known = LazyLock::new(file::keys_of::<file::Http>);

/// `gateway.auth`.
pub(super) static AUTH: Known = LazyLock::new(file::keys_of::<file::Auth>);

/// `gateway.auth.jwt`.
pub(super) static JWT: Known = LazyLock::new(file::keys_of::<file::Jwt>);

/// One of `gateway.auth.apiKeys`.
pub(super) static API_KEY: Known = LazyLock::new(file::keys_of::<file::ApiKey>);

/// `gateway.pins`.
pub(super) static PINS: Known = LazyLock::new(file::keys_of::<file::Pins>);

/// One of `gateway.views`.
pub(super) static VIEW: Known = LazyLock::new(file::keys_of::<file::View>);

/// The first member of `obj` not in `known`, with what to say about it.
pub(super) fn unknown(obj: &Map<String, Value>, known: &[String]) -> Option<(String, String)> {
    let key = obj.keys().find(|k| !known.contains(k))?;
    let problem = match nearest(key, known) {
        Some(near) => format!("unknown key `{key}`; did you mean `{near}`?"),
        None => format!("unknown key `{key}`; known keys here: {}", known.join(", ")),
    };
    Some((key.clone(), problem))
}

/// The known key closest to `key` (ignoring case), if it is close enough to be a typo:
/// at most a third of its length in edits.
fn nearest<'k>(key: &str, known: &'k [String]) -> Option<&'k str> {
    let key = key.to_ascii_lowercase();
    known
        .iter()
        .map(|k| (edit_distance(&key, &k.to_ascii_lowercase()), k.as_str()))
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
        assert_eq!(nearest("denyTool", &SERVER), Some("denyTools"));
        assert_eq!(nearest("allowtools", &SERVER), Some("allowTools"));
        assert_eq!(nearest("comand", &SERVER), Some("command"));
        assert_eq!(nearest("seperator", &GATEWAY), Some("separator"));
        assert_eq!(nearest("frobnicate", &SERVER), None);
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
