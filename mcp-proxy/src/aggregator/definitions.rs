//! Tool definitions hosts can use (TOOL-08). An `inputSchema` MUST be a JSON Schema object
//! (2025-11-25 tools page), and some hosts refuse a whole `tools/list` when one tool's is
//! not `{"type": "object", …}`: one careless upstream would hide every tool of the gateway.
//! So a tool listed with a null, empty or missing schema is shown with the no-parameter
//! form the spec recommends, one whose object schema leaves out `type` gets
//! `"type": "object"`, and one whose schema cannot describe an arguments object (another
//! `type`, or not an object at all) is left out, each with a warning that names it. The
//! upstream is still called with the host's arguments as written.

use std::collections::HashSet;

use mcp_types::protocol::Tool;
use mcp_types::raw::{Exact, RawJson};
use parking_lot::Mutex;
use serde_json::value::RawValue;
use serde_json::Value;

/// Which fixes were warned of, as `upstream/tool/fix`: each is logged once, not at every
/// listing of a careless upstream. Forgotten past this many (an upstream that renames its
/// tools endlessly), and then warned of again.
#[derive(Default)]
pub(super) struct Warned(Mutex<HashSet<String>>);

const MAX_WARNED: usize = 4096;

impl Warned {
    /// Whether `what` is news (and notes it).
    fn first(&self, what: String) -> bool {
        let mut seen = self.0.lock();
        if seen.len() >= MAX_WARNED {
            seen.clear();
        }
        seen.insert(what)
    }
}

/// What an upstream's `inputSchema` needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fix {
    /// Usable as listed.
    None,
    /// Null, `{}` or missing: the no-parameter form stands in.
    NoParameters,
    /// An object schema without `type`: `"type": "object"` added.
    Typed,
    /// It cannot describe an arguments object: the tool is left out.
    Unusable,
}

/// `tools` of upstream `key` as hosts can use them (see the module docs); each fix is
/// warned of once (`warned`). A fixed schema is edited in place: what is not fixed keeps
/// its bytes.
pub(super) fn usable(key: &str, tools: Vec<Exact<Tool>>, warned: &Warned) -> Vec<Exact<Tool>> {
    tools
        .into_iter()
        .filter_map(|tool| {
            let fix = input_schema_fix(&tool);
            let name = tool.name.as_str();
            let news = || warned.first(format!("{key}/{name}/{fix:?}"));
            match fix {
                Fix::None => {}
                _ if !news() => {}
                Fix::NoParameters => {
                    tracing::warn!(
                        upstream = key,
                        tool = name,
                        "inputSchema null, empty or missing; listed as taking no parameters"
                    )
                }
                Fix::Typed => {
                    tracing::warn!(
                        upstream = key,
                        tool = name,
                        "inputSchema without \"type\"; listed with \"type\": \"object\""
                    )
                }
                Fix::Unusable => {
                    tracing::warn!(
                        upstream = key,
                        tool = name,
                        "inputSchema does not describe an arguments object; the tool is left out"
                    )
                }
            }
            let fixed = match fix {
                Fix::None => return Some(tool),
                Fix::Unusable => return None,
                Fix::NoParameters => tool.edit(|o| {
                    o.insert("inputSchema", serde_json::from_str::<Box<RawValue>>(NO_PARAMETERS)?);
                    Ok(true)
                }),
                Fix::Typed => tool.edit(|o| {
                    o.edit_object("inputSchema", |s| {
                        s.insert_str("type", "object");
                        Ok(true)
                    })
                }),
            };
            fixed
                .inspect_err(|e| tracing::warn!(upstream = key, tool = %tool.name, "inputSchema not fixed ({e}); the tool is left out"))
                .ok()
        })
        .collect()
}

/// Takes `tool`'s behaviour hints away (TOOL-15, [`crate::UpstreamConfig::withhold_hints`]):
/// a host that acts on `readOnlyHint` must not act on an untrusted upstream's word. The
/// title stays (it is not a hint); annotations left empty go.
pub(super) fn withhold_hints(tool: &mut Tool) {
    let Some(a) = &mut tool.annotations else {
        return;
    };
    a.read_only_hint = None;
    a.destructive_hint = None;
    a.idempotent_hint = None;
    a.open_world_hint = None;
    if a == &Default::default() {
        tool.annotations = None;
    }
}

/// The no-parameter schema the 2025-11-25 tools page recommends, as it writes it.
const NO_PARAMETERS: &str = r#"{"type":"object","additionalProperties":false}"#;

fn input_schema_fix(tool: &Tool) -> Fix {
    // Read for this look only: the catalog keeps the text.
    let schema = tool.input_schema.as_ref().map(RawJson::to_value);
    let schema = match schema {
        None | Some(Ok(Value::Null)) => return Fix::NoParameters,
        Some(Ok(Value::Object(o))) if o.is_empty() => return Fix::NoParameters,
        Some(Ok(Value::Object(o))) => o,
        Some(_) => return Fix::Unusable,
    };
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => Fix::None,
        Some(Value::Array(types)) if types.iter().any(|t| t == "object") => Fix::None,
        Some(_) => Fix::Unusable,
        None => Fix::Typed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn no_parameters() -> Value {
        json!({"type": "object", "additionalProperties": false})
    }

    fn tool(schema: Option<Value>) -> Exact<Tool> {
        Exact::encode(Tool {
            name: "t".into(),
            input_schema: schema.map(RawJson::from),
            ..Default::default()
        })
        .expect("encoded")
    }

    #[test]
    fn each_fix_is_news_once() {
        let warned = Warned::default();
        assert!(warned.first("up/t/NoParameters".into()));
        assert!(!warned.first("up/t/NoParameters".into()));
        assert!(warned.first("up/t/Typed".into()));
    }

    #[test]
    fn a_fixed_schema_keeps_the_rest_of_its_text() {
        let text = r#"{"inputSchema":{"properties":{"z":{"maximum":123456789012345678901234567890},"a":{}}},"name":"t","x":1.10000000000000000000001}"#;
        let listed = Exact::parse(text).expect("a tool");
        let out = usable("up", vec![listed], &Warned::default());
        assert_eq!(
            out.first().map(|t| t.raw().get().to_owned()).as_deref(),
            Some(
                text.replacen(r#"{}}}"#, r#"{}},"type":"object"}"#, 1)
                    .as_str()
            )
        );
        let missing =
            Exact::parse(r#"{"name":"t","x":1.10000000000000000000001}"#).expect("a tool");
        let out = usable("up", vec![missing], &Warned::default());
        assert_eq!(
            out.first().map(|t| t.raw().get().to_owned()).as_deref(),
            Some(
                r#"{"name":"t","x":1.10000000000000000000001,"inputSchema":{"type":"object","additionalProperties":false}}"#
            )
        );
    }

    #[test]
    fn each_kind_of_schema_is_fixed_or_left_out() {
        let cases = [
            (None, Some(no_parameters())),
            (Some(Value::Null), Some(no_parameters())),
            (Some(json!({})), Some(no_parameters())),
            (
                Some(json!({"properties": {"x": {}}})),
                Some(json!({"properties": {"x": {}}, "type": "object"})),
            ),
            (
                Some(json!({"type": "object"})),
                Some(json!({"type": "object"})),
            ),
            (
                Some(json!({"type": ["object", "null"]})),
                Some(json!({"type": ["object", "null"]})),
            ),
            (Some(json!({"type": "string"})), None),
            (Some(json!(true)), None),
            (Some(json!([])), None),
        ];
        for (given, want) in cases {
            let out = usable("up", vec![tool(given.clone())], &Warned::default());
            let got = out.first().map(|t| {
                t.input_schema
                    .as_ref()
                    .map_or(Value::Null, |s| s.to_value().expect("json"))
            });
            assert_eq!(got, want, "{given:?}");
        }
    }
}
