//! What the rate-limit tests share: the gateway run with a configuration, hosts with an
//! API key, calls and what they came to, raw 2026-07-28 POSTs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_client::auth::{AuthError, AuthProvider, Refused};
use mcp_client::http::HttpConfig;
use mcp_client::{Client, ClientError, ClientOptions, EraChoice, NoHandler};
use mcp_types::{ErrorObject, Revision};
use serde_json::{json, Value};

use super::common::cluster::free_ports;
use super::common::{announced_url, example, Stopped};

pub(crate) const ALICE: &str = "alice-key-0123456789abcdef";
pub(crate) const BOB: &str = "bob-key-0123456789abcdef";
pub(crate) const CAROL: &str = "carol-key-0123456789abcdef";

/// The tests run one at a time (see the module).
pub(crate) static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A fixed API key as the bearer token.
pub(crate) struct Key(&'static str);

#[async_trait::async_trait]
impl AuthProvider for Key {
    fn access_token(&self) -> Option<String> {
        Some(self.0.to_owned())
    }
    async fn unauthorized(&self, _refused: Refused) -> Result<(), AuthError> {
        Err(AuthError::NotCompleted(
            "a fixed API key was refused".into(),
        ))
    }
}

/// The configuration `name` in `dir`: the echo server, API keys for alice, bob and carol,
/// and `gateway` members added from `extra` (its `mcpServers`, if any, names more echo
/// servers).
pub(crate) fn config(dir: &Path, name: &str, extra: Value) -> PathBuf {
    let mut text = json!({
        "mcpServers": {"echo": {"command": example("echo-server")}},
        "gateway": {
            "startupWaitMillis": 60000,
            "auth": {"resource": "http://127.0.0.1/mcp", "apiKeys": [
                {"name": "alice", "key": ALICE, "subject": "alice"},
                {"name": "bob", "key": BOB, "subject": "bob"},
                {"name": "carol", "key": CAROL, "subject": "carol"}]}}});
    if let Value::Object(members) = extra {
        for (k, v) in members {
            // Servers besides `echo` come as `mcpServers` (each an echo server too).
            if k == "mcpServers" {
                for name in v.as_array().into_iter().flatten().filter_map(Value::as_str) {
                    text["mcpServers"][name] = json!({"command": example("echo-server")});
                }
            } else {
                text["gateway"][k] = v;
            }
        }
    }
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, text.to_string()).expect("write config");
    path
}

/// A gateway process: its MCP URL, its port, and its admin port (`/metrics`).
pub(crate) struct Gateway {
    pub(crate) _process: Stopped,
    pub(crate) url: String,
    pub(crate) port: u16,
    pub(crate) admin: u16,
}

/// The gateway with `config`, on `listen` (`127.0.0.1:0` for any port), its admin
/// listener on a free port, its stderr in `dir/<config's stem>.log`; once it serves.
pub(crate) async fn gateway(config: &Path, listen: &str, dir: &Path) -> Gateway {
    let admin = free_ports(1)[0];
    let stem = config.file_stem().and_then(|s| s.to_str()).unwrap_or("gw");
    let log = std::fs::File::create(dir.join(format!("{stem}.log"))).expect("log file");
    let mut child = tokio::process::Command::new(example("gateway"))
        .arg("--config")
        .arg(config)
        .args(["--http", listen, "--admin", &format!("127.0.0.1:{admin}")])
        // Stopped at the end of a test with hosts' streams maybe open: no long drain.
        .args(["--drain", "1"])
        .stdout(std::process::Stdio::piped())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .expect("gateway");
    let url = announced_url(&mut child)
        .await
        .expect("the gateway started in time");
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap_or_else(|_| panic!("a port in {url}"));
    Gateway {
        _process: Stopped(child),
        url,
        port,
        admin,
    }
}

/// Our client at `url` with API key `key`, in `era`.
pub(crate) async fn host(url: &str, key: &'static str, era: EraChoice) -> Client {
    let config = HttpConfig::new(url).auth(Arc::new(Key(key)));
    mcp_client::connect_http(config, NoHandler, ClientOptions::default().era(era))
        .await
        .expect("connects")
}

pub(crate) fn legacy() -> EraChoice {
    EraChoice::Legacy(Revision::V2025_11_25)
}

/// What a call came to.
#[derive(Debug)]
pub(crate) enum Called {
    Ok,
    /// Refused by a rate limit (`-32029`).
    Limited(ErrorObject),
    /// Anything else: the text of the error or of the error result.
    Failed(String),
}

pub(crate) async fn call(host: &Client, tool: &str, arguments: Value) -> Called {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object");
    };
    match host.call_tool(tool, arguments).await {
        Ok(c) if !c.result.is_error() => Called::Ok,
        Ok(c) => Called::Failed(format!("error result: {:?}", c.result)),
        Err(ClientError::Server(e)) if e.code == -32029 => Called::Limited(e),
        Err(e) => Called::Failed(e.to_string()),
    }
}

pub(crate) async fn echo(host: &Client) -> Called {
    call(host, "echo__echo", json!({"text": "hi"})).await
}

/// The refusal's `data` without the `httpStatus` our client adds for an answer that came
/// with a failure status, and that status.
pub(crate) fn server_data(e: &ErrorObject) -> (Value, Option<u64>) {
    let mut data = e.data.clone().unwrap_or(Value::Null);
    let status = data
        .as_object_mut()
        .and_then(|d| d.remove("httpStatus"))
        .and_then(|s| s.as_u64());
    (data, status)
}

pub(crate) fn retry_ms(e: &ErrorObject) -> u64 {
    e.data
        .as_ref()
        .and_then(|d| d["retryAfterMs"].as_u64())
        .unwrap_or_else(|| panic!("retryAfterMs in {e:?}"))
}

/// `ms` milliseconds as a refusal's message writes them: seconds, without trailing zeros.
pub(crate) fn seconds(ms: u64) -> String {
    let (whole, frac) = (ms / 1000, ms % 1000);
    if frac == 0 {
        return whole.to_string();
    }
    let frac = format!("{frac:03}");
    format!("{whole}.{}", frac.trim_end_matches('0'))
}

/// The value of `name{labels}` in a Prometheus text exposition (`None` when no such line).
pub(crate) fn metric(text: &str, name_and_labels: &str) -> Option<u64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(name_and_labels)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|v| v as u64)
}

/// What a raw HTTP exchange came back with.
pub(crate) struct RawAnswer {
    pub(crate) status: u16,
    pub(crate) head: String,
    pub(crate) body: Value,
}

impl RawAnswer {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// A 2026-07-28 `tools/call` of `tool` POSTed by hand to the gateway on `port` with API key
/// `key`: the status, the headers and the JSON body, as they came.
pub(crate) async fn post_2026(
    port: u16,
    key: &str,
    id: u64,
    tool: &str,
    arguments: Value,
) -> RawAnswer {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": tool, "arguments": arguments,
        "_meta": {
            mcp_types::meta::PROTOCOL_VERSION: "2026-07-28",
            mcp_types::meta::CLIENT_CAPABILITIES: {},
            mcp_types::meta::CLIENT_INFO: {"name": "raw", "version": "1"}}}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    s.write_all(request.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut raw))
        .await
        .expect("answered in time")
        .expect("read");
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a response");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    // A lone answer is JSON; one that came as an SSE event is read from its `data:` line.
    let body = serde_json::from_str(body).unwrap_or_else(|_| {
        body.lines()
            .find_map(|l| l.strip_prefix("data: "))
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or(Value::Null)
    });
    RawAnswer {
        status,
        head: head.to_owned(),
        body,
    }
}

/// Calls `echo` on `host` in a tight sequential loop until `end`: the times (since `t0`)
/// at which each call that went was sent, how many were refused, and any other failure.
pub(crate) async fn hammer(
    host: Arc<Client>,
    t0: Instant,
    end: Instant,
) -> (Vec<Duration>, u64, Vec<String>) {
    let (mut went, mut refused, mut failed) = (Vec::new(), 0, Vec::new());
    while Instant::now() < end {
        let sent = Instant::now();
        match echo(&host).await {
            Called::Ok => went.push(sent - t0),
            Called::Limited(_) => refused += 1,
            Called::Failed(e) => failed.push(e),
        }
    }
    (went, refused, failed)
}

/// Calls `echo` on each of `hosts` in turn until `end`, `pause` after each answer: how many
/// went, the refusals, and any other failure.
pub(crate) async fn paced(
    hosts: [Arc<Client>; 2],
    end: Instant,
    pause: Duration,
) -> (u32, Vec<ErrorObject>, Vec<String>) {
    let (mut went, mut refused, mut failed) = (0u32, Vec::new(), Vec::new());
    let mut n = 0;
    while Instant::now() < end {
        match echo(&hosts[n % 2]).await {
            Called::Ok => went += 1,
            Called::Limited(e) => refused.push(e),
            Called::Failed(e) => failed.push(e),
        }
        n += 1;
        tokio::time::sleep(pause).await;
    }
    (went, refused, failed)
}
