//! `mcp-gateway` built with feature `otel` and an OTLP endpoint in the environment
//! exports its spans there: a host's call on stdio carrying a `traceparent` reaches a
//! collector (a listener here, taking what the exporter posts to `/v1/traces`) as
//! `mcp.request` and `mcp.upstream_call` spans of the host's trace, the request's span a
//! child of the host's, while the upstream receives the host's `traceparent` unchanged;
//! and its audit record goes to `/v1/logs` as a log record (event `mcp.audit`).
#![cfg(feature = "otel")]

use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

mod common;
use common::python::python_upstream;
use common::raw_http::read_request;
use common::stdio_host::StdioHost;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const HOST_SPAN: &str = "00f067aa0ba902b7";

/// What a collector was sent: each request's path and body.
type Posted = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// A collector: every request body posted to it, answered `200`.
fn collector() -> (String, Posted) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let posted = Arc::new(Mutex::new(Vec::new()));
    let keep = posted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let keep = keep.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream);
                while let Some((head, body)) = read_request(&mut reader) {
                    let path = head[0].split(' ').nth(1).unwrap_or_default().to_owned();
                    keep.lock().expect("lock").push((path, body));
                    let _ = reader
                        .get_mut()
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
                }
            });
        }
    });
    (url, posted)
}

fn bytes_of(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect()
}

fn holds(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn spans_are_exported_in_the_hosts_trace() {
    let (endpoint, posted) = collector();
    let dir = std::env::temp_dir().join(format!("mcp-gateway-otel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let tools = json!([{"name": "meta", "inputSchema": {"type": "object"}}]);
    let on_call = "send({\"jsonrpc\": \"2.0\", \"id\": i, \"result\": {\"content\": [{\"type\": \"text\", \"text\": json.dumps(msg[\"params\"].get(\"_meta\"))}]}})";
    let config = json!({"mcpServers": {"up": {
        "command": "python3", "args": ["-c", python_upstream("up", "", tools, on_call)]}},
        "gateway": {"startupWaitMillis": 60000,
                    "audit": {"file": dir.join("audit.jsonl").display().to_string()}}});
    let file = dir.join("gateway.json");
    std::fs::write(&file, config.to_string()).expect("write config");

    let mut gw = Command::new(env!("CARGO_BIN_EXE_mcp-gateway"))
        .args(["--config", &file.display().to_string()])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_SERVICE_NAME", "gateway-under-test")
        .env_remove("OTEL_SDK_DISABLED")
        .env_remove("OTEL_TRACES_EXPORTER")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("mcp-gateway runs");
    let mut host = StdioHost::initialize(&mut gw);
    let traceparent = format!("00-{TRACE_ID}-{HOST_SPAN}-01");
    host.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "up__meta", "arguments": {}, "_meta": {"traceparent": traceparent}}}),
    );
    let answer = host.answer(1);
    let received: Value = serde_json::from_str(
        answer["result"]["content"][0]["text"]
            .as_str()
            .expect("the upstream's _meta"),
    )
    .expect("JSON");
    assert_eq!(received["traceparent"], traceparent, "unchanged upstream");

    host.close();
    assert!(gw.wait().expect("exit").success());
    // The exporter sends what it batched before the process exits.
    let posted = posted.lock().expect("lock");
    let traces: Vec<&Vec<u8>> = posted
        .iter()
        .filter(|(path, _)| path == "/v1/traces")
        .map(|(_, body)| body)
        .collect();
    assert!(
        !traces.is_empty(),
        "posted: {:?}",
        posted.iter().map(|p| &p.0).collect::<Vec<_>>()
    );
    let all: Vec<u8> = traces.into_iter().flatten().copied().collect();
    for want in [
        &b"mcp.request"[..],
        b"mcp.upstream_call",
        b"gateway-under-test",
        b"up__meta",
    ] {
        assert!(
            holds(&all, want),
            "{} exported",
            String::from_utf8_lossy(want)
        );
    }
    assert!(holds(&all, &bytes_of(TRACE_ID)), "the host's trace id");
    assert!(
        holds(&all, &bytes_of(HOST_SPAN)),
        "the host's span as parent"
    );
    // The call's audit record went out as a log record too: the line the file holds.
    let logs: Vec<u8> = posted
        .iter()
        .filter(|(path, _)| path == "/v1/logs")
        .flat_map(|(_, body)| body.iter().copied())
        .collect();
    let line = std::fs::read_to_string(dir.join("audit.jsonl")).expect("the audit file");
    let line = line.lines().next().expect("one record");
    assert!(
        line.contains("\"name\":\"up__meta\"") && line.contains(TRACE_ID),
        "{line}"
    );
    for want in [&b"mcp.audit"[..], line.as_bytes()] {
        assert!(
            holds(&logs, want),
            "{} exported as a log record; posted: {:?}",
            String::from_utf8_lossy(want),
            posted.iter().map(|p| &p.0).collect::<Vec<_>>()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
