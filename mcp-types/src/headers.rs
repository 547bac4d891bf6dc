//! The HTTP headers Streamable HTTP mirrors from the JSON-RPC body, and their value
//! encoding (plain visible ASCII, else `=?base64?…?=` of the UTF-8 bytes).

/// `MCP-Protocol-Version`.
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Session-Id` (legacy sessions).
pub const SESSION_ID: &str = "mcp-session-id";
/// `Mcp-Method` (2026-07-28).
pub const METHOD: &str = "mcp-method";
/// `Mcp-Name` (2026-07-28): the body member [`name_member`] names.
pub const NAME: &str = "mcp-name";
/// `Mcp-Param-{Name}` prefix (2026-07-28, from `x-mcp-header`).
pub const PARAM_PREFIX: &str = "mcp-param-";
/// `Last-Event-ID` (legacy resumption).
pub const LAST_EVENT_ID: &str = "last-event-id";

/// The member of a request's params that `Mcp-Name` mirrors, for the methods that have
/// one: `name` (tools/call, prompts/get), `uri` (resources/read), `taskId` (the tasks
/// extension's tasks/get, tasks/update, tasks/cancel).
pub fn name_member(method_name: &str) -> Option<&'static str> {
    use crate::protocol::method;
    match method_name {
        method::TOOLS_CALL | method::PROMPTS_GET => Some("name"),
        method::RESOURCES_READ => Some("uri"),
        method::TASKS_GET | method::TASKS_UPDATE | method::TASKS_CANCEL => Some("taskId"),
        _ => None,
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn b64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Strict standard base64: whole quanta, `=` padding only at the end and only as much as
/// the last quantum needs, no stray bits (the spec's test table refuses anything else).
fn b64_decode(text: &str) -> Option<Vec<u8>> {
    if text.len() % 4 != 0 {
        return None;
    }
    let data = text.trim_end_matches('=');
    if text.len() - data.len() > 2 {
        return None;
    }
    let text = data;
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let v = B64.iter().position(|b| *b == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    (acc == 0).then_some(out)
}

/// The text a mirrored argument is compared as (`string` as it is, `integer` in decimal,
/// `boolean` as `true`/`false`): `None` when absent or null; `Some(Err(()))` when it is of
/// a type or range no header may carry.
pub fn param_text(
    arguments: &serde_json::Map<String, serde_json::Value>,
    path: &[String],
) -> Option<Result<String, ()>> {
    use serde_json::Value;
    let (first, rest) = path.split_first()?;
    let mut v = arguments.get(first)?;
    for k in rest {
        v = v.get(k)?;
    }
    Some(match v {
        Value::Null => return None,
        Value::String(s) => Ok(s.clone()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Number(n) => match n.as_i64() {
            Some(i) if (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i) => Ok(i.to_string()),
            _ => Err(()),
        },
        _ => Err(()),
    })
}

fn is_sentinel(v: &str) -> bool {
    v.starts_with("=?base64?") && v.ends_with("?=") && v.len() >= 11
}

/// Encodes a value for a header: as it is when it is plain visible ASCII (spaces inside,
/// not at the ends) and does not look like the sentinel, else `=?base64?…?=`.
pub fn encode_value(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .bytes()
            .all(|b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b))
        && !value.starts_with([' ', '\t'])
        && !value.ends_with([' ', '\t'])
        && !is_sentinel(value);
    if plain || value.is_empty() {
        value.to_owned()
    } else {
        format!("=?base64?{}?=", b64_encode(value.as_bytes()))
    }
}

/// Decodes a header value written by [`encode_value`]. `None` for a malformed sentinel.
pub fn decode_value(value: &str) -> Option<String> {
    if is_sentinel(value) {
        let inner = &value["=?base64?".len()..value.len() - 2];
        String::from_utf8(b64_decode(inner)?).ok()
    } else {
        Some(value.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_examples() {
        assert_eq!(encode_value("us-west1"), "us-west1");
        assert_eq!(
            encode_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            encode_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        for v in [
            "us-west1",
            "Hello, 世界",
            " padded ",
            "line1\nline2",
            "=?base64?literal?=",
            "a",
            "ab",
            "abc",
        ] {
            assert_eq!(decode_value(&encode_value(v)).as_deref(), Some(v));
        }
        assert_eq!(decode_value("=?base64?!!!?="), None);
        assert_eq!(
            decode_value("=?base64?SGVsbG8?="),
            None,
            "padding is required"
        );
        assert_eq!(decode_value("=?base64?SGVs!!!bG8=?="), None);
        assert_eq!(decode_value("=?base64?SGVsbG9=?="), None, "stray bits");
        assert_eq!(
            decode_value("=?base64?SGVsbG8=?=").as_deref(),
            Some("Hello")
        );
    }
}

/// A tool argument mirrored into an `Mcp-Param-{header}` header (2026-07-28 `x-mcp-header`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The chain of `properties` keys from the schema root to the argument.
    pub path: Vec<String>,
    /// The `{name}` part of `Mcp-Param-{name}`.
    pub header: String,
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// The largest integer a mirrored header may carry (and its negation the smallest).
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// [`header_params`] of a tool's `inputSchema` as it was listed (absent: none). Text
/// that cannot hold the annotation (no `"x-mcp-header"` key and no escape that could spell
/// one) has none, and is not decoded; an `inputSchema` nested too deep to decode is an
/// error, as one [`header_params`] refuses.
pub fn listed_header_params(
    input_schema: Option<&crate::raw::RawJson>,
) -> Result<Vec<HeaderParam>, String> {
    let Some(schema) = input_schema else {
        return Ok(Vec::new());
    };
    let text = schema.get();
    if !crate::raw::may_contain_key(text, "x-mcp-header") && !crate::raw::has_key_escapes(text) {
        return Ok(Vec::new());
    }
    header_params(&schema.to_value().map_err(|e| e.to_string())?)
}

/// Reads the `x-mcp-header` annotations of a tool's `inputSchema`, checking the spec's
/// constraints: non-empty token syntax (which excludes CR and LF), case-insensitively
/// unique, only on `integer`, `string` or `boolean` properties, and only on properties
/// reached from the root through `properties` keys alone. An error names the reason;
/// a client on HTTP must then drop the tool.
pub fn header_params(input_schema: &serde_json::Value) -> Result<Vec<HeaderParam>, String> {
    use serde_json::Value;
    let mut found = Vec::new();
    fn walk(
        schema: &Value,
        path: &mut Vec<String>,
        found: &mut Vec<HeaderParam>,
    ) -> Result<(), String> {
        let Some(obj) = schema.as_object() else {
            return Ok(());
        };
        if let Some(h) = obj.get("x-mcp-header") {
            let name = h.as_str().ok_or("x-mcp-header is not a string")?;
            if name.is_empty() {
                return Err("x-mcp-header is empty".into());
            }
            if let Some(c) = name.chars().find(|c| !is_tchar(*c)) {
                return Err(format!(
                    "x-mcp-header {name:?} has {c:?}, not allowed in a header name"
                ));
            }
            if path.is_empty() {
                return Err("x-mcp-header on the schema root".into());
            }
            match obj.get("type").and_then(Value::as_str) {
                Some("integer" | "string" | "boolean") => {}
                other => return Err(format!("x-mcp-header {name:?} is on a property of type {other:?}; only integer, string and boolean are allowed")),
            }
            found.push(HeaderParam {
                path: path.clone(),
                header: name.to_owned(),
            });
        }
        for (k, v) in obj {
            match k.as_str() {
                "properties" => {
                    for (prop, sub) in v.as_object().into_iter().flatten() {
                        path.push(prop.clone());
                        walk(sub, path, found)?;
                        path.pop();
                    }
                }
                "x-mcp-header" => {}
                _ => {
                    if contains_annotation(v) {
                        return Err(format!("x-mcp-header under `{k}`, which is not statically reachable from the root"));
                    }
                }
            }
        }
        Ok(())
    }
    fn contains_annotation(v: &Value) -> bool {
        match v {
            Value::Object(o) => {
                o.contains_key("x-mcp-header") || o.values().any(contains_annotation)
            }
            Value::Array(a) => a.iter().any(contains_annotation),
            _ => false,
        }
    }
    walk(input_schema, &mut Vec::new(), &mut found)?;
    let mut seen = std::collections::HashSet::new();
    for p in &found {
        if !seen.insert(p.header.to_ascii_lowercase()) {
            return Err(format!(
                "x-mcp-header {:?} is not case-insensitively unique",
                p.header
            ));
        }
    }
    Ok(found)
}

/// The header value of a mirrored argument, encoded; `None` when the argument is absent
/// or null (the header is then omitted), or not of a mirrorable type or range.
pub fn param_value(
    arguments: &serde_json::Map<String, serde_json::Value>,
    path: &[String],
) -> Option<String> {
    use serde_json::Value;
    let (first, rest) = path.split_first()?;
    let mut v = arguments.get(first)?;
    for k in rest {
        v = v.get(k)?;
    }
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_i64() {
            Some(i) if (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i) => i.to_string(),
            _ => return None,
        },
        _ => return None,
    };
    Some(encode_value(&text))
}

#[cfg(test)]
mod param_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn valid_annotations_are_found_with_their_paths() {
        let s = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "opts": {"type": "object", "properties": {"tenant": {"type": "integer", "x-mcp-header": "Tenant"}}}}});
        let p = header_params(&s).expect("valid");
        assert_eq!(p.len(), 2);
        assert!(p.contains(&HeaderParam {
            path: vec!["opts".into(), "tenant".into()],
            header: "Tenant".into()
        }));
        let args = json!({"region": "Hello, 世界", "opts": {"tenant": 7}});
        let args = args.as_object().expect("object");
        assert_eq!(
            param_value(args, &["region".into()]).as_deref(),
            Some("=?base64?SGVsbG8sIOS4lueVjA==?=")
        );
        assert_eq!(
            param_value(args, &["opts".into(), "tenant".into()]).as_deref(),
            Some("7")
        );
        assert_eq!(param_value(args, &["missing".into()]), None);
    }

    #[test]
    fn each_constraint_is_enforced() {
        let bad = [
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Bad Name"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "X\r\nInjected"}}}),
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}}),
            json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}}),
            json!({"anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
            json!({"$defs": {"d": {"type": "string", "x-mcp-header": "A"}}}),
        ];
        for s in bad {
            assert!(header_params(&s).is_err(), "{s}");
        }
        assert_eq!(header_params(&json!({"type": "object"})), Ok(vec![]));
    }

    #[test]
    fn listed_schemas_read_as_decoded_ones() {
        let escaped = r#"{"type":"object","properties":{"r":{"type":"string","x\u002dmcp-header":"Region"}}}"#;
        let plain =
            r#"{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Region"}}}"#;
        let bad = r#"{"type":"object","x-mcp-header":"Root"}"#;
        for text in [escaped, plain, bad, r#"{"type":"object"}"#, "null", "[]"] {
            let raw: crate::raw::RawJson = serde_json::from_str(text).expect("json");
            let decoded: serde_json::Value = serde_json::from_str(text).expect("json");
            assert_eq!(
                listed_header_params(Some(&raw)),
                header_params(&decoded),
                "{text}"
            );
        }
        let found = listed_header_params(Some(&serde_json::from_str(escaped).expect("json")));
        assert_eq!(found.map(|p| p.len()), Ok(1), "an escaped key is read");
        assert_eq!(listed_header_params(None), Ok(vec![]));
    }
}
