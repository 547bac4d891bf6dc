//! Three gateway processes behind a real HAProxy (from Debian's package, started here on
//! 127.0.0.1), round-robin with no stickiness and health checks on `/readyz`: each replica
//! runs its own stdio conformance server, and all share `gateway.cluster` keys and know
//! each other's addresses. The official conformance suite's server scenarios through
//! HAProxy, at 2025-11-25 and 2026-07-28, give exactly the single gateway's results (the
//! same baselines; the suite fails on anything else, and on an expected failure passing).
//! And replicas that find each other in Redis (`gateway.cluster.redis`, no list of peers):
//! a legacy session opened on one is served through another.
//! With `MCP_INTEROP=required` a missing HAProxy or Redis fails the test; otherwise it skips.

use std::path::{Path, PathBuf};
use std::time::Duration;

mod common;
use common::cluster::{free_ports, haproxy_config, ready, registry_config, start_haproxy};
use common::conformance::{scenarios_at, serve, suite};
use common::example;
use common::redis::{installed, redis_server, scratch, Redis};

#[path = "../../mcp-server/tests/raw_http/mod.rs"]
mod raw_http;

/// Replica `n`'s configuration in `dir`: the conformance server as its one stdio upstream
/// (names unprefixed, as for the single gateway), the cluster's key in `key`, `ports` the
/// replicas' ports in order.
fn config(dir: &Path, n: usize, key: &Path, ports: &[u16]) -> PathBuf {
    let peers: serde_json::Map<String, serde_json::Value> = ports
        .iter()
        .enumerate()
        .map(|(i, p)| ((i + 1).to_string(), format!("http://127.0.0.1:{p}").into()))
        .collect();
    let text = serde_json::json!({
        "mcpServers": {"conformance": {
            "command": example("conformance-server"), "args": ["--stdio"], "namespace": ""}},
        "gateway": {"startupWaitMillis": 60000, "cluster": {
            "replica": n, "keys": [{"name": "test", "secretFile": key}], "peers": peers}}});
    let path = dir.join(format!("replica-{n}.json"));
    std::fs::write(&path, text.to_string()).expect("write config");
    path
}

#[tokio::test]
async fn conformance_through_haproxy_in_front_of_three_replicas_is_the_single_gateways() {
    let (Some(suite), Some(haproxy)) = (suite(), installed("haproxy", "haproxy")) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("mcp-replicas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let key = dir.join("cluster.key");
    std::fs::write(&key, "a test key of more than thirty-two bytes, shared").expect("key");
    let ports = free_ports(4);
    let (front, replicas) = (ports[0], &ports[1..]);
    let mut gateways = Vec::new();
    for (i, port) in replicas.iter().enumerate() {
        let path = config(&dir, i + 1, &key, replicas);
        let (path, listen) = (path.display().to_string(), format!("127.0.0.1:{port}"));
        let args = ["--config", path.as_str(), "--http", listen.as_str()];
        // Each prints its URL once it serves (its upstream started).
        gateways.push(serve(&example("gateway"), &args).await);
    }
    let _haproxy = start_haproxy(&haproxy, &haproxy_config(&dir, front, replicas));
    let url = format!("http://127.0.0.1:{front}/mcp");
    let up = mcp_examples::wait_until(Duration::from_secs(10), || ready(front)).await;
    assert!(up, "haproxy serves the replicas' /readyz");
    for revision in ["2025-11-25", "2026-07-28"] {
        scenarios_at(&suite, &url, "gateway", revision).await;
    }
    drop(gateways);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn replicas_that_find_each_other_in_redis_serve_a_session_through_any_of_them() {
    let Some(program) = redis_server() else {
        return;
    };
    let dir = scratch("registry");
    let redis = Redis::start(&program, &dir, None).await;
    let url_file = dir.join("redis.url");
    std::fs::write(&url_file, redis.url(None)).expect("url file");
    let key = dir.join("cluster.key");
    std::fs::write(&key, "a test key of more than thirty-two bytes, shared").expect("key");
    let ports = free_ports(2);
    let mut gateways = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let path = registry_config(&dir, i + 1, &key, &url_file, *port);
        let (path, listen) = (path.display().to_string(), format!("127.0.0.1:{port}"));
        let args = ["--config", path.as_str(), "--http", listen.as_str()];
        gateways.push(serve(&example("gateway"), &args).await);
    }
    let addr = |i: usize| std::net::SocketAddr::from(([127, 0, 0, 1], ports[i]));
    let send = |i: usize, session: Option<String>, body: serde_json::Value| async move {
        let s = tokio::net::TcpStream::connect(addr(i))
            .await
            .expect("connect");
        raw_http::exchange(s, addr(i), "POST", session.as_deref(), "", &body).await
    };
    let opened = send(0, None, raw_http::initialize(1)).await;
    let id = opened.session.expect("a session id");
    let note = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(send(0, Some(id.clone()), note).await.status, 202);
    // Replica 2 learns where replica 1 is from the registry within a heartbeat or two.
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "test_simple_text", "arguments": {}}});
    let served = mcp_examples::wait_until(Duration::from_secs(10), || {
        let (id, call) = (id.clone(), call.clone());
        async move { send(1, Some(id), call).await.status == 200 }
    })
    .await;
    assert!(served, "the session is served through replica 2");
    let answer = send(1, Some(id.clone()), call.clone()).await;
    assert_eq!(answer.body["id"], 2, "{}", answer.body);
    assert_eq!(
        answer.body["result"]["content"][0]["type"], "text",
        "{}",
        answer.body
    );
    let registered = redis.cli(&["SMEMBERS", "e2e:replicas"]).await;
    assert_eq!(registered.len(), 2, "{registered:?}");
    drop(gateways);
    redis.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_replica_whose_redis_is_down_at_start_serves() {
    let dir = scratch("down");
    let url_file = dir.join("redis.url");
    // Nothing listens there.
    std::fs::write(
        &url_file,
        format!("redis+unix://{}", dir.join("none.sock").display()),
    )
    .expect("url");
    let key = dir.join("cluster.key");
    std::fs::write(&key, "a test key of more than thirty-two bytes, shared").expect("key");
    let port = free_ports(1)[0];
    let path = registry_config(&dir, 1, &key, &url_file, port);
    let (path, listen) = (path.display().to_string(), format!("127.0.0.1:{port}"));
    let (_gateway, _url) =
        serve(&example("gateway"), &["--config", &path, "--http", &listen]).await;
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let opened = raw_http::exchange(s, addr, "POST", None, "", &raw_http::initialize(1)).await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    assert!(opened.session.is_some());
    let _ = std::fs::remove_dir_all(&dir);
}
