//! Rate limits end to end (`gateway.rateLimits`), against the gateway binary over HTTP
//! with API keys, an echo server as its one stdio upstream (tools `echo__*`):
//!
//! 1. a principal at 10 calls a second (burst 1) hammering the gateway for 10 s is let
//!    through 10 ± 1 times in every second, whichever era it calls in, while another
//!    principal calling at its own pace alongside is never refused;
//! 2. a refusal tells the truth: `-32029` with `data` naming the limit, the key and the
//!    wait (`retryAfterMs`), after which a call goes; over HTTP a request answered alone
//!    gets `429` with `Retry-After` in whole seconds (a raw 2026-07-28 POST shows it; a
//!    legacy session's POST too, as our client sees it); the same through the dispatcher
//!    surface's `call_tool`;
//! 3. `/metrics` counts refusals by scope (`mcp_gateway_rate_limited_total`);
//! 4. three replicas sharing one Redis (`gateway.cluster.redis`) enforce one bucket: one
//!    principal spread round-robin over them gets the rate once, not three times; and with
//!    Redis stopped, `whenStoreDown: open` lets calls through while `closed` refuses them.
//!
//! The tests take turns (one lock): the 10-second measurement must not share two cores
//! with another gateway's start.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_client::EraChoice;
use serde_json::{json, Value};

#[path = "../common/mod.rs"]
mod common;
mod harness;
mod replicas;
use common::cluster::{free_ports, get};
use common::redis::{redis_server, scratch, Redis};
use harness::*;

/// Test 1. Alice (10 a second, burst 1) hammers for 10 s with two hosts at once, a
/// 2026-07-28 one and a legacy session, each a tight loop of sequential calls on a task of
/// its own: two loops keep a call of hers always arriving (one is in flight while the
/// other's answer travels), so each token is taken within a call's round trip of its
/// coming, and both eras' refusals come from the one bucket; more loops would only burn
/// the two cores. A call that went is counted in the second it was sent (it was admitted
/// within its round trip, about a millisecond here). Bob calls alongside at 5 a
/// second (200 ms after each answer, so his calls are at least 200 ms apart in the
/// gateway however the flood delays them), alternating a legacy session and a 2026 host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principal_gets_ten_calls_in_every_second_and_another_is_unaffected() {
    let _turn = SERIAL.lock().await;
    let dir = scratch("limits-rate");
    let limits = json!({"rateLimits": {"principal": {"perSecond": 10, "burst": 1}}});
    let gw = gateway(&config(&dir, "rate", limits), "127.0.0.1:0", &dir).await;
    let alice_modern = Arc::new(host(&gw.url, ALICE, EraChoice::Modern).await);
    let alice_legacy = Arc::new(host(&gw.url, ALICE, legacy()).await);
    let bob_legacy = Arc::new(host(&gw.url, BOB, legacy()).await);
    let bob_modern = Arc::new(host(&gw.url, BOB, EraChoice::Modern).await);

    let t0 = Instant::now();
    let end = t0 + Duration::from_secs(10);
    let modern = tokio::spawn(hammer(alice_modern.clone(), t0, end));
    let legacy_loop = tokio::spawn(hammer(alice_legacy.clone(), t0, end));
    let bobs = [bob_legacy.clone(), bob_modern.clone()];
    let bob = tokio::spawn(paced(bobs, end, Duration::from_millis(200)));
    let (m_went, m_refused, m_failed) = modern.await.expect("alice's 2026 host");
    let (l_went, l_refused, l_failed) = legacy_loop.await.expect("alice's legacy host");
    let (b_went, b_refused, b_failed) = bob.await.expect("bob");

    assert!(
        m_failed.is_empty() && l_failed.is_empty(),
        "{m_failed:?} {l_failed:?}"
    );
    let mut windows = [0u32; 10];
    for t in m_went.iter().chain(&l_went) {
        if let Some(w) = windows.get_mut(t.as_secs() as usize) {
            *w += 1;
        }
    }
    let total: u32 = windows.iter().sum();
    eprintln!(
        "alice: {} went ({} as 2026-07-28, {} legacy), {} refused ({} + {}); per second: {windows:?}",
        total,
        m_went.len(),
        l_went.len(),
        m_refused + l_refused,
        m_refused,
        l_refused
    );
    eprintln!(
        "bob: {b_went} went in 10 s ({:.2} a second), {} refused, {} failed",
        f64::from(b_went) / 10.0,
        b_refused.len(),
        b_failed.len()
    );
    assert!(
        m_went.len() > 5 && l_went.len() > 5,
        "both eras got through: {} and {}",
        m_went.len(),
        l_went.len()
    );
    for (second, n) in windows.iter().enumerate() {
        assert!(
            (9..=11).contains(n),
            "second {second}: {n} calls went: {windows:?}"
        );
    }
    assert!(b_refused.is_empty(), "bob was refused: {b_refused:?}");
    assert!(b_failed.is_empty(), "bob's calls failed: {b_failed:?}");
    // 200 ms after each answer: 50 calls in 10 s, less a little for the answers' time.
    assert!(
        (45..=50).contains(&b_went),
        "bob's rate: {b_went} calls in 10 s"
    );

    let refused = m_refused + l_refused;
    let metrics = get(gw.admin, "/metrics").await;
    let counted = metric(
        &metrics,
        "mcp_gateway_rate_limited_total{scope=\"principal\"}",
    );
    eprintln!("metrics: mcp_gateway_rate_limited_total{{scope=\"principal\"}} {counted:?}");
    assert_eq!(counted, Some(refused), "every refusal counted");
    for h in [alice_modern, alice_legacy, bob_legacy, bob_modern] {
        h.close().await;
    }
    drop(gw);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Test 2. Alice's legacy session (2 a second, burst 1): a refusal is `-32029` with the
/// message and `data` the configuration implies, its POST answered with `429`; asking
/// again halfway is refused with the wait less by the time that passed; waiting exactly
/// `retryAfterMs` then calling goes, every time. Carol's raw 2026-07-28 POSTs get `429`
/// with `Retry-After` the wait in whole seconds, rounded up: `1` for her principal's
/// limit, `3` for a tool at 20 a minute.
#[tokio::test]
async fn a_refusal_says_when_to_retry_and_it_is_true() {
    let _turn = SERIAL.lock().await;
    let dir = scratch("limits-retry");
    let limits = json!({"rateLimits": {
        "principal": {"perSecond": 2, "burst": 1},
        "tools": {"echo__weather": {"perMinute": 20, "burst": 1}}}});
    let gw = gateway(&config(&dir, "retry", limits), "127.0.0.1:0", &dir).await;
    let alice = host(&gw.url, ALICE, legacy()).await;

    assert!(matches!(echo(&alice).await, Called::Ok));
    let Called::Limited(first) = echo(&alice).await else {
        panic!("the second call at once is refused");
    };
    let seen_first = Instant::now();
    let r1 = retry_ms(&first);
    assert!((1..=500).contains(&r1), "{first:?}");
    let (data, status) = server_data(&first);
    assert_eq!(
        data,
        json!({"limit": "principal", "key": "key:alice", "perSecond": 2, "burst": 1,
               "retryAfterMs": r1})
    );
    assert_eq!(
        first.message,
        format!(
            "Rate limited: rate limit of 2 calls per second for principal key:alice reached; retry in {} s",
            seconds(r1)
        )
    );
    assert_eq!(status, Some(429), "the legacy POST was answered with 429");

    // Halfway: refused still, and the wait is what is left of it.
    tokio::time::sleep(Duration::from_millis(r1 / 2)).await;
    let Called::Limited(second) = echo(&alice).await else {
        panic!("a call before the time said is refused");
    };
    let passed = seen_first.elapsed().as_millis() as i64;
    let r2 = retry_ms(&second);
    let told = r1 as i64 - r2 as i64;
    eprintln!("told {r1} ms, then {r2} ms after {passed} ms");
    assert!(
        (told - passed).abs() <= 50,
        "the second wait ({r2} ms) is the first ({r1} ms) less the {passed} ms that passed"
    );

    // Waiting exactly what it says, then calling, goes: every time.
    tokio::time::sleep(Duration::from_millis(r2)).await;
    assert!(matches!(echo(&alice).await, Called::Ok), "after {r2} ms");
    let mut legacy_refusals = 2;
    for round in 0..3 {
        let Called::Limited(e) = echo(&alice).await else {
            panic!("round {round}: refused at once");
        };
        legacy_refusals += 1;
        let wait = retry_ms(&e);
        assert!((1..=500).contains(&wait), "{e:?}");
        tokio::time::sleep(Duration::from_millis(wait)).await;
        let after = echo(&alice).await;
        assert!(
            matches!(after, Called::Ok),
            "round {round}: after {wait} ms: {after:?}"
        );
    }

    // Carol, by hand, in 2026-07-28: 200, then 429 with Retry-After.
    let ok = post_2026(gw.port, CAROL, 1, "echo__echo", json!({"text": "a"})).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.body["result"]["content"][0]["text"], "a");
    let refused = post_2026(gw.port, CAROL, 2, "echo__echo", json!({"text": "b"})).await;
    assert_eq!(refused.status, 429, "{}\n{}", refused.head, refused.body);
    assert_eq!(refused.header("Retry-After"), Some("1"), "{}", refused.head);
    assert!(
        refused
            .header("Content-Type")
            .is_some_and(|t| t.starts_with("application/json")),
        "{}",
        refused.head
    );
    assert_eq!(refused.body["id"], 2);
    assert_eq!(refused.body["error"]["code"], -32029, "{}", refused.body);
    let wait = refused.body["error"]["data"]["retryAfterMs"]
        .as_u64()
        .expect("retryAfterMs");
    assert_eq!(
        refused.body["error"]["data"],
        json!({"limit": "principal", "key": "key:carol", "perSecond": 2, "burst": 1,
               "retryAfterMs": wait})
    );
    tokio::time::sleep(Duration::from_millis(wait)).await;
    let weather = json!({"city": "Paris"});
    let ok = post_2026(gw.port, CAROL, 3, "echo__weather", weather.clone()).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    // Her principal's token comes back in 500 ms; the tool's, in 3 s.
    tokio::time::sleep(Duration::from_millis(510)).await;
    let tool = post_2026(gw.port, CAROL, 4, "echo__weather", weather).await;
    assert_eq!(tool.status, 429, "{}\n{}", tool.head, tool.body);
    let data = &tool.body["error"]["data"];
    let wait = data["retryAfterMs"].as_u64().expect("retryAfterMs");
    eprintln!("tool refusal: {}\n{}", tool.head, tool.body);
    assert_eq!(data["limit"], "tool", "{data}");
    assert_eq!(data["key"], "echo__weather", "{data}");
    assert_eq!(data["burst"], 1, "{data}");
    let per_second = data["perSecond"].as_f64().expect("perSecond");
    assert!((per_second - 20.0 / 60.0).abs() < 1e-9, "{data}");
    assert!((2000..=3000).contains(&wait), "{data}");
    assert_eq!(
        tool.header("Retry-After"),
        Some(wait.div_ceil(1000).to_string().as_str()),
        "whole seconds, rounded up: {}",
        tool.head
    );

    let metrics = get(gw.admin, "/metrics").await;
    let principal = metric(
        &metrics,
        "mcp_gateway_rate_limited_total{scope=\"principal\"}",
    );
    let tools = metric(&metrics, "mcp_gateway_rate_limited_total{scope=\"tool\"}");
    assert_eq!(principal, Some(legacy_refusals + 1), "{metrics}");
    assert_eq!(tools, Some(1), "{metrics}");
    alice.close().await;
    drop(gw);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Test 3. `/metrics` counts each refusal once, under its scope: nothing before the
/// first; then exactly the principal refusals a flood got, the tool refusals of a tool at
/// 2 an hour (whose `data` says so in calls a second), and the refusal of an upstream at
/// 60 a minute.
#[tokio::test]
async fn metrics_count_refusals_by_scope() {
    let _turn = SERIAL.lock().await;
    let dir = scratch("limits-metrics");
    let limits = json!({"rateLimits": {
        "principal": {"perSecond": 10, "burst": 1},
        "upstreams": {"slow": {"perMinute": 60, "burst": 1}},
        "tools": {"echo__weather": {"perHour": 2}}},
        "mcpServers": ["slow"]});
    let gw = gateway(&config(&dir, "metrics", limits), "127.0.0.1:0", &dir).await;
    let before = get(gw.admin, "/metrics").await;
    assert!(before.starts_with("HTTP/1.1 200"), "{before}");
    let principal_line = "mcp_gateway_rate_limited_total{scope=\"principal\"}";
    let tool_line = "mcp_gateway_rate_limited_total{scope=\"tool\"}";
    assert_eq!(metric(&before, principal_line).unwrap_or(0), 0, "{before}");

    let bob = host(&gw.url, BOB, EraChoice::Modern).await;
    let (mut went, mut refused) = (0, 0);
    for _ in 0..30 {
        match echo(&bob).await {
            Called::Ok => went += 1,
            Called::Limited(e) => {
                assert_eq!(
                    e.data.as_ref().map(|d| &d["limit"]),
                    Some(&json!("principal"))
                );
                refused += 1;
            }
            Called::Failed(e) => panic!("{e}"),
        }
    }
    eprintln!("30 calls at once: {went} went, {refused} refused");
    assert!(went >= 1 && refused >= 20, "{went} went, {refused} refused");

    // The tool's bucket: 2 an hour, a burst of 2. Each call 150 ms after the last, so
    // that the principal's own limit (10 a second) has a token for it.
    let mut tool_refusals = Vec::new();
    for n in 0..4 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        match call(&bob, "echo__weather", json!({"city": "Oslo"})).await {
            Called::Ok => assert!(n < 2, "call {n} went"),
            Called::Limited(e) => {
                assert!(n >= 2, "call {n} refused: {e:?}");
                tool_refusals.push(e);
            }
            Called::Failed(e) => panic!("{e}"),
        }
    }
    let e = &tool_refusals[0];
    let (data, status) = server_data(e);
    assert_eq!(status, Some(429));
    assert_eq!(data["limit"], "tool");
    assert_eq!(data["key"], "echo__weather");
    assert_eq!(data["burst"], 2);
    assert!(
        (data["perSecond"].as_f64().unwrap_or(0.0) - 2.0 / 3600.0).abs() < 1e-12,
        "{data}"
    );
    // Half an hour for the next token, less the ~0.3 s since the first call took one.
    let wait = data["retryAfterMs"].as_u64().unwrap_or(0);
    assert!((1_795_000..=1_800_000).contains(&wait), "{data}");

    // The upstream's bucket: 1 a second, burst 1, all its tools together.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let first = call(&bob, "slow__echo", json!({"text": "a"})).await;
    assert!(matches!(first, Called::Ok), "{first:?}");
    tokio::time::sleep(Duration::from_millis(150)).await;
    let Called::Limited(e) = call(&bob, "slow__pixel", json!({})).await else {
        panic!("the upstream's second call within a second is refused");
    };
    let (data, _) = server_data(&e);
    let wait = data["retryAfterMs"].as_u64().unwrap_or(0);
    assert_eq!(
        data,
        json!({"limit": "upstream", "key": "slow", "perSecond": 1, "burst": 1, "retryAfterMs": wait})
    );
    assert!((700..=850).contains(&wait), "{data}");
    assert_eq!(
        e.message,
        format!(
            "Rate limited: rate limit of 1 call per second for upstream slow reached; retry in {} s",
            seconds(wait)
        )
    );

    let after = get(gw.admin, "/metrics").await;
    let shown: Vec<&str> = after
        .lines()
        .filter(|l| l.contains("rate_limited"))
        .collect();
    eprintln!("{}", shown.join("\n"));
    assert!(
        after.contains("# TYPE mcp_gateway_rate_limited counter"),
        "{after}"
    );
    assert_eq!(metric(&after, principal_line), Some(refused));
    assert_eq!(metric(&after, tool_line), Some(2));
    assert_eq!(
        metric(&after, "mcp_gateway_rate_limited_total{scope=\"upstream\"}"),
        Some(1)
    );
    bob.close().await;
    drop(gw);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Test 2, on the dispatcher surface: a call through `call_tool` takes its tokens as a
/// direct call does (the principal's, and the tool's under the name it calls), and is
/// refused the same way: `-32029` with `data` to a legacy session, `429` with
/// `Retry-After` to a raw 2026-07-28 POST.
#[tokio::test]
async fn limits_hold_through_the_dispatcher_surface() {
    let _turn = SERIAL.lock().await;
    let dir = scratch("limits-dispatcher");
    let limits = json!({"surface": "dispatcher", "rateLimits": {
        "principal": {"perSecond": 2, "burst": 1},
        "tools": {"echo__weather": {"perMinute": 20, "burst": 1}}}});
    let gw = gateway(&config(&dir, "dispatcher", limits), "127.0.0.1:0", &dir).await;
    let alice = host(&gw.url, ALICE, legacy()).await;
    let through = |name: &str, arguments: Value| json!({"name": name, "arguments": arguments});
    let hi = json!({"text": "hi"});
    let first = call(&alice, "call_tool", through("echo__echo", hi.clone())).await;
    assert!(matches!(first, Called::Ok), "{first:?}");
    let Called::Limited(e) = call(&alice, "call_tool", through("echo__echo", hi.clone())).await
    else {
        panic!("the second call_tool at once is refused");
    };
    let (data, status) = server_data(&e);
    let wait = retry_ms(&e);
    assert_eq!(
        data,
        json!({"limit": "principal", "key": "key:alice", "perSecond": 2, "burst": 1,
               "retryAfterMs": wait})
    );
    assert_eq!(status, Some(429));
    tokio::time::sleep(Duration::from_millis(wait)).await;
    let weather = through("echo__weather", json!({"city": "Rome"}));
    let went = call(&alice, "call_tool", weather.clone()).await;
    assert!(matches!(went, Called::Ok), "{went:?}");
    tokio::time::sleep(Duration::from_millis(510)).await;
    let Called::Limited(e) = call(&alice, "call_tool", weather).await else {
        panic!("the tool's second call within 3 s is refused");
    };
    let (data, _) = server_data(&e);
    assert_eq!(data["limit"], "tool", "{data}");
    assert_eq!(data["key"], "echo__weather", "{data}");

    // Carol, by hand: 200, then 429 with Retry-After, for `call_tool`.
    let ok = post_2026(
        gw.port,
        CAROL,
        1,
        "call_tool",
        through("echo__echo", hi.clone()),
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.body["result"]["content"][0]["text"], "hi", "{}", ok.body);
    let refused = post_2026(gw.port, CAROL, 2, "call_tool", through("echo__echo", hi)).await;
    assert_eq!(refused.status, 429, "{}\n{}", refused.head, refused.body);
    assert_eq!(refused.header("Retry-After"), Some("1"), "{}", refused.head);
    assert_eq!(refused.body["error"]["code"], -32029, "{}", refused.body);
    assert_eq!(refused.body["error"]["data"]["key"], "key:carol");
    // The dispatcher's own tools, while carol's bucket is empty: not held to the limit
    // (served before the call gates). Logged, not asserted: whether `search_tools` should
    // count against "everything it calls" is the product's to say.
    let search = post_2026(
        gw.port,
        CAROL,
        3,
        "search_tools",
        json!({"query": "echo the text"}),
    )
    .await;
    eprintln!(
        "search_tools with carol's bucket empty: HTTP {} {}",
        search.status, search.body["error"]
    );
    alice.close().await;
    drop(gw);
    let _ = std::fs::remove_dir_all(&dir);
}
