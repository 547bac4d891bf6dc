//! The Streamable HTTP endpoint's memory under a long session and under abandoned ones,
//! in-process (no sockets): 100,000 `tools/call` in one legacy session, then 20,000
//! sessions opened (`initialize`, one call) and never closed, then the idle timeout.
//! Prints the process's resident memory at each step. The bound it shows
//! (`docs/operations.md`, "Soak"):
//! a long session keeps nothing per call, and abandoned sessions are capped and expire.
//!
//! `cargo bench -p mcp-benches --bench soak_http` (Linux: reads `/proc/self/status`).
//! `SOAK_CALLS`, `SOAK_SESSIONS`, `SOAK_MAX_SESSIONS` and `SOAK_WAVES` change the counts.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use mcp_server::http::{HttpOptions, StreamableHttp};
use mcp_server::Server;
use serde_json::json;

/// Resident memory of this process, in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One POST; its status and the session id it names, if any.
async fn post(http: &StreamableHttp, session: Option<&str>, body: String) -> (u16, Option<String>) {
    let mut b = Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("host", "127.0.0.1")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    if let Some(s) = session {
        b = b.header("mcp-session-id", s);
    }
    let Ok(req) = b.body(Full::new(Bytes::from(body))) else {
        return (0, None);
    };
    let resp = http.handle(req).await;
    let status = resp.status().as_u16();
    let id = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let _ = resp.into_body().collect().await;
    (status, id)
}

fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "soak", "version": "1"}}})
    .to_string()
}

fn call(id: usize) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hello"}}})
    .to_string()
}

/// Opens a session and says it is initialized; its id.
async fn open(http: &StreamableHttp) -> Option<String> {
    let (_, id) = post(http, None, initialize()).await;
    let id = id?;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    post(http, Some(&id), note).await;
    Some(id)
}

async fn soak() {
    let calls = count("SOAK_CALLS", 100_000);
    let sessions = count("SOAK_SESSIONS", 20_000);
    let idle = Duration::from_secs(2);
    let options = HttpOptions::default()
        .session_idle_timeout(idle)
        .max_sessions(count("SOAK_MAX_SESSIONS", 1024));
    let http = StreamableHttp::new(Server::new(mcp_examples::echo_tools()), options);
    println!("| step | sessions open | RSS MiB |\n|---|--:|--:|");
    let row = |step: &str, http: &StreamableHttp| {
        let mib = rss_kib() as f64 / 1024.0;
        println!("| {step} | {} | {mib:.1} |", http.session_count());
    };
    row("start", &http);
    let Some(one) = open(&http).await else {
        println!("initialize failed");
        return;
    };
    let started = Instant::now();
    for i in 1..=calls {
        let (status, _) = post(&http, Some(&one), call(i)).await;
        if status != 200 {
            println!("call {i}: HTTP {status}");
            return;
        }
        if i == calls / 10 {
            row(&format!("{i} calls in one session"), &http);
        }
    }
    row(
        &format!(
            "{calls} calls in one session ({:.1} s)",
            started.elapsed().as_secs_f64()
        ),
        &http,
    );
    // More than once: what a wave leaves behind after expiry is reused by the next.
    let waves = count("SOAK_WAVES", 2);
    for wave in (1..=waves).map(|w| {
        if w == 1 {
            String::new()
        } else {
            format!("wave {w}: ")
        }
    }) {
        let mut refused = 0;
        for _ in 0..sessions {
            match open(&http).await {
                Some(id) => {
                    post(&http, Some(&id), call(1)).await;
                }
                None => refused += 1,
            }
        }
        row(
            &format!("{wave}{sessions} sessions abandoned ({refused} refused: cap)"),
            &http,
        );
        // The long session is idle too now: everything expires.
        tokio::time::sleep(idle * 3).await;
        row(&format!("{wave}after the idle timeout"), &http);
    }
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is read.
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(soak()),
        Err(e) => eprintln!("soak: no runtime: {e}"),
    }
}
