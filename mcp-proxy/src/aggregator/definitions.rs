//! Tool definitions hosts can use (TOOL-08). An `inputSchema` MUST be a JSON Schema object
//! (2025-11-25 tools page), and some hosts refuse a whole `tools/list` when one tool's is
//! not `{"type": "object", …}`: one careless upstream would hide every tool of the gateway.
//! So a tool listed with a null, empty or missing schema is shown with the no-parameter
//! form the spec recommends, one whose object schema leaves out `type` gets
//! `"type": "object"`, and one whose schema cannot describe an arguments object (another
//! `type`, or not an object at all) is left out, each with a warning that names it. The
//! upstream is still called with the host's arguments as written.

use std::collections::HashSet;
use std::sync::Mutex;

use mcp_types::protocol::Tool;
use serde_json::{json, Value};

/// Which fixes were warned of, as `upstream/tool/fix`: each is logged once, not at every
/// listing of a careless upstream. Forgotten past this many (an upstream that renames its
/// tools endlessly), and then warned of again.
#[derive(Default)]
pub(super) struct Warned(Mutex<HashSet<String>>);

const MAX_WARNED: usize = 4096;

impl Warned {
    /// Whether `what` is news (and notes it).
    fn first(&self, what: String) -> bool {
        let mut seen = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
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
/// warned of once (`warned`).
pub(super) fn usable(key: &str, tools: Vec<Tool>, warned: &Warned) -> Vec<Tool> {
    tools
        .into_iter()
        .filter_map(|mut tool| {
            let fix = fix_input_schema(&mut tool);
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
            (fix != Fix::Unusable).then_some(tool)
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

/// The no-parameter schema the 2025-11-25 tools page recommends.
fn no_parameters() -> Value {
    json!({"type": "object", "additionalProperties": false})
}

fn fix_input_schema(tool: &mut Tool) -> Fix {
    let schema = match &mut tool.input_schema {
        None | Some(Value::Null) => None,
        Some(Value::Object(o)) if o.is_empty() => None,
        Some(Value::Object(o)) => Some(o),
        Some(_) => return Fix::Unusable,
    };
    let Some(schema) = schema else {
        tool.input_schema = Some(no_parameters());
        return Fix::NoParameters;
    };
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => Fix::None,
        Some(Value::Array(types)) if types.iter().any(|t| t == "object") => Fix::None,
        Some(_) => Fix::Unusable,
        None => {
            schema.insert("type".into(), json!("object"));
            Fix::Typed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(schema: Option<Value>) -> Tool {
        Tool {
            name: "t".into(),
            input_schema: schema,
            ..Default::default()
        }
    }

    #[test]
    fn each_fix_is_news_once() {
        let warned = Warned::default();
        assert!(warned.first("up/t/NoParameters".into()));
        assert!(!warned.first("up/t/NoParameters".into()));
        assert!(warned.first("up/t/Typed".into()));
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
            let got = out
                .first()
                .map(|t| t.input_schema.clone().unwrap_or_default());
            assert_eq!(got, want, "{given:?}");
        }
    }
}
