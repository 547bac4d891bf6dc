//! Replicas of one gateway sharing sealing keys (`AggregatorOptions::sealer`), in process:
//! three aggregators in front of one upstream, each host on a different replica. A task
//! created through replica 1 is polled on 2, given its input on 3 and followed to its end
//! on 1; one cancelled on 3 reads cancelled on 1; an id invented, altered, or sealed with
//! another deployment's key is unknown on every replica, as on one gateway. A list
//! cursor from one replica pages on another that lists the same, and one whose list
//! differs says the list changed rather than serve a page of another list. Over HTTP,
//! with each replica knowing the others' addresses, a 2026 host's retry of a call a
//! legacy upstream's question parked on one replica completes through any other (fifty
//! times), and a spent, altered or another principal's state is refused alike everywhere.

use std::sync::Arc;
use std::time::Duration;

use mcp_client::{CallOptions, Client, ClientError, ClientOptions, EraChoice, NoHandler};
use mcp_proxy::policy::GlobFilter;
use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig, UpstreamTransport};
use mcp_server::auth::{ApiKey, ApiKeys, Authorization, Principal, ProtectedResource};
use mcp_server::seal::{ReplicaId, SealKey, Sealer};
use mcp_server::Server;
use mcp_types::protocol::*;
use mcp_types::{codes, Revision};
use serde_json::{json, Map, Value};

mod common;
use common::{greeted, host};

/// Replica `n` of a gateway whose keys are `secret`, in front of `upstream` (2026-07-28).
async fn replica(n: u16, secret: u8, upstream: &Server) -> Aggregator {
    replica_with(
        n,
        secret,
        upstream,
        AggregatorOptions::default(),
        GlobFilter::default(),
    )
    .await
}

/// [`replica`] with `options`, showing the upstream's tools `tools` lets through.
async fn replica_with(
    n: u16,
    secret: u8,
    upstream: &Server,
    options: AggregatorOptions,
    tools: GlobFilter,
) -> Aggregator {
    let key = SealKey::new("shared", &[secret; 32]).expect("key");
    let sealer = Sealer::new(vec![key], ReplicaId(n)).expect("sealer");
    let mut conf = UpstreamConfig::new("conf", UpstreamTransport::InProcess(upstream.clone()))
        .revision(Revision::V2026_07_28);
    conf.tools = Arc::new(tools);
    Aggregator::start(vec![conf], options.sealer(Arc::new(sealer)))
        .await
        .expect("starts")
}

/// A 2026 host that declared the tasks extension and elicitation.
async fn task_host(agg: &Aggregator) -> Client {
    let capabilities = ClientCapabilities {
        extensions: json!({TASKS_EXTENSION: {}}).as_object().cloned(),
        elicitation: Some(Map::new()),
        ..Default::default()
    };
    let options = ClientOptions::default()
        .era(EraChoice::Modern)
        .capabilities(capabilities);
    host(agg, NoHandler, options).await
}

async fn request(host: &Client, m: &str, params: Value) -> Result<Value, ClientError> {
    host.request(m, params, &CallOptions::default()).await
}

async fn state_of(host: &Client, id: &str) -> Value {
    request(host, method::TASKS_GET, json!({"taskId": id}))
        .await
        .expect("tasks/get")
}

/// Polls `tasks/get` on `host` until the task's status is `status` (five seconds at most).
async fn reaches(host: &Client, id: &str, status: &str) -> Value {
    let reached = mcp_examples::wait_until(Duration::from_secs(5), || async {
        state_of(host, id).await["status"] == status
    })
    .await;
    let state = state_of(host, id).await;
    assert!(reached, "task never reached {status}: {state}");
    state
}

async fn created(host: &Client, tool: &str, arguments: Value) -> String {
    let made = request(
        host,
        method::TOOLS_CALL,
        json!({"name": tool, "arguments": arguments}),
    )
    .await
    .expect("tools/call");
    assert_eq!(made["resultType"], "task", "{made}");
    made["taskId"].as_str().expect("taskId").to_owned()
}

fn unknown(r: Result<Value, ClientError>, what: &str) {
    match r {
        Err(ClientError::Server(e)) => {
            assert_eq!(e.code, codes::INVALID_PARAMS, "{what}: {}", e.message);
            assert!(
                e.message.starts_with("Unknown task"),
                "{what}: {}",
                e.message
            );
        }
        other => panic!("{what}: expected an unknown task, got {other:?}"),
    }
}

#[tokio::test]
async fn a_task_made_on_one_replica_is_polled_answered_and_cancelled_on_the_others() {
    let upstream = Server::new(mcp_examples::Conformance::default());
    let replicas = [
        replica(1, 7, &upstream).await,
        replica(2, 7, &upstream).await,
        replica(3, 7, &upstream).await,
    ];
    let [one, two, three] = [
        task_host(&replicas[0]).await,
        task_host(&replicas[1]).await,
        task_host(&replicas[2]).await,
    ];

    // Made on 1, asking for input: 2 sees the question, 3 answers it, 1 sees it done.
    let id = created(&one, "conf__confirm_delete", json!({})).await;
    let asking = reaches(&two, &id, "input_required").await;
    let requests = asking["inputRequests"].as_object().expect("inputRequests");
    let (key, _question) = requests.iter().next().expect("a question");
    let answers = json!({key.clone(): {"action": "accept", "content": {"confirm": true}}});
    let ack = request(
        &three,
        method::TASKS_UPDATE,
        json!({"taskId": id, "inputResponses": answers}),
    )
    .await
    .expect("tasks/update on replica 3");
    assert_eq!(ack["resultType"], "complete", "{ack}");
    let done = reaches(&one, &id, "completed").await;
    assert_eq!(done["taskId"], id.as_str(), "{done}");

    // Made on 2, cancelled on 3, read cancelled on 1.
    let slow = created(&two, "conf__slow_compute", json!({"seconds": 60})).await;
    assert_eq!(state_of(&one, &slow).await["status"], "working");
    request(&three, method::TASKS_CANCEL, json!({"taskId": slow}))
        .await
        .expect("tasks/cancel on replica 3");
    reaches(&one, &slow, "cancelled").await;

    // Guessed, altered, or another deployment's: unknown everywhere.
    let mut altered = slow.clone().into_bytes();
    altered[30] = if altered[30] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).expect("ascii");
    let elsewhere = replica(1, 9, &upstream).await;
    let stranger = task_host(&elsewhere).await;
    let theirs = created(&stranger, "conf__slow_compute", json!({"seconds": 60})).await;
    for host in [&one, &two, &three] {
        for (bad, what) in [
            ("1", "guessed"),
            (altered.as_str(), "altered"),
            (&theirs, "foreign"),
        ] {
            unknown(
                request(host, method::TASKS_GET, json!({"taskId": bad})).await,
                what,
            );
        }
    }
    unknown(
        request(&stranger, method::TASKS_GET, json!({"taskId": slow})).await,
        "ours, to another deployment",
    );
    for agg in replicas.iter().chain([&elsewhere]) {
        agg.shutdown().await;
    }
}

fn names(page: &Value) -> Vec<String> {
    page["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_cursor_pages_on_a_replica_that_lists_the_same_and_nowhere_else() {
    let upstream = Server::new(mcp_examples::Conformance::default());
    let paged = || AggregatorOptions::default().page_size(3);
    let everything = GlobFilter::default();
    let one = replica_with(1, 7, &upstream, paged(), everything.clone()).await;
    let two = replica_with(2, 7, &upstream, paged(), everything).await;
    // The same upstream with one tool hidden: a list one shorter.
    let hides = GlobFilter {
        allow: None,
        deny: vec!["test_tool_with_task".into()],
    };
    let skewed = replica_with(3, 7, &upstream, paged(), hides).await;
    let [h1, h2, h3] = [
        task_host(&one).await,
        task_host(&two).await,
        task_host(&skewed).await,
    ];
    let list = |h: &Client, cursor: Option<&str>| {
        let params = match cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let h = h.clone();
        async move { request(&h, method::TOOLS_LIST, params).await }
    };
    let first = list(&h1, None).await.expect("page 1");
    let cursor = first["nextCursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let on_one = list(&h1, Some(&cursor)).await.expect("page 2 on 1");
    let on_two = list(&h2, Some(&cursor)).await.expect("page 2 on 2");
    assert_eq!(names(&on_one).len(), 3, "{on_one}");
    assert_eq!(names(&on_one), names(&on_two));
    assert_eq!(on_one["nextCursor"], on_two["nextCursor"]);
    match list(&h3, Some(&cursor)).await {
        Err(ClientError::Server(e)) => {
            assert_eq!(e.code, codes::INVALID_PARAMS, "{}", e.message);
            assert!(e.message.contains("list changed"), "{}", e.message);
        }
        other => panic!("a page of another list: {other:?}"),
    }
    for agg in [one, two, skewed] {
        agg.shutdown().await;
    }
}

/// Legacy hosts and 2026 hosts alike reach replicas over HTTP: three endpoints in front
/// of three aggregators, one sealing key, each knowing the others' addresses.
async fn http_replicas(upstream: impl Fn() -> UpstreamConfig) -> Vec<(Aggregator, String)> {
    use mcp_proxy::placement::GatewayPlacement;
    use mcp_server::http::{serve, HttpOptions, Peers, ReplicaLink, StaticPeers, StreamableHttp};
    let mut listeners = Vec::new();
    let mut peers = StaticPeers::new();
    for n in 1..=3u16 {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = l.local_addr().expect("addr");
        peers = peers.with(ReplicaId(n), format!("http://{addr}").parse().expect("uri"));
        listeners.push((n, l, addr));
    }
    let peers: Arc<dyn Peers> = Arc::new(peers);
    let mut out = Vec::new();
    for (n, listener, addr) in listeners {
        let key = SealKey::new("shared", &[7; 32]).expect("key");
        let sealer = Arc::new(Sealer::new(vec![key], ReplicaId(n)).expect("sealer"));
        let link = ReplicaLink::new(peers.clone(), sealer.clone(), "/mcp");
        let options = AggregatorOptions::default()
            .sealer(sealer.clone())
            .replicas(link);
        let agg = Aggregator::start(vec![upstream()], options)
            .await
            .expect("starts");
        let keys = ApiKeys::new()
            .with(ApiKey::new("alice", ALICE, Principal::new("alice")))
            .with(ApiKey::new("bob", BOB, Principal::new("bob")));
        let resource = ProtectedResource::new("http://127.0.0.1/mcp").expect("resource");
        let http = HttpOptions::default()
            .sealer(sealer.clone())
            .peers(peers.clone())
            .placement(Arc::new(GatewayPlacement::new(sealer)))
            .peer_notices(Arc::new(agg.clone()))
            .authorization(Authorization::new(keys, resource));
        let endpoint = StreamableHttp::new(agg.server(Default::default()), http);
        tokio::spawn(serve(listener, endpoint));
        out.push((agg, format!("http://{addr}/mcp")));
    }
    out
}

/// An upstream of a replica's own: the conformance fixtures, in 2026-07-28.
fn own_upstream() -> UpstreamConfig {
    UpstreamConfig::new(
        "conf",
        UpstreamTransport::InProcess(Server::new(mcp_examples::Conformance::default())),
    )
    .revision(Revision::V2026_07_28)
}

/// The two principals hosts reach the HTTP replicas as.
const ALICE: &str = "alice-key-0123456789";
const BOB: &str = "bob-key-0123456789";

/// A 2026 host with elicitation, on the replica at `url`, with API key `key`.
async fn http_host(url: &str, key: &str) -> Client {
    let capabilities = ClientCapabilities {
        elicitation: Some(Map::new()),
        ..Default::default()
    };
    let options = ClientOptions::default()
        .era(EraChoice::Modern)
        .capabilities(capabilities);
    mcp_client::connect_http(keyed(url, key), NoHandler, options)
        .await
        .expect("connects")
}

/// How to reach `url` with API key `key`.
fn keyed(url: &str, key: &str) -> mcp_client::http::HttpConfig {
    let mut config = mcp_client::http::HttpConfig::new(url);
    config
        .headers
        .push(("Authorization".into(), format!("Bearer {key}")));
    config
}

/// `greet` retried on `host` with `state`, answering `key` with `name`.
async fn retried(host: &Client, state: &str, key: &str, name: &str) -> Result<Value, ClientError> {
    let raw = CallOptions::default().return_input_required(true);
    let retry = json!({"name": "echo__greet", "arguments": {}, "requestState": state,
        "inputResponses": {key: {"action": "accept", "content": {"name": name}}}});
    host.request("tools/call", retry, &raw).await
}

fn refused_state(r: Result<Value, ClientError>, what: &str) {
    match r {
        Err(ClientError::Server(e)) => {
            assert_eq!(e.code, codes::INVALID_PARAMS, "{what}: {}", e.message)
        }
        other => panic!("{what}: expected -32602, got {other:?}"),
    }
}

#[tokio::test]
async fn a_retry_completes_the_call_parked_on_another_replica() {
    // The echo tools in 2025-06-18: `greet` asks its client for a name, so the gateway
    // parks the call and hands a 2026 host the question with a requestState.
    let legacy_echo = || {
        UpstreamConfig::new(
            "echo",
            UpstreamTransport::InProcess(Server::new(mcp_examples::echo_tools())),
        )
        .revision(Revision::V2025_06_18)
    };
    let replicas = http_replicas(legacy_echo).await;
    let hosts = [
        http_host(&replicas[0].1, ALICE).await,
        http_host(&replicas[1].1, ALICE).await,
        http_host(&replicas[2].1, ALICE).await,
    ];
    // Fifty retries, each sent straight to a replica that does not hold the call.
    for round in 0..50usize {
        let (asked, answering) = (&hosts[round % 3], &hosts[(round + 1) % 3]);
        let (state, key) = greeted(asked).await;
        let name = format!("Guest {round}");
        let done = retried(answering, &state, &key, &name)
            .await
            .expect("the retry, through another replica, resumes the parked call");
        assert_eq!(
            done["content"][0]["text"],
            format!("Hello, {name}!"),
            "{done}"
        );
        if round == 0 {
            // Spent: refused alike on every replica.
            for host in &hosts {
                refused_state(retried(host, &state, &key, "again").await, "a spent state");
            }
        }
    }
    // Altered, or presented by another principal: refused alike on every replica, and the
    // call stays parked for its own principal's retry.
    let (state, key) = greeted(&hosts[0]).await;
    let mut altered = state.clone().into_bytes();
    let at = altered.len() / 2;
    altered[at] = if altered[at] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).expect("ascii");
    let bobs = [
        http_host(&replicas[0].1, BOB).await,
        http_host(&replicas[1].1, BOB).await,
        http_host(&replicas[2].1, BOB).await,
    ];
    for (alice, bob) in hosts.iter().zip(&bobs) {
        refused_state(
            retried(alice, &altered, &key, "x").await,
            "an altered state",
        );
        refused_state(
            retried(bob, &state, &key, "x").await,
            "another principal's state",
        );
    }
    let done = retried(&hosts[2], &state, &key, "Ada")
        .await
        .expect("still parked");
    assert_eq!(done["content"][0]["text"], "Hello, Ada!", "{done}");
    for (agg, _) in &replicas {
        agg.shutdown().await;
    }
}

#[tokio::test]
async fn an_upstreams_own_request_state_finds_the_replica_whose_upstream_issued_it() {
    // Each replica has an upstream of its own, whose requestState only it can read (the
    // conformance fixtures sign theirs with a key of each instance's own).
    let replicas = http_replicas(own_upstream).await;
    let hosts = [
        http_host(&replicas[0].1, ALICE).await,
        http_host(&replicas[1].1, ALICE).await,
        http_host(&replicas[2].1, ALICE).await,
    ];
    let raw = CallOptions::default().return_input_required(true);
    let tool = "conf__test_input_required_result_request_state";
    for round in 0..6usize {
        let (asked, answering) = (&hosts[round % 3], &hosts[(round + 2) % 3]);
        let first = asked
            .request("tools/call", json!({"name": tool, "arguments": {}}), &raw)
            .await
            .expect("input required");
        let state = first["requestState"].as_str().expect("state");
        assert!(state.starts_with("mcp-proxy."), "sealed in: {state}");
        let retry = json!({"name": tool, "arguments": {}, "requestState": state,
            "inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}}});
        let done = answering
            .request("tools/call", retry, &raw)
            .await
            .expect("the retry reaches the upstream that issued the state");
        assert_eq!(done["content"][0]["text"], "state-ok", "{done}");
    }
    for (agg, _) in &replicas {
        agg.shutdown().await;
    }
}

#[tokio::test]
async fn an_upstreams_list_change_heard_on_one_replica_reaches_the_hosts_of_all() {
    let replicas = http_replicas(own_upstream).await;
    // A legacy host on replica 1 hears notifications on its session's stream.
    let config = keyed(&replicas[0].1, ALICE);
    let options = ClientOptions::default().era(EraChoice::Legacy(Revision::V2025_06_18));
    let listening = mcp_client::connect_http(config, NoHandler, options)
        .await
        .expect("connects");
    let mut hears = listening.notifications();
    // The change happens in replica 2's own upstream.
    let caller = http_host(&replicas[1].1, ALICE).await;
    caller
        .call_tool("conf__test_trigger_tool_change", Map::new())
        .await
        .expect("called");
    let heard = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match hears.recv().await {
                Ok(TypedNotification::Bare(_)) => return,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("the host's notifications ended: {e}"),
            }
        }
    })
    .await;
    assert!(
        heard.is_ok(),
        "the host on replica 1 never heard of the change"
    );
    for (agg, _) in &replicas {
        agg.shutdown().await;
    }
}
