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

/// A tool's input schema as the upstream lists it: keys out of order, a 30-digit literal.
const INPUT: &str = r#"{"type":"object","properties":{"y":{"type":"number","maximum":123456789012345678901234567890},"b":{"type":"string"}}}"#;

/// Its output schema, likewise.
const OUTPUT: &str = r#"{"type":"object","properties":{"z":{"type":"number","minimum":-0.10000000000000000000001},"a":{}}}"#;

/// A prompt's arguments, members out of the order a decoder writes them.
const ARGUMENTS: &str =
    r#"[{"required":true,"name":"z","description":"last"},{"description":"first","name":"a"}]"#;

/// A resource template's annotations, likewise, with a long literal.
const ANNOTATIONS: &str = r#"{"priority":0.50000000000000000001,"audience":["user"]}"#;

/// A stdio server, legacy (argv[2] = "legacy") or 2026-07-28 ("modern"), with one tool,
/// `exact`, listed with INPUT and OUTPUT, whose result is STRUCTURED as written; a prompt
/// with ARGUMENTS and a resource template with ANNOTATIONS. It appends every line it reads
/// to the file named by argv[1].
const UPSTREAM: &str = r#"
import json, sys
log, mode = sys.argv[1], sys.argv[2]
STRUCTURED, INPUT, OUTPUT, ARGUMENTS, ANNOTATIONS = sys.argv[3:8]
CAPS = '{"tools":{},"prompts":{},"resources":{}}'
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
    def result(body):
        send('{"jsonrpc":"2.0","id":%s,"result":{%s%s}}' % (rid, body, tail))
    if m == "server/discover" and mode == "modern":
        result('"supportedVersions":["2026-07-28"],"capabilities":%s' % CAPS)
    elif m == "initialize" and mode == "legacy":
        result('"protocolVersion":"2025-11-25","capabilities":%s,"serverInfo":{"name":"exact","version":"1"}' % CAPS)
    elif m == "tools/list":
        result('"tools":[{"name":"exact","inputSchema":%s,"outputSchema":%s}]' % (INPUT, OUTPUT))
    elif m == "prompts/list":
        result('"prompts":[{"name":"greet","arguments":%s}]' % ARGUMENTS)
    elif m == "resources/list":
        result('"resources":[]')
    elif m == "resources/templates/list":
        result('"resourceTemplates":[{"uriTemplate":"exact://{id}","name":"t","annotations":%s}]' % ANNOTATIONS)
    elif m == "tools/call":
        result('"content":[],"structuredContent":%s' % STRUCTURED)
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
        // One pair of files per upstream: tests run at once, and each removes its own.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let stem = format!("mcp-proxy-exact-{mode}-{}-{n}", std::process::id());
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
                INPUT.to_owned(),
                OUTPUT.to_owned(),
                ARGUMENTS.to_owned(),
                ANNOTATIONS.to_owned(),
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

/// A host of one revision on a line of its own to the gateway, writing and reading raw
/// lines.
struct Host {
    read: BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    /// What its requests' params end with: a 2026 host's `_meta` envelope, or nothing.
    meta: &'static str,
    next_id: u32,
}

impl Host {
    /// Connects a host of `revision` (a legacy one completes its handshake).
    async fn connect(agg: &Aggregator, revision: Revision) -> Host {
        let (host, gateway) = tokio::io::duplex(1 << 16);
        let (gr, gw) = tokio::io::split(gateway);
        let server = Server::new(agg.clone());
        tokio::spawn(async move {
            server
                .serve(LineTransport::new(BufReader::new(gr), gw))
                .await
        });
        let (hr, hw) = tokio::io::split(host);
        let mut host = Host {
            read: BufReader::new(hr),
            write: hw,
            meta: "",
            next_id: 1,
        };
        if revision == Revision::V2026_07_28 {
            host.meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        } else {
            let init = format!(
                r#"{{"protocolVersion":"{revision}","capabilities":{{}},"clientInfo":{{"name":"host","version":"1"}}}}"#
            );
            host.request_line("initialize", &init).await;
            host.write_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
                .await;
        }
        host
    }

    async fn write_line(&mut self, line: &str) {
        self.write
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("write");
    }

    /// The raw answer line to request `method` with the params object `params` as
    /// written (the host's envelope added).
    async fn request(&mut self, method: &str, params: &str) -> String {
        let params = match (self.meta, params) {
            ("", p) => p.to_owned(),
            (m, "{}") => format!("{{{m}}}"),
            (m, p) => format!("{},{m}}}", &p[..p.len() - 1]),
        };
        self.request_line(method, &params).await
    }

    async fn request_line(&mut self, method: &str, params: &str) -> String {
        let id = self.next_id;
        self.next_id += 1;
        self.write_line(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
        ))
        .await;
        let mut line = String::new();
        tokio::time::timeout(Duration::from_secs(10), self.read.read_line(&mut line))
            .await
            .expect("answered in time")
            .expect("read");
        line
    }
}

/// The raw answer line a host of `revision` gets for one call with ARGS.
async fn call_as(agg: &Aggregator, revision: Revision) -> String {
    let mut host = Host::connect(agg, revision).await;
    host.request(
        "tools/call",
        &format!(r#"{{"name":"up__exact","arguments":{ARGS}}}"#),
    )
    .await
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

/// Listings cross the gateway as their upstream wrote them: each definition's members in
/// their order and numbers as their literals, for hosts of every revision (a member a
/// revision lacks is left out, nothing else changes).
async fn listed_through(mode: &str) {
    let upstream = Upstream::new(mode);
    let agg = Aggregator::start(vec![upstream.config(mode)], AggregatorOptions::default())
        .await
        .expect("start");
    for revision in Revision::ALL {
        let mut host = Host::connect(&agg, revision).await;
        let tools = host.request("tools/list", "{}").await;
        assert!(
            tools.contains(&format!(r#""inputSchema":{INPUT}"#)),
            "{mode} upstream, {revision} host: {tools}"
        );
        assert_eq!(
            tools.contains(&format!(r#""outputSchema":{OUTPUT}"#)),
            revision >= Revision::V2025_06_18,
            "{mode} upstream, {revision} host: {tools}"
        );
        assert!(tools.contains(r#""name":"up__exact""#), "{tools}");
        let prompts = host.request("prompts/list", "{}").await;
        assert!(
            prompts.contains(&format!(r#""arguments":{ARGUMENTS}"#)),
            "{mode} upstream, {revision} host: {prompts}"
        );
        assert!(prompts.contains(r#""name":"up__greet""#), "{prompts}");
        let templates = host.request("resources/templates/list", "{}").await;
        assert!(
            templates.contains(&format!(r#""annotations":{ANNOTATIONS}"#)),
            "{mode} upstream, {revision} host: {templates}"
        );
    }
    agg.shutdown().await;
}

#[tokio::test]
async fn listings_cross_a_legacy_upstream_exactly_for_hosts_of_every_revision() {
    listed_through("legacy").await;
}

#[tokio::test]
async fn listings_cross_a_2026_upstream_exactly_for_hosts_of_every_revision() {
    listed_through("modern").await;
}
