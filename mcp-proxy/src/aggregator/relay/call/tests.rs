//! The call relay's answer handling, in isolation.
use super::*;

fn raw(s: &str) -> Box<RawValue> {
    RawValue::from_string(s.to_owned()).expect("raw")
}

/// [`tidy_result`] as the relay calls it.
fn tidy(body: Box<RawValue>) -> Result<Box<RawValue>, ErrorObject> {
    let escapes = raw::has_key_escapes(body.get());
    tidy_result("up", body, escapes)
}

#[test]
fn results_are_told_apart_by_their_type() {
    let plain = TaskPlan {
        as_task: false,
        host_takes_task: false,
        ttl: None,
    };
    let kind = |s: &str| {
        let r = raw(s);
        answer_kind(&r, &plain, raw::has_key_escapes(s))
    };
    assert_eq!(kind(r#"{"content":[]}"#), AnswerKind::Plain);
    assert_eq!(
        kind(r#"{"content":[],"resultType" : "complete"}"#),
        AnswerKind::Plain
    );
    assert_eq!(
        kind(r#"{"resultType":"input_required","inputRequests":{}}"#),
        AnswerKind::Special
    );
    assert_eq!(
        kind(r#"{"resultType":"task","taskId":"t"}"#),
        AnswerKind::Special
    );
    // Nested and at the top: the top level decides.
    assert_eq!(
        kind(r#"{"structuredContent":{"resultType":"complete"},"resultType":"input_required"}"#),
        AnswerKind::Special
    );
    assert_eq!(
        kind(r#"{"structuredContent":{"resultType":"x"},"resultType":"complete"}"#),
        AnswerKind::Plain
    );
    // A key spelled with escapes is still read.
    assert_eq!(kind(r#"{"result\u0054ype":"task"}"#), AnswerKind::Special);
}

#[test]
fn a_plain_result_is_kept_as_it_came() {
    let body = raw(r#"{"content":[{"type":"text","text":"hi"}],"isError":false}"#);
    let out = tidy(body.clone()).expect("tidy");
    assert_eq!(out.get(), body.get());
}

#[test]
fn the_text_copy_keeps_numbers_and_key_order() {
    let body = raw(
        r#"{"content":[],"structuredContent":{"n":123456789012345678901234567890,"f":1.10000000000000000000001,"z":{"b":1,"a":2}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"u","version":"1"},"io.modelcontextprotocol/related-task":{"taskId":"t"},"x":1}}"#,
    );
    let out = tidy(body).expect("tidy");
    assert_eq!(
        out.get(),
        r#"{"content":[{"type":"text","text":"{\"n\":123456789012345678901234567890,\"f\":1.10000000000000000000001,\"z\":{\"b\":1,\"a\":2}}"}],"structuredContent":{"n":123456789012345678901234567890,"f":1.10000000000000000000001,"z":{"b":1,"a":2}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"u","version":"1"},"x":1}}"#
    );
    // Already there: nothing added.
    let again = tidy(out.clone()).expect("tidy");
    assert_eq!(again.get(), out.get());
}

#[test]
fn a_text_block_holding_the_structured_value_in_any_spelling_counts_as_its_copy() {
    let with_text = |text: &str| {
        let block = serde_json::json!({"type": "text", "text": text}).to_string();
        raw(&format!(
            r#"{{"content":[{block}],"structuredContent":{{"a":1,"b":[true]}}}}"#
        ))
    };
    for same in [r#"{"a":1,"b":[true]}"#, r#" { "b" : [ true ], "a" : 1 }"#] {
        let body = with_text(same);
        assert_eq!(tidy(body.clone()).expect("tidy").get(), body.get());
    }
    for other in ["a: 1", r#"{"a":2,"b":[true]}"#, "[1]"] {
        let out = tidy(with_text(other)).expect("tidy");
        let v: Value = serde_json::from_str(out.get()).expect("json");
        assert_eq!(v["content"].as_array().map(Vec::len), Some(2), "{other}");
        assert_eq!(v["content"][1]["text"], r#"{"a":1,"b":[true]}"#);
    }
}
