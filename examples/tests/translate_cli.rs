//! The `translate` example's contract: the translated message on stdout, or one line on
//! stderr, exit status 2 and nothing on stdout.

use mcp_examples::translate_main;
use serde_json::{json, Value};

fn run(args: &[&str], stdin: &str) -> (i32, String, String) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = translate_main(&args, &mut stdin.as_bytes(), &mut out, &mut err);
    (
        code,
        String::from_utf8(out).expect("utf8"),
        String::from_utf8(err).expect("utf8"),
    )
}

#[test]
fn the_bundled_sample_translates_for_a_2024_host() {
    let sample = include_str!("../data/call-tool-result-2026.json");
    let (code, out, err) = run(
        &[
            "--from",
            "2026-07-28",
            "--to",
            "2024-11-05",
            "--answers",
            "tools/call",
        ],
        sample,
    );
    assert_eq!((code, err.as_str()), (0, ""));
    let v: Value = serde_json::from_str(&out).expect("stdout is JSON");
    let result = &v["result"];
    assert_eq!(result["isError"], json!(false));
    assert!(result.get("structuredContent").is_none() && result.get("resultType").is_none());
    let kinds: Vec<&str> = result["content"]
        .as_array()
        .expect("content")
        .iter()
        .map(|b| b["type"].as_str().unwrap_or(""))
        .collect();
    // resource_link became text, audio an embedded resource, and the structured value a JSON text block.
    assert_eq!(kinds, ["text", "text", "resource", "text"]);
    assert!(result["content"][1]["text"]
        .as_str()
        .unwrap_or("")
        .contains("file:///exports/users.csv"));
    assert_eq!(result["_meta"], json!({"com.example/trace": "abc"}));
}

#[test]
fn failures_are_one_line_on_stderr_with_status_2() {
    let ok_msg = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    for (args, stdin) in [
        (
            vec!["--from", "2025-06-18", "--to", "2025-03-26"],
            "{not json",
        ),
        (vec!["--from", "2025-13-01", "--to", "2025-03-26"], ok_msg),
        (vec!["--from", "2025-06-18", "--to", "2026-07-28"], ok_msg),
        (vec!["--from", "2025-06-18"], ok_msg),
        (
            vec!["--from", "2026-07-28", "--to", "2025-06-18"],
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        ),
        (vec!["--bogus"], ok_msg),
    ] {
        let (code, out, err) = run(&args, stdin);
        assert_eq!(code, 2, "{args:?}");
        assert!(out.is_empty(), "{args:?}: stdout must stay empty");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn numbers_and_key_order_come_out_as_they_went_in() {
    let structured = r#"{"n": 123456789012345678901234567890, "f": 1.10000000000000000000001, "z": {"b": 1, "a": 2}}"#;
    let stdin = format!(
        r#"{{"jsonrpc": "2.0", "id": 1, "result": {{"content": [{{"type": "text", "text": "ok"}}], "structuredContent": {structured}, "x-total": 1.50}}}}"#
    );
    for to in ["2025-06-18", "2026-07-28"] {
        let args = [
            "--from",
            "2025-11-25",
            "--to",
            to,
            "--answers",
            "tools/call",
        ];
        let (code, out, err) = run(&args, &stdin);
        assert_eq!((code, err.as_str()), (0, ""), "{to}");
        assert!(out.contains(structured), "{to}: {out}");
        // Whitespace between members may go where the top level was rewritten; digits stay.
        assert!(
            out.replace(' ', "").contains(r#""x-total":1.50"#),
            "{to}: {out}"
        );
    }
    // Below 2025-06-18 the structured value becomes a text block carrying its exact text.
    let args = [
        "--from",
        "2025-11-25",
        "--to",
        "2025-03-26",
        "--answers",
        "tools/call",
    ];
    let (code, out, err) = run(&args, &stdin);
    assert_eq!((code, err.as_str()), (0, ""));
    let v: Value = serde_json::from_str(&out).expect("stdout is JSON");
    assert_eq!(v["result"]["content"][1]["text"], json!(structured));
}
