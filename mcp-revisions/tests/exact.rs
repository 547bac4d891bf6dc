//! Translation is exact and cheap: numbers keep their literals, objects their key order,
//! untouched members their bytes; a translation that changes nothing hands its input back.

use std::borrow::Cow;

use mcp_revisions::{translate, Translator};
use mcp_types::raw::{self, RawObject};
use mcp_types::{Message, Revision};
use serde_json::value::RawValue;

use Revision::*;

/// A 30-digit integer, a 25-digit decimal and keys out of alphabetical order.
const STRUCTURED: &str = r#"{"n": 123456789012345678901234567890, "f": 1.10000000000000000000001, "z": {"b": 1, "a": 2}}"#;

fn raw(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).expect("valid JSON")
}

fn call_result() -> String {
    format!(
        r#"{{"content": [{{"type": "text", "text": "It is 22.5 degrees."}}], "structuredContent": {STRUCTURED}}}"#
    )
}

/// Whether `text` is `STRUCTURED` as written: same digits, `z` keys in order b, a.
fn is_structured_exactly(text: &str) -> bool {
    let Ok(o) = RawObject::parse(text) else {
        return false;
    };
    let z = o.get("z").and_then(|z| RawObject::from_raw(z).ok());
    o.get("n").map(RawValue::get) == Some("123456789012345678901234567890")
        && o.get("f").map(RawValue::get) == Some("1.10000000000000000000001")
        && z.is_some_and(|z| z.keys().collect::<Vec<_>>() == ["b", "a"])
}

/// The texts of the text blocks of a result.
fn texts(result: &RawValue) -> Vec<String> {
    let o = RawObject::from_raw(result).expect("object");
    let content = raw::array(o.get("content").expect("content")).expect("array");
    content
        .iter()
        .filter_map(|b| {
            RawObject::from_raw(b)
                .ok()?
                .get_str("text")
                .map(Cow::into_owned)
        })
        .collect()
}

fn check_call_result(out: &RawValue, from: Revision, to: Revision) {
    if from == to {
        assert_eq!(
            out.get(),
            call_result(),
            "the same revision passes as it is"
        );
    } else if to >= V2025_06_18 {
        assert!(
            out.get().contains(STRUCTURED),
            "{from} -> {to}: {}",
            out.get()
        );
    } else {
        let texts = texts(out);
        assert_eq!(texts.len(), 2, "{from} -> {to}: {}", out.get());
        assert!(
            is_structured_exactly(&texts[1]),
            "{from} -> {to}: {}",
            texts[1]
        );
        assert_eq!(texts[1], STRUCTURED, "one line already: kept as written");
    }
}

#[test]
fn structured_content_keeps_its_numbers_and_order_between_every_pair() {
    let input = raw(&call_result());
    for from in Revision::ALL {
        for to in Revision::ALL {
            let out = Translator::new(from, to)
                .result_raw("tools/call", &input)
                .expect("translates");
            check_call_result(&out, from, to);
        }
    }
}

#[test]
fn a_structured_value_written_over_lines_becomes_one_line_with_the_same_numbers() {
    let pretty = "{\n  \"n\": 123456789012345678901234567890,\n  \"f\": 1.10000000000000000000001,\n  \"z\": {\"b\": 1, \"a\": 2}\n}";
    let input = raw(&format!(
        r#"{{"content": [], "structuredContent": {pretty}}}"#
    ));
    let out = Translator::new(V2025_06_18, V2025_03_26)
        .result_raw("tools/call", &input)
        .expect("translates");
    let texts = texts(&out);
    assert_eq!(
        texts,
        [r#"{"n":123456789012345678901234567890,"f":1.10000000000000000000001,"z":{"b":1,"a":2}}"#]
    );
}

#[test]
fn whole_messages_keep_their_numbers_and_order_between_every_pair() {
    let bytes = format!(r#"{{"jsonrpc":"2.0","id":7,"result":{}}}"#, call_result());
    let msg = Message::parse(bytes.as_bytes()).expect("message");
    for from in Revision::ALL {
        for to in Revision::ALL {
            let out = translate(&msg, from, to, Some("tools/call")).expect("translates");
            let Message::Response(r) = out else {
                panic!("a response stays a response")
            };
            check_call_result(&r.result, from, to);
        }
    }
}

#[test]
fn call_arguments_keep_their_numbers_and_order_between_every_pair() {
    let input = raw(&format!(
        r#"{{"name": "weather", "arguments": {STRUCTURED}, "_meta": {{"progressToken": 1.50}}}}"#
    ));
    for from in Revision::ALL {
        for to in Revision::ALL {
            let out = Translator::new(from, to)
                .params_raw("tools/call", &input)
                .expect("translates");
            let text = out.get();
            assert!(text.contains(STRUCTURED), "{from} -> {to}: {text}");
            assert!(text.contains("1.50"), "{from} -> {to}: {text}");
        }
    }
}

#[test]
fn tool_schemas_keep_their_numbers_and_order_between_every_pair() {
    let schema = r#"{"type": "object", "properties": {"z": {"type": "number", "maximum": 123456789012345678901234567890}, "a": {"type": "number", "multipleOf": 1.10000000000000000000001}}}"#;
    let input = raw(&format!(
        r#"{{"tools": [{{"name": "t", "title": "T", "inputSchema": {schema}, "icons": [{{"src": "data:,"}}]}}]}}"#
    ));
    for from in Revision::ALL {
        for to in Revision::ALL {
            let out = Translator::new(from, to)
                .result_raw("tools/list", &input)
                .expect("translates");
            assert!(out.get().contains(schema), "{from} -> {to}: {}", out.get());
        }
    }
}

#[test]
fn a_translation_that_changes_nothing_hands_its_input_back() {
    let text_only = raw(
        r#"{"content": [{"type": "text", "text": "Order 1042 \"shipped\".\n"}], "isError": false}"#,
    );
    let out = Translator::new(V2025_11_25, V2025_06_18)
        .result_raw("tools/call", &text_only)
        .expect("translates");
    assert!(matches!(out, Cow::Borrowed(_)), "{}", out.get());

    let params = raw(&format!(
        r#"{{"name": "weather", "arguments": {STRUCTURED}}}"#
    ));
    let out = Translator::new(V2025_06_18, V2025_11_25)
        .params_raw("tools/call", &params)
        .expect("translates");
    assert!(matches!(out, Cow::Borrowed(_)), "{}", out.get());

    let same = Translator::new(V2026_07_28, V2026_07_28)
        .result_raw("tools/call", &text_only)
        .expect("translates");
    assert!(matches!(same, Cow::Borrowed(_)));
}

#[test]
fn changing_one_member_leaves_the_others_byte_for_byte() {
    let input =
        raw(r#"{"content": [ {"type": "text",  "text": "caf\u00e9 1.50"} ], "isError": false}"#);
    let out = Translator::new(V2025_11_25, V2026_07_28)
        .result_raw("tools/call", &input)
        .expect("translates");
    assert_eq!(
        out.get(),
        r#"{"content":[ {"type": "text",  "text": "caf\u00e9 1.50"} ],"isError":false,"resultType":"complete"}"#
    );
}

#[test]
fn what_the_target_lacks_is_found_however_deep_or_spelled() {
    // Audio inside a prompt message, for a revision without audio.
    let prompt = raw(
        r#"{"messages": [{"role": "user", "content": {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}}]}"#,
    );
    let out = Translator::new(V2025_03_26, V2024_11_05)
        .result_raw("prompts/get", &prompt)
        .expect("translates");
    assert!(!out.get().contains(r#""audio""#), "{}", out.get());

    // A 2025-11-25 `_meta` key inside a content block, for 2025-06-18.
    for key in [
        "io.modelcontextprotocol/related-task",
        r"io.modelcontextprotocol\/related-task",
        r"io.modelcontextprotocol\u002frelated-task",
    ] {
        let result = raw(&format!(
            r#"{{"content": [{{"type": "text", "text": "x", "_meta": {{"{key}": {{"taskId": "t"}}, "com.example/k": 1}}}}]}}"#
        ));
        let out = Translator::new(V2025_11_25, V2025_06_18)
            .result_raw("tools/call", &result)
            .expect("translates");
        assert!(!out.get().contains("related"), "{key}: {}", out.get());
        assert!(out.get().contains(r#""com.example/k":1"#), "{}", out.get());
    }

    // A key spelled with an escape is still the key.
    let escaped = raw(r#"{"content": [], "result\u0054ype": "complete"}"#);
    let out = Translator::new(V2026_07_28, V2025_06_18)
        .result_raw("tools/call", &escaped)
        .expect("translates");
    assert_eq!(out.get(), r#"{"content":[]}"#);
}
