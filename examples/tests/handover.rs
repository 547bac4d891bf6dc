//! Legacy sessions outlive their replica, end to end: three gateway processes that find
//! each other in a real Redis (Debian's package, on a unix socket), behind a real HAProxy
//! (round-robin, no stickiness, health checks on `/readyz`), each with its own stdio
//! conformance server. A legacy host (our client, 2025-11-25) sets a log level and
//! subscribes, then:
//! - the replica holding its session is killed (`SIGKILL`), five times: the host's next
//!   call succeeds within a second under the same session id, with no new `initialize`,
//!   its log level still in force (the upstream logs only for a request naming one) and
//!   its subscription in the session's record;
//! - the replica holding its session is stopped (`SIGSTOP`): the session is served
//!   elsewhere within the registry's TTL and a second, and the stopped replica, resumed,
//!   no longer serves it (what it is sent for the session reaches the new holder);
//! - Redis is killed for ten seconds under load, then started again empty: no call of a
//!   2026 host or of a legacy host on a live replica fails, a session whose replica died
//!   meanwhile starts again with a new `initialize`, `/readyz` and `/metrics` say the store
//!   is down, and the records are back within five seconds of Redis;
//! - every replica in turn is stopped with `SIGTERM` and started again, under a minute of
//!   load: no call fails, and the legacy session moves with its level, never ending.
//!
//! With `MCP_INTEROP=required` a missing HAProxy or Redis fails the test; otherwise it skips.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map};

mod common;
use common::cluster::{get, ready, Cluster, REGISTRY_TTL};

/// Each test here runs three replicas, Redis and HAProxy, and holds them to time bounds
/// (a second, a TTL): on two cores, one such test at a time, or one's load skews another's
/// clock.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
use common::hosts::{legacy_host, load, logs, modern_host, settle};

#[tokio::test]
async fn a_killed_replicas_sessions_carry_on_elsewhere_within_a_second() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut cluster) = Cluster::start("handover-kill").await else {
        return;
    };
    for trial in 0..5 {
        let renewals = Arc::new(AtomicU64::new(0));
        let host = legacy_host(&cluster.url(), renewals.clone()).await;
        let id = settle(&cluster, &host).await;
        assert!(logs(&host).await, "trial {trial}: the level, before");
        let owner = cluster.owner(&id).await;
        cluster.kill(owner).await;
        let killed = Instant::now();
        host.call_tool("test_simple_text", Map::new())
            .await
            .unwrap_or_else(|e| panic!("trial {trial}: the call after the kill: {e}"));
        let took = killed.elapsed();
        assert!(
            took < Duration::from_secs(1),
            "trial {trial}: served again after {took:?}"
        );
        assert_eq!(
            renewals.load(Ordering::SeqCst),
            0,
            "trial {trial}: no new initialize"
        );
        assert_eq!(
            cluster.session_id().await,
            id,
            "trial {trial}: the same session"
        );
        let holder = cluster.owner(&id).await;
        assert_ne!(holder, owner, "trial {trial}: held elsewhere now");
        assert!(logs(&host).await, "trial {trial}: the level survived");
        let record = cluster.field(&id, "record").await;
        assert!(
            record.contains("test://static-text"),
            "trial {trial}: the subscription survived: {record}"
        );
        // The session ends (DELETE), and the killed replica comes back for the next trial.
        host.close().await;
        let gone = mcp_examples::wait_until(Duration::from_secs(5), || async {
            cluster.sessions().await.is_empty()
        })
        .await;
        assert!(gone, "trial {trial}: the ended session's record goes");
        cluster.start_replica(owner).await;
    }
    cluster.stop().await;
}

#[tokio::test]
async fn a_stopped_replicas_sessions_are_served_elsewhere_and_not_by_it_once_resumed() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(cluster) = Cluster::start("handover-stop").await else {
        return;
    };
    let renewals = Arc::new(AtomicU64::new(0));
    let host = legacy_host(&cluster.url(), renewals.clone()).await;
    let id = settle(&cluster, &host).await;
    let owner = cluster.owner(&id).await;
    cluster.signal(owner, "STOP").await;
    let stopped = Instant::now();
    // Calls sent meanwhile may wait on the stopped replica: each is given up after a
    // second, and the next one sent.
    let served = loop {
        let call = host.call_tool("test_simple_text", Map::new());
        if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(1), call).await {
            break stopped.elapsed();
        }
        assert!(
            stopped.elapsed() < Duration::from_secs(15),
            "never served while its replica was stopped"
        );
    };
    eprintln!("a stopped replica's session served elsewhere after {served:?}");
    assert!(
        served < REGISTRY_TTL + Duration::from_secs(1),
        "served elsewhere after {served:?}"
    );
    let holder = cluster.owner(&id).await;
    assert_ne!(holder, owner, "held elsewhere now");
    cluster.signal(owner, "CONT").await;
    // Resumed, the old holder does not serve the session: a level set through it directly
    // reaches the new holder, whose record then says so.
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], cluster.ports[owner - 1]));
    let set = json!({"jsonrpc": "2.0", "id": 9, "method": "logging/setLevel",
        "params": {"level": "error"}});
    let s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let answer = raw_http::exchange(s, addr, "POST", Some(&id), "", &set).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let moved = mcp_examples::wait_until(Duration::from_secs(5), || async {
        cluster.field(&id, "record").await.contains("\"error\"")
    })
    .await;
    assert!(
        moved,
        "the new holder's record has the level set through the old one"
    );
    assert_eq!(cluster.owner(&id).await, holder, "still the new holder's");
    host.call_tool("test_simple_text", Map::new())
        .await
        .expect("the host carries on");
    assert_eq!(renewals.load(Ordering::SeqCst), 0, "no new initialize");
    drop(host);
    cluster.stop().await;
}

#[path = "../../mcp-server/tests/raw_http/mod.rs"]
#[allow(dead_code)]
mod raw_http;

#[tokio::test]
async fn with_redis_down_live_owners_serve_on_and_a_session_to_move_starts_again() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut cluster) = Cluster::start("handover-outage").await else {
        return;
    };
    let url = cluster.url();
    let legacy_renewals = Arc::new(AtomicU64::new(0));
    let legacy = Arc::new(legacy_host(&url, legacy_renewals.clone()).await);
    let id = settle(&cluster, &legacy).await;
    let owner = cluster.owner(&id).await;
    // A second legacy host whose session another replica holds: that one is killed
    // during the outage.
    let (moving, moving_renewals, doomed) = loop {
        let renewals = Arc::new(AtomicU64::new(0));
        let host = legacy_host(&url, renewals.clone()).await;
        host.call_tool("test_simple_text", Map::new())
            .await
            .expect("called");
        let before: Vec<String> = cluster.sessions().await;
        let mine = mcp_examples::wait_until(Duration::from_secs(5), || async {
            cluster.sessions().await.len() >= 2
        })
        .await;
        assert!(mine, "the second session is recorded: {before:?}");
        let other = cluster.sessions().await.into_iter().find(|s| *s != id);
        let other = other.expect("the second session");
        let held_by = cluster.owner(&other).await;
        if held_by != owner {
            break (host, renewals, held_by);
        }
        host.close().await;
    };
    let modern = Arc::new(modern_host(&url).await);

    cluster.redis.kill().await;
    let down = Instant::now();
    // The replica holding the second session goes too (before the load: a call running
    // on a replica killed fails, which is not the outage's doing).
    cluster.kill(doomed).await;
    let stop = Arc::new(AtomicBool::new(false));
    let loads = [
        tokio::spawn(load(legacy.clone(), stop.clone())),
        tokio::spawn(load(modern.clone(), stop.clone())),
    ];
    // The session to move cannot be taken over without the store: 404, and the host
    // starts a new session (a new `initialize`), which serves.
    moving
        .call_tool("test_simple_text", Map::new())
        .await
        .expect("served in a new session");
    assert_eq!(
        moving_renewals.load(Ordering::SeqCst),
        1,
        "initialized again"
    );
    // The replicas say the store is down, and stay ready.
    let port = cluster.ports[owner - 1];
    let said = mcp_examples::wait_until(Duration::from_secs(5), || async {
        let readiness = get(port, "/readyz").await;
        let metrics = get(port, "/metrics").await;
        readiness.starts_with("HTTP/1.1 200")
            && readiness.contains(r#""stateStore":{"reachable":false"#)
            && metrics.contains("mcp_gateway_state_store_up 0")
    })
    .await;
    assert!(
        said,
        "/readyz and /metrics say the store is down: {}",
        get(port, "/readyz").await
    );
    let outage = Duration::from_secs(10).saturating_sub(down.elapsed());
    tokio::time::sleep(outage).await;
    cluster.restart_redis().await;
    let back = Instant::now();
    // The records catch up: the live sessions' records are written again.
    let caught_up = mcp_examples::wait_until(Duration::from_secs(5), || async {
        cluster.sessions().await.contains(&id)
    })
    .await;
    assert!(
        caught_up,
        "the live session's record is back after {:?}",
        back.elapsed()
    );
    stop.store(true, Ordering::SeqCst);
    for l in loads {
        let (ok, failed) = l.await.expect("joined");
        assert!(ok > 100, "calls made under the outage: {ok}");
        assert_eq!(failed, 0, "calls failed during the outage ({ok} succeeded)");
    }
    assert_eq!(
        legacy_renewals.load(Ordering::SeqCst),
        0,
        "the live owner's session stayed"
    );
    cluster.stop().await;
}

#[tokio::test]
async fn rolling_sigterm_of_every_replica_under_load_fails_no_call() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut cluster) = Cluster::start("handover-rolling").await else {
        return;
    };
    let url = cluster.url();
    let renewals = Arc::new(AtomicU64::new(0));
    let legacy = Arc::new(legacy_host(&url, renewals.clone()).await);
    let id = settle(&cluster, &legacy).await;
    let modern = Arc::new(modern_host(&url).await);
    let stop = Arc::new(AtomicBool::new(false));
    let loads = [
        tokio::spawn(load(legacy.clone(), stop.clone())),
        tokio::spawn(load(modern.clone(), stop.clone())),
    ];
    let began = Instant::now();
    for n in 1..=3 {
        cluster.terminate(n).await;
        cluster.start_replica(n).await;
        let back = mcp_examples::wait_until(Duration::from_secs(10), || async {
            cluster.redis.cli(&["SCARD", "e2e:replicas"]).await == ["3"]
                && ready(cluster.ports[n - 1]).await
        })
        .await;
        assert!(back, "replica {n} is back");
    }
    let rolled = began.elapsed();
    // The load lasts a minute, the roll within it.
    tokio::time::sleep(Duration::from_secs(60).saturating_sub(rolled)).await;
    stop.store(true, Ordering::SeqCst);
    for l in loads {
        let (ok, failed) = l.await.expect("joined");
        assert!(ok > 100, "calls made while rolling: {ok}");
        assert_eq!(
            failed, 0,
            "calls failed while rolling ({ok} succeeded, {rolled:?})"
        );
    }
    assert_eq!(
        renewals.load(Ordering::SeqCst),
        0,
        "the legacy session moved, never ended"
    );
    assert_eq!(cluster.session_id().await, id);
    assert!(logs(&legacy).await, "its log level moved with it");
    cluster.stop().await;
}

#[tokio::test]
async fn after_flushall_holders_serve_on_and_a_session_to_move_starts_again() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut cluster) = Cluster::start("handover-flush").await else {
        return;
    };
    let renewals = Arc::new(AtomicU64::new(0));
    let host = legacy_host(&cluster.url(), renewals.clone()).await;
    let id = settle(&cluster, &host).await;
    let owner = cluster.owner(&id).await;
    cluster.redis.cli(&["FLUSHALL"]).await;
    // The registry and the records are gone: the holder, still live, serves on, whichever
    // replica a call lands on, while the replicas announce themselves again (every beat
    // of each, a list that may lack the holder).
    let flushed = Instant::now();
    while flushed.elapsed() < REGISTRY_TTL {
        host.call_tool("test_simple_text", Map::new())
            .await
            .expect("served by its holder");
    }
    assert_eq!(renewals.load(Ordering::SeqCst), 0, "the session stayed");
    // Its holder gone too, nobody can take the session over: 404, and a new session.
    cluster.kill(owner).await;
    host.call_tool("test_simple_text", Map::new())
        .await
        .expect("served in a new session");
    assert_eq!(renewals.load(Ordering::SeqCst), 1, "initialized again");
    cluster.stop().await;
}
