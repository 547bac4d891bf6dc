//! `mcp-gateway`'s live configuration: a change of its configuration file under a
//! running gateway, with a host connected over HTTP, is applied (an upstream added, one
//! removed, the unchanged one's process kept); a file that does not parse is refused and
//! the configuration in force keeps serving.
#![cfg(feature = "cli")]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use mcp_client::http::HttpConfig;
use mcp_client::{Client, ClientOptions, EraChoice, NoHandler};
use mcp_types::protocol::ContentBlock;
use mcp_types::Revision;
use serde_json::json;

mod common;
use common::python::python_upstream;
use common::Gate;
use mcp_examples::OutputLog;

/// A `mcpServers` entry: python answering `tool` with its process id.
fn server(key: &str, tool: &str) -> serde_json::Value {
    let tools = json!([{"name": tool, "inputSchema": {"type": "object"}}]);
    let on_call = "send({\"jsonrpc\": \"2.0\", \"id\": i, \"result\": {\"content\": [{\"type\": \"text\", \"text\": str(os.getpid())}]}})";
    json!({"command": "python3", "args": ["-c", python_upstream(key, "import os", tools, on_call)]})
}

/// `mcp-gateway --config <config> --http 127.0.0.1:0`; its stderr as `stderr` says.
fn spawn(config: &std::path::Path, stderr: Stdio) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_mcp-gateway"))
        .args([
            "--config",
            &config.display().to_string(),
            "--http",
            "127.0.0.1:0",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("mcp-gateway starts")
}

/// A legacy host on the URL `gateway` prints once it serves.
async fn connect(gateway: &mut std::process::Child) -> Client {
    let mut url = String::new();
    let stdout = gateway.stdout.take().expect("stdout");
    BufReader::new(stdout).read_line(&mut url).expect("the URL");
    let options = ClientOptions::default().era(EraChoice::Legacy(Revision::V2025_06_18));
    mcp_client::connect_http(HttpConfig::new(url.trim()), NoHandler, options)
        .await
        .expect("host connects")
}

/// Stops `gateway`.
fn stop(gateway: &mut std::process::Child) {
    let _ = Command::new("kill").arg(gateway.id().to_string()).status();
    let _ = gateway.wait();
}

async fn names(client: &Client) -> Vec<String> {
    let mut n: Vec<String> = match client.list_tools().await {
        Ok(tools) => tools.into_iter().map(|t| t.name).collect(),
        Err(_) => Vec::new(),
    };
    n.sort();
    n
}

/// The tool names once they are `want`, within ten seconds.
async fn until(client: &Client, want: &[&str]) -> Vec<String> {
    let ten_seconds = Duration::from_secs(10);
    mcp_examples::wait_until(ten_seconds, || async { names(client).await == want }).await;
    names(client).await
}

async fn pid(client: &Client, tool: &str) -> String {
    let call = client
        .call_tool(tool, Default::default())
        .await
        .expect("tools/call");
    match call.result.content.first() {
        Some(ContentBlock::Text(t)) => t.text.clone(),
        other => format!("{other:?}"),
    }
}

#[tokio::test]
async fn an_edited_configuration_is_applied_and_a_broken_one_refused() {
    let dir = std::env::temp_dir().join(format!("mcp-gateway-reload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("gateway.json");
    let write = |servers: serde_json::Value| {
        let text =
            json!({"mcpServers": servers, "gateway": {"startupWaitMillis": 60000}}).to_string();
        std::fs::write(&config, text).expect("write config");
    };
    write(json!({"keep": server("keep", "pid"), "gone": server("gone", "old")}));
    let mut gateway = spawn(&config, Stdio::piped());
    let mut err = OutputLog::read(gateway.stderr.take().expect("stderr"));
    let host = connect(&mut gateway).await;
    assert_eq!(names(&host).await, ["gone__old", "keep__pid"]);
    let before = pid(&host, "keep__pid").await;

    write(json!({"keep": server("keep", "pid"), "new": server("new", "fresh")}));
    assert_eq!(
        until(&host, &["keep__pid", "new__fresh"]).await,
        ["keep__pid", "new__fresh"]
    );
    assert_eq!(
        pid(&host, "keep__pid").await,
        before,
        "the unchanged upstream kept running"
    );

    let refusals = |text: &str| text.matches("configuration refused").count();
    let refused_before = refusals(&err.text());
    std::fs::write(&config, "{\"mcpServers\": {\"keep\": ").expect("write");
    let refused = err
        .until(Duration::from_secs(10), |text| {
            refusals(text) > refused_before
        })
        .await;
    assert!(refused, "{}", err.text());
    assert_eq!(names(&host).await, ["keep__pid", "new__fresh"]);
    assert_eq!(pid(&host, "keep__pid").await, before);

    host.close().await;
    stop(&mut gateway);
    let err = err.all();
    assert!(err.contains("configuration reloaded"), "{err}");
    assert!(err.contains("configuration refused"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

/// A Kubernetes ConfigMap volume updates its files by swapping one link: `config.json`
/// points through `..data`, which is renamed to point at a new folder; no event names
/// `config.json` itself.
#[tokio::test]
async fn a_kubernetes_volume_swap_is_applied() {
    use std::os::unix::fs::symlink;
    let dir = std::env::temp_dir().join(format!("mcp-gateway-k8s-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let version = |n: &str, servers: serde_json::Value| {
        let folder = dir.join(n);
        std::fs::create_dir_all(&folder).expect("version folder");
        let text =
            json!({"mcpServers": servers, "gateway": {"startupWaitMillis": 60000}}).to_string();
        std::fs::write(folder.join("gateway.json"), text).expect("write");
    };
    version("..2026_12_02_a", json!({"keep": server("keep", "pid")}));
    symlink("..2026_12_02_a", dir.join("..data")).expect("..data");
    symlink("..data/gateway.json", dir.join("gateway.json")).expect("gateway.json");

    let config = dir.join("gateway.json");
    let mut gateway = spawn(&config, Stdio::null());
    let host = connect(&mut gateway).await;
    assert_eq!(names(&host).await, ["keep__pid"]);

    // What the kubelet does: the new version beside the old, a new link, renamed over.
    version(
        "..2026_12_02_b",
        json!({"keep": server("keep", "pid"), "new": server("new", "fresh")}),
    );
    symlink("..2026_12_02_b", dir.join("..data_tmp")).expect("..data_tmp");
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).expect("swap");
    assert_eq!(
        until(&host, &["keep__pid", "new__fresh"]).await,
        ["keep__pid", "new__fresh"]
    );

    host.close().await;
    stop(&mut gateway);
    let _ = std::fs::remove_dir_all(dir);
}

/// An edit made while the upstreams are still starting (before the watch begins) is
/// applied too: the watch compares with the text the running configuration came from.
#[tokio::test]
async fn an_edit_during_start_up_is_applied() {
    let dir = std::env::temp_dir().join(format!("mcp-gateway-early-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("gateway.json");
    let tools = json!([{"name": "slow", "inputSchema": {"type": "object"}}]);
    let on_call = "send({\"jsonrpc\": \"2.0\", \"id\": i, \"result\": {\"content\": []}})";
    // Held at its gate while it starts: the edit below lands before the gateway watches.
    let gate = Gate::new();
    let slow = json!({"command": "python3", "args": ["-c", python_upstream("slow", &gate.python(), tools, on_call)]});
    std::fs::write(&config, json!({"mcpServers": {"slow": slow}}).to_string()).expect("write");
    let mut gateway = spawn(&config, Stdio::null());
    // The gateway has read its configuration and is starting `slow`.
    let held = gate.arrived(Duration::from_secs(10));
    let edited = json!({"mcpServers": {"slow": slow, "new": server("new", "fresh")}});
    std::fs::write(&config, edited.to_string()).expect("edit");
    drop(held);
    let host = connect(&mut gateway).await;
    assert_eq!(
        until(&host, &["new__fresh", "slow__slow"]).await,
        ["new__fresh", "slow__slow"]
    );
    host.close().await;
    stop(&mut gateway);
    let _ = std::fs::remove_dir_all(dir);
}
