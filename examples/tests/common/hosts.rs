//! Hosts of a gateway cluster's end-to-end tests: a legacy host counting the sessions it
//! had to start again, what it settles in its session, and a steady load of calls.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_client::http::HttpConfig;
use mcp_client::{CallOptions, Client, ClientOptions, EraChoice, NoHandler};
use mcp_types::protocol::{method, TypedNotification};
use mcp_types::Revision;
use serde_json::{json, Map};

use super::cluster::Cluster;

/// A 2026-07-28 host (our client) at `url`.
pub async fn modern_host(url: &str) -> Client {
    let options = ClientOptions::default().era(EraChoice::Modern);
    mcp_client::connect_http(HttpConfig::new(url), NoHandler, options)
        .await
        .expect("a 2026 host")
}

/// A legacy host at `url`, counting the sessions it had to start again.
pub async fn legacy_host(url: &str, renewals: Arc<AtomicU64>) -> Client {
    let config = HttpConfig::new(url).on_session_renewed(Arc::new(move |_| {
        renewals.fetch_add(1, Ordering::SeqCst);
    }));
    let options = ClientOptions::default().era(EraChoice::Legacy(Revision::V2025_11_25));
    mcp_client::connect_http(config, NoHandler, options)
        .await
        .expect("connects")
}

/// Sets the host's log level and subscribes it to a resource; its session's record then
/// names both. The session's id.
pub async fn settle(cluster: &Cluster, host: &Client) -> String {
    let none = CallOptions::default();
    host.request(method::LOGGING_SET_LEVEL, json!({"level": "info"}), &none)
        .await
        .expect("level set");
    host.request(
        method::RESOURCES_SUBSCRIBE,
        json!({"uri": "test://static-text"}),
        &none,
    )
    .await
    .expect("subscribed");
    let recorded = mcp_examples::wait_until(Duration::from_secs(5), || async {
        let ids = cluster.sessions().await;
        let Some(id) = ids.first() else {
            return false;
        };
        let record = cluster.field(id, "record").await;
        record.contains("test://static-text") && record.contains("\"info\"")
    })
    .await;
    assert!(
        recorded,
        "the session's record names its level and subscription"
    );
    cluster.session_id().await
}

/// Calls the conformance server's tool that logs only for a request naming a level:
/// whether the host heard its line.
pub async fn logs(host: &Client) -> bool {
    let mut notes = host.notifications();
    host.call_tool("test_logging_tool", Map::new())
        .await
        .expect("called");
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match notes.recv().await {
                Ok(TypedNotification::Log(_)) => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
    })
    .await
    .unwrap_or(false)
}

/// Calls on `host` every 20 ms until `stop` is set: how many succeeded and failed.
pub async fn load(host: Arc<Client>, stop: Arc<AtomicBool>) -> (usize, usize) {
    let (mut ok, mut failed) = (0, 0);
    while !stop.load(Ordering::SeqCst) {
        match host.call_tool("test_simple_text", Map::new()).await {
            Ok(_) => ok += 1,
            Err(e) => {
                eprintln!("a call under load failed: {e}");
                failed += 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (ok, failed)
}
