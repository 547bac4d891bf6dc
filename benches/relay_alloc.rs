//! Heap allocations of one relayed `tools/call`, counted by a counting global allocator
//! (dhat, in its testing mode): the gateway's server and aggregator run in this process
//! in front of our `echo-server` example as a stdio child; the host is a bare line writer
//! and reader that allocates nothing per call. Every allocation counted is the gateway's.
//!
//! For each host era (2025-06-18 with `initialize`, 2026-07-28 with `_meta`) and payload
//! size it prints blocks and bytes allocated per call, and the bytes beyond the payload:
//! total minus the bytes of the request and answer lines (the one copy of each a relay
//! cannot avoid holding while the other side is busy).
//!
//! `cargo bench -p mcp-benches --bench relay_alloc` (builds `echo-server` in release first).

use std::path::{Path, PathBuf};
use std::process::Command;

use mcp_client::StdioCommand;
use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig, UpstreamTransport};
use mcp_server::Server;
use mcp_types::transport::LineTransport;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn echo_server() -> PathBuf {
    let root = workspace();
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "--example", "echo-server"])
        .current_dir(&root)
        .status()
        .expect("cargo build");
    assert!(status.success(), "building echo-server failed");
    root.join("target/release/examples/echo-server")
}

/// The request line of call `id`.
fn request(id: u64, text: &str, modern: bool) -> String {
    let meta = if modern {
        r#","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#
    } else {
        ""
    };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo__echo","arguments":{{"text":"{text}"}}{meta}}}}}"#
    ) + "\n"
}

/// The bare host: writes a prepared line, reads the answer into a kept buffer.
struct Host<W, R> {
    w: W,
    r: R,
    line: String,
}

impl<W: tokio::io::AsyncWrite + Unpin, R: tokio::io::AsyncBufRead + Unpin> Host<W, R> {
    async fn call(&mut self, req: &str, text: &str) -> usize {
        self.w.write_all(req.as_bytes()).await.expect("write");
        self.line.clear();
        self.r.read_line(&mut self.line).await.expect("read");
        assert!(
            self.line.contains(&text[..text.len().min(32)]),
            "echoed: {}",
            self.line
        );
        req.len() + self.line.len()
    }
}

struct Measured {
    blocks: f64,
    bytes: f64,
    lines: f64,
}

async fn measure(echo: &Path, modern: bool, payload: usize, calls: u64) -> Measured {
    let upstream = UpstreamConfig::new(
        "echo",
        UpstreamTransport::Stdio(StdioCommand::new(
            echo.display().to_string(),
            Vec::<String>::new(),
        )),
    );
    let agg = Aggregator::start(vec![upstream], AggregatorOptions::default())
        .await
        .expect("aggregator");
    let server = Server::new(agg.clone());
    let (host, gateway) = tokio::io::duplex(1 << 20);
    let (gr, gw) = tokio::io::split(gateway);
    tokio::spawn(async move {
        server
            .serve(LineTransport::new(BufReader::new(gr), gw))
            .await
    });
    let (hr, mut hw) = tokio::io::split(host);
    let mut hr = BufReader::new(hr);
    let mut line = String::with_capacity(64 * 1024);
    if !modern {
        hw.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"bench\",\"version\":\"1\"}}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n").await.expect("write");
        hr.read_line(&mut line).await.expect("read");
    }
    let text = "x".repeat(payload);
    let lines: Vec<String> = (1..=calls * 2).map(|i| request(i, &text, modern)).collect();
    let mut host = Host { w: hw, r: hr, line };
    for req in &lines[..calls as usize] {
        host.call(req, &text).await;
    }
    let before = dhat::HeapStats::get();
    let mut io = 0;
    for req in &lines[calls as usize..] {
        io += host.call(req, &text).await;
    }
    let after = dhat::HeapStats::get();
    agg.shutdown().await;
    let n = calls as f64;
    Measured {
        blocks: (after.total_blocks - before.total_blocks) as f64 / n,
        bytes: (after.total_bytes - before.total_bytes) as f64 / n,
        lines: io as f64 / n,
    }
}

fn main() {
    let echo = echo_server();
    // RELAY_ALLOC_PROFILE=FILE writes dhat's profile (every allocation site) for dh_view.
    let _profiler = match std::env::var("RELAY_ALLOC_PROFILE") {
        Ok(file) => dhat::Profiler::builder().file_name(file).build(),
        Err(_) => dhat::Profiler::builder().testing().build(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("| host | payload | allocations per call | bytes per call | request + answer lines | bytes beyond them |");
    println!("|---|--:|--:|--:|--:|--:|");
    for modern in [false, true] {
        for payload in [64, 1024] {
            let m = rt.block_on(measure(&echo, modern, payload, 2000));
            println!(
                "| {} | {payload} B | {:.1} | {:.0} | {:.0} | {:.0} |",
                if modern { "2026-07-28" } else { "2025-06-18" },
                m.blocks,
                m.bytes,
                m.lines,
                m.bytes - m.lines
            );
        }
    }
}
