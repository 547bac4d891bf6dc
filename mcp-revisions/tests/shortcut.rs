//! The shortcut (subtrees without a trigger for the target are kept unread) never changes
//! an outcome: every corpus file translated between every pair of revisions comes out
//! byte for byte the same with it as with a full walk.

use std::borrow::Cow;

use mcp_revisions::shapes::ObjectShape;
use mcp_revisions::{DowngradePolicy, TranslateError, Translator};
use mcp_types::raw::RawObject;
use mcp_types::{Message, Revision};
use serde_json::value::RawValue;

#[path = "common/schemas.rs"]
mod schemas;

#[path = "common/corpus.rs"]
mod corpus;

#[path = "../../mcp-types/tests/common/mod.rs"]
mod common;

/// The default policy, but claiming its `adjust` acts on anything: no shortcut.
struct FullWalk;

impl DowngradePolicy for FullWalk {
    fn adjust(&self, _: &ObjectShape, _: &mut RawObject<'_>, _: Revision, _: Revision) -> bool {
        false
    }

    fn adjusts_objects(&self) -> bool {
        true
    }
}

/// A translation's outcome as text: the output, or the error.
fn outcome(r: Result<String, TranslateError>) -> String {
    r.unwrap_or_else(|e| format!("error: {e}"))
}

fn translate(t: &Translator<'_>, text: &str, def: &str, msg: Option<&Message>) -> Option<String> {
    if let Some(msg) = msg {
        let answers = common::result_method(def);
        return Some(outcome(
            t.message(msg, answers)
                .map(|m| String::from_utf8_lossy(&m.to_bytes()).into_owned()),
        ));
    }
    let method = common::result_method(def)?;
    let raw = RawValue::from_string(text.to_owned()).expect("json");
    Some(outcome(
        t.result_raw(method, &raw).map(|c| c.get().to_owned()),
    ))
}

#[test]
fn the_shortcut_changes_no_outcome() {
    let Some(spec) = schemas::spec_dir() else {
        eprintln!(
            "SKIPPED: no MCP spec folder (set MCP_SPEC_DIR or place shared/spec beside the repo)"
        );
        return;
    };
    let (mut compared, mut borrowed) = (0, 0);
    for (from, def, path) in corpus::corpora(&spec) {
        let text = std::fs::read_to_string(&path).expect("read");
        let msg = text
            .contains("\"jsonrpc\"")
            .then(|| Message::parse(text.as_bytes()).expect("message"));
        for to in Revision::ALL {
            let fast = Translator::new(from, to);
            let full = Translator::new(from, to).with_policy(&FullWalk);
            let Some(a) = translate(&fast, &text, &def, msg.as_ref()) else {
                continue;
            };
            let b = translate(&full, &text, &def, msg.as_ref()).expect("same kind");
            assert_eq!(a, b, "{} ({from} -> {to})", path.display());
            compared += 1;
            if msg.is_none() {
                let raw = RawValue::from_string(text.clone()).expect("json");
                let method = common::result_method(&def).expect("a result");
                if let Ok(Cow::Borrowed(_)) = fast.result_raw(method, &raw) {
                    borrowed += 1;
                }
            }
        }
    }
    eprintln!("compared {compared} translations; {borrowed} results handed back unread");
    assert!(compared > 1000, "only {compared} compared");
}

/// Results as a 2026-07-28 server writes them, `resultType` first: going down, each loses
/// only that member, by the cut, and comes out as the full walk gives it.
#[test]
fn the_leading_result_type_cut_matches_the_walk() {
    let results = [
        (
            "tools/call",
            r#"{"resultType":"complete","content":[{"type":"text","text":"x"}],"structuredContent":{"n":123456789012345678901234567890,"f":1.10000000000000000000001,"z":{"b":1,"a":2}},"isError":false}"#,
        ),
        ("tools/call", r#"{"resultType":"complete","content":[]}"#),
        (
            "tools/call",
            r#"{"resultType":"complete","content":[{"type":"audio","data":"AA==","mimeType":"audio/wav"}]}"#,
        ),
        (
            "tools/call",
            r#"{"resultType":"complete","content":[{"type":"resource_link","uri":"a:b","name":"n"}]}"#,
        ),
        (
            "tools/list",
            r#"{"resultType":"complete","tools":[{"name":"t","title":"T","inputSchema":{"type":"object"},"icons":[{"src":"a.png"}]}]}"#,
        ),
        ("ping", r#"{"resultType":"complete"}"#),
    ];
    let mut cut = 0;
    for (method, text) in results {
        let raw = RawValue::from_string(text.to_owned()).expect("json");
        for to in Revision::ALL {
            let fast = Translator::new(Revision::V2026_07_28, to);
            let full = Translator::new(Revision::V2026_07_28, to).with_policy(&FullWalk);
            let a = outcome(fast.result_raw(method, &raw).map(|c| c.get().to_owned()));
            let b = outcome(full.result_raw(method, &raw).map(|c| c.get().to_owned()));
            assert_eq!(a, b, "{method} {text} -> {to}");
            if to != Revision::V2026_07_28 && !a.contains("resultType") {
                cut += 1;
            }
        }
    }
    // Five of the six (not `ping`'s empty result, which the table gives no `resultType`).
    assert_eq!(cut, 20, "resultType went in {cut} translations");
}
