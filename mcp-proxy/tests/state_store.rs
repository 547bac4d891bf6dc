//! The state store's contract (`mcp_proxy::store::StateStore`), one suite run against the
//! in-memory store and, with feature `redis`, against a real Redis server this test starts
//! on a unix socket of its own (`redis-server` from Debian's package; with
//! `MCP_INTEROP=required` a missing one fails the test). Redis alone: a record that does not
//! read is ignored, every key expires, a paused or stopped server is a timely
//! `Unavailable` and a restarted one serves again, and wrong credentials are refused
//! without the secret being said. Both keep token buckets for rate limits.

use std::sync::Arc;
use std::time::Duration;

use mcp_proxy::store::{
    MemoryStore, ReplicaEntry, SessionState, StateStore, StoreError, TokenRate, TokenTaken,
};
use mcp_server::seal::ReplicaId;

fn entry(n: u16) -> ReplicaEntry {
    ReplicaEntry::new(ReplicaId(n), format!("http://10.0.0.{n}:8080"), "digest")
}

/// Every store keeps this contract.
async fn contract(store: Arc<dyn StateStore>) {
    let long = Duration::from_secs(60);
    // The registry: announced, left, lapsed.
    store.announce(&entry(2), long).await.expect("announce");
    store.announce(&entry(1), long).await.expect("announce");
    let live: Vec<u16> = store
        .replicas()
        .await
        .expect("replicas")
        .iter()
        .map(|e| e.replica.0)
        .collect();
    assert_eq!(live, [1, 2]);
    assert_eq!(store.replicas().await.expect("replicas")[0], entry(1));
    store.leave(ReplicaId(2)).await.expect("leave");
    store
        .announce(&entry(3), Duration::from_millis(200))
        .await
        .expect("announce");
    let lapsed = mcp_examples::wait_until(Duration::from_secs(5), || async {
        let live = store.replicas().await.expect("replicas");
        live.iter().map(|e| e.replica.0).collect::<Vec<_>>() == [1]
    })
    .await;
    assert!(
        lapsed,
        "a replica that left or stopped announcing is not live"
    );

    // Sessions: kept as written, claimed once per epoch, removed, lapsed.
    let mut s = SessionState::new(
        "sid-1",
        ReplicaId(1),
        "2025-06-18",
        r#"{"roots":{}}"#,
        r#"{"name":"h","version":"1"}"#,
    );
    s.log_level = Some("debug".into());
    s.subscriptions = vec!["file:///a".into()];
    s.upstream_sessions
        .insert("docs".into(), "up-session-9".into());
    assert!(store.put_session(&s, long).await.expect("put"), "written");
    assert_eq!(
        store.session("sid-1").await.expect("get").as_ref(),
        Some(&s)
    );
    assert_eq!(store.session("nobody").await.expect("get"), None);
    assert_eq!(
        store
            .claim_session("sid-1", 7, ReplicaId(2), long)
            .await
            .expect("claim"),
        None,
        "a stale epoch"
    );
    let claimed = store
        .claim_session("sid-1", 0, ReplicaId(2), long)
        .await
        .expect("claim")
        .expect("won");
    assert_eq!((claimed.owner, claimed.epoch), (ReplicaId(2), 1));
    assert_eq!(claimed.subscriptions, s.subscriptions);
    assert_eq!(
        store
            .claim_session("sid-1", 0, ReplicaId(3), long)
            .await
            .expect("claim"),
        None
    );
    assert_eq!(
        store.session("sid-1").await.expect("get").map(|s| s.owner),
        Some(ReplicaId(2))
    );
    // The replica it was taken from writes and removes it no more; its holder does.
    assert!(
        !store.put_session(&s, long).await.expect("put"),
        "the old holder's record is not written over the new holder's"
    );
    store
        .remove_session("sid-1", ReplicaId(1))
        .await
        .expect("remove");
    let mut held = claimed.clone();
    held.log_level = Some("error".into());
    assert!(store.put_session(&held, long).await.expect("put"));
    assert_eq!(store.session("sid-1").await.expect("get"), Some(held));
    // Two replicas racing for one session: exactly one wins.
    let races: Vec<_> = (10..20u16)
        .map(|n| {
            let store = store.clone();
            tokio::spawn(async move { store.claim_session("sid-1", 1, ReplicaId(n), long).await })
        })
        .collect();
    let mut winners = Vec::new();
    for r in races {
        winners.extend(r.await.expect("joined").expect("claim").map(|s| s.owner));
    }
    assert_eq!(winners.len(), 1, "exactly one claim wins");
    store
        .remove_session("sid-1", ReplicaId(2))
        .await
        .expect("remove");
    assert!(
        store.session("sid-1").await.expect("get").is_some(),
        "removed only by its holder"
    );
    store
        .remove_session("sid-1", winners[0])
        .await
        .expect("remove");
    assert_eq!(store.session("sid-1").await.expect("get"), None);
    assert_eq!(
        store
            .claim_session("sid-1", 2, ReplicaId(4), long)
            .await
            .expect("claim"),
        None
    );
    let mut brief = SessionState::new("sid-2", ReplicaId(1), "2025-06-18", "{}", "{}");
    brief.epoch = 3;
    store
        .put_session(&brief, Duration::from_millis(200))
        .await
        .expect("put");
    let lapsed = mcp_examples::wait_until(Duration::from_secs(5), || async {
        store.session("sid-2").await.expect("get").is_none()
    })
    .await;
    assert!(lapsed, "a session not renewed lapses");

    // Values: kept, taken once, put once of two racing, forgotten, lapsing.
    store
        .put_value("grant:a", "sealed-a", None)
        .await
        .expect("put");
    assert_eq!(
        store.value("grant:a").await.expect("get").as_deref(),
        Some("sealed-a")
    );
    assert_eq!(
        store.take_value("grant:a").await.expect("take").as_deref(),
        Some("sealed-a")
    );
    assert_eq!(store.take_value("grant:a").await.expect("take again"), None);
    let (first, second) = tokio::join!(
        store.put_value_once("used:n1", "1", long),
        store.put_value_once("used:n1", "1", long)
    );
    assert!(
        first.expect("once") ^ second.expect("once"),
        "exactly one wins"
    );
    store
        .put_value("grant:b", "sealed-b", None)
        .await
        .expect("put");
    assert!(store.remove_value("grant:b").await.expect("remove"));
    assert!(!store.remove_value("grant:b").await.expect("remove again"));
    store
        .put_value("flow:s1", "f", Some(Duration::from_millis(200)))
        .await
        .expect("put");
    let lapsed = mcp_examples::wait_until(Duration::from_secs(5), || async {
        store.value("flow:s1").await.expect("get").is_none()
    })
    .await;
    assert!(lapsed, "a value with a ttl lapses");
}

/// Every store keeps token buckets this way.
async fn buckets(store: Arc<dyn StateStore>) {
    let rate = TokenRate::new(5.0, 3);
    // A burst of 3, then refused: a token's worth (200 ms) from the first take at most.
    let started = tokio::time::Instant::now();
    for left in [2, 1, 0] {
        let t = store.take_token("p:alice", rate).await.expect("take");
        assert_eq!(t, TokenTaken::taken(left));
    }
    let refused = store.take_token("p:alice", rate).await.expect("take");
    assert!(!refused.taken, "{refused:?}");
    assert_eq!(refused.remaining, 0);
    let wait = refused.retry_after;
    let upper = Duration::from_millis(200);
    let lower = upper.saturating_sub(started.elapsed() + Duration::from_millis(5));
    assert!(wait <= upper && wait >= lower, "{wait:?}");
    // Another key is another bucket.
    assert_eq!(
        store.take_token("p:bob", rate).await.expect("take"),
        TokenTaken::taken(2)
    );
    // A refusal took nothing: after the wait it is taken, and the bucket is empty again.
    tokio::time::sleep(wait).await;
    let t = store.take_token("p:alice", rate).await.expect("take");
    assert!(t.taken, "taken after the wait it was told: {t:?}");
    assert_eq!(t.retry_after, Duration::ZERO);
    let again = store.take_token("p:alice", rate).await.expect("take");
    assert!(!again.taken && again.retry_after <= upper, "{again:?}");
    // Fractions of a token a second.
    let slow = TokenRate::new(0.5, 1);
    assert!(store.take_token("p:slow", slow).await.expect("take").taken);
    let refused = store.take_token("p:slow", slow).await.expect("take");
    assert!(
        !refused.taken && refused.retry_after > Duration::from_millis(1500),
        "{refused:?}"
    );
    // A rate that is not one is refused, not kept.
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let r = store.take_token("p:bad", TokenRate::new(bad, 1)).await;
        assert!(matches!(r, Err(StoreError::Refused(_))), "{bad}: {r:?}");
    }
    // Replicas racing for the last tokens: exactly the burst is taken.
    let races: Vec<_> = (0..20)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .take_token("p:race", TokenRate::new(0.01, 4))
                    .await
                    .expect("take")
                    .taken
            })
        })
        .collect();
    let mut taken = 0;
    for r in races {
        taken += usize::from(r.await.expect("joined"));
    }
    assert_eq!(taken, 4, "the burst, and no more");
    // A token given back is there to take again; given to a full bucket, it is lost.
    let rate = TokenRate::new(0.01, 2);
    assert!(store.take_token("p:give", rate).await.expect("take").taken);
    assert!(store.take_token("p:give", rate).await.expect("take").taken);
    assert!(!store.take_token("p:give", rate).await.expect("take").taken);
    store.give_token("p:give", rate).await.expect("give");
    assert_eq!(
        store.take_token("p:give", rate).await.expect("take"),
        TokenTaken::taken(0)
    );
    assert!(!store.take_token("p:give", rate).await.expect("take").taken);
    store.give_token("p:full", rate).await.expect("give");
    store.give_token("p:full", rate).await.expect("give");
    for left in [1, 0] {
        let t = store.take_token("p:full", rate).await.expect("take");
        assert_eq!(t, TokenTaken::taken(left));
    }
    assert!(!store.take_token("p:full", rate).await.expect("take").taken);
}

#[tokio::test]
async fn the_memory_store_keeps_the_contract() {
    contract(Arc::new(MemoryStore::new())).await;
}

#[tokio::test]
async fn the_memory_store_keeps_token_buckets() {
    buckets(Arc::new(MemoryStore::new())).await;
}

#[cfg(feature = "redis")]
#[path = "../../examples/tests/common/redis.rs"]
#[allow(dead_code)]
mod server;

#[cfg(feature = "redis")]
mod redis_store {
    use super::server::{redis_server, scratch, Redis};
    use super::*;
    use mcp_proxy::store::{RedisStore, RedisStoreOptions};

    #[tokio::test]
    async fn the_redis_store_keeps_the_contract_and_lets_every_key_expire() {
        let Some(program) = redis_server() else {
            return;
        };
        let dir = scratch("contract");
        let redis = Redis::start(&program, &dir, None).await;
        let options = RedisStoreOptions::new(redis.url(None), "test");
        let store = Arc::new(RedisStore::new(options).expect("a store"));
        store.check().await.expect("reachable");
        contract(store.clone()).await;
        buckets(store.clone()).await;

        // A bucket's key expires when the bucket would be full again (here 1 token a
        // minute: in at most a minute).
        store
            .take_token("p:minute", TokenRate::new(1.0 / 60.0, 1))
            .await
            .expect("take");
        let ttl = redis.cli(&["PTTL", "test:rate:p:minute"]).await;
        let ttl: i64 = ttl.first().and_then(|t| t.parse().ok()).expect("a number");
        assert!(ttl > 55_000 && ttl <= 60_000, "{ttl}");

        // Every key the store wrote expires.
        store
            .announce(&entry(5), Duration::from_secs(60))
            .await
            .expect("announce");
        let s = SessionState::new("sid-9", ReplicaId(5), "2025-06-18", "{}", "{}");
        store
            .put_session(&s, Duration::from_secs(60))
            .await
            .expect("put");
        let keys = redis.cli(&["KEYS", "test:*"]).await;
        assert!(keys.len() >= 3, "{keys:?}");
        for k in &keys {
            let ttl = redis.cli(&["PTTL", k]).await;
            let ttl: i64 = ttl.first().and_then(|t| t.parse().ok()).expect("a number");
            // -2: gone since listed (a token bucket full again expires within a second).
            assert!(ttl > 0 || ttl == -2, "{k} has no expiry ({ttl})");
        }
        // A record that does not read is taken as none.
        redis
            .cli(&["HSET", "test:session:sid-9", "record", "{not json"])
            .await;
        assert_eq!(store.session("sid-9").await.expect("get"), None);
        redis.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_paused_or_stopped_redis_is_a_timely_unavailable_and_a_restarted_one_serves() {
        let Some(program) = redis_server() else {
            return;
        };
        let dir = scratch("outage");
        let redis = Redis::start(&program, &dir, None).await;
        let url = redis.url(None);
        let timeout = Duration::from_millis(500);
        let store = RedisStore::new(RedisStoreOptions::new(url.clone(), "o").timeout(timeout))
            .expect("store");
        store
            .announce(&entry(1), Duration::from_secs(60))
            .await
            .expect("announce");
        // CLIENT PAUSE: the command's timeout holds.
        redis.cli(&["CLIENT", "PAUSE", "3000"]).await;
        let started = tokio::time::Instant::now();
        let paused = store.replicas().await;
        assert!(
            matches!(paused, Err(StoreError::Unavailable(_))),
            "{paused:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        redis.cli(&["CLIENT", "UNPAUSE"]).await;
        // Stopped: unavailable, in time; started again on the same socket: served.
        redis.stop().await;
        let started = tokio::time::Instant::now();
        let down = store.replicas().await;
        assert!(matches!(down, Err(StoreError::Unavailable(_))), "{down:?}");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        let again = Redis::start(&program, &dir, None).await;
        let back = mcp_examples::wait_until(Duration::from_secs(10), || async {
            store
                .announce(&entry(2), Duration::from_secs(60))
                .await
                .is_ok()
        })
        .await;
        assert!(back, "the store serves once Redis is back");
        let live: Vec<u16> = store
            .replicas()
            .await
            .expect("replicas")
            .iter()
            .map(|e| e.replica.0)
            .collect();
        assert_eq!(
            live,
            [2],
            "a restarted Redis without persistence starts empty"
        );
        again.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn wrong_credentials_are_refused_without_the_secret_said() {
        let Some(program) = redis_server() else {
            return;
        };
        let dir = scratch("auth");
        let redis = Redis::start(&program, &dir, Some("the-right-password")).await;
        let wrong = RedisStore::new(RedisStoreOptions::new(
            redis.url(Some("a-wrong-password")),
            "a",
        ))
        .expect("store");
        let refused = wrong.check().await;
        match &refused {
            Err(e @ StoreError::Refused(_)) => {
                let said = format!("{e} {e:?}");
                assert!(
                    !said.contains("a-wrong-password") && !said.contains("the-right-password"),
                    "{said}"
                );
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        let right = RedisStore::new(RedisStoreOptions::new(
            redis.url(Some("the-right-password")),
            "a",
        ))
        .expect("store");
        right.check().await.expect("the right password is taken");
        redis.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    }
}
