//! What sharing sessions costs in Redis, end to end (three gateway processes, a real Redis
//! and a real HAProxy, as in `handover.rs`): Redis's own command counts (`INFO
//! commandstats`) after 1,000 calls of a 2026 host show no session command at all, and
//! after a legacy host opened its session and made 1,000 calls, at most 10 (0.01 a call):
//! nothing on a call's path asks the store. The heartbeats' commands (`SET`, `SADD`,
//! `SMEMBERS`, `MGET`, ...) are the registry's, counted apart. A session's record is at
//! most 2 KiB, its id at most 96 characters.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use serde_json::Map;

mod common;
use common::cluster::Cluster;
use common::hosts::{legacy_host, modern_host, settle};

/// The commands a session's record costs: the scripts that write, claim and remove one,
/// and its reads.
const SESSION_COMMANDS: [&str; 4] = ["evalsha", "eval", "hgetall", "del"];

/// Redis's count of each command since its stats were last reset.
async fn counts(cluster: &Cluster) -> HashMap<String, u64> {
    let lines = cluster.redis.cli(&["INFO", "commandstats"]).await;
    lines
        .iter()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest.strip_prefix("calls=")?.split(',').next()?;
            Some((name.to_owned(), calls.parse().ok()?))
        })
        .collect()
}

/// How many session commands Redis ran since its stats were reset.
async fn session_commands(cluster: &Cluster) -> u64 {
    let counts = counts(cluster).await;
    SESSION_COMMANDS
        .iter()
        .map(|c| counts.get(*c).copied().unwrap_or(0))
        .sum()
}

#[tokio::test]
async fn a_call_costs_redis_nothing_and_a_legacy_session_a_few_commands() {
    let Some(cluster) = Cluster::start("handover-cost").await else {
        return;
    };
    let url = cluster.url();
    let modern = modern_host(&url).await;
    cluster.redis.cli(&["CONFIG", "RESETSTAT"]).await;
    for _ in 0..1000 {
        modern
            .call_tool("test_simple_text", Map::new())
            .await
            .expect("called");
    }
    let heartbeats: u64 = counts(&cluster).await.values().sum();
    assert!(heartbeats > 0, "the registry's heartbeats are counted");
    assert_eq!(
        session_commands(&cluster).await,
        0,
        "session commands for 1,000 calls of a 2026 host"
    );

    cluster.redis.cli(&["CONFIG", "RESETSTAT"]).await;
    let legacy = legacy_host(&url, Arc::new(AtomicU64::new(0))).await;
    let id = settle(&cluster, &legacy).await;
    for _ in 0..1000 {
        legacy
            .call_tool("test_simple_text", Map::new())
            .await
            .expect("called");
    }
    let spent = session_commands(&cluster).await;
    assert!(
        spent <= 10,
        "{spent} session commands for a legacy session and its 1,000 calls"
    );
    assert!(id.len() <= 96, "a session id of {} characters", id.len());
    let key = format!("e2e:session:{id}");
    let fields = ["owner", "epoch", "record"];
    let mut size = 0;
    for f in fields {
        let len = cluster.redis.cli(&["HSTRLEN", &key, f]).await;
        size += len
            .first()
            .and_then(|l| l.parse::<usize>().ok())
            .expect("a length");
    }
    assert!(size <= 2048, "a session record of {size} bytes");
    eprintln!("a legacy session and 1,000 calls: {spent} session commands; record {size} bytes, id {} characters", id.len());
    cluster.stop().await;
}
