//! Nothing a peer sends is changed on the way through the gateway unless a revision
//! requires it: numbers keep their literals, objects their key order.
//!
//! The upstream is a stdio server that records the raw lines it reads and answers with a
//! fixed raw result; the host is a bare line writer and reader. Neither decodes what it
//! checks, so a digit lost or a key reordered anywhere in between shows.

use std::path::PathBuf;
use std::time::Duration;

use mcp_client::StdioCommand;
use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig, UpstreamTransport};
use mcp_server::Server;
use mcp_types::transport::LineTransport;
use mcp_types::Revision;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The arguments a host sends, as it writes them (spaces included).
const ARGS: &str = r#"{"n": 123456789012345678901234567890, "f": 1.10000000000000000000001, "z": {"b": 1, "a": 2}}"#;

/// The structured result the upstream answers with, as it writes it.
const STRUCTURED: &str =
    r#"{"n":123456789012345678901234567890,"f":1.10000000000000000000001,"z":{"b":1,"a":2}}"#;

/// A stdio server, legacy (argv[2] = "legacy") or 2026-07-28 ("modern"), with one tool,
/// `exact`, whose result is STRUCTURED as written. It appends every line it reads to the
/// file named by argv[1].
const UPSTREAM: &str = r#"
import json, sys
log, mode = sys.argv[1], sys.argv[2]
STRUCTURED = sys.argv[3]
def send(text):
    sys.stdout.write(text + "\n"); sys.stdout.flush()
for line in sys.stdin:
    with open(log, "a") as f:
        f.write(line)
    msg = json.loads(line)
    i, m = msg.get("id"), msg.get("method")
    if i is None:
        continue
    rid = json.dumps(i)
    tail = ',"resultType":"complete"' if mode == "modern" else ""
    if m == "server/discover" and mode == "modern":
        send('{"jsonrpc":"2.0","id":%s,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"resultType":"complete"}}' % rid)
    elif m == "initialize" and mode == "legacy":
        send('{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"exact","version":"1"}}}' % rid)
    elif m == "tools/list":
        send('{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"exact","inputSchema":{"type":"object"}}]%s}}' % (rid, tail))
    elif m == "tools/call":
        send('{"jsonrpc":"2.0","id":%s,"result":{"content":[],"structuredContent":%s%s}}' % (rid, STRUCTURED, tail))
    else:
        send('{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}' % rid)
"#;

struct Upstream {
    log: PathBuf,
    script: PathBuf,
}

impl Upstream {
    fn new(mode: &str) -> Upstream {
        let dir = std::env::temp_dir();
        let stem = format!("mcp-proxy-exact-{mode}-{}", std::process::id());
        let script = dir.join(format!("{stem}.py"));
        std::fs::write(&script, UPSTREAM).expect("script");
        let log = dir.join(format!("{stem}.log"));
        let _ = std::fs::remove_file(&log);
        Upstream { log, script }
    }

    fn config(&self, mode: &str) -> UpstreamConfig {
        let cmd = StdioCommand::new(
            "python3",
            [
                self.script.display().to_string(),
                self.log.display().to_string(),
                mode.to_owned(),
                STRUCTURED.to_owned(),
            ],
        );
        UpstreamConfig::new("up", UpstreamTransport::Stdio(cmd))
    }

    fn lines(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.log);
        let _ = std::fs::remove_file(&self.script);
    }
}

/// The raw answer line a host of `revision` gets for one call with ARGS.
async fn call_as(agg: &Aggregator, revision: Revision) -> String {
    let (host, gateway) = tokio::io::duplex(1 << 16);
    let (gr, gw) = tokio::io::split(gateway);
    let server = Server::new(agg.clone());
    tokio::spawn(async move {
        server
            .serve(LineTransport::new(BufReader::new(gr), gw))
            .await
    });
    let (hr, mut hw) = tokio::io::split(host);
    let mut hr = BufReader::new(hr);
    let mut line = String::new();
    let modern = revision == Revision::V2026_07_28;
    let meta = if modern {
        r#","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#
    } else {
        let init = format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{revision}","capabilities":{{}},"clientInfo":{{"name":"host","version":"1"}}}}}}"#
        ) + "\n"
            + r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
            + "\n";
        hw.write_all(init.as_bytes()).await.expect("write");
        hr.read_line(&mut line).await.expect("initialize answer");
        line.clear();
        ""
    };
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"up__exact","arguments":{ARGS}{meta}}}}}"#
    ) + "\n";
    hw.write_all(call.as_bytes()).await.expect("write");
    tokio::time::timeout(Duration::from_secs(10), hr.read_line(&mut line))
        .await
        .expect("answered in time")
        .expect("read");
    line
}

/// The text blocks of an answer line (its strings, decoded: their content is not JSON
/// numbers to round).
fn texts(answer: &Value) -> Vec<String> {
    answer["result"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str().map(str::to_owned))
        .collect()
}

async fn through(mode: &str) {
    let upstream = Upstream::new(mode);
    let agg = Aggregator::start(vec![upstream.config(mode)], AggregatorOptions::default())
        .await
        .expect("start");
    for revision in Revision::ALL {
        let line = call_as(&agg, revision).await;
        let answer: Value = serde_json::from_str(&line).expect("an answer");
        assert!(
            answer.get("result").is_some(),
            "{mode} upstream, {revision} host: {line}"
        );
        // The host's arguments reached the upstream as the host wrote them.
        let sent = upstream.lines();
        assert!(
            sent.contains(&format!(r#""arguments":{ARGS}"#)),
            "{mode} upstream, {revision} host: arguments changed on the way:\n{sent}"
        );
        // The structured value reached the host as the upstream wrote it: as
        // structuredContent where the revision has it, and as text in every revision.
        let has_structured = revision >= Revision::V2025_06_18;
        assert_eq!(
            line.contains(&format!(r#""structuredContent":{STRUCTURED}"#)),
            has_structured,
            "{mode} upstream, {revision} host: {line}"
        );
        assert!(
            texts(&answer).iter().any(|t| t == STRUCTURED),
            "{mode} upstream, {revision} host: no exact text copy in {line}"
        );
    }
    agg.shutdown().await;
}

#[tokio::test]
async fn values_cross_a_legacy_upstream_exactly_for_hosts_of_every_revision() {
    through("legacy").await;
}

#[tokio::test]
async fn values_cross_a_2026_upstream_exactly_for_hosts_of_every_revision() {
    through("modern").await;
}
