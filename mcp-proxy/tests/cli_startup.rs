//! `mcp-gateway` does not wait for its slowest upstream: a host is served with the
//! upstreams that are ready, a late one's tools come with `list_changed`, one that never
//! answers its handshake holds no one, and `--admin` answers probes while it starts.
#![cfg(feature = "cli")]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

mod common;
use common::python::python_upstream;
use common::raw_http::exchange;
use common::stdio_host::StdioHost;
use common::Gate;

fn upstream(name: &str, head: &str) -> Value {
    let tools = json!([{"name": "hello", "inputSchema": {"type": "object"}}]);
    let on_call = "send({\"jsonrpc\": \"2.0\", \"id\": i, \"result\": {\"content\": []}})";
    json!({"command": "python3", "args": ["-c", python_upstream(name, head, tools, on_call)]})
}

/// The gateway on stdio with `gateway`'s settings in front of three upstreams: `ready`,
/// `slow` (waits at `gate` before it reads its first line) and `mute` (never answers).
fn gateway(
    name: &str,
    settings: Value,
    admin: bool,
    gate: &Gate,
) -> (Child, BufReader<ChildStderr>) {
    let dir = std::env::temp_dir().join(format!("mcp-gateway-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = json!({
        "mcpServers": {
            "ready": upstream("ready", ""),
            "slow": upstream("slow", &gate.python()),
            "mute": {"command": "python3", "args": ["-c", "import sys\nsys.stdin.read()"]},
        },
        "gateway": settings,
    });
    let file = dir.join("gateway.json");
    std::fs::write(&file, config.to_string()).expect("write config");
    let mut args = vec!["--config".to_owned(), file.display().to_string()];
    if admin {
        args.extend(["--admin".to_owned(), "127.0.0.1:0".to_owned()]);
    }
    let mut gw = Command::new(env!("CARGO_BIN_EXE_mcp-gateway"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcp-gateway runs");
    let stderr = BufReader::new(gw.stderr.take().expect("stderr"));
    (gw, stderr)
}

fn tool_names(host: &mut StdioHost, id: i64) -> Vec<String> {
    host.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
    let answer = host.answer(id);
    let mut names: Vec<String> = answer["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    names
}

#[test]
fn a_host_is_served_before_the_slow_upstreams_and_hears_of_the_late_one() {
    // Two seconds for `ready` (a Python process) to come on a loaded machine; the default
    // is 500 ms.
    let started = std::time::Instant::now();
    let gate = Gate::new();
    let (mut gw, _stderr) = gateway("startup", json!({"startupWaitMillis": 2000}), false, &gate);
    // The host's initialize is read once the start is over: it does not wait for `slow`
    // (held at its gate) nor for `mute` (never): `ready`'s tools are there, `slow`'s not yet.
    let mut host = StdioHost::initialize(&mut gw);
    assert_eq!(tool_names(&mut host, 1), ["ready__hello"]);
    // The bound is the start's wait (2 s here, for a loaded machine) with room to spare,
    // and far below what `slow` and `mute` would have held it for.
    let served = started.elapsed();
    assert!(
        served < Duration::from_secs(5),
        "initialize answered after {served:?}"
    );
    // `slow` comes once the test lets it through, and the host is told.
    drop(gate.arrived(Duration::from_secs(10)));
    let changed = host.notification("notifications/tools/list_changed");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(tool_names(&mut host, 2), ["ready__hello", "slow__hello"]);
    host.close();
    let _ = gw.wait();
}

#[test]
fn admin_answers_probes_while_the_gateway_starts() {
    // A start that waits a minute for its upstreams: the probes are answered meanwhile.
    let started = std::time::Instant::now();
    let gate = Gate::new();
    let (mut gw, mut stderr) = gateway(
        "admin-start",
        json!({"startupWaitMillis": 60000}),
        true,
        &gate,
    );
    let mut addr = None;
    for _ in 0..50 {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        if let Some(a) = line.split("/metrics on http://").nth(1) {
            addr = a.trim().parse::<SocketAddr>().ok();
            break;
        }
    }
    let addr = addr
        .expect("the admin listener's address is printed")
        .to_string();
    let (live, _) = exchange(&addr, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1", "");
    assert_eq!(live, 200, "alive while starting");
    // From the first moment: well within the start's wait (the 100 ms is a
    // process start on an idle machine; a loaded CI machine gets a second).
    let alive = started.elapsed();
    assert!(
        alive < Duration::from_secs(1),
        "/healthz answered {alive:?} after the gateway was started"
    );
    let (ready, details) = exchange(&addr, "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1", "");
    assert_eq!(ready, 503, "not ready while starting: {details}");
    assert_eq!(
        serde_json::from_str::<Value>(&details).ok(),
        Some(json!({"ready": false, "detail": {"starting": true}}))
    );
    let _ = gw.kill();
    let _ = gw.wait();
}
