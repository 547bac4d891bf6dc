//! How much one connection can make the server hold: JSON-RPC batches, taken only where
//! the client's revision has them, bounded in count and served a few requests at a time;
//! and requests in flight, bounded per connection.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_server::{NoArgs, Outcome, Server, ServerOptions, ToolRegistry};
use mcp_types::protocol::{CallToolResult, ContentBlock};
use serde_json::{json, Value};

mod common;

/// Calls of the `slow` tool running now, and the most seen at once.
#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    most: AtomicUsize,
}

fn server(gauge: Arc<Gauge>, max_batch_messages: usize) -> Server {
    server_with(
        gauge,
        ServerOptions::default().max_batch_messages(max_batch_messages),
    )
}

fn server_with(gauge: Arc<Gauge>, options: ServerOptions) -> Server {
    let mut tools = ToolRegistry::new();
    tools.tool("slow", "Takes a while.", move |_: NoArgs, _ctx| {
        let gauge = gauge.clone();
        async move {
            let now = gauge.now.fetch_add(1, Ordering::SeqCst) + 1;
            gauge.most.fetch_max(now, Ordering::SeqCst);
            // A call that takes a while is the behaviour measured: calls overlap only if
            // each stays in flight, and the fixed script of lines gives the test no point
            // at which to release them. 30 ms each.
            tokio::time::sleep(Duration::from_millis(30)).await;
            gauge.now.fetch_sub(1, Ordering::SeqCst);
            Ok(Outcome::Complete(CallToolResult {
                content: vec![ContentBlock::text("done")],
                ..Default::default()
            }))
        }
    });
    Server::with_options(tools, options)
}

fn init(version: &str) -> Vec<String> {
    vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        .to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
    ]
}

fn pings(ids: std::ops::Range<u64>) -> String {
    let batch: Vec<Value> = ids
        .map(|id| json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
        .collect();
    Value::Array(batch).to_string()
}

fn call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "slow"}})
}

/// The ids of a batch answer, and whether every element is a `-32600` error.
fn refused(answer: &Value) -> (Vec<u64>, bool) {
    let items = answer.as_array().expect("a batch is answered with a batch");
    let ids = items.iter().filter_map(|a| a["id"].as_u64()).collect();
    let all = items
        .iter()
        .all(|a| a["error"]["code"].as_i64() == Some(-32600));
    (ids, all)
}

#[tokio::test]
async fn revisions_without_batches_refuse_each_request_in_one_answer() {
    for version in ["2025-06-18", "2025-11-25"] {
        let mut lines = init(version);
        lines.push(pings(1..3));
        lines.push(call(3).to_string());
        let a = common::converse(server(Arc::default(), 64), &lines, 1 << 20).await;
        assert_eq!(a[0]["result"]["protocolVersion"], version);
        let (ids, all) = refused(&a[1]);
        assert_eq!(ids, [1, 2], "{version}: every request answered");
        assert!(all, "{version}: with -32600: {}", a[1]);
        assert!(
            a[1][0]["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("no JSON-RPC batches")),
            "{version}: the refusal says why: {}",
            a[1]
        );
        assert_eq!(
            a[2]["result"]["content"][0]["text"], "done",
            "{version}: the connection keeps working"
        );
    }
}

#[tokio::test]
async fn a_batch_before_initialize_is_refused() {
    let a = common::converse(server(Arc::default(), 64), &[pings(1..3)], 1 << 20).await;
    let (ids, all) = refused(&a[0]);
    assert_eq!(ids, [1, 2]);
    assert!(all, "{}", a[0]);
}

#[tokio::test]
async fn a_batch_over_the_limit_is_refused_and_names_it() {
    let mut lines = init("2025-03-26");
    lines.push(pings(1..12));
    lines.push(pings(20..30));
    let a = common::converse(server(Arc::default(), 10), &lines, 1 << 20).await;
    let (ids, all) = refused(&a[1]);
    assert_eq!(ids, (1..12).collect::<Vec<_>>());
    assert!(all, "{}", a[1]);
    assert!(
        a[1][0]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("11 messages") && m.contains("limit of 10")),
        "{}",
        a[1]
    );
    let within = a[2].as_array().expect("a batch answer");
    assert_eq!(within.len(), 10, "a batch at the limit is served");
    assert!(within.iter().all(|p| p["result"].is_object()), "{}", a[2]);
}

#[tokio::test]
async fn a_batch_is_served_a_few_requests_at_a_time_in_order() {
    let gauge = Arc::new(Gauge::default());
    let mut lines = init("2025-03-26");
    lines.push(Value::Array((1..=24).map(call).collect()).to_string());
    let a = common::converse(server(gauge.clone(), 64), &lines, 1 << 20).await;
    let answers = a[1].as_array().expect("a batch answer");
    let ids: Vec<u64> = answers.iter().filter_map(|r| r["id"].as_u64()).collect();
    assert_eq!(ids, (1..=24).collect::<Vec<_>>(), "all answered, in order");
    assert!(answers
        .iter()
        .all(|r| r["result"]["content"][0]["text"] == "done"));
    let most = gauge.most.load(Ordering::SeqCst);
    assert!(
        (2..=8).contains(&most),
        "served concurrently but bounded: {most} at once"
    );
}

/// On one connection: initializes (2025-06-18) and waits for the answer, then, wave by
/// wave, writes every line of a wave at once and reads as many answers back.
async fn pipelined(server: Server, waves: &[&[String]]) -> Vec<Vec<Value>> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (client, end) = tokio::io::duplex(1 << 20);
    let (sr, sw) = tokio::io::split(end);
    let transport = mcp_types::transport::LineTransport::new(BufReader::new(sr), sw);
    tokio::spawn(async move { server.serve(transport).await });
    let (cr, mut cw) = tokio::io::split(client);
    let mut out = BufReader::new(cr).lines();
    let mut next = async || {
        let line = tokio::time::timeout(Duration::from_secs(5), out.next_line())
            .await
            .expect("an answer")
            .expect("read")
            .expect("a line");
        serde_json::from_str::<Value>(&line).expect("json")
    };
    let init = init("2025-06-18").join("\n") + "\n";
    cw.write_all(init.as_bytes()).await.expect("write");
    assert_eq!(next().await["result"]["protocolVersion"], "2025-06-18");
    let mut answers = Vec::new();
    for lines in waves {
        let all: String = lines.iter().map(|l| format!("{l}\n")).collect();
        cw.write_all(all.as_bytes()).await.expect("write");
        let mut got = Vec::new();
        while got.len() < lines.len() {
            got.push(next().await);
        }
        answers.push(got);
    }
    answers
}

#[tokio::test]
async fn requests_past_the_in_flight_bound_wait_for_room_and_are_all_served() {
    let gauge = Arc::new(Gauge::default());
    let options = ServerOptions::default().max_in_flight_requests(4);
    let calls: Vec<String> = (1..=10).map(|id| call(id).to_string()).collect();
    let waves = pipelined(server_with(gauge.clone(), options), &[&calls, &calls[..4]]).await;
    let a = &waves[0];
    let mut done: Vec<u64> = a
        .iter()
        .filter(|r| r["result"]["content"][0]["text"] == "done")
        .filter_map(|r| r["id"].as_u64())
        .collect();
    done.sort_unstable();
    assert_eq!(
        done,
        (1..=10).collect::<Vec<_>>(),
        "none refused on a stream: {a:?}"
    );
    assert_eq!(gauge.most.load(Ordering::SeqCst), 4, "never past the bound");
    // Answers count requests out again: a second wave on the same connection is served.
    let second = &waves[1];
    assert!(second.iter().all(|r| r["result"].is_object()), "{second:?}");
}
