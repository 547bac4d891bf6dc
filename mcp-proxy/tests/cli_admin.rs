//! `mcp-gateway --admin ADDR`: a gateway serving MCP on stdio answers probes and scrapes
//! on a listener of its own, its counters matching the calls a host made on stdio, and
//! keeps a browser page (a `Host` that is a foreign name) from its metrics.
#![cfg(feature = "cli")]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

mod common;
use common::python::python_upstream;
use common::raw_http::exchange;
use common::stdio_host::StdioHost;

/// `GET path` with `host` as `Host`: the status and the body.
fn get(addr: SocketAddr, path: &str, host: &str) -> (u16, String) {
    exchange(
        &addr.to_string(),
        &format!("GET {path} HTTP/1.1\r\nHost: {host}"),
        "",
    )
}

fn metric(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text");
    scrape
        .samples
        .iter()
        .find(|s| {
            s.metric == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(k).is_some_and(|l| l == *v))
        })
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        })
}

#[test]
fn admin_serves_health_and_metrics_beside_stdio() {
    let dir = std::env::temp_dir().join(format!("mcp-gateway-admin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let tools = json!([{"name": "hello", "inputSchema": {"type": "object"}}]);
    let on_call = "send({\"jsonrpc\": \"2.0\", \"id\": i, \"result\": {\"content\": [{\"type\": \"text\", \"text\": \"hi\"}]}})";
    let config = json!({"mcpServers": {"core": {
        "command": "python3", "args": ["-c", python_upstream("core", "", tools, on_call)],
        "required": true}}, "gateway": {"startupWaitMillis": 60000}});
    let file = dir.join("gateway.json");
    std::fs::write(&file, config.to_string()).expect("write config");

    let mut gw = Command::new(env!("CARGO_BIN_EXE_mcp-gateway"))
        .args([
            "--config",
            &file.display().to_string(),
            "--admin",
            "127.0.0.1:0",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcp-gateway runs");
    let mut stderr = BufReader::new(gw.stderr.take().expect("stderr"));
    let mut addr = None;
    let mut seen = String::new();
    for _ in 0..50 {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        seen.push_str(&line);
        if let Some(a) = line.split("/metrics on http://").nth(1) {
            addr = a.trim().parse::<SocketAddr>().ok();
        }
        if line.contains("serving MCP on stdio") {
            break;
        }
    }
    let addr = addr.unwrap_or_else(|| panic!("the admin address in:\n{seen}"));
    std::thread::spawn(move || for _ in stderr.lines() {});

    // A legacy host on stdio makes two calls.
    let mut host = StdioHost::initialize(&mut gw);
    for id in 1..=2 {
        host.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "core__hello", "arguments": {}}}));
        let answer = host.answer(id);
        assert!(answer.get("result").is_some(), "{answer}");
    }

    assert_eq!(get(addr, "/healthz", "127.0.0.1").0, 200);
    let (status, body) = get(addr, "/readyz", &addr.to_string());
    assert_eq!(status, 200, "{body}");
    let ready: Value = serde_json::from_str(&body).expect("readiness details");
    assert_eq!(ready["ready"], true);
    let (status, text) = get(addr, "/metrics", &addr.to_string());
    assert_eq!(status, 200, "{text}");
    let calls = metric(
        &text,
        "mcp_gateway_upstream_calls_total",
        &[("upstream", "core"), ("tool", "hello"), ("outcome", "ok")],
    );
    assert_eq!(calls, Some(2.0), "{text}");
    assert_eq!(get(addr, "/metrics", "evil.example").0, 403);
    assert_eq!(
        get(addr, "/mcp", "127.0.0.1").0,
        404,
        "no MCP on the admin listener"
    );

    host.close();
    let status = gw.wait().expect("the gateway exits when stdin closes");
    assert!(status.success(), "{status}");
    let _ = std::fs::remove_dir_all(&dir);
}
