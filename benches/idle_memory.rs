//! The resident memory of an idle gateway: the release `gateway` example serving ten stdio
//! upstreams (our echo server, each a child process of its own), measured from
//! `/proc/<pid>/status` once every upstream is connected, next to the same gateway with
//! no upstream. The bar: under 10 MiB with ten upstreams.
//!
//! `cargo bench -p mcp-benches --bench idle_memory` (Linux; builds the two examples in
//! release first).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// `(VmRSS, RssAnon, RssFile)` in KiB.
fn rss(pid: u32) -> Option<(u64, u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
    };
    Some((field("VmRSS:")?, field("RssAnon:")?, field("RssFile:")?))
}

fn measure(gateway: &Path, upstreams: usize, echo: &Path) -> (u64, u64, u64) {
    let servers: serde_json::Map<String, serde_json::Value> = (0..upstreams)
        .map(|i| {
            (
                format!("echo{i}"),
                serde_json::json!({"command": echo.display().to_string()}),
            )
        })
        .collect();
    let config = std::env::temp_dir().join(format!(
        "mcp-idle-memory-{upstreams}-{}.json",
        std::process::id()
    ));
    let text = serde_json::json!({ "mcpServers": servers }).to_string();
    std::fs::write(&config, text).expect("config");
    let mut child = Command::new(gateway)
        .args([
            "--config",
            &config.display().to_string(),
            "--http",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gateway");
    // Wait until it says what it serves (every upstream has answered or failed).
    let stderr = child.stderr.take().expect("stderr");
    let started = Instant::now();
    for line in BufReader::new(stderr).lines() {
        let line = line.unwrap_or_default();
        if line.contains("serving MCP on") || started.elapsed() > Duration::from_secs(60) {
            break;
        }
    }
    // Idle: let start-up work settle.
    std::thread::sleep(Duration::from_secs(2));
    let out = rss(child.id()).expect("/proc status (Linux only)");
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_file(&config);
    out
}

fn main() {
    // `cargo bench` passes flags such as `--bench`; this harness takes none.
    let root = workspace();
    let built = Command::new(env!("CARGO"))
        .args([
            "build",
            "--release",
            "-p",
            "mcp-examples",
            "--example",
            "gateway",
            "--example",
            "echo-server",
        ])
        .current_dir(&root)
        .status()
        .expect("cargo build");
    assert!(built.success(), "building the examples failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let examples = target.join("release").join("examples");
    let gateway = examples.join("gateway");
    let echo = examples.join("echo-server");
    println!("idle gateway, resident memory (KiB): total = anonymous + file-backed");
    for n in [0, 10] {
        let (total, anon, file) = measure(&gateway, n, &echo);
        println!(
            "{n:>2} upstreams: {total:>6} = {anon:>6} + {file:>6}  ({:.1} MiB)",
            total as f64 / 1024.0
        );
        if n == 10 && total > 10 * 1024 {
            println!("  over the 10 MiB bar");
        }
    }
}
