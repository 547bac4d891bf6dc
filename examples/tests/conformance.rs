//! The official conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! `examples/interop/package.json`) against our conformance server and client, at
//! 2025-11-25 and 2026-07-28, every non-auth scenario. Failures that are expected stand in
//! `examples/interop/conformance/*.yml`, one reason each; the suite fails the run when
//! anything else fails or when an expected failure starts passing (a stale baseline).
//! With `MCP_INTEROP=required` (as `.ci/run` sets) a missing suite fails the test.

mod common;
use common::conformance::{conformance, serve, server_scenarios, suite};
use common::example;

/// The tasks extension's scenarios (SEP-2663). The suite does not score them yet
/// ("pending against the reference fixture"), so each is run by name and must pass.
/// (`tasks-status-notifications` is skipped by the suite itself.)
const TASKS_SCENARIOS: [&str; 9] = [
    "tasks-request-headers",
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-dispatch-and-envelope",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
];

/// SEP-2243 (`Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` checked against the body), also
/// unscored by the suite yet, so run by name.
const HEADER_SCENARIOS: [&str; 2] = [
    "http-header-validation",
    "http-custom-header-server-validation",
];

/// Runs `scenarios` by name against the server `program args` starts: each must have run
/// its checks, all passing.
async fn named_scenarios(program: &str, args: &[&str], scenarios: &[&str]) {
    let Some(suite) = suite() else { return };
    let (_server, url) = serve(program, args).await;
    for &scenario in scenarios {
        let out = conformance(&suite, &["server", "--url", &url, "--scenario", scenario]).await;
        // A skipped scenario also exits 0: each must have run its checks, all passing.
        let passed = out
            .lines()
            .find_map(|l| l.strip_prefix("Passed: "))
            .and_then(|l| l.split_once(','))
            .and_then(|(ratio, _)| ratio.split_once('/'))
            .map(|(n, of)| (n.trim().to_owned(), of.trim().to_owned()));
        match passed {
            Some((n, of)) if n == of && n != "0" => {}
            other => panic!("{scenario}: not every check ran and passed ({other:?}):\n{out}"),
        }
    }
}

#[tokio::test]
async fn server_passes_the_tasks_extension_scenarios() {
    named_scenarios(
        &example("conformance-server"),
        &["127.0.0.1:0"],
        &TASKS_SCENARIOS,
    )
    .await;
}

/// One test for both (not one each): the binary's tests run at once, and the client
/// suite's timing scenario (`sse-retry`) is better off without more load beside it.
#[tokio::test]
async fn server_and_gateway_pass_the_header_validation_scenarios() {
    named_scenarios(
        &example("conformance-server"),
        &["127.0.0.1:0"],
        &HEADER_SCENARIOS,
    )
    .await;
    // The gateway checks what a host mirrors against the upstream tool's annotations.
    let config = gateway_config("headers");
    let path = config.display().to_string();
    named_scenarios(
        &example("gateway"),
        &["--config", &path, "--http", "127.0.0.1:0"],
        &HEADER_SCENARIOS,
    )
    .await;
    let _ = std::fs::remove_file(config);
}

/// The gateway relays the upstream's tasks (2026 upstream, 2026 host) under its own ids.
#[tokio::test]
async fn gateway_passes_the_tasks_extension_scenarios_like_the_server_it_fronts() {
    let config = gateway_config("tasks");
    let path = config.display().to_string();
    named_scenarios(
        &example("gateway"),
        &["--config", &path, "--http", "127.0.0.1:0"],
        &TASKS_SCENARIOS,
    )
    .await;
    let _ = std::fs::remove_file(config);
}

async fn server_suite(revision: &str) {
    let Some(suite) = suite() else { return };
    let server = example("conformance-server");
    server_scenarios(&suite, &server, &["127.0.0.1:0"], "server", revision).await;
}

async fn client_suite(revision: &str) {
    let Some(suite) = suite() else { return };
    let baseline = format!("conformance/client-{revision}.yml");
    let client = example("conformance-client");
    conformance(
        &suite,
        &[
            "client",
            "--command",
            &client,
            "--requirements",
            revision,
            "--expected-failures",
            &baseline,
        ],
    )
    .await;
}

#[tokio::test]
async fn server_passes_the_2025_11_25_requirements() {
    server_suite("2025-11-25").await;
}

#[tokio::test]
async fn server_passes_the_2026_07_28_requirements() {
    server_suite("2026-07-28").await;
}

/// Not in a requirements list yet: a client asks for `offline_access` where the
/// authorization server lists it, and declares the refresh grant (SEP-2207).
#[tokio::test]
async fn client_asks_for_offline_access_where_the_server_offers_it() {
    let Some(suite) = suite() else { return };
    let client = example("conformance-client");
    let args = [
        "client",
        "--command",
        &client,
        "--scenario",
        "auth/offline-access-scope",
    ];
    let out = conformance(&suite, &args).await;
    assert!(
        out.contains("Client included offline_access in authorization request scope"),
        "{out}"
    );
}

#[tokio::test]
async fn client_passes_the_2025_11_25_requirements() {
    client_suite("2025-11-25").await;
}

#[tokio::test]
async fn client_passes_the_2026_07_28_requirements() {
    client_suite("2026-07-28").await;
}

/// The gateway in front of our conformance server (a stdio upstream, names unprefixed):
/// the suite must see what it sees talking to the server directly.
async fn gateway_suite(revision: &str) {
    let Some(suite) = suite() else { return };
    let config = gateway_config(revision);
    let path = config.display().to_string();
    let args = ["--config", &path, "--http", "127.0.0.1:0"];
    server_scenarios(&suite, &example("gateway"), &args, "gateway", revision).await;
    let _ = std::fs::remove_file(config);
}

/// A gateway configuration with our conformance server as its one stdio upstream, names
/// unprefixed.
fn gateway_config(tag: &str) -> std::path::PathBuf {
    let config = std::env::temp_dir().join(format!(
        "mcp-gateway-conformance-{tag}-{}.json",
        std::process::id()
    ));
    let text = serde_json::json!({"mcpServers": {"conformance": {
        "command": example("conformance-server"), "args": ["--stdio"], "namespace": ""}},
        "gateway": {"startupWaitMillis": 60000}});
    std::fs::write(&config, text.to_string()).expect("write config");
    config
}

#[tokio::test]
async fn gateway_passes_the_2025_11_25_requirements_like_the_server_it_fronts() {
    gateway_suite("2025-11-25").await;
}

#[tokio::test]
async fn gateway_passes_the_2026_07_28_requirements_like_the_server_it_fronts() {
    gateway_suite("2026-07-28").await;
}
