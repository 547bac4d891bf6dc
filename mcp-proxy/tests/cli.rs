//! The `mcp-gateway` program's command line: `--help` with examples, `--version`,
//! `--check-config` on good and bad files (exit 0 and 2, nothing started), usage errors,
//! log colour only on a terminal.
#![cfg(feature = "cli")]

use std::process::{Command, Output};

mod common;
use common::raw_http::exchange;

fn gateway(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-gateway"))
        .args(args)
        .output()
        .expect("mcp-gateway runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn help_and_version_say_what_the_program_is() {
    let help = gateway(&["--help"]);
    assert!(help.status.success());
    let out = text(&help.stdout);
    for want in [
        "--config <FILE>",
        "--http <ADDR>",
        "--check-config",
        "Examples:",
    ] {
        assert!(out.contains(want), "{want} in:\n{out}");
    }
    let version = gateway(&["--version"]);
    assert_eq!(
        text(&version.stdout).trim(),
        format!("mcp-gateway {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn check_config_validates_without_starting_anything() {
    let dir = std::env::temp_dir().join(format!("mcp-gateway-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let good = dir.join("good.json");
    // A command that does not exist: checking must not try to start it.
    std::fs::write(
        &good,
        r#"{"mcpServers": {"fs": {"command": "/nonexistent/server", "args": ["--root", "/"]},
                           "docs": {"url": "https://example.com/mcp"}}}"#,
    )
    .expect("write");
    let ok = gateway(&["--config", &good.display().to_string(), "--check-config"]);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    let out = text(&ok.stdout);
    assert!(
        out.contains("good; 2 upstreams") && out.contains("fs:") && out.contains("docs:"),
        "{out}"
    );

    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"mcpServers": {"fs": {"comand": "x"}}}"#).expect("write");
    let refused = gateway(&["--config", &bad.display().to_string(), "--check-config"]);
    assert_eq!(refused.status.code(), Some(2));
    let err = text(&refused.stderr);
    assert!(
        err.contains("mcpServers.fs.comand") && err.contains("did you mean `command`"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn usage_errors_exit_2_and_no_config_is_said_to_be_required() {
    assert_eq!(gateway(&["--no-such-flag"]).status.code(), Some(2));
    assert_eq!(
        gateway(&["--http", "127.0.0.1:0", "--stdio"]).status.code(),
        Some(2)
    );
    let bare = gateway(&[]);
    assert_eq!(bare.status.code(), Some(2));
    assert!(
        text(&bare.stderr).contains("--config FILE is required"),
        "{}",
        text(&bare.stderr)
    );
}

#[test]
fn log_format_json_writes_one_json_object_per_log_line() {
    let dir = std::env::temp_dir().join(format!("mcp-gateway-logs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("gateway.json");
    // An upstream that cannot start: the gateway logs why, serves, and stops at stdin's end.
    std::fs::write(
        &config,
        r#"{"mcpServers": {"gone": {"command": "/nonexistent/server"}}}"#,
    )
    .expect("write");
    let path = config.display().to_string();
    let run = gateway(&[
        "--config",
        &path,
        "--log-level",
        "info",
        "--log-format",
        "json",
    ]);
    let err = text(&run.stderr);
    let logs: Vec<serde_json::Value> = err
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(!logs.is_empty(), "no JSON log lines in:\n{err}");
    for l in &logs {
        assert!(
            l["level"].is_string() && l["timestamp"].is_string() && l["fields"].is_object(),
            "{l}"
        );
    }
    assert!(
        logs.iter().any(|l| l.to_string().contains("gone")),
        "no line names the upstream:\n{err}"
    );
    assert_eq!(gateway(&["--log-format", "xml"]).status.code(), Some(2));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn print_config_schema_writes_the_configuration_schema() {
    let out = gateway(&["--print-config-schema"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(schema, mcp_proxy::config::schema());
    assert_eq!(
        schema["properties"]["mcpServers"]["additionalProperties"]["$ref"],
        "#/$defs/Server"
    );
}

/// `gateway.http` reaches the listener: a name it allows is served, another refused.
#[test]
fn gateway_http_allows_the_names_it_lists() {
    use std::io::{BufRead, BufReader};
    let dir = std::env::temp_dir().join(format!("mcp-gateway-cli-http-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("gateway.json");
    std::fs::write(
        &file,
        r#"{"mcpServers": {}, "gateway": {"http": {"allowedHosts": ["gw.internal"], "maxBodyBytes": 512}}}"#,
    )
    .expect("write");
    let mut gw = Command::new(env!("CARGO_BIN_EXE_mcp-gateway"))
        .args([
            "--config",
            &file.display().to_string(),
            "--http",
            "127.0.0.1:0",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("mcp-gateway runs");
    let mut url = String::new();
    BufReader::new(gw.stdout.take().expect("stdout"))
        .read_line(&mut url)
        .expect("the URL");
    let addr = url
        .trim()
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let post = |host: &str, body: &str| -> u16 {
        let head = format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream");
        exchange(&addr, &head, body).0
    };
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    assert_eq!(post("gw.internal:8080", init), 200, "an allowed name");
    assert_eq!(post("other.example", init), 403, "a name not listed");
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"ping","params":{{"p":"{}"}}}}"#,
        "x".repeat(600)
    );
    assert_eq!(post("gw.internal", &long), 413, "maxBodyBytes");
    let _ = gw.kill();
    let _ = gw.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A configuration whose one upstream cannot start, so the gateway logs a warning naming
/// it, serves nothing, and stops at stdin's end; removed when dropped.
struct GoneUpstream(std::path::PathBuf);

impl GoneUpstream {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("mcp-gateway-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(
            dir.join("gateway.json"),
            r#"{"mcpServers": {"gone": {"command": "/nonexistent/server"}}}"#,
        )
        .expect("write");
        GoneUpstream(dir)
    }

    /// The gateway on this configuration, logging at `info` in text, its stdin empty.
    fn command(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_mcp-gateway"));
        c.arg("--config")
            .arg(self.0.join("gateway.json"))
            .args(["--log-level", "info"])
            .stdin(std::process::Stdio::null())
            .env_remove("NO_COLOR");
        c
    }
}

impl Drop for GoneUpstream {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn text_logs_to_a_pipe_carry_no_colour() {
    let config = GoneUpstream::new("logs-pipe");
    let run = config.command().output().expect("mcp-gateway runs");
    let err = text(&run.stderr);
    assert!(
        err.contains("upstream failed"),
        "a log line was written:\n{err}"
    );
    assert!(!run.stderr.contains(&0x1b), "no ANSI escape in:\n{err:?}");
}

/// What the gateway writes to standard error when that is a terminal: a pseudo-terminal,
/// read until the gateway and every copy of its end are gone (at most 30 s).
fn stderr_on_a_terminal(mut command: Command) -> Vec<u8> {
    use std::io::Read;
    let pty = nix::pty::openpty(None, None).expect("a pseudo-terminal");
    let mut child = command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::from(pty.slave))
        .spawn()
        .expect("mcp-gateway runs");
    // The command holds the terminal's other end; without dropping it the read never ends.
    drop(command);
    let mut master = std::fs::File::from(pty.master);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        // Linux answers EIO, not 0, once the other end is closed.
        while let Ok(n @ 1..) = master.read(&mut buf) {
            out.extend_from_slice(&buf[..n]);
        }
        let _ = tx.send(out);
    });
    let out = rx.recv_timeout(std::time::Duration::from_secs(30));
    let _ = child.kill();
    let _ = child.wait();
    out.expect("the gateway ended within 30 s")
}

#[test]
fn text_logs_to_a_terminal_are_coloured_unless_no_color_is_set() {
    let config = GoneUpstream::new("logs-tty");
    let coloured = stderr_on_a_terminal(config.command());
    assert!(
        String::from_utf8_lossy(&coloured).contains("upstream failed"),
        "a log line was written: {coloured:?}"
    );
    assert!(coloured.contains(&0x1b), "coloured: {coloured:?}");

    let mut plain = config.command();
    plain.env("NO_COLOR", "1");
    let plain = stderr_on_a_terminal(plain);
    assert!(
        String::from_utf8_lossy(&plain).contains("upstream failed"),
        "a log line was written: {plain:?}"
    );
    assert!(!plain.contains(&0x1b), "NO_COLOR: {plain:?}");
}
