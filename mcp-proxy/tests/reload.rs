//! A reload under running hosts (`mcp_proxy::live::Live`): with one host on a stdio-like
//! connection and one on a legacy HTTP session, an upstream is added and one removed.
//! Each host hears one `list_changed` and lists the new catalog; a call in flight to the
//! removed upstream is answered; the unchanged upstream is the same process as before. A
//! configuration that cannot be served (clashing names) is refused and the one in force
//! keeps serving.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_client::http::HttpConfig;
use mcp_client::{Client, ClientOptions, EraChoice, NoHandler};
use mcp_proxy::live::Live;
use mcp_proxy::{Aggregator, AggregatorOptions, SessionMode, UpstreamConfig, UpstreamTransport};
use mcp_server::http::{HttpOptions, StreamableHttp};
use mcp_types::protocol::{ContentBlock, TypedNotification};
use mcp_types::Revision;
use serde_json::json;

mod common;
use common::python::python_upstream;

/// A stdio upstream `key` with tool `tool`, which answers with its process id after
/// `delay` seconds.
fn upstream(key: &str, tool: &str, delay: f64) -> UpstreamConfig {
    let tools = json!([{"name": tool, "inputSchema": {"type": "object"}}]);
    let on_call = format!(
        "time.sleep({delay})\nsend({{\"jsonrpc\": \"2.0\", \"id\": i, \"result\": {{\"content\": [{{\"type\": \"text\", \"text\": str(os.getpid())}}]}}}})"
    );
    let script = python_upstream(key, "import os, time", tools, &on_call);
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
fn count_list_changes(client: &Client) -> Arc<AtomicUsize> {
    let n = Arc::new(AtomicUsize::new(0));
    let mut notes = client.notifications();
    let seen = n.clone();
    tokio::spawn(async move {
        while let Ok(note) = notes.recv().await {
            if matches!(note, TypedNotification::Bare(_)) {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    n
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
    let agg = Aggregator::start(
        vec![upstream("keep", "pid", 0.0), upstream("gone", "slow", 1.0)],
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
    let heard = [count_list_changes(&local), count_list_changes(&remote)];
    for host in [&local, &remote] {
        assert_eq!(tool_names(host).await, ["gone__slow", "keep__pid"]);
    }
    let pid = answer(&local, "keep__pid").await;

    // A call to the upstream about to go, in flight during the reload.
    let caller = local.clone();
    let in_flight = tokio::spawn(async move { answer(&caller, "gone__slow").await });
    tokio::time::sleep(Duration::from_millis(300)).await;

    let reloaded = live
        .reload(
            vec![upstream("keep", "pid", 0.0), upstream("new", "hello", 0.0)],
            AggregatorOptions::default(),
            |c| c.key == "keep",
            Duration::from_secs(10),
        )
        .await
        .expect("reload");
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
    tokio::time::sleep(Duration::from_millis(300)).await;
    for n in &heard {
        assert_eq!(n.load(Ordering::SeqCst), 1, "one list_changed per host");
    }

    // Two upstreams under one namespace: refused; the configuration in force serves on.
    let clash = upstream("other", "pid2", 0.0).namespace("keep");
    let refused = live
        .reload(
            vec![upstream("keep", "pid", 0.0), clash],
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
