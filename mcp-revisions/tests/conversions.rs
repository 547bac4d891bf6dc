//! The conversions that keep meaning across revisions, one behaviour per test.

use mcp_revisions::policy::AUDIO_URI;
use mcp_revisions::{translate, DowngradePolicy, TranslateError, Translator};
use mcp_types::raw::RawObject;
use mcp_types::{Message, Revision};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use Revision::*;

fn result(from: Revision, to: Revision, method: &str, v: Value) -> Value {
    Translator::new(from, to)
        .result(method, v)
        .expect("translates")
}

fn message(
    from: Revision,
    to: Revision,
    v: Value,
    answers: Option<&str>,
) -> Result<Value, TranslateError> {
    let msg = Message::parse(&serde_json::to_vec(&v).expect("bytes")).expect("message");
    translate(&msg, from, to, answers).map(|m| serde_json::from_slice(&m.to_bytes()).expect("json"))
}

#[test]
fn structured_content_becomes_a_json_text_block_before_2025_06_18() {
    let out = result(
        V2025_06_18,
        V2025_03_26,
        "tools/call",
        json!({"content": [{"type": "text", "text": "It is warm."}], "structuredContent": {"t": 22.5}}),
    );
    assert_eq!(
        out,
        json!({"content": [{"type": "text", "text": "It is warm."}, {"type": "text", "text": "{\"t\":22.5}"}]})
    );
}

#[test]
fn an_equal_text_duplicate_is_not_added_twice() {
    let v = json!({"content": [{"type": "text", "text": "{\"t\": 22.5}"}], "structuredContent": {"t": 22.5}});
    let out = result(V2025_11_25, V2024_11_05, "tools/call", v);
    assert_eq!(
        out,
        json!({"content": [{"type": "text", "text": "{\"t\": 22.5}"}]})
    );
}

#[test]
fn non_object_structured_content_and_its_schema_are_wrapped_alike_for_2025_hosts() {
    let out = result(
        V2026_07_28,
        V2025_06_18,
        "tools/call",
        json!({"resultType": "complete", "content": [], "structuredContent": [1, 2]}),
    );
    assert_eq!(
        out,
        json!({"content": [], "structuredContent": {"value": [1, 2]}})
    );
    let tool = Translator::new(V2026_07_28, V2025_11_25)
        .object("Tool", json!({"name": "n", "inputSchema": {"type": "object"}, "outputSchema": {"type": "array"}}))
        .expect("tool");
    assert_eq!(
        tool["outputSchema"],
        json!({"type": "object", "properties": {"value": {"type": "array"}}, "required": ["value"]})
    );
    // An object stays as it is.
    let out = result(
        V2026_07_28,
        V2025_11_25,
        "tools/call",
        json!({"content": [], "structuredContent": {"a": 1}}),
    );
    assert_eq!(out["structuredContent"], json!({"a": 1}));
}

#[test]
fn null_structured_content_from_2026_is_kept_as_a_value() {
    let out = result(
        V2026_07_28,
        V2025_06_18,
        "tools/call",
        json!({"content": [], "structuredContent": null}),
    );
    assert_eq!(out["structuredContent"], json!({"value": null}));
}

#[test]
fn resource_links_become_text_that_keeps_the_uri() {
    let out = result(
        V2025_06_18,
        V2025_03_26,
        "tools/call",
        json!({"content": [{"type": "resource_link", "uri": "file:///r.txt", "name": "r", "mimeType": "text/plain",
                            "description": "the report", "annotations": {"priority": 0.5}}]}),
    );
    assert_eq!(
        out["content"],
        json!([{"type": "text", "text": "Resource link: r <file:///r.txt> (text/plain)\nthe report", "annotations": {"priority": 0.5}}])
    );
}

#[test]
fn audio_becomes_an_embedded_resource_that_keeps_the_data_for_2024() {
    let out = result(
        V2025_03_26,
        V2024_11_05,
        "tools/call",
        json!({"content": [{"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}]}),
    );
    assert_eq!(
        out["content"],
        json!([{"type": "resource", "resource": {"uri": AUDIO_URI, "mimeType": "audio/wav", "blob": "UklGRg=="}}])
    );
}

#[test]
fn a_dropped_tool_title_moves_into_annotations_where_they_exist() {
    let tool = json!({"name": "n", "title": "Nice", "inputSchema": {"type": "object"}, "icons": [{"src": "data:,"}],
                      "execution": {"taskSupport": "optional"}, "_meta": {"a": 1}, "x-vendor": true});
    let t = Translator::new(V2025_11_25, V2025_03_26)
        .object("Tool", tool.clone())
        .expect("tool");
    assert_eq!(
        t,
        json!({"name": "n", "annotations": {"title": "Nice"}, "inputSchema": {"type": "object"}, "x-vendor": true})
    );
    let t = Translator::new(V2025_11_25, V2024_11_05)
        .object("Tool", tool.clone())
        .expect("tool");
    assert_eq!(
        t,
        json!({"name": "n", "inputSchema": {"type": "object"}, "x-vendor": true})
    );
    // An existing annotations.title wins.
    let mut with_title = tool;
    with_title["annotations"] = json!({"title": "Old", "readOnlyHint": true});
    let t = Translator::new(V2025_11_25, V2025_03_26)
        .object("Tool", with_title)
        .expect("tool");
    assert_eq!(
        t["annotations"],
        json!({"title": "Old", "readOnlyHint": true})
    );
}

#[test]
fn tasks_execution_does_not_reach_2026() {
    let t = Translator::new(V2025_11_25, V2026_07_28)
        .object("Tool", json!({"name": "n", "inputSchema": {}, "execution": {"taskSupport": "required"}, "icons": []}))
        .expect("tool");
    assert_eq!(t, json!({"name": "n", "inputSchema": {}, "icons": []}));
}

#[test]
fn is_error_survives_every_revision() {
    for from in Revision::ALL {
        for to in Revision::ALL {
            let out = result(
                from,
                to,
                "tools/call",
                json!({"content": [{"type": "text", "text": "boom"}], "isError": true}),
            );
            assert_eq!(out["isError"], json!(true), "{from} -> {to}");
        }
    }
}

#[test]
fn going_up_fills_what_2026_requires() {
    let out = result(
        V2025_11_25,
        V2026_07_28,
        "tools/call",
        json!({"content": []}),
    );
    assert_eq!(out, json!({"content": [], "resultType": "complete"}));
    let out = result(V2025_06_18, V2026_07_28, "tools/list", json!({"tools": []}));
    assert_eq!(
        out,
        json!({"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
    );
    // What the upstream said is not overwritten.
    let out = result(
        V2025_06_18,
        V2026_07_28,
        "tools/list",
        json!({"tools": [], "ttlMs": 5}),
    );
    assert_eq!(out["ttlMs"], json!(5));
}

#[test]
fn requests_going_up_to_2026_carry_version_and_capabilities_in_meta() {
    let msg = Message::parse(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":7}}}"#)
        .expect("message");
    let out = Translator::new(V2025_06_18, V2026_07_28)
        .with_client_capabilities(json!({"roots": {}}))
        .message(&msg, None)
        .expect("translates");
    let v: Value = serde_json::from_slice(&out.to_bytes()).expect("json");
    assert_eq!(
        v["params"]["_meta"],
        json!({"progressToken": 7, "io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {"roots": {}}})
    );
}

#[test]
fn requests_going_down_lose_2026_meta_keys_but_keep_the_rest() {
    let out = message(
        V2026_07_28,
        V2025_11_25,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
            "progressToken": "p", "com.example/trace": 1}, "requestState": "s", "inputResponses": {}}}),
        None,
    )
    .expect("translates");
    assert_eq!(
        out["params"],
        json!({"name": "x", "_meta": {"progressToken": "p", "com.example/trace": 1}})
    );
}

#[test]
fn same_revision_is_byte_for_byte() {
    let text = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"x":  1.50}}"#;
    let msg = Message::parse(text).expect("message");
    let out = translate(&msg, V2025_06_18, V2025_06_18, Some("tools/call")).expect("translates");
    let Message::Response(r) = out else {
        panic!("response")
    };
    assert_eq!(r.result.get(), r#"{"content":[],"x":  1.50}"#);
}

#[test]
fn input_required_has_no_legacy_equivalent() {
    let err = Translator::new(V2026_07_28, V2025_11_25)
        .result(
            "tools/call",
            json!({"resultType": "input_required", "requestState": "s"}),
        )
        .unwrap_err();
    assert!(matches!(err, TranslateError::NoEquivalent { .. }), "{err}");
}

#[test]
fn methods_missing_from_the_target_are_refused_by_name() {
    let err = message(
        V2025_11_25,
        V2026_07_28,
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        None,
    )
    .unwrap_err();
    assert!(
        matches!(&err, TranslateError::MethodNotInRevision { method, revision } if method == "ping" && *revision == V2026_07_28)
    );
    let err = message(
        V2024_11_05,
        V2026_07_28,
        json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        None,
    )
    .unwrap_err();
    assert!(matches!(err, TranslateError::MissingMethod));
}

#[test]
fn vendor_methods_and_members_pass_through() {
    let v = json!({"jsonrpc": "2.0", "id": 1, "method": "vendor/thing", "params": {"a": [1]}});
    assert_eq!(
        message(V2026_07_28, V2024_11_05, v.clone(), None).expect("ok"),
        v
    );
    let out = result(
        V2025_11_25,
        V2024_11_05,
        "tools/list",
        json!({"tools": [], "x-page": {"n": 1}}),
    );
    assert_eq!(out, json!({"tools": [], "x-page": {"n": 1}}));
}

#[test]
fn tasks_map_between_2025_11_25_and_the_2026_extension() {
    let created = json!({"task": {"taskId": "t", "status": "working", "createdAt": "a", "lastUpdatedAt": "b",
                                  "ttl": 60000, "pollInterval": 500}, "_meta": {"com.example/x": 1}});
    let up = Translator::new(V2025_11_25, V2026_07_28)
        .task_created_result(created.clone())
        .expect("up");
    assert_eq!(
        up,
        json!({"resultType": "task", "taskId": "t", "status": "working", "createdAt": "a", "lastUpdatedAt": "b",
               "ttlMs": 60000, "pollIntervalMs": 500, "_meta": {"com.example/x": 1}})
    );
    let down = result(V2026_07_28, V2025_11_25, "tools/call", up);
    assert_eq!(down, created);
    let n = message(
        V2025_11_25,
        V2026_07_28,
        json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": {"taskId": "t", "status": "working",
               "createdAt": "a", "lastUpdatedAt": "b", "ttl": null}}),
        None,
    )
    .expect("notification");
    assert_eq!(n["method"], json!("notifications/tasks"));
    assert_eq!(n["params"]["ttlMs"], Value::Null);
}

#[test]
fn elicitation_forms_are_simplified_for_2025_06_18() {
    let out = message(
        V2025_11_25,
        V2025_06_18,
        json!({"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": {"mode": "form", "message": "m",
               "requestedSchema": {"type": "object", "properties": {
                   "c": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}], "default": "r"},
                   "n": {"type": "string", "default": "x", "minLength": 1}}}}}),
        None,
    )
    .expect("translates");
    assert_eq!(
        out["params"],
        json!({"message": "m", "requestedSchema": {"type": "object", "properties": {
            "c": {"type": "string", "enum": ["r"], "enumNames": ["Red"]},
            "n": {"type": "string", "minLength": 1}}}})
    );
}

/// A policy that drops instead of converting: one method swapped, the rest default.
struct DropStructured;

impl DowngradePolicy for DropStructured {
    fn structured_content_dropped(&self, _result: &mut RawObject<'_>, _value: &RawValue) {}
}

#[test]
fn a_policy_can_swap_one_choice() {
    let v = json!({"content": [], "structuredContent": {"a": 1}});
    let out = Translator::new(V2025_06_18, V2025_03_26)
        .with_policy(&DropStructured)
        .result("tools/call", v.clone())
        .expect("translates");
    assert_eq!(out, json!({"content": []}));
    // The rest of the policy is still the default.
    let out = Translator::new(V2025_06_18, V2025_03_26)
        .with_policy(&DropStructured)
        .result(
            "tools/call",
            json!({"content": [{"type": "resource_link", "uri": "u", "name": "n"}]}),
        )
        .expect("translates");
    assert_eq!(out["content"][0]["type"], json!("text"));
}

#[test]
fn task_status_notifications_map_both_ways_or_refuse() {
    let ext = json!({"jsonrpc": "2.0", "method": "notifications/tasks", "params": {"taskId": "t1", "status": "completed",
        "createdAt": "x", "lastUpdatedAt": "x", "ttlMs": 5, "result": {"content": []}}});
    let down = message(V2026_07_28, V2025_11_25, ext, None).expect("down");
    assert_eq!(down["method"], "notifications/tasks/status");
    assert_eq!(
        down["params"],
        json!({"taskId": "t1", "status": "completed", "createdAt": "x", "lastUpdatedAt": "x", "ttl": 5})
    );
    let legacy = json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": {"taskId": "t1",
        "status": "completed", "createdAt": "x", "lastUpdatedAt": "x", "ttl": null}});
    let err = message(V2025_11_25, V2026_07_28, legacy, None).unwrap_err();
    assert!(
        matches!(err, TranslateError::NoEquivalent { .. }),
        "the extension needs the result inline: {err}"
    );
}

#[test]
fn output_schemas_that_may_admit_objects_are_wrapped_consistently_with_results() {
    let t = Translator::new(V2026_07_28, V2025_06_18);
    for schema in [
        json!({"properties": {"a": {}}}),
        json!(true),
        json!({"type": ["object", "array"]}),
        json!({"type": "array"}),
    ] {
        let tool = t
            .object("Tool", json!({"name": "n", "inputSchema": {"type": "object"}, "outputSchema": schema.clone()}))
            .expect("tool");
        let wrapped = tool["outputSchema"].clone();
        assert_eq!(wrapped["type"], "object", "{schema}");
        let validator = jsonschema::validator_for(&wrapped).expect("a valid schema");
        for value in [json!({"a": 1}), json!([1, 2])] {
            if !jsonschema::validator_for(&schema)
                .expect("schema")
                .is_valid(&value)
            {
                continue;
            }
            let r = t
                .result(
                    "tools/call",
                    json!({"content": [], "structuredContent": value.clone()}),
                )
                .expect("result");
            assert!(
                validator.is_valid(&r["structuredContent"]),
                "{schema}: {value} became {} which {wrapped} rejects",
                r["structuredContent"]
            );
        }
    }
}

#[test]
fn audio_in_sampling_for_2024_keeps_its_data_as_text() {
    let out = message(
        V2025_03_26,
        V2024_11_05,
        json!({"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": {"maxTokens": 5,
               "messages": [{"role": "user", "content": {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}}]}}),
        None,
    )
    .expect("translates");
    assert_eq!(
        out["params"]["messages"][0]["content"],
        json!({"type": "text", "text": "[audio] data:audio/wav;base64,AAAA"})
    );
}

#[test]
fn initialize_speaks_the_target_version() {
    let out = result(
        V2025_11_25,
        V2024_11_05,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1", "title": "S"}}),
    );
    assert_eq!(
        out,
        json!({"protocolVersion": "2024-11-05", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}})
    );
}

#[test]
fn error_codes_2026_forbids_are_replaced_and_others_kept() {
    let e = message(V2025_11_25, V2026_07_28, json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32002, "message": "Resource not found", "data": {"uri": "x"}}}), None)
        .expect("error");
    assert_eq!(
        e["error"],
        json!({"code": -32602, "message": "Resource not found", "data": {"uri": "x"}})
    );
    let e = message(
        V2026_07_28,
        V2025_06_18,
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32022, "message": "v", "data": null}}),
        None,
    )
    .expect("error");
    assert_eq!(
        e["error"],
        json!({"code": -32022, "message": "v", "data": null})
    );
}

#[test]
fn a_task_request_going_up_declares_the_tasks_extension() {
    let out = message(V2025_11_25, V2026_07_28,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow", "task": {"ttl": 1000}}}), None)
        .expect("translates");
    assert!(out["params"].get("task").is_none());
    assert_eq!(
        out["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
            ["io.modelcontextprotocol/tasks"],
        json!({})
    );
}

#[test]
fn a_url_only_elicitation_client_does_not_claim_forms_before_2025_11_25() {
    let init = |caps: Value| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": caps, "clientInfo": {"name": "c", "version": "1"}}})
    };
    let out = message(
        V2025_11_25,
        V2025_06_18,
        init(json!({"elicitation": {"url": {}}})),
        None,
    )
    .expect("ok");
    assert_eq!(out["params"]["capabilities"], json!({}));
    let out = message(
        V2025_11_25,
        V2025_06_18,
        init(json!({"elicitation": {"form": {}, "url": {}}})),
        None,
    )
    .expect("ok");
    assert_eq!(out["params"]["capabilities"], json!({"elicitation": {}}));
}

#[test]
fn vendor_results_going_up_to_2026_say_what_they_are() {
    let out = result(V2025_06_18, V2026_07_28, "vendor/thing", json!({"x": 1}));
    assert_eq!(out, json!({"x": 1, "resultType": "complete"}));
}

#[test]
fn a_cancellation_without_request_id_exists_only_in_2025_11_25() {
    let n = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"reason": "task"}});
    assert!(matches!(
        message(V2025_11_25, V2026_07_28, n.clone(), None),
        Err(TranslateError::NoEquivalent { .. })
    ));
    assert!(matches!(
        message(V2025_11_25, V2025_06_18, n, None),
        Err(TranslateError::NoEquivalent { .. })
    ));
}
