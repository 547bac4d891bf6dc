//! The values of the file that are more than their JSON type: each is a type of its own
//! that both reads itself (with the reader's wording of what is wrong) and describes
//! itself in the schema, so the check and the schema's constraint are one piece of code.
//!
//! They read through a [`Value`] because what is wrong with a value is said the same way
//! whatever its JSON type (`"big"` and `0` are both not a positive integer), which serde's
//! per-type visitors would split into "invalid type" and "invalid value".

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// For `#[serde(default, deserialize_with = "given")]`: a member that may be left out but
/// not written `null`, for members whose `null` the reader has always refused (an object
/// such as `gateway.auth` written `null` is more likely a template's hole than a wish for
/// no authorization).
pub(super) fn given<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// A whole number from `MIN` to `MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Count<const MIN: u64, const MAX: u64>(pub(super) u64);

/// A count, a number of seconds or of bytes: at least 1.
pub(super) type Positive = Count<1, { u64::MAX }>;

/// Any whole number, 0 included (a wait that may be none).
pub(super) type Whole = Count<0, { u64::MAX }>;

impl<const MIN: u64, const MAX: u64> Count<MIN, MAX> {
    /// As a size (of a table, a message): past `usize`, as large as one can be.
    pub(super) fn usize(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }

    /// As a number of seconds.
    pub(super) fn seconds(self) -> std::time::Duration {
        std::time::Duration::from_secs(self.0)
    }

    /// What the value must be, as the error says it.
    fn must_be() -> String {
        match (MIN, MAX) {
            (0, u64::MAX) => "must be a whole number".into(),
            (1, u64::MAX) => "must be a positive integer".into(),
            _ => format!("must be an integer from {MIN} to {MAX}"),
        }
    }
}

impl<'de, const MIN: u64, const MAX: u64> Deserialize<'de> for Count<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d)?
            .as_u64()
            .filter(|n| (MIN..=MAX).contains(n))
            .map(Count)
            .ok_or_else(|| D::Error::custom(Self::must_be()))
    }
}

impl<const MIN: u64, const MAX: u64> JsonSchema for Count<MIN, MAX> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("Count{MIN}To{MAX}").into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let mut schema = json_schema!({"type": "integer", "format": "uint64", "minimum": MIN});
        if MAX < u64::MAX {
            schema.insert("maximum".into(), MAX.into());
        }
        schema
    }
}

/// One of the names a unit enum `T` is written as: an error lists them all, as `T`'s
/// schema does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Choice<T>(pub(super) T);

impl<'de, T: DeserializeOwned + JsonSchema> Deserialize<'de> for Choice<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        // A unit variant would also read from `{"name": null}`, which the file never held.
        let read = match value {
            Value::String(_) => T::deserialize(&value).ok(),
            _ => None,
        };
        read.map(Choice).ok_or_else(|| {
            let names = T::json_schema(&mut super::schema::generator())
                .get("enum")
                .and_then(Value::as_array)
                .map(|names| names.iter().map(Value::to_string).collect::<Vec<_>>())
                .unwrap_or_default();
            let names = either(&names);
            D::Error::custom(match value.as_str() {
                Some(s) => format!("{s:?} is not {names}"),
                None => format!("must be {names}"),
            })
        })
    }
}

/// The same schema as `T`, under `T`'s name: wrapping an enum changes how it reads, not
/// what the file may hold.
impl<T: JsonSchema> JsonSchema for Choice<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }

    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        T::schema_id()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
}

/// `a`, `a or b`, `a, b or c`.
fn either(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// A string member checked by `why_not` (a reason when it cannot be used).
fn checked_string<'de, D: Deserializer<'de>>(
    d: D,
    why_not: impl FnOnce(&str) -> Option<String>,
) -> Result<String, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) => match why_not(&s) {
            None => Ok(s),
            Some(problem) => Err(D::Error::custom(problem)),
        },
        _ => Err(D::Error::custom("must be a string")),
    }
}

/// `gateway.separator`: what goes between namespace and tool name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Separator(pub(super) String);

impl<'de> Deserialize<'de> for Separator {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        checked_string(d, bad_separator).map(Separator)
    }
}

impl JsonSchema for Separator {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Separator".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "pattern": "^[A-Za-z0-9_-]{1,4}$"})
    }
}

/// Why a `separator` cannot be used, if it cannot: it goes into every exposed name, so it
/// must keep names inside what the strictest hosts accept (`[A-Za-z0-9_-]`, TOOL-03).
fn bad_separator(s: &str) -> Option<String> {
    if s.is_empty() || s.chars().count() > 4 {
        return Some("must be 1 to 4 characters".into());
    }
    s.chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
        .map(|c| format!("{c:?} is not allowed: use letters, digits, `_` or `-` (TOOL-03)"))
}

/// An exposed tool name an operator chose (an override's `name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ToolName(pub(super) String);

impl<'de> Deserialize<'de> for ToolName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        checked_string(d, bad_tool_name).map(ToolName)
    }
}

impl JsonSchema for ToolName {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "ToolName".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "minLength": 1, "maxLength": 64,
                      "pattern": "^[A-Za-z0-9_.-]+$"})
    }
}

/// Why an exposed tool name an operator chose cannot be used, if so: 1 to 64 characters
/// of `[A-Za-z0-9_.-]` (the spec's set, TOOL-01/03).
fn bad_tool_name(n: &str) -> Option<String> {
    if n.is_empty() || n.chars().count() > 64 {
        return Some("must be 1 to 64 characters".into());
    }
    n.chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .map(|c| {
            format!("{c:?} is not allowed in a tool name: use letters, digits, `_`, `-` or `.`")
        })
}

/// A server's `url`: its MCP endpoint, over HTTP or HTTPS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct HttpUrl(pub(super) String);

impl<'de> Deserialize<'de> for HttpUrl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        checked_string(d, |url| {
            let http = url.starts_with("http://") || url.starts_with("https://");
            (!http).then(|| format!("{url:?} is not an http(s) URL"))
        })
        .map(HttpUrl)
    }
}

impl JsonSchema for HttpUrl {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "HttpUrl".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "pattern": "^https?://"})
    }
}

/// Tool-name patterns (`*` for any run of characters), each one a tool name could match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Patterns(pub(super) Vec<String>);

impl<'de> Deserialize<'de> for Patterns {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let strings = match Value::deserialize(d)? {
            Value::Array(items) => items
                .into_iter()
                .map(|item| match item {
                    Value::String(s) => Some(s),
                    _ => None,
                })
                .collect::<Option<Vec<String>>>(),
            _ => None,
        };
        let patterns = strings.ok_or_else(|| D::Error::custom("must be an array of strings"))?;
        match patterns.iter().find_map(|p| bad_pattern(p)) {
            Some(problem) => Err(D::Error::custom(problem)),
            None => Ok(Patterns(patterns)),
        }
    }
}

impl JsonSchema for Patterns {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Patterns".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "array", "items": {"type": "string", "pattern": "^\\S+$"}})
    }
}

/// Why a tool-name pattern cannot match anything an operator means, if so.
fn bad_pattern(p: &str) -> Option<String> {
    if p.is_empty() {
        return Some("an empty pattern matches no tool".into());
    }
    p.chars()
        .find(|c| c.is_whitespace() || c.is_control())
        .map(|c| format!("pattern {p:?} holds {c:?}, which no tool name has"))
}

/// A server's `protocolVersion`: one of the revisions of the revision table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pinned(pub(super) mcp_types::Revision);

impl<'de> Deserialize<'de> for Pinned {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        mcp_types::Revision::deserialize(d).map(Pinned)
    }
}

impl JsonSchema for Pinned {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Revision".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let all: Vec<&str> = mcp_types::Revision::ALL
            .iter()
            .map(|r| r.as_str())
            .collect();
        json_schema!({"type": "string", "enum": all})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read<T: DeserializeOwned>(json: &str) -> Result<T, String> {
        let value: Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
        T::deserialize(value).map_err(|e| e.to_string())
    }

    #[test]
    fn counts_say_what_they_must_be() {
        assert_eq!(read::<Positive>("5"), Ok(Count(5)));
        for bad in ["0", "-1", "\"big\"", "1.5", "null"] {
            assert_eq!(
                read::<Positive>(bad),
                Err("must be a positive integer".into())
            );
        }
        assert_eq!(
            read::<Count<16, 128>>("8"),
            Err("must be an integer from 16 to 128".into())
        );
        assert_eq!(read::<Whole>("0"), Ok(Count(0)));
    }

    #[test]
    fn choices_name_every_choice() {
        #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
        #[serde(rename_all = "kebab-case")]
        enum Size {
            Small,
            ExtraLarge,
        }
        assert_eq!(
            read::<Choice<Size>>("\"extra-large\""),
            Ok(Choice(Size::ExtraLarge))
        );
        assert_eq!(
            read::<Choice<Size>>("\"huge\""),
            Err(r#""huge" is not "small" or "extra-large""#.into())
        );
        assert_eq!(
            read::<Choice<Size>>("3"),
            Err(r#"must be "small" or "extra-large""#.into())
        );
    }

    #[test]
    fn separators_names_patterns_and_urls_are_checked() {
        assert!(read::<Separator>("\"__\"").is_ok());
        assert!(read::<Separator>("\"-\"").is_ok());
        for bad in ["\"\"", "\"::\"", "\"_____\"", "4"] {
            assert!(read::<Separator>(bad).is_err(), "{bad}");
        }
        assert!(read::<Separator>("\".\"")
            .expect_err(".")
            .contains("TOOL-03"));
        assert!(read::<ToolName>("\"a.b-c_d\"").is_ok());
        assert!(read::<ToolName>("\"a b\"").is_err());
        assert_eq!(
            read::<Patterns>(r#"["write_*"]"#),
            Ok(Patterns(vec!["write_*".into()]))
        );
        for bad in [r#"[""]"#, r#"["read file"]"#, r#""all""#, "[1]"] {
            assert!(read::<Patterns>(bad).is_err(), "{bad}");
        }
        assert!(read::<HttpUrl>("\"https://h/mcp\"").is_ok());
        assert_eq!(
            read::<HttpUrl>("\"ftp://h\""),
            Err(r#""ftp://h" is not an http(s) URL"#.into())
        );
    }
}
