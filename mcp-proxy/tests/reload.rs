//! A reload under running hosts (`mcp_proxy::live::Live`): with one host on a stdio-like
//! connection and one on a legacy HTTP session, an upstream is added and one removed.
//! Each host hears one `list_changed` and lists the new catalog; a call in flight to the
//! removed upstream is answered; the unchanged upstream is the same process as before. A
//! configuration that cannot be served (clashing names) is refused and the one in force
//! keeps serving.

use std::time::Duration;

use mcp_client::http::HttpConfig;
use mcp_client::{Client, ClientOptions, EraChoice, NoHandler};
use mcp_proxy::live::Live;
use mcp_proxy::{Aggregator, AggregatorOptions, SessionMode, UpstreamConfig, UpstreamTransport};
use mcp_server::http::{HttpOptions, StreamableHttp};
use mcp_types::protocol::{ContentBlock, TypedNotification};
use mcp_types::Revision;
use serde_json::json;
use tokio::sync::watch;

mod common;
use common::python::python_upstream;
use common::Gate;

/// A stdio upstream `key` with tool `tool`, which answers with its process id (with a
/// `gate`, once the test lets the call through it).
fn upstream(key: &str, tool: &str, gate: Option<&Gate>) -> UpstreamConfig {
    let tools = json!([{"name": tool, "inputSchema": {"type": "object"}}]);
    let on_call = format!(
        "{}send({{\"jsonrpc\": \"2.0\", \"id\": i, \"result\": {{\"content\": [{{\"type\": \"text\", \"text\": str(os.getpid())}}]}}}})",
        gate.map(Gate::python).unwrap_or_default()
    );
    let script = python_upstream(key, "import os", tools, &on_call);
    UpstreamConfig::new(
        key,
        UpstreamTransport::Stdio(mcp_client::StdioCommand::new(
            "python3",
            ["-c".to_owned(), script],
        )),
    )
    .session(SessionMode::Shared)
}

/// Counts the list changes a host hears.
fn count_list_changes(client: &Client) -> watch::Receiver<usize> {
    let (seen, n) = watch::channel(0);
    let mut notes = client.notifications();
    tokio::spawn(async move {
        while let Ok(note) = notes.recv().await {
            if matches!(note, TypedNotification::Bare(_)) {
                seen.send_modify(|n| *n += 1);
            }
        }
    });
    n
}

/// Whether `n` comes to satisfy `cond` within `limit`.
async fn heard_within(
    n: &mut watch::Receiver<usize>,
    limit: Duration,
    cond: impl FnMut(&usize) -> bool,
) -> bool {
    let reached = tokio::time::timeout(limit, n.wait_for(cond)).await;
    matches!(reached, Ok(Ok(_)))
}

async fn tool_names(client: &Client) -> Vec<String> {
    let mut names: Vec<String> = client
        .list_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort();
    names
}

async fn answer(client: &Client, tool: &str) -> String {
    let call = client
        .call_tool(tool, common::arguments(json!({})))
        .await
        .expect("tools/call");
    assert!(!call.result.is_error(), "{:?}", call.result);
    match call.result.content.first() {
        Some(ContentBlock::Text(t)) => t.text.clone(),
        other => format!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_adds_and_removes_upstreams_under_running_hosts() {
    let gate = Gate::new();
    let agg = Aggregator::start(
        vec![
            upstream("keep", "pid", None),
            upstream("gone", "slow", Some(&gate)),
        ],
        AggregatorOptions::default(),
    )
    .await
    .expect("start");
    let live = Live::new(agg);
    let server = live.server(Default::default());

    // Host one: a connection of its own (as on stdio).
    let (a, b) = mcp_types::transport::memory_pair(16);
    let s = server.clone();
    tokio::spawn(async move { s.serve(b).await });
    let legacy = || ClientOptions::default().era(EraChoice::Legacy(Revision::V2025_06_18));
    let local = Client::connect(a, NoHandler, legacy())
        .await
        .expect("local host");
    // Host two: a legacy Streamable HTTP session.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let http = StreamableHttp::new(server.clone(), HttpOptions::default());
    tokio::spawn(mcp_server::http::serve(listener, http));
    let remote = mcp_client::connect_http(HttpConfig::new(url), NoHandler, legacy())
        .await
        .expect("HTTP host");
    let mut heard = [count_list_changes(&local), count_list_changes(&remote)];
    for host in [&local, &remote] {
        assert_eq!(tool_names(host).await, ["gone__slow", "keep__pid"]);
    }
    let pid = answer(&local, "keep__pid").await;

    // A call to the upstream about to go, held there during the reload.
    let caller = local.clone();
    let in_flight = tokio::spawn(async move { answer(&caller, "gone__slow").await });
    let held = tokio::task::block_in_place(|| gate.arrived(Duration::from_secs(10)));

    let reload = live.reload(
        vec![
            upstream("keep", "pid", None),
            upstream("new", "hello", None),
        ],
        AggregatorOptions::default(),
        |c| c.key == "keep",
        Duration::from_secs(10),
    );
    let mut told = heard[0].clone();
    let release = async {
        // The hosts are told before the old upstreams are drained: the reload is now
        // waiting for the call in flight, which the test lets through.
        let ten_seconds = Duration::from_secs(10);
        assert!(heard_within(&mut told, ten_seconds, |n| *n >= 1).await);
        drop(held);
    };
    let (reloaded, ()) = tokio::join!(reload, release);
    let reloaded = reloaded.expect("reload");
    assert_eq!(reloaded.started, ["new"]);
    assert_eq!(reloaded.closed, ["gone"]);
    assert_eq!(reloaded.announced, [mcp_server::ListChanged::Tools]);
    let slow = in_flight.await.expect("task");
    assert!(
        slow.parse::<u32>().is_ok(),
        "the call in flight was answered: {slow}"
    );

    for host in [&local, &remote] {
        assert_eq!(tool_names(host).await, ["keep__pid", "new__hello"]);
    }
    assert_eq!(
        answer(&remote, "keep__pid").await,
        pid,
        "the kept upstream was not restarted"
    );
    for n in &mut heard {
        let told = heard_within(n, Duration::from_secs(5), |n| *n >= 1).await;
        assert!(told, "a list_changed for each host");
    }
    // And no second one, in the 300 ms after.
    let [a, b] = &mut heard;
    let second = tokio::time::timeout(Duration::from_millis(300), async {
        tokio::select! {
            _ = a.wait_for(|n| *n >= 2) => {}
            _ = b.wait_for(|n| *n >= 2) => {}
        }
    })
    .await;
    assert!(second.is_err(), "one list_changed per host");

    // Two upstreams under one namespace: refused; the configuration in force serves on.
    let clash = upstream("other", "pid2", None).namespace("keep");
    let refused = live
        .reload(
            vec![upstream("keep", "pid", None), clash],
            AggregatorOptions::default(),
            |c| c.key == "keep",
            Duration::from_secs(1),
        )
        .await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(tool_names(&local).await, ["keep__pid", "new__hello"]);
    assert_eq!(answer(&local, "keep__pid").await, pid);
    assert!(answer(&local, "new__hello").await.parse::<u32>().is_ok());
    local.close().await;
    remote.close().await;
    live.current().shutdown().await;
}
