//! Helpers shared by the examples crate's end-to-end tests.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mcp_types::transport::{CloseReason, Closed, Incoming, Transport};
use mcp_types::{Frame, Message, RequestId, Revision};
use serde_json::Value;

#[path = "../../../mcp-revisions/tests/common/schemas.rs"]
mod schemas;

pub mod browser;
pub mod cluster;
pub mod conformance;
pub mod consent;
pub mod hosts;
pub mod providers;
pub mod redis;

/// Records every message a side sends and, if asked, every message it receives.
pub struct Recording<T> {
    pub inner: T,
    pub sent: Arc<Mutex<Vec<Message>>>,
    pub received: Option<Arc<Mutex<Vec<Message>>>>,
}

#[async_trait]
impl<T: Transport> Transport for Recording<T> {
    async fn send(&self, frame: Frame) -> Result<(), Closed> {
        if let Ok(mut s) = self.sent.lock() {
            s.extend(frame.clone().into_messages());
        }
        self.inner.send(frame).await
    }
    fn try_send(&self, frame: Frame) -> Result<(), mcp_types::transport::TrySendError> {
        if let Ok(mut s) = self.sent.lock() {
            s.extend(frame.clone().into_messages());
        }
        self.inner.try_send(frame)
    }
    async fn recv(&self) -> Result<Incoming, Closed> {
        let got = self.inner.recv().await;
        if let (Some(log), Ok(Incoming::Frame(f))) = (&self.received, &got) {
            if let Ok(mut r) = log.lock() {
                r.extend(f.clone().into_messages());
            }
        }
        got
    }
    async fn close(&self) {
        self.inner.close().await
    }
    fn close_reason(&self) -> Option<CloseReason> {
        self.inner.close_reason()
    }
}

/// Every message written validates against `revision`'s schema.
pub fn validate_all(revision: Revision, client_sent: &[Message], server_sent: &[Message]) {
    let Some(dir) = schemas::spec_dir() else {
        eprintln!("SKIPPED schema validation: no MCP spec folder (set MCP_SPEC_DIR)");
        return;
    };
    let all = schemas::Schemas::load(&dir);
    let doc = schemas::doc_for(&all, revision);
    let mut failures = Vec::new();
    for (sent, answered_by) in [(client_sent, server_sent), (server_sent, client_sent)] {
        let methods: HashMap<RequestId, String> = answered_by
            .iter()
            .filter_map(|m| match m {
                Message::Request(r) => Some((r.id.clone(), r.method.clone())),
                _ => None,
            })
            .collect();
        for msg in sent {
            let v: Value = serde_json::from_slice(&msg.to_bytes()).expect("json");
            let (def, value) = match msg {
                Message::Request(r) => (doc.method_def(&r.method).map(str::to_owned), v.clone()),
                Message::Notification(n) => {
                    (doc.method_def(&n.method).map(str::to_owned), v.clone())
                }
                Message::Response(r) => {
                    let m = methods.get(&r.id).cloned().unwrap_or_default();
                    let def = if v["result"]["resultType"] == "input_required" {
                        Some("InputRequiredResult".to_owned())
                    } else {
                        schemas::result_def_for(doc, &m)
                    };
                    (def, v["result"].clone())
                }
                Message::Error(_) => {
                    let d = if revision >= Revision::V2025_11_25 {
                        "JSONRPCErrorResponse"
                    } else {
                        "JSONRPCError"
                    };
                    (Some(d.to_owned()), v.clone())
                }
            };
            match def {
                Some(d) => {
                    if let Err(e) = doc.validate(&d, &value) {
                        failures.push(format!("{revision}: {v} is not a valid {d}: {e}"));
                    }
                }
                None => failures.push(format!("{revision}: {v}: no schema definition for it")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `examples/interop`: the pinned peers and our scripts for them.
pub fn interop_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("interop")
}

/// The path of one of this crate's example binaries (built for the tests by cargo).
pub fn example(name: &str) -> String {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    dir.join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
        .display()
        .to_string()
}

/// Runs a peer program in `examples/interop` (at most `limit`), asserts it succeeded, and
/// reads the one JSON object it prints last.
pub async fn run_json<S: AsRef<std::ffi::OsStr>>(
    program: impl AsRef<std::ffi::OsStr>,
    args: &[S],
    limit: std::time::Duration,
) -> Value {
    let program = program.as_ref();
    let out = tokio::time::timeout(
        limit,
        tokio::process::Command::new(program)
            .args(args)
            .current_dir(interop_dir())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the peer finished in time")
    .expect("the peer started");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{} failed: {}\n{stdout}\nstderr: {}",
        program.to_string_lossy(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// A free loopback port (bound, then released for the peer to take).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Waits (at most 15 s) until something listens on `port`: a peer that prints nothing
/// when it does, so a connection is the only sign.
pub async fn wait_for_port(port: u16) {
    let listening = mcp_examples::wait_until(std::time::Duration::from_secs(15), || async {
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
    })
    .await;
    assert!(listening, "nothing listens on 127.0.0.1:{port}");
}

/// `server-everything` (its `script`) serving over HTTP in `mode` (`streamableHttp` or
/// `sse`) on a free loopback port, once it listens; it stops when the child drops.
pub async fn server_everything_http(
    script: &std::path::Path,
    mode: &str,
) -> (tokio::process::Child, u16) {
    let port = free_port();
    let server = tokio::process::Command::new("node")
        .args(["--import", "./loopback.mjs"])
        .arg(script)
        .arg(mode)
        .env("PORT", port.to_string())
        .current_dir(interop_dir())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start server-everything");
    wait_for_port(port).await;
    (server, port)
}

/// Our client's Streamable HTTP transport to `url`.
pub fn http_transport(url: &str) -> mcp_client::http::HttpTransport {
    mcp_client::http::HttpTransport::new(mcp_client::http::HttpConfig::new(url)).expect("transport")
}

/// A child process stopped with `SIGTERM` when dropped, and waited for (at most 15 s,
/// then killed): a gateway stopped so closes its upstreams, where one killed outright
/// leaves those that do not exit on stdin EOF running.
pub struct Stopped(pub tokio::process::Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let Some(pid) = self.0.id() else { return };
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        while std::time::Instant::now() < deadline {
            match self.0.try_wait() {
                // A synchronous drop, maybe outside any runtime: nothing to await a real
                // process's exit on, so it is polled (bounded by the deadline above).
                Ok(None) => std::thread::sleep(std::time::Duration::from_millis(20)),
                _ => return,
            }
        }
        let _ = self.0.start_kill();
    }
}

/// The gateway binary started on Streamable HTTP at a free port with `config`, its stdout
/// (where the URL comes) piped and its stderr to `stderr`.
pub fn spawn_http_gateway(
    config: &std::path::Path,
    stderr: std::process::Stdio,
) -> tokio::process::Child {
    tokio::process::Command::new(example("gateway"))
        .args([
            "--config",
            &config.display().to_string(),
            "--http",
            "127.0.0.1:0",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .expect("gateway")
}

/// The gateway on Streamable HTTP, and its URL. Dropped, it is stopped with `SIGTERM` and
/// waited for, so it closes its upstreams: killed outright it could not, and
/// `server-everything` does not exit when its stdin closes once it has been used.
pub async fn http_gateway(config: &std::path::Path) -> (Stopped, String) {
    let mut child = spawn_http_gateway(config, std::process::Stdio::null());
    let url = announced_url(&mut child)
        .await
        .expect("the gateway started in time");
    (Stopped(child), url)
}

/// The URL a gateway started with `--http` and its stdout piped prints once it serves,
/// within a minute; `None` when it did not in time (or its stdout ended first).
pub async fn announced_url(child: &mut tokio::process::Child) -> Option<String> {
    let out = child.stdout.take()?;
    tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(out)).next_line(),
    )
    .await
    .ok()?
    .ok()?
}
