//! Rate limits in real time (`mcp_proxy::limits`): a principal hammering a local limit gets
//! its rate in every second and no more, while another is unaffected; three replicas over
//! one Redis (a server this test starts, as `state_store.rs` does) enforce one bucket
//! between them, without a round trip per refused call; and a store nobody answers lets
//! calls through or refuses them, as the limiter was told.

use std::time::Duration;

use mcp_proxy::limits::{LimitKey, LocalLimiter, Rate};
use tokio::time::Instant;

/// How long the real-time tests hammer.
const SECONDS: u64 = 3;

#[tokio::test]
async fn a_principal_hammering_a_local_limit_gets_its_rate_and_another_is_unaffected() {
    let limiter = LocalLimiter::new();
    let (alice, bob) = (LimitKey::principal("alice"), LimitKey::principal("bob"));
    let slow = Rate::per_second(10.0).burst(1);
    let fast = Rate::per_second(1000.0);
    let mut alice_taken = [0u32; SECONDS as usize];
    let (mut alice_calls, mut bob_calls, mut bob_refused) = (0u64, 0u64, 0u64);
    let start = Instant::now();
    loop {
        let elapsed = start.elapsed();
        let window = elapsed.as_secs() as usize;
        if window >= alice_taken.len() {
            break;
        }
        alice_calls += 1;
        if limiter.take_now(&alice, slow).is_ok() {
            alice_taken[window] += 1;
        }
        // Bob calls at half his rate, paced by the clock: none of his is refused.
        if (bob_calls as f64) < elapsed.as_secs_f64() * 500.0 {
            bob_calls += 1;
            bob_refused += u64::from(limiter.take_now(&bob, fast).is_err());
        }
        tokio::task::yield_now().await;
    }
    eprintln!(
        "alice: {alice_calls} calls, taken per second {alice_taken:?}; bob: {bob_calls} calls"
    );
    assert!(alice_calls > 10_000, "a tight loop: {alice_calls} calls");
    for (second, taken) in alice_taken.iter().enumerate() {
        assert!(
            (9..=11).contains(taken),
            "second {second}: {taken} taken at 10 a second ({alice_taken:?})"
        );
    }
    assert!(bob_calls >= 1000, "{bob_calls}");
    assert_eq!(bob_refused, 0, "alice's flood leaves bob's bucket alone");
}

#[cfg(feature = "redis")]
#[path = "../../examples/tests/common/redis.rs"]
#[allow(dead_code)]
mod server;

#[cfg(feature = "redis")]
mod shared {
    use std::sync::Arc;

    use mcp_proxy::limits::{LimitError, Limiter, SharedLimiter, StoreDown};
    use mcp_proxy::store::{RedisStore, RedisStoreOptions, StateStore, StoreError};

    use super::server::{redis_server, scratch, Redis};
    use super::*;

    /// The calls of `commands` (e.g. `evalsha`) Redis has served, from `INFO commandstats`.
    async fn served(redis: &Redis, commands: &[&str]) -> u64 {
        let info = redis.cli(&["INFO", "commandstats"]).await;
        info.iter()
            .filter_map(|line| {
                let (name, stats) = line.split_once(':')?;
                let name = name.strip_prefix("cmdstat_")?;
                commands.contains(&name).then_some(())?;
                let calls = stats.split(',').find_map(|s| s.strip_prefix("calls="))?;
                calls.parse::<u64>().ok()
            })
            .sum()
    }

    #[tokio::test]
    async fn three_replicas_over_one_redis_enforce_one_bucket() {
        let Some(program) = redis_server() else {
            return;
        };
        let dir = scratch("rate-limits");
        let redis = Redis::start(&program, &dir, None).await;
        // Three stores, three connections: three replicas.
        let replicas: Vec<SharedLimiter> = (0..3)
            .map(|_| {
                let store = RedisStore::new(RedisStoreOptions::new(redis.url(None), "rl"))
                    .expect("a store");
                SharedLimiter::new(Arc::new(store), StoreDown::Closed)
            })
            .collect();
        let key = LimitKey::principal("alice");
        let rate = Rate::per_second(10.0).burst(5);
        let before = served(&redis, &["evalsha", "eval"]).await;
        let mut taken = [0u32; SECONDS as usize];
        let mut calls = 0u64;
        let start = Instant::now();
        loop {
            let window = start.elapsed().as_secs() as usize;
            if window >= taken.len() {
                break;
            }
            let replica = &replicas[(calls % 3) as usize];
            calls += 1;
            match replica.take(&key, rate).await {
                Ok(()) => taken[window] += 1,
                Err(LimitError::Limited(_)) => {}
                Err(other) => panic!("{other}"),
            }
            tokio::task::yield_now().await;
        }
        let asked = served(&redis, &["evalsha", "eval"]).await - before;
        let total: u32 = taken.iter().sum();
        eprintln!("{calls} calls over 3 replicas: taken per second {taken:?} ({total}); Redis asked {asked} times");
        // The burst of 5 at once, then one every 100 ms: 34 in 3 s (one bucket, not three).
        assert!((32..=38).contains(&total), "{total} taken ({taken:?})");
        assert!(calls > 3_000, "a tight loop: {calls} calls");
        // Each replica asks about once per token, and once per call it lets through.
        assert!(
            asked < 250,
            "{asked} scripts run for {calls} calls: refused keys are refused locally"
        );
        redis.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_store_nobody_answers_lets_calls_through_or_refuses_them() {
        // A loopback port just free: nothing listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let store = || -> Arc<dyn StateStore> {
            let options = RedisStoreOptions::new(format!("redis://127.0.0.1:{port}"), "rl")
                .timeout(Duration::from_millis(500));
            Arc::new(RedisStore::new(options).expect("a store"))
        };
        let open = SharedLimiter::new(store(), StoreDown::Open);
        let closed = SharedLimiter::new(store(), StoreDown::Closed);
        let key = LimitKey::upstream("docs");
        let rate = Rate::per_second(1.0).burst(1);
        // The first call of each waits for the store (its timeout at most); the rest do
        // not, and are decided as each limiter was told.
        let started = Instant::now();
        match closed.take(&key, rate).await {
            Err(LimitError::StoreUnavailable { key: k, error }) => {
                assert_eq!(k, key);
                assert!(matches!(error, StoreError::Unavailable(_)), "{error:?}");
            }
            other => panic!("closed: expected a refusal, got {other:?}"),
        }
        let waited = started.elapsed();
        let started = Instant::now();
        for _ in 0..50 {
            assert!(
                open.take(&key, rate).await.is_ok(),
                "open: let through, past the limit too"
            );
            let r = closed.take(&key, rate).await;
            assert!(
                matches!(r, Err(LimitError::StoreUnavailable { .. })),
                "closed: refused, under the limit too: {r:?}"
            );
        }
        let rest = started.elapsed();
        eprintln!("closed's first call waited {waited:?}; open's first and 99 more took {rest:?}");
        assert!(waited < Duration::from_secs(3), "{waited:?}");
        assert!(
            rest < Duration::from_secs(3),
            "one call of each limiter waits, not every one: {rest:?}"
        );
    }
}
