//! The keys each object of the configuration may hold: anything else is an error that
//! names the key and the nearest known one, because a misspelt policy (`denyTool` for
//! `denyTools`) silently ignored would expose what the operator meant to hide.
//!
//! The types of [`super::file`] refuse such a key too (`deny_unknown_fields`), but serde's
//! error says neither where the key is nor which was meant. So before the file is
//! deserialized this pass walks it beside its schema, which is generated from those same
//! types: the keys it knows are theirs.
//!
//! It also refuses anything but an object where the schema has one: serde would read a
//! struct from an array of its members in order, a form the file has never had.

use serde_json::{Map, Value};

use super::schema::SCHEMA;
use super::{join, Problem};

/// The first key in `file` that its object may not hold, said with the key meant (or the
/// first object that is not one).
pub(super) fn unknown_key(file: &Value) -> Option<Problem> {
    walk(&SCHEMA, file, "")
}

/// The first unknown key in `value` (at `at`), which `schema` describes.
fn walk(schema: &Value, value: &Value, at: &str) -> Option<Problem> {
    let schema = resolve(schema);
    match value {
        Value::Object(obj) => match schema.get("properties").and_then(Value::as_object) {
            Some(known) => {
                if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
                    if let Some(problem) = unknown(obj, known, at) {
                        return Some(problem);
                    }
                }
                obj.iter()
                    .find_map(|(k, v)| walk(known.get(k)?, v, &join(at, k)))
            }
            // A map (`mcpServers`, `overrides`): its keys are the operator's own.
            None => {
                let values = schema
                    .get("additionalProperties")
                    .filter(|s| s.is_object())?;
                obj.iter().find_map(|(k, v)| walk(values, v, &join(at, k)))
            }
        },
        _ if schema.get("properties").is_some() => Some(Problem::new(at, "must be an object")),
        Value::Array(items) => {
            let item = schema.get("items")?;
            items
                .iter()
                .enumerate()
                .find_map(|(n, v)| walk(item, v, &format!("{at}[{n}]")))
        }
        _ => None,
    }
}

/// `schema` with its `$ref` (to the schema's `$defs`) followed.
fn resolve(schema: &Value) -> &Value {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|name| SCHEMA.get("$defs")?.get(name))
        .unwrap_or(schema)
}

/// The first member of `obj` (at `at`) that `known` does not list.
fn unknown(obj: &Map<String, Value>, known: &Map<String, Value>, at: &str) -> Option<Problem> {
    let key = obj.keys().find(|k| !known.contains_key(*k))?;
    let mut names: Vec<&str> = known.keys().map(String::as_str).collect();
    names.sort_unstable();
    let problem = match nearest(key, &names) {
        Some(near) => format!("unknown key `{key}`; did you mean `{near}`?"),
        None => format!("unknown key `{key}`; known keys here: {}", names.join(", ")),
    };
    Some(Problem::new(join(at, key), problem))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys the schema gives the object `$defs/<def>`.
    fn keys_of(def: &str) -> Vec<&'static str> {
        SCHEMA["$defs"][def]["properties"]
            .as_object()
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    #[test]
    fn typos_are_matched_to_the_key_meant() {
        let (server, gateway) = (keys_of("Server"), keys_of("Gateway"));
        assert_eq!(nearest("denyTool", &server), Some("denyTools"));
        assert_eq!(nearest("allowtools", &server), Some("allowTools"));
        assert_eq!(nearest("comand", &server), Some("command"));
        assert_eq!(nearest("seperator", &gateway), Some("separator"));
        assert_eq!(nearest("frobnicate", &server), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn the_walk_reaches_maps_lists_and_nested_objects() {
        for (file, at) in [
            (r#"{"mcpServer": {}}"#, "mcpServer"),
            (
                r#"{"mcpServers": {"a": {"overrides": {"t": {"nme": "x"}}}}}"#,
                "mcpServers.a.overrides.t.nme",
            ),
            (
                r#"{"gateway": {"auth": {"apiKeys": [{"name": "a"}, {"nam": "b"}]}}}"#,
                "gateway.auth.apiKeys[1].nam",
            ),
            (
                r#"{"mcpServers": {"a": {"auth": {"type": "oauth", "scope": []}}}}"#,
                "mcpServers.a.auth.scope",
            ),
        ] {
            let file: Value = serde_json::from_str(file).expect("JSON");
            let problem = unknown_key(&file).expect("an unknown key");
            assert_eq!(problem.location, at);
        }
        // Keys the operator chooses, and what an object of hints holds, are not checked.
        let free = r#"{"mcpServers": {"any name": {"env": {"ANY": "x"}, "headers": {"X-Any": "y"},
            "overrides": {"any_tool": {"annotations": {"anyHint": true}}}}}}"#;
        let free: Value = serde_json::from_str(free).expect("JSON");
        assert!(unknown_key(&free).is_none());
    }
}
