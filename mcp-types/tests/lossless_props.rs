//! Property tests: decode → encode is the identity for messages carrying arbitrary
//! unknown members and arbitrary `_meta`, at the top level and nested.

use mcp_types::protocol::{CallToolResult, ContentBlock, InitializeResult, ListToolsResult, Tool};
use mcp_types::Message;
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Number, Value};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| Value::Number(n.into())),
        any::<u64>().prop_map(|n| Value::Number(n.into())),
        any::<f64>()
            .prop_filter_map("finite", Number::from_f64)
            .prop_map(Value::Number),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(".{0,8}", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Member names no MCP revision defines.
fn extra_members() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map("x-[a-zA-Z0-9_.-]{1,10}", json_value(), 0..4)
        .prop_map(|m| m.into_iter().collect())
}

fn meta() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(
        "([a-z]{1,5}\\.){0,2}[a-z]{1,5}/[A-Za-z0-9]{1,6}|progressToken",
        json_value(),
        0..4,
    )
    .prop_map(|m| m.into_iter().collect())
}

fn with(mut base: Value, extra: &Map<String, Value>, meta: Option<&Map<String, Value>>) -> Value {
    let obj = base.as_object_mut().expect("object");
    for (k, v) in extra {
        obj.insert(k.clone(), v.clone());
    }
    if let Some(m) = meta {
        obj.insert("_meta".into(), Value::Object(m.clone()));
    }
    base
}

/// Through text, as on the wire: bytes → typed → bytes, compared as JSON values.
fn identity<T: DeserializeOwned + Serialize>(v: &Value) -> Result<(), TestCaseError> {
    let typed: T =
        serde_json::from_str(&v.to_string()).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let text = serde_json::to_string(&typed).expect("encode");
    prop_assert_eq!(&serde_json::from_str::<Value>(&text).expect("json"), v);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn tools_keep_unknown_members_and_meta(extra in extra_members(), nested in extra_members(), m in meta(),
                                           schema in json_value()) {
        let annotations = with(json!({"readOnlyHint": true}), &nested, None);
        let tool = with(json!({"name": "t", "inputSchema": schema, "annotations": annotations}), &extra, Some(&m));
        identity::<Tool>(&tool)?;
        let list = with(json!({"tools": [tool], "nextCursor": "c"}), &extra, Some(&m));
        identity::<ListToolsResult>(&list)?;
    }

    #[test]
    fn call_results_keep_unknown_members_meta_and_any_structured_content(
        extra in extra_members(), nested in extra_members(), m in meta(), structured in json_value(), err in any::<bool>()) {
        let block = with(json!({"type": "text", "text": "hi"}), &nested, Some(&m));
        let unknown_block = with(json!({"type": "future-kind", "payload": structured.clone()}), &nested, None);
        let result = with(json!({"content": [block, unknown_block], "structuredContent": structured, "isError": err}),
                          &extra, Some(&m));
        identity::<CallToolResult>(&result)?;
    }

    #[test]
    fn content_blocks_of_any_type_roundtrip(kind in "[a-z_]{1,12}", extra in extra_members()) {
        let block = with(json!({"type": kind}), &extra, None);
        // Known kinds need their required members; those are covered by the fixture corpus.
        if serde_json::from_value::<ContentBlock>(block.clone()).is_ok() {
            identity::<ContentBlock>(&block)?;
        }
    }

    #[test]
    fn initialize_results_keep_unknown_capabilities(extra in extra_members(), caps in extra_members(), m in meta()) {
        let capabilities = with(json!({"tools": {"listChanged": true}}), &caps, None);
        let result = with(json!({"protocolVersion": "2025-06-18", "capabilities": capabilities,
                                 "serverInfo": {"name": "s", "version": "1"}}), &extra, Some(&m));
        identity::<InitializeResult>(&result)?;
    }

    #[test]
    fn envelopes_keep_ids_params_and_unknown_members(id in prop_oneof![any::<i64>().prop_map(|n| json!(n)), ".{0,10}".prop_map(|s| json!(s))],
                                                     params in extra_members(), extra in extra_members()) {
        let v = with(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": Value::Object(params)}), &extra, None);
        let msg = Message::parse(&serde_json::to_vec(&v).expect("bytes")).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(serde_json::from_slice::<Value>(&msg.to_bytes()).expect("json"), v);
    }
}
