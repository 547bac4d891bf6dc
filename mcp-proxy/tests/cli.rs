//! The `mcp-gateway` program's command line: `--help` with examples, `--version`,
//! `--check-config` on good and bad files (exit 0 and 2, nothing started), usage errors.
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
