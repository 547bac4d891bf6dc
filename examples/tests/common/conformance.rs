//! The official conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! `examples/interop/package.json`), run as the tests of this crate run it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::AsyncBufReadExt;

use super::interop_dir;

/// The suite's program; `None` (the test skips) when it is not installed, unless
/// `MCP_INTEROP=required`, when that fails the test.
pub fn suite() -> Option<PathBuf> {
    let bin = interop_dir().join("node_modules/.bin/conformance");
    if bin.exists() {
        return Some(bin);
    }
    assert!(
        std::env::var("MCP_INTEROP").as_deref() != Ok("required"),
        "the conformance suite is not installed; run .ci/run or (cd examples/interop && npm ci)"
    );
    eprintln!("SKIPPED: the conformance suite is not installed (cd examples/interop && npm ci)");
    None
}

/// Runs the suite with `args`; passes when it exits 0 (its baseline check included).
/// Returns what it printed.
pub async fn conformance(suite: &Path, args: &[&str]) -> String {
    let out = tokio::time::timeout(
        Duration::from_secs(600),
        tokio::process::Command::new("node")
            .args([
                "--import",
                "./node20-globsync.mjs",
                "--import",
                "./loopback.mjs",
            ])
            .arg(suite)
            .args(args)
            .current_dir(interop_dir())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the suite finished in time")
    .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: Vec<&str> = stdout
        .lines()
        .filter(|l| {
            l.starts_with('✓')
                || l.starts_with('✗')
                || l.contains("aseline")
                || l.starts_with("Total")
        })
        .collect();
    eprintln!("{}", summary.join("\n"));
    assert!(
        out.status.success(),
        "conformance {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The checks' own lines come on stderr.
    format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr))
}

/// Starts `program args…` (it prints its URL as its first line) and runs the server
/// scenarios of `revision` against it, with `conformance/<baseline>-<revision>.yml`.
pub async fn server_scenarios(
    suite: &Path,
    program: &str,
    args: &[&str],
    baseline: &str,
    revision: &str,
) {
    let (_server, url) = serve(program, args).await;
    scenarios_at(suite, &url, baseline, revision).await;
}

/// Runs the server scenarios of `revision` against the server at `url`, with
/// `conformance/<baseline>-<revision>.yml`.
pub async fn scenarios_at(suite: &Path, url: &str, baseline: &str, revision: &str) {
    let baseline = format!("conformance/{baseline}-{revision}.yml");
    conformance(
        suite,
        &[
            "server",
            "--url",
            url,
            "--requirements",
            revision,
            "--expected-failures",
            &baseline,
        ],
    )
    .await;
}

/// Starts a server that prints its URL first on stdout; it stops when the child drops.
pub async fn serve(program: &str, args: &[&str]) -> (tokio::process::Child, String) {
    let mut server = tokio::process::Command::new(program)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the server");
    let stdout = server.stdout.take().expect("stdout");
    let url = tokio::io::BufReader::new(stdout)
        .lines()
        .next_line()
        .await
        .expect("read")
        .expect("the server prints its URL");
    (server, url)
}
