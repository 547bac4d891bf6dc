//! The gateway's metrics: every call relayed to an upstream is counted by upstream, tool
//! and outcome (a result, an `isError` result, the upstream's JSON-RPC error, a timeout),
//! timed, and its bytes added; the upstreams' state and restarts, and the hosts connected,
//! are there too, and legacy HTTP sessions evicted or refused for room, by reason. Read as a scraper reads them: `/metrics` over HTTP, parsed as Prometheus text by a parser.

use std::collections::HashMap;
use std::time::Duration;

use mcp_client::StdioCommand;
use mcp_proxy::{Aggregator, AggregatorOptions, SessionMode, UpstreamConfig, UpstreamTransport};
use mcp_server::http::{HttpOptions, StreamableHttp};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod common;
use common::python::python_upstream;

/// `ok` answers, `oops` answers `isError`, `bad` is refused with a JSON-RPC error,
/// `slow` never answers, `die` ends the process.
fn upstream() -> UpstreamConfig {
    let tools = json!([
        {"name": "ok", "inputSchema": {"type": "object"}},
        {"name": "oops", "inputSchema": {"type": "object"}},
        {"name": "bad", "inputSchema": {"type": "object"}},
        {"name": "slow", "inputSchema": {"type": "object"}},
        {"name": "die", "inputSchema": {"type": "object"}}
    ]);
    let on_call = r#"
n = msg["params"]["name"]
if n == "ok":
    send({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": "fine"}]}})
elif n == "oops":
    send({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": "no"}], "isError": True}})
elif n == "bad":
    send({"jsonrpc": "2.0", "id": i, "error": {"code": -32602, "message": "bad arguments"}})
elif n == "die":
    sys.exit(3)
"#;
    let script = python_upstream("up", "", tools, on_call);
    UpstreamConfig::new(
        "up",
        UpstreamTransport::Stdio(StdioCommand::new("python3", ["-c".to_owned(), script])),
    )
    .call_timeout(Duration::from_millis(300))
    .session(SessionMode::Shared)
}

/// GET `path` from `addr` with `host`, to the status line and the body.
async fn get(addr: std::net::SocketAddr, path: &str, host: &str) -> (String, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).await.expect("read");
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (
        head.lines().next().unwrap_or_default().to_owned(),
        body.to_owned(),
    )
}

/// Each sample's value, by its name and labels (`name{a="1",b="2"}`, labels sorted).
fn samples(text: &str) -> HashMap<String, f64> {
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text");
    let mut out = HashMap::new();
    for s in scrape.samples {
        let mut labels: Vec<String> = s
            .labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{v}\""))
            .collect();
        labels.sort();
        let value = match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            prometheus_parse::Value::Histogram(h) => h.iter().map(|b| b.count).fold(0.0, f64::max),
            prometheus_parse::Value::Summary(_) => f64::NAN,
        };
        out.insert(format!("{}{{{}}}", s.metric, labels.join(",")), value);
    }
    out
}

fn calls(m: &HashMap<String, f64>, tool: &str, outcome: &str) -> f64 {
    let key = format!(
        "mcp_gateway_upstream_calls_total{{outcome=\"{outcome}\",tool=\"{tool}\",upstream=\"up\"}}"
    );
    m.get(&key).copied().unwrap_or(0.0)
}

/// Hosts connected, whatever revision they speak.
fn hosts(m: &HashMap<String, f64>) -> f64 {
    m.iter()
        .filter(|(k, _)| k.starts_with("mcp_gateway_hosts{"))
        .map(|(_, v)| v)
        .sum()
}

#[tokio::test]
async fn metrics_count_the_calls_a_host_made_by_upstream_tool_and_outcome() {
    let options = AggregatorOptions::default()
        .restart_backoff((Duration::from_millis(100), Duration::from_millis(500)));
    let agg = Aggregator::start(vec![upstream()], options)
        .await
        .expect("start");
    // The host's server is the aggregator's own, so its hosts are counted too.
    let server = agg.server(Default::default());
    let (a, b) = mcp_types::transport::memory_pair(16);
    tokio::spawn(async move { server.serve(b).await });
    let host = mcp_client::Client::connect(a, mcp_client::NoHandler, Default::default())
        .await
        .expect("host connects");
    let args = || common::arguments(json!({}));
    for _ in 0..3 {
        host.call_tool("up__ok", args()).await.expect("ok");
    }
    let oops = host.call_tool("up__oops", args()).await.expect("a result");
    assert_eq!(oops.result.is_error, Some(true));
    host.call_tool("up__oops", args()).await.expect("a result");
    assert!(host.call_tool("up__bad", args()).await.is_err());
    let slow = host
        .call_tool("up__slow", args())
        .await
        .expect("a timeout result");
    assert_eq!(slow.result.is_error, Some(true));
    let _ = host.call_tool("up__die", args()).await;
    // Back after the restart.
    let back = mcp_examples::wait_until(Duration::from_secs(2), || {
        let up = &agg.status()[0];
        std::future::ready(up.connected && up.restarts == 1)
    })
    .await;
    assert!(back, "{:?}", agg.status());
    host.call_tool("up__ok", args())
        .await
        .expect("ok after the restart");

    let metrics: std::sync::Arc<dyn mcp_server::http::Metrics> = std::sync::Arc::new(agg.clone());
    let http = StreamableHttp::new(
        mcp_server::Server::new(agg.clone()),
        HttpOptions::default().metrics(metrics),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(mcp_server::http::serve(listener, http));

    let (status, text) = get(addr, "/metrics", &format!("127.0.0.1:{}", addr.port())).await;
    assert!(status.contains(" 200 "), "{status}");
    let m = samples(&text);
    assert_eq!(calls(&m, "ok", "ok"), 4.0, "{text}");
    assert_eq!(calls(&m, "oops", "is_error"), 2.0, "{text}");
    assert_eq!(calls(&m, "bad", "error"), 1.0, "{text}");
    assert_eq!(calls(&m, "slow", "timeout"), 1.0, "{text}");
    assert_eq!(calls(&m, "die", "failed"), 1.0, "{text}");
    assert_eq!(calls(&m, "ok", "is_error"), 0.0, "{text}");
    let h = "{upstream=\"up\"}";
    assert_eq!(
        m.get(&format!("mcp_gateway_upstream_restarts_total{h}")),
        Some(&1.0),
        "{text}"
    );
    assert_eq!(
        m.get(&format!("mcp_gateway_upstream_up{h}")),
        Some(&1.0),
        "{text}"
    );
    // The connection the upstream's exit ended is one failure, of the transport.
    assert_eq!(
        m.get("mcp_gateway_upstream_failures_total{kind=\"transport\",upstream=\"up\"}"),
        Some(&1.0),
        "{text}"
    );
    assert_eq!(
        m.get(&format!("mcp_gateway_upstream_calls_in_flight{h}")),
        Some(&0.0),
        "{text}"
    );
    // Every call was timed: 9 observations.
    let count = format!("mcp_gateway_upstream_call_duration_seconds_count{h}");
    let timed = m.get(&count).copied().or_else(|| {
        m.get(&format!("mcp_gateway_upstream_call_duration_seconds{h}"))
            .copied()
    });
    assert_eq!(timed, Some(9.0), "{text}");
    let received = "mcp_gateway_upstream_call_bytes_total{direction=\"received\",upstream=\"up\"}";
    assert!(m.get(received).is_some_and(|b| *b > 0.0), "{text}");
    assert_eq!(hosts(&m), 1.0, "{text}");
    assert_eq!(
        m.get("mcp_gateway_translation_refusals_total{}"),
        Some(&0.0),
        "{text}"
    );

    // Not for a Host the endpoint refuses.
    let (status, _) = get(addr, "/metrics", "evil.example").await;
    assert!(status.contains(" 403 "), "{status}");
    host.close().await;
    let local = format!("127.0.0.1:{}", addr.port());
    let gone = mcp_examples::wait_until(Duration::from_secs(2), || async {
        let (_, text) = get(addr, "/metrics", &local).await;
        hosts(&samples(&text)) == 0.0
    })
    .await;
    assert!(gone, "the host that left is still counted");
    agg.shutdown().await;
}

/// A legacy `initialize` POSTed to `addr`: the status line and the session id.
async fn initialize(addr: std::net::SocketAddr) -> (String, Option<String>) {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).await.expect("read");
    let session = out
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id: "))
        .map(str::to_owned);
    (out.lines().next().unwrap_or_default().to_owned(), session)
}

#[tokio::test]
async fn legacy_sessions_evicted_and_refused_are_counted_by_reason() {
    let agg = Aggregator::start(Vec::new(), AggregatorOptions::default())
        .await
        .expect("start");
    // The server the aggregator makes is the one whose sessions its metrics count.
    let server = agg.server(Default::default());
    let metrics: std::sync::Arc<dyn mcp_server::http::Metrics> = std::sync::Arc::new(agg.clone());
    let options = HttpOptions::default().max_sessions(1).metrics(metrics);
    let (addr, _task) =
        mcp_server::http::bind("127.0.0.1:0".parse().expect("addr"), server, options)
            .await
            .expect("bind");
    let (status, _) = initialize(addr).await;
    assert!(status.contains(" 200 "), "{status}");
    // The first, idle, makes room for the second.
    let (status, second) = initialize(addr).await;
    assert!(status.contains(" 200 "), "{status}");
    // The second, its GET stream open, is in use: the third is refused.
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let open = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {}\r\n\r\n",
        second.expect("a session")
    );
    stream.write_all(open.as_bytes()).await.expect("write");
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        assert_eq!(
            stream.read(&mut byte).await.expect("read"),
            1,
            "the stream opens"
        );
        head.push(byte[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    let (status, _) = initialize(addr).await;
    assert!(status.contains(" 503 "), "{status}");
    let (_, text) = get(addr, "/metrics", &format!("127.0.0.1:{}", addr.port())).await;
    let m = samples(&text);
    let count = |family: &str, reason: &str| {
        let key = format!("mcp_gateway_http_session_{family}_total{{reason=\"{reason}\"}}");
        m.get(&key).copied()
    };
    assert_eq!(
        (
            count("evictions", "table_full"),
            count("refusals", "table_full"),
            count("evictions", "client_quota"),
            count("refusals", "client_quota")
        ),
        (Some(1.0), Some(1.0), Some(0.0), Some(0.0)),
        "{text}"
    );
    agg.shutdown().await;
}
