//! Hosts built on the official SDKs, through a real HAProxy (round-robin, no stickiness) in
//! front of three gateway replicas sharing Redis, each with its own stdio conformance
//! server and lists of two items a page: the TypeScript SDK host (2025-11-25) and the
//! Python SDK host (2025-06-18, and 2026-07-28) each make 300 calls, answer 30
//! elicitations, list 3 pages and receive 10 updates of a resource they subscribed to,
//! with no error and no new session; every replica got at least a fifth of the requests,
//! and requests were forwarded to the replica holding their state.
//!
//! With `MCP_INTEROP=required` a missing HAProxy, Redis, Node or Python SDK fails the
//! test; otherwise it skips.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::Value;

mod common;
use common::cluster::Cluster;
use common::{interop_dir, run_json};

/// What one host saw, checked: every count as asked, no error, one session.
fn check(seen: &Value, who: &str) {
    assert_eq!(seen["errors"], serde_json::json!([]), "{who}: {seen}");
    assert_eq!(seen["calls"], 300, "{who}: calls");
    assert_eq!(seen["elicited"], 30, "{who}: elicitations asked");
    assert_eq!(seen["answered"], 30, "{who}: elicitations answered");
    let pages = seen["pages"].as_array().expect("pages");
    assert_eq!(pages.len(), 3, "{who}: pages {pages:?}");
    let mut names = HashSet::new();
    for page in pages {
        let page = page.as_array().expect("a page");
        assert_eq!(page.len(), 2, "{who}: a page of two: {page:?}");
        for n in page {
            assert!(names.insert(n.clone()), "{who}: {n} listed twice");
        }
    }
    let updates = seen["updates"].as_u64().expect("updates");
    assert!(updates >= 10, "{who}: {updates} updates");
    if let Some(sessions) = seen.get("sessions") {
        assert_eq!(
            sessions, 1,
            "{who}: sessions (a new one means initialized again)"
        );
    }
}

/// Whether Node and the Python SDK are installed (`.ci/run` installs both).
fn hosts_installed() -> bool {
    let node = interop_dir().join("node_modules/@modelcontextprotocol/sdk");
    let python = interop_dir().join(".venv/bin/python");
    let found = node.is_dir() && python.is_file();
    if !found {
        assert!(
            std::env::var("MCP_INTEROP").as_deref() != Ok("required"),
            "the SDK hosts are not installed; run .ci/run"
        );
        eprintln!("SKIPPED: the SDK hosts are not installed");
    }
    found
}

#[tokio::test]
async fn sdk_hosts_through_haproxy_in_front_of_three_replicas_see_one_gateway() {
    if !hosts_installed() {
        return;
    }
    let Some(cluster) = Cluster::start_paged("sdk-hosts", Some(2)).await else {
        return;
    };
    let url = cluster.url();
    let limit = Duration::from_secs(240);
    let ts = run_json("node", &["cluster_host.mjs", url.as_str()], limit).await;
    assert_eq!(ts["protocolVersion"], "2025-11-25", "{ts}");
    check(&ts, "TypeScript SDK host");
    let python = interop_dir().join(".venv/bin/python");
    for revision in ["2025-06-18", "2026-07-28"] {
        let args = ["cluster_host.py", revision, url.as_str()];
        let seen = run_json(&python, &args, limit).await;
        assert_eq!(seen["protocolVersion"], revision, "{seen}");
        check(&seen, &format!("Python SDK host ({revision})"));
    }
    let served = cluster.served().await;
    let total: u64 = served.iter().sum();
    for (i, n) in served.iter().enumerate() {
        assert!(
            *n * 5 >= total,
            "replica {} got {n} of {total} requests",
            i + 1
        );
    }
    let forwarded = cluster.forwarded().await;
    assert!(forwarded >= 1, "no request was forwarded");
    eprintln!("requests by replica: {served:?}; forwarded: {forwarded}");
    cluster.stop().await;
}
