//! The gateway beyond loopback, with hosts we did not write: the TypeScript SDK client and
//! the Python SDK client (both eras) reach it over HTTP with an API key as their bearer
//! token, each seeing only its view; without a token, or with a wrong one, they cannot
//! connect.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

mod common;
use common::{example, http_gateway, interop_dir};

const KEY: &str = "interop-key-0123456789";

fn peers_installed() -> bool {
    let ok = interop_dir()
        .join("node_modules/@modelcontextprotocol/sdk")
        .exists()
        && interop_dir().join(".venv/bin/python").exists();
    assert!(
        ok || std::env::var("MCP_INTEROP").as_deref() != Ok("required"),
        "interop peers are not installed"
    );
    if !ok {
        eprintln!("SKIPPED: interop peers are not installed (see README, Interop)");
    }
    ok
}

/// A configuration with two upstreams and API-key authorization whose one view reaches
/// only `echo__echo`.
fn config() -> PathBuf {
    let text = json!({
        "mcpServers": {"echo": {"command": example("echo-server")},
                       "notes": {"command": example("echo-server")}},
        "gateway": {
            "startupWaitMillis": 60000,
            "auth": {"resource": "http://127.0.0.1/mcp",
                     "apiKeys": [{"name": "interop", "key": KEY, "subject": "sdk-host"}]},
            "views": [{"credentials": ["interop"], "upstreams": ["echo"], "allowTools": ["echo__echo"]}]}});
    let path = std::env::temp_dir().join(format!("mcp-gateway-auth-{}.json", std::process::id()));
    std::fs::write(&path, text.to_string()).expect("config");
    path
}

/// Runs an SDK host with `token`: what it printed, or `Err` with its output if it failed.
async fn host(program: &str, args: &[String], token: Option<&str>) -> Result<Value, String> {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args).current_dir(interop_dir()).kill_on_drop(true);
    match token {
        Some(t) => cmd.env("MCP_BEARER_TOKEN", t),
        None => cmd.env_remove("MCP_BEARER_TOKEN"),
    };
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("the host finished in time")
        .expect("the host started");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!(
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .map_err(|e| format!("{e}: {stdout}"))
}

fn check(seen: &Value, who: &str) {
    let names: Vec<&str> = seen["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["echo__echo"], "{who}: {seen}");
    assert_eq!(
        seen["results"]["echo__echo"]["content"][0]["text"], "through the gateway",
        "{who}: {seen}"
    );
}

#[tokio::test]
async fn sdk_hosts_reach_the_gateway_with_a_bearer_token_and_see_their_view() {
    if !peers_installed() {
        return;
    }
    let config = config();
    let (_gw, url) = http_gateway(&config).await;
    let calls = json!([["echo__echo", {"text": "through the gateway"}]]).to_string();
    let ts = vec!["host.mjs".to_owned(), url.clone(), calls.clone()];
    check(
        &host("node", &ts, Some(KEY))
            .await
            .expect("the TypeScript host"),
        "ts",
    );
    let py = interop_dir().join(".venv/bin/python").display().to_string();
    for mode in ["legacy", "2026-07-28"] {
        let args = vec![
            "host.py".to_owned(),
            mode.to_owned(),
            url.clone(),
            calls.clone(),
        ];
        check(
            &host(&py, &args, Some(KEY)).await.expect("the Python host"),
            mode,
        );
        for bad in [None, Some("wrong-key-0123456789")] {
            let refused = host(&py, &args, bad).await;
            assert!(
                refused.is_err(),
                "{mode} with {bad:?} was served: {refused:?}"
            );
        }
    }
    for bad in [None, Some("wrong-key-0123456789")] {
        let refused = host("node", &ts, bad).await;
        assert!(refused.is_err(), "ts with {bad:?} was served: {refused:?}");
    }
    let _ = std::fs::remove_file(config);
}

#[tokio::test]
async fn a_config_typo_stops_the_gateway_at_start_naming_the_key() {
    let path = std::env::temp_dir().join(format!("mcp-gateway-typo-{}.json", std::process::id()));
    let text =
        json!({"mcpServers": {"fs": {"command": example("echo-server"), "denyTool": ["echo"]}}});
    std::fs::write(&path, text.to_string()).expect("config");
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(example("gateway"))
            .args([
                "--config",
                &path.display().to_string(),
                "--http",
                "127.0.0.1:0",
            ])
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the gateway exited in time")
    .expect("the gateway ran");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr
            .contains("mcpServers.fs.denyTool: unknown key `denyTool`; did you mean `denyTools`?"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "it must not have started serving");
    let _ = std::fs::remove_file(path);
}
