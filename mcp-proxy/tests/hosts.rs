//! Every host's traffic stays with that host: several hosts on one gateway in front of one
//! legacy upstream that asks questions and logs while it works. With a session per host,
//! or pooled sessions lent to one call at a time (or to the calls of one host that can be
//! asked nothing), each question and log line reaches exactly the host whose call caused
//! it; on a shared connection what cannot be tied to one call is refused or kept in the
//! gateway's log, never misdelivered.

use std::time::Duration;

use mcp_client::{Client, EraChoice, StdioCommand};
use mcp_proxy::{
    Aggregator, AggregatorOptions, PerHostLimits, PoolLimits, SessionMode, UpstreamConfig,
    UpstreamTransport,
};
use mcp_server::Server;
use mcp_types::Revision;
use serde_json::{json, Map};

mod common;
use common::crowd::*;
use common::python::python_upstream;
use common::*;

/// A session per host, with the default bounds.
fn per_host() -> SessionMode {
    SessionMode::PerHost(PerHostLimits::default())
}

#[tokio::test]
async fn per_host_sessions_deliver_every_question_to_its_own_host() {
    let (agg, held) = gateway_holding(per_host()).await;
    let (a, b) = (Recorder::new("A"), Recorder::new("B"));
    let host_a = host(
        &agg,
        a.clone(),
        answering_all(EraChoice::Legacy(Revision::V2025_06_18)),
    )
    .await;
    let host_b = host(&agg, b.clone(), eliciting(EraChoice::Modern)).await;
    let rounds = 100;
    each_answered_in_turn(&host_a, &host_b, rounds).await;
    // A question that arrives while the other host's plain call is in flight.
    let (ra, rb) = tokio::join!(
        async {
            let ra = call(&host_a, "ask", json!({"who": "A", "after_held": true})).await;
            held.release();
            ra
        },
        call(&host_b, "slow", json!({"held": true})),
    );
    assert_eq!(ra.as_deref(), Ok("A answered by A"));
    assert_eq!(rb.as_deref(), Ok("slept"));
    assert!(a.questions().iter().all(|q| q == "question for A"));
    assert!(b.questions().iter().all(|q| q == "question for B"));
    assert_eq!(a.questions().len() as u64, rounds + 1);
    assert_eq!(b.questions().len() as u64, rounds);
    // The first host has the connection opened at start; the other one of its own.
    assert_eq!(
        agg.status()[0].host_sessions,
        1,
        "one upstream session per host"
    );
    leave(agg, [host_a, host_b]).await;
}

#[tokio::test]
async fn per_host_sessions_deliver_every_log_line_to_its_own_host() {
    let agg = gateway(per_host()).await;
    let (a, b) = (Recorder::new("A"), Recorder::new("B"));
    let era = |r| eliciting(EraChoice::Legacy(r));
    let host_a = host(&agg, a.clone(), era(Revision::V2025_06_18)).await;
    let host_b = host(&agg, b.clone(), era(Revision::V2025_03_26)).await;
    for round in 0..5 {
        chat_both(&host_a, &host_b, 20, round % 2 == 1).await;
    }
    // Notifications may trail the answer by a moment.
    all_logged(&a, &b, 100).await;
    each_heard_only_its_own(&a, &b);
    assert_eq!(
        (a.logs().len(), b.logs().len()),
        (100, 100),
        "every line reaches its host"
    );
    leave(agg, [host_a, host_b]).await;
}

#[tokio::test]
async fn per_host_sessions_hear_each_hosts_own_capabilities_and_roots() {
    let agg = gateway(per_host()).await;
    let (a, b) = (Recorder::new("A"), Recorder::new("B"));
    let (host_a, host_b) = hosts_declaring_differently(&agg, &a, &b).await;
    each_heard_with_its_own_capabilities(&host_a, &host_b, 1).await;
    // The first host declared less than the connection opened at start: it has a session
    // of its own, as B does.
    assert_eq!(agg.status()[0].host_sessions, 2);
    // A host that declares everything the gateway relays takes that connection.
    let c = Recorder::new("C");
    let host_c = host(
        &agg,
        c.clone(),
        answering_all(EraChoice::Legacy(Revision::V2025_06_18)),
    )
    .await;
    assert_eq!(
        call(&host_c, "caps", json!({})).await.as_deref(),
        Ok("elicitation=true sampling=true roots=true")
    );
    assert_eq!(
        call(&host_c, "roots", json!({"who": "C"})).await.as_deref(),
        Ok("file:///C")
    );
    assert_eq!(agg.status()[0].host_sessions, 2);
    host_c.close().await;
    leave(agg, [host_a, host_b]).await;
}

#[tokio::test]
async fn a_shared_connection_refuses_what_it_cannot_attribute() {
    let (agg, held) = gateway_holding(SessionMode::Shared).await;
    let (a, b) = (Recorder::new("A"), Recorder::new("B"));
    let legacy = eliciting(EraChoice::Legacy(Revision::V2025_06_18));
    let host_a = host(&agg, a.clone(), legacy.clone()).await;
    let host_b = host(&agg, b.clone(), eliciting(EraChoice::Modern)).await;

    // One call in flight: its question is its own.
    let alone = call(&host_a, "ask", json!({"who": "A"})).await;
    assert_eq!(alone.as_deref(), Ok("A answered by A"));

    // A's question comes while B's call is in flight too: it names neither, and is refused.
    let (ra, rb) = tokio::join!(
        async {
            let ra = call(&host_a, "ask", json!({"who": "A", "after_held": true})).await;
            held.release();
            ra
        },
        call(&host_b, "slow", json!({"held": true})),
    );
    assert!(
        ra.is_err(),
        "an unattributable question fails its call: {ra:?}"
    );
    assert_eq!(rb.as_deref(), Ok("slept"));

    for round in 0..100 {
        let (ra, rb) = ask_both(&host_a, &host_b, round).await;
        // Each call completes with its own host's answer, or fails; never the other's.
        assert!(
            !matches!(ra.as_deref(), Ok(t) if t != "A answered by A"),
            "{ra:?}"
        );
        assert!(
            !matches!(rb.as_deref(), Ok(t) if t != "B answered by B"),
            "{rb:?}"
        );
    }
    chat_both(&host_a, &host_b, 30, false).await;
    chat_both(&host_a, &host_b, 30, true).await;
    // How many lines it could tie to a call is not known: a line not its own may still
    // trail, for the 100 ms this waits for one.
    let (stray_a, stray_b) = tokio::join!(
        a.logs_within(Duration::from_millis(100), |l| !all_from(l, "A:")),
        b.logs_within(Duration::from_millis(100), |l| !all_from(l, "B:")),
    );
    assert!(!stray_a && !stray_b, "{:?} {:?}", a.logs(), b.logs());
    each_heard_only_its_own(&a, &b);
    leave(agg, [host_a, host_b]).await;
}

#[tokio::test]
async fn http_hosts_each_in_a_session_of_their_own_hear_only_their_own_questions() {
    let agg = gateway(per_host()).await;
    let (addr, _serving) = mcp_server::http::bind(
        "127.0.0.1:0".parse().expect("addr"),
        Server::new(agg.clone()),
        mcp_server::http::HttpOptions::default(),
    )
    .await
    .expect("bind");
    let url = format!("http://{addr}/mcp");
    let connect = |r: Recorder, era| {
        let url = url.clone();
        async move {
            mcp_client::connect_http(mcp_client::http::HttpConfig::new(url), r, eliciting(era))
                .await
                .expect("an HTTP host connects")
        }
    };
    let (a, b) = (Recorder::new("A"), Recorder::new("B"));
    // Two legacy HTTP sessions, each a host of its own.
    let host_a = connect(a.clone(), EraChoice::Legacy(Revision::V2025_06_18)).await;
    let host_b = connect(b.clone(), EraChoice::Legacy(Revision::V2025_11_25)).await;
    each_answered_in_turn(&host_a, &host_b, 50).await;
    chat_both(&host_a, &host_b, 20, false).await;
    chat_both(&host_a, &host_b, 20, true).await;
    all_logged(&a, &b, 40).await;
    each_heard_only_its_own(&a, &b);
    assert_eq!((a.logs().len(), b.logs().len()), (40, 40));
    leave(agg, [host_a, host_b]).await;
}

/// Waits (five seconds at most) until `a` and `b` have each heard `n` log lines:
/// notifications may trail the answer by a moment.
async fn all_logged(a: &Recorder, b: &Recorder, n: usize) {
    let limit = Duration::from_secs(5);
    let (la, lb) = tokio::join!(
        a.logs_within(limit, |l| l.len() >= n),
        b.logs_within(limit, |l| l.len() >= n),
    );
    assert!(
        la && lb,
        "{} and {} lines of {n}",
        a.logs().len(),
        b.logs().len()
    );
}

/// Whether every line is from `who`.
fn all_from(lines: &[String], who: &str) -> bool {
    lines.iter().all(|l| l.starts_with(who))
}

/// A legacy stdio upstream that lists `who` and answers a call with its own process id.
fn pids_script() -> String {
    python_upstream(
        "pids",
        "import os",
        json!([object_tool("who")]),
        r#"send({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": str(os.getpid())}]}})"#,
    )
}

const MARKER: &str = "mcp-proxy-hosts-test-marker";

async fn settle(want: usize) -> usize {
    settle_marked(MARKER, want).await
}

#[tokio::test]
async fn a_stdio_upstream_runs_one_process_per_host_capped_and_reaped() {
    let limits = PerHostLimits::new(1, Duration::from_millis(1500));
    let pids = UpstreamConfig::new(
        "pids",
        UpstreamTransport::Stdio(StdioCommand::new("python3", ["-c", &pids_script(), MARKER])),
    )
    .session(SessionMode::PerHost(limits));
    let agg = Aggregator::start(vec![pids], AggregatorOptions::default())
        .await
        .expect("start");
    assert_eq!(
        settle(1).await,
        1,
        "the connection opened at start, for the catalog"
    );
    let opts = || eliciting(EraChoice::Legacy(Revision::V2025_06_18));
    let first = answering_all(EraChoice::Legacy(Revision::V2025_06_18));
    let (h1, h2, h3) = (
        host(&agg, Recorder::new("1"), first).await,
        host(&agg, Recorder::new("2"), opts()).await,
        host(&agg, Recorder::new("3"), opts()).await,
    );
    let pid = |c: &Client| {
        let c = c.clone();
        async move {
            c.call_tool("pids__who", Map::new())
                .await
                .map(|r| text(&r.result))
        }
    };
    let p1 = pid(&h1).await.expect("host 1");
    assert_eq!(
        settle(1).await,
        1,
        "the first host takes the connection opened at start"
    );
    let p2 = pid(&h2).await.expect("host 2");
    assert_ne!(p1, p2, "the next host has a process of its own");
    assert_eq!(pid(&h2).await.expect("host 2 again"), p2, "and keeps it");
    assert_eq!(pid(&h1).await.expect("host 1 again"), p1);
    let refused = pid(&h3).await.expect("an answer");
    assert!(
        refused.contains("limit of 1 host sessions"),
        "a host beyond the cap is told why: {refused}"
    );
    assert_eq!(agg.status()[0].host_sessions, 1);
    assert_eq!(settle(2).await, 2);

    // A host that goes takes its process with it.
    h2.close().await;
    assert_eq!(settle(1).await, 1, "the closed host's process ended");
    let p3 = pid(&h3).await.expect("host 3 fits now");
    assert!(p3 != p1 && p3 != p2, "a process of its own");
    assert_eq!(settle(2).await, 2);
    // An idle host's process is reaped (after 1.5 s), and its next call opens another.
    assert_eq!(settle(1).await, 1, "the idle host's process was reaped");
    assert_eq!(agg.status()[0].host_sessions, 0);
    let again = pid(&h3).await.expect("host 3 after reaping");
    assert!(again != p3 && again != p1, "a new process");
    // The first host's connection is the catalog's: it stays when the host goes.
    h1.close().await;
    h3.close().await;
    assert_eq!(settle(1).await, 1);
    agg.shutdown().await;
    assert_eq!(settle(0).await, 0, "no child process is left behind");
}

/// A pool of `max` sessions in front of the upstream, kept for 10 minutes idle.
fn pooled(max: usize) -> SessionMode {
    SessionMode::Pooled(PoolLimits::new(max, Duration::from_secs(600)))
}

/// Two hosts that declared the same (so the pool lends them the same sessions) ask and
/// chat at once: every question and log line reaches the host whose call caused it.
async fn pooled_hosts_hear_only_their_own(max: usize) {
    let agg = gateway(pooled(max)).await;
    let (a, b) = (Recorder::new("A"), Recorder::new("B"));
    let host_a = host(
        &agg,
        a.clone(),
        eliciting(EraChoice::Legacy(Revision::V2025_06_18)),
    )
    .await;
    let host_b = host(
        &agg,
        b.clone(),
        eliciting(EraChoice::Legacy(Revision::V2025_11_25)),
    )
    .await;
    let rounds = 50;
    each_answered_in_turn(&host_a, &host_b, rounds).await;
    for round in 0..4 {
        chat_both(&host_a, &host_b, 20, round % 2 == 1).await;
    }
    // Notifications may trail the answer by a moment.
    all_logged(&a, &b, 80).await;
    each_heard_only_its_own(&a, &b);
    assert_eq!((a.questions().len(), b.questions().len()), (50, 50));
    assert_eq!(
        (a.logs().len(), b.logs().len()),
        (80, 80),
        "every line reaches its host"
    );
    let status = &agg.status()[0];
    assert_eq!(status.host_sessions, 0, "no host has a session of its own");
    assert_eq!(
        status.pooled_sessions, max,
        "the hosts took turns on {max} sessions"
    );
    leave(agg, [host_a, host_b]).await;
}

#[tokio::test]
async fn one_pooled_session_taking_turns_keeps_each_hosts_traffic_its_own() {
    pooled_hosts_hear_only_their_own(1).await;
}

#[tokio::test]
async fn two_pooled_sessions_keep_each_hosts_traffic_its_own() {
    pooled_hosts_hear_only_their_own(2).await;
}

#[tokio::test]
async fn a_pooled_session_is_opened_with_each_hosts_own_capabilities() {
    let agg = gateway(pooled(2)).await;
    let (a, b) = (Recorder::new("A"), Recorder::new("B"));
    let (host_a, host_b) = hosts_declaring_differently(&agg, &a, &b).await;
    // Turns on the pool's sessions; A declared no roots, and its session says so.
    each_heard_with_its_own_capabilities(&host_a, &host_b, 3).await;
    assert_eq!(
        agg.status()[0].pooled_sessions,
        2,
        "one per set of capabilities"
    );
    // A third set of capabilities in a full pool: the longest idle session makes room.
    let host_c = host(&agg, Recorder::new("C"), opts_without_anything()).await;
    assert_eq!(
        call(&host_c, "caps", json!({})).await.as_deref(),
        Ok("elicitation=false sampling=false roots=false")
    );
    assert_eq!(agg.status()[0].pooled_sessions, 2);
    host_c.close().await;
    leave(agg, [host_a, host_b]).await;
}

/// A legacy host that declares nothing.
fn opts_without_anything() -> mcp_client::ClientOptions {
    mcp_client::ClientOptions::default().era(EraChoice::Legacy(Revision::V2025_06_18))
}

#[tokio::test]
async fn a_pooled_session_whose_call_was_cancelled_is_not_lent_again() {
    let (agg, held) = gateway_holding(pooled(1)).await;
    let host_a = host(&agg, Recorder::new("A"), opts_without_anything()).await;
    assert_eq!(
        call(&host_a, "slow", json!({})).await.as_deref(),
        Ok("slept")
    );
    assert_eq!(agg.status()[0].pooled_sessions, 1);
    // A call that times out is cancelled upstream; the upstream may still be at it.
    let cancel = std::sync::Arc::new(tokio::sync::Notify::new());
    let opts = mcp_client::CallOptions::default().cancel(cancel.clone());
    let slow = host_a.call_tool_with("up__slow", arguments(json!({"held": true})), &opts);
    let cancelled = async {
        assert!(held.entered().await, "the call reached the upstream");
        cancel.notify_one();
    };
    let (r, ()) = tokio::join!(slow, cancelled);
    assert!(r.is_err(), "the call was cancelled: {r:?}");
    let closed = mcp_examples::wait_until(Duration::from_secs(1), || {
        std::future::ready(agg.status()[0].pooled_sessions == 0)
    })
    .await;
    assert!(
        closed,
        "the session of a cancelled call is closed, not lent again"
    );
    // The next call opens another.
    assert_eq!(
        call(&host_a, "slow", json!({})).await.as_deref(),
        Ok("slept")
    );
    assert_eq!(agg.status()[0].pooled_sessions, 1);
    host_a.close().await;
    agg.shutdown().await;
}

/// `n` calls of `tool` from `host` at once, each on a task of its own.
fn at_once(
    host: &Client,
    n: usize,
    tool: &'static str,
    args: serde_json::Value,
) -> Vec<tokio::task::JoinHandle<Result<String, String>>> {
    (0..n)
        .map(|_| {
            let (host, args) = (host.clone(), args.clone());
            tokio::spawn(async move { call(&host, tool, args).await })
        })
        .collect()
}

/// A host that can be asked nothing holds one pooled session however many of its calls are
/// in flight (not one upstream process per call); another host never shares it; and every
/// line the upstream logs during a host's several calls reaches that host and no other.
#[tokio::test]
async fn the_calls_of_a_host_that_can_be_asked_nothing_share_one_pooled_session() {
    let (agg, held) = gateway_holding(pooled(8)).await;
    let (a, b) = (Recorder::new("A"), Recorder::new("B"));
    let host_a = host(&agg, a.clone(), opts_without_anything()).await;
    let host_b = host(&agg, b.clone(), opts_without_anything()).await;
    let mut calls = at_once(&host_a, 4, "slow", json!({"held": true}));
    calls.extend(at_once(&host_b, 4, "slow", json!({"held": true})));
    for _ in 0..8 {
        assert!(held.entered().await, "every call reached the upstream");
    }
    assert_eq!(agg.status()[0].pooled_sessions, 2, "one session per host");
    for _ in 0..8 {
        held.release();
    }
    for c in calls {
        assert_eq!(c.await.expect("joined").as_deref(), Ok("slept"));
    }
    // Three chatty calls of each host at once, on its one session.
    let mut chats = Vec::new();
    for (h, who) in [(&host_a, "A"), (&host_b, "B")] {
        chats.extend(at_once(h, 3, "chatty", json!({"who": who, "n": 10})));
    }
    for c in chats {
        assert_eq!(c.await.expect("joined").as_deref(), Ok("done"));
    }
    all_logged(&a, &b, 30).await;
    each_heard_only_its_own(&a, &b);
    assert_eq!(
        (a.logs().len(), b.logs().len()),
        (30, 30),
        "every line reaches its host"
    );
    assert_eq!(agg.status()[0].pooled_sessions, 2);
    leave(agg, [host_a, host_b]).await;
}

/// While another host's call waits for the pool's only session, a host that can be asked
/// nothing does not join its own session with a new call: that call waits its turn behind
/// the other host's, so that a busy host cannot keep a session from everyone else.
#[tokio::test]
async fn a_host_sharing_a_pooled_session_lets_waiting_hosts_go_first() {
    let (agg, held) = gateway_holding(pooled(1)).await;
    let host_a = host(&agg, Recorder::new("A"), opts_without_anything()).await;
    let host_b = host(&agg, Recorder::new("B"), opts_without_anything()).await;
    let first = at_once(&host_a, 1, "slow", json!({"held": true}));
    assert!(
        held.entered().await,
        "A's first call holds the only session"
    );
    let waiting = |n: usize| {
        let agg = agg.clone();
        mcp_examples::wait_until(Duration::from_secs(5), move || {
            std::future::ready(agg.status()[0].pooled_waiting == n)
        })
    };
    let b = at_once(&host_b, 1, "slow", json!({}));
    assert!(waiting(1).await, "B's call waits for the session");
    let second = at_once(&host_a, 1, "slow", json!({}));
    assert!(
        waiting(2).await,
        "A's next call waits behind B's, not on A's session"
    );
    held.release();
    for c in first.into_iter().chain(b).chain(second) {
        assert_eq!(c.await.expect("joined").as_deref(), Ok("slept"));
    }
    assert_eq!(agg.status()[0].pooled_sessions, 1);
    assert_eq!(agg.status()[0].pooled_waiting, 0);
    leave(agg, [host_a, host_b]).await;
}

/// A legacy stdio upstream whose `who` answers with its process id and the call's `n`.
fn echo_pid_script() -> String {
    python_upstream(
        "pids",
        "import os",
        json!([object_tool("who")]),
        r#"n = msg["params"].get("arguments", {}).get("n")
send({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": f"{os.getpid()}:{n}"}]}})"#,
    )
}

const POOL_MARKER: &str = "mcp-proxy-hosts-pool-marker";

#[tokio::test]
async fn two_hundred_http_hosts_share_a_few_pooled_processes_of_a_legacy_stdio_upstream() {
    let pids = UpstreamConfig::new(
        "pids",
        UpstreamTransport::Stdio(StdioCommand::new(
            "python3",
            ["-c", &echo_pid_script(), POOL_MARKER],
        )),
    );
    assert!(
        matches!(pids.session, SessionMode::Pooled(_)),
        "the default"
    );
    let agg = Aggregator::start(vec![pids], AggregatorOptions::default())
        .await
        .expect("start");
    let (addr, _serving) = mcp_server::http::bind(
        "127.0.0.1:0".parse().expect("addr"),
        Server::new(agg.clone()),
        mcp_server::http::HttpOptions::default(),
    )
    .await
    .expect("bind");
    let url = format!("http://{addr}/mcp");
    let mut hosts = tokio::task::JoinSet::new();
    for h in 0..200u64 {
        let url = url.clone();
        hosts.spawn(async move {
            let config = mcp_client::http::HttpConfig::new(url);
            let client =
                mcp_client::connect_http(config, Recorder::new("host"), opts_without_anything())
                    .await
                    .expect("an HTTP host connects");
            let mut seen = Vec::new();
            for k in 0..5u64 {
                let n = h * 10 + k;
                let r = client
                    .call_tool("pids__who", arguments(json!({"n": n})))
                    .await
                    .expect("answered");
                assert!(!r.result.is_error(), "{:?}", text(&r.result));
                let answer = text(&r.result);
                let (pid, echoed) = answer.split_once(':').expect("pid:n");
                assert_eq!(echoed, n.to_string(), "host {h} got its own answer");
                seen.push(pid.to_owned());
            }
            client.close().await;
            seen
        });
    }
    let answers: Vec<Vec<String>> = hosts.join_all().await;
    let all: Vec<&String> = answers.iter().flatten().collect();
    assert_eq!(all.len(), 1000, "every call answered");
    let distinct: std::collections::HashSet<&&String> = all.iter().collect();
    let status = &agg.status()[0];
    assert_eq!(status.host_sessions, 0);
    assert!(status.pooled_sessions <= 8, "{}", status.pooled_sessions);
    assert!(
        distinct.len() <= 8,
        "at most the pool's 8 processes served: {}",
        distinct.len()
    );
    // The connection opened at start, and the pool.
    let running = processes_marked(POOL_MARKER);
    assert!((2..=9).contains(&running), "{running} upstream processes");
    agg.shutdown().await;
    assert_eq!(
        settle_marked(POOL_MARKER, 0).await,
        0,
        "no child process is left behind"
    );
}
