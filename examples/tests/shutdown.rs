//! The gateway stops on `SIGTERM` and `SIGINT`, on stdio and on Streamable HTTP, exits 0,
//! and leaves no process behind: not an upstream that exits when its stdin closes but
//! leaves a child running, nor one that ignores both its stdin closing and `SIGTERM` and
//! has a child that ignores `SIGTERM` too. A call in flight when the signal comes is
//! still answered.
//!
//! The upstream is a small Python script (skipped without `python3`); it and its child
//! carry a marker on their command lines, and `/proc` is scanned for it.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use mcp_client::{Client, ClientOptions, NoHandler};
use serde_json::{json, Map};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc::UnboundedReceiver;

mod common;
use common::{example, http_transport};

/// An MCP server on stdio with one tool, `slow`, answered at once or, given a gate port
/// (argv[3]), once the test lets the call through that gate. It starts a child first
/// (same process group, same marker) that waits for a signal. `stubborn`: it ignores
/// `SIGTERM` (so does its child, which inherits that) and stays when its stdin closes;
/// otherwise it exits when its stdin closes, leaving its child behind.
const UPSTREAM: &str = r#"
import json, signal, socket, subprocess, sys
marker, mode = sys.argv[1], sys.argv[2]
gate = int(sys.argv[3]) if len(sys.argv) > 3 else 0
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()", marker],
                 stdin=subprocess.DEVNULL)
def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()
while True:
    line = sys.stdin.readline()
    if not line:
        break
    msg = json.loads(line)
    if "id" not in msg:
        continue
    m, i = msg.get("method"), msg["id"]
    if m == "initialize":
        send({"jsonrpc": "2.0", "id": i, "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "shutdown-test", "version": "1"}}})
    elif m == "tools/list":
        send({"jsonrpc": "2.0", "id": i, "result": {"tools": [
            {"name": "slow", "inputSchema": {"type": "object"}}]}})
    elif m == "tools/call":
        if gate:
            held = socket.create_connection(("127.0.0.1", gate))
            try:
                held.recv(1)
            except OSError:
                pass
        send({"jsonrpc": "2.0", "id": i, "result": {
            "content": [{"type": "text", "text": "done"}]}})
    elif m == "ping":
        send({"jsonrpc": "2.0", "id": i, "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": i, "error": {"code": -32601, "message": m}})
if mode == "stubborn":
    while True:
        signal.pause()
"#;

/// How the upstream behaves when asked to leave.
#[derive(Clone, Copy, Debug)]
enum Upstream {
    /// Exits when its stdin closes; its child does not (it goes with `SIGTERM`).
    Polite,
    /// Ignores its stdin closing and `SIGTERM`, and so does its child.
    Stubborn,
}

/// One gateway's files and marker; removes its files and kills what it left when dropped.
struct Setup {
    marker: String,
    dir: PathBuf,
}

impl Setup {
    /// A config whose one upstream is the script in `mode`; `None` without `python3`.
    fn new(tag: &str, mode: Upstream) -> Option<Setup> {
        Setup::gated(tag, mode, None)
    }

    /// [`Setup::new`], the upstream's calls waiting at `gate` (a loopback port).
    fn gated(tag: &str, mode: Upstream, gate: Option<u16>) -> Option<Setup> {
        let python = std::process::Command::new("python3")
            .arg("--version")
            .output();
        if !python.is_ok_and(|o| o.status.success()) {
            eprintln!("SKIPPED: no python3");
            return None;
        }
        // The marker is on the upstream's command line only (not in the gateway's paths).
        let marker = format!("mcp-shutdown-marker-{tag}-{}", std::process::id());
        let dir = std::env::temp_dir().join(format!("mcp-shutdown-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let script = dir.join("upstream.py");
        std::fs::write(&script, UPSTREAM).expect("script");
        let mode = match mode {
            Upstream::Polite => "polite",
            Upstream::Stubborn => "stubborn",
        };
        let mut args = vec![
            script.display().to_string(),
            marker.clone(),
            mode.to_owned(),
        ];
        args.extend(gate.map(|port| port.to_string()));
        let config = json!({"mcpServers": {"up": {
            "command": "python3",
            "args": args,
            "protocolVersion": "2025-06-18",
            "session": "shared",
        }}, "gateway": {"startupWaitMillis": 60000}});
        std::fs::write(dir.join("config.json"), config.to_string()).expect("config");
        Some(Setup { marker, dir })
    }

    /// The gateway on this config, with `extra` arguments; stdin and stdout piped.
    fn gateway(&self, extra: &[&str]) -> Child {
        let config = self.dir.join("config.json").display().to_string();
        Command::new(example("gateway"))
            .args(["--config", &config])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("gateway")
    }

    /// The processes carrying the marker.
    fn marked(&self) -> Vec<u32> {
        marked(&self.marker)
    }

    /// Waits (up to 20 s) until `n` processes carry the marker: a process count, with no
    /// event to wait on.
    async fn until_marked(&self, n: usize) {
        let counted = mcp_examples::wait_until(Duration::from_secs(20), || {
            std::future::ready(self.marked().len() == n)
        })
        .await;
        assert!(
            counted,
            "expected {n} upstream processes, found {:?}",
            self.marked()
        );
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        for pid in self.marked() {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The live processes (not zombies, whose command line is empty) with `marker` on their
/// command line.
fn marked(marker: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
        .collect()
}

/// Sends `signal` (`TERM`, `INT`) to `child`.
fn send(child: &Child, signal: &str) {
    let pid = child.id().expect("running");
    let status = std::process::Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success(), "kill -{signal} {pid}");
}

/// The first line on `child`'s stdout (the HTTP gateway's URL).
async fn first_line(child: &mut Child) -> String {
    let out = child.stdout.take().expect("stdout");
    tokio::time::timeout(
        Duration::from_secs(60),
        BufReader::new(out).lines().next_line(),
    )
    .await
    .expect("the gateway started in time")
    .expect("read")
    .expect("a line")
}

/// Waits until `child` writes a stderr line containing `what`; the lines go on to our
/// stderr, then and after, and those after to the receiver returned.
async fn stderr_until(child: &mut Child, what: &str) -> UnboundedReceiver<String> {
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let wait = async {
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("  gateway| {line}");
            if line.contains(what) {
                return;
            }
        }
        panic!("the gateway ended before writing `{what}`");
    };
    tokio::time::timeout(Duration::from_secs(60), wait)
        .await
        .expect("the gateway started in time");
    let (later, rest) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("  gateway| {line}");
            let _ = later.send(line);
        }
    });
    rest
}

/// Waits (at most 10 s) for a line of `rest` containing `what`.
async fn later_line(rest: &mut UnboundedReceiver<String>, what: &str) {
    let wait = async {
        while let Some(line) = rest.recv().await {
            if line.contains(what) {
                return;
            }
        }
        panic!("the gateway ended before writing `{what}`");
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .unwrap_or_else(|_| panic!("the gateway wrote no `{what}`"));
}

/// Waits for `child` to exit, at most `limit`: its status and how long it took.
async fn exits(child: &mut Child, limit: Duration) -> (std::process::ExitStatus, Duration) {
    let start = Instant::now();
    let status = tokio::time::timeout(limit, child.wait())
        .await
        .unwrap_or_else(|_| panic!("the gateway did not exit within {limit:?}"))
        .expect("wait");
    (status, start.elapsed())
}

/// Starts the gateway (`http` or stdio) in front of a `mode` upstream, sends it `signal`
/// and checks it exits 0 within `limit` leaving none of the upstream's processes.
async fn stops_cleanly(mode: Upstream, http: bool, signal: &str, limit: Duration) {
    let tag = format!("{mode:?}-{}-{signal}", if http { "http" } else { "stdio" });
    let Some(setup) = Setup::new(&tag, mode) else {
        return;
    };
    let mut gateway = if http {
        let mut g = setup.gateway(&["--http", "127.0.0.1:0"]);
        first_line(&mut g).await;
        stderr_until(&mut g, "serving MCP on http").await;
        g
    } else {
        let mut g = setup.gateway(&[]);
        stderr_until(&mut g, "serving MCP on stdio").await;
        g
    };
    // The upstream and its child.
    setup.until_marked(2).await;
    send(&gateway, signal);
    let (status, took) = exits(&mut gateway, limit).await;
    let left = setup.marked();
    eprintln!("{tag}: exited ({status}) after {took:?}; upstream processes left: {left:?}");
    assert!(
        status.code() == Some(0) && left.is_empty(),
        "{tag}: wanted exit status 0 and no upstream process left; got {status} and {left:?}"
    );
}

#[tokio::test]
async fn http_gateway_stops_on_sigterm_and_closes_a_polite_upstream() {
    stops_cleanly(Upstream::Polite, true, "TERM", Duration::from_secs(8)).await;
}

#[tokio::test]
async fn http_gateway_stops_on_sigint_and_kills_a_stubborn_upstream() {
    stops_cleanly(Upstream::Stubborn, true, "INT", Duration::from_secs(12)).await;
}

#[tokio::test]
async fn stdio_gateway_stops_on_sigterm_and_kills_a_stubborn_upstream() {
    stops_cleanly(Upstream::Stubborn, false, "TERM", Duration::from_secs(12)).await;
}

#[tokio::test]
async fn stdio_gateway_stops_on_sigint_and_closes_a_polite_upstream() {
    stops_cleanly(Upstream::Polite, false, "INT", Duration::from_secs(8)).await;
}

/// A stdio gateway whose stdin closes stops too, stubborn upstream and all.
#[tokio::test]
async fn stdio_gateway_stops_when_stdin_closes() {
    let Some(setup) = Setup::new("stdin", Upstream::Stubborn) else {
        return;
    };
    let mut gateway = setup.gateway(&[]);
    stderr_until(&mut gateway, "serving MCP on stdio").await;
    setup.until_marked(2).await;
    drop(gateway.stdin.take());
    let (status, took) = exits(&mut gateway, Duration::from_secs(12)).await;
    eprintln!("stdin closed: exited {status} after {took:?}");
    assert_eq!(status.code(), Some(0));
    assert!(setup.marked().is_empty(), "left: {:?}", setup.marked());
}

/// A call in flight when `SIGTERM` comes (held at a gate upstream until the gateway says
/// it is shutting down) gets its answer; then the gateway exits 0, upstream gone.
#[tokio::test]
async fn a_call_in_flight_at_sigterm_is_answered() {
    let gate = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = gate.local_addr().expect("addr").port();
    let Some(setup) = Setup::gated("inflight", Upstream::Polite, Some(port)) else {
        return;
    };
    let mut gateway = setup.gateway(&["--http", "127.0.0.1:0"]);
    let url = first_line(&mut gateway).await;
    let mut rest = stderr_until(&mut gateway, "serving MCP on http").await;
    let host = Client::connect(http_transport(&url), NoHandler, ClientOptions::default())
        .await
        .expect("host connects");
    let call = tokio::spawn(async move { host.call_tool("up__slow", Map::new()).await });
    // The call has reached the upstream when it connects to the gate.
    let arrived = tokio::task::spawn_blocking(move || gate.accept().map(|(held, _)| held));
    let held = tokio::time::timeout(Duration::from_secs(10), arrived)
        .await
        .expect("the call reached the upstream in time")
        .expect("the accept task")
        .expect("accept");
    send(&gateway, "TERM");
    later_line(&mut rest, "shutting down").await;
    drop(held);
    let answer = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("answered in time")
        .expect("the call task")
        .expect("the call in flight is answered");
    let text = serde_json::to_value(&answer.result).expect("json");
    assert_eq!(text["content"][0]["text"], "done", "{text}");
    let (status, _) = exits(&mut gateway, Duration::from_secs(8)).await;
    assert_eq!(status.code(), Some(0));
    assert!(setup.marked().is_empty(), "left: {:?}", setup.marked());
}
