//! Upstream faults: one killed mid-call, one that hangs, one that writes garbage, one that
//! never starts. Each gives the host a clear error naming the upstream, calls to the
//! other upstreams succeed, and no child process is left behind.

use std::time::Duration;

use mcp_client::StdioCommand;
use mcp_proxy::{Aggregator, AggregatorOptions, SessionMode, UpstreamConfig, UpstreamTransport};
use mcp_server::{Outcome, RequestContext, Server, ServerHandler};
use mcp_types::protocol::*;
use serde_json::{json, Value};

mod common;
use common::python::python_upstream;
use common::*;

/// A stdio server that lists one tool, `act`, and misbehaves when it is called, as
/// argv[1] says: `die`, `garbage`, or (anything else) hang until a signal ends it.
fn faulty_script() -> String {
    python_upstream(
        "faulty",
        "import signal\nmode = sys.argv[1]",
        json!([object_tool("act")]),
        r#"
if mode == "die":
    sys.exit(3)
if mode == "garbage":
    print("this is not json", flush=True)
    print('{"also": "not json-rpc"}', flush=True)
signal.pause()
"#,
    )
}

/// On every stdio upstream's command line, so that the tests can find leftover processes.
const MARKER: &str = "mcp-proxy-fault-test-marker";

fn faulty(key: &str, mode: &str) -> UpstreamConfig {
    let command = StdioCommand::new("python3", ["-c", &faulty_script(), mode, MARKER]);
    UpstreamConfig::new(key, UpstreamTransport::Stdio(command))
}

fn healthy() -> UpstreamConfig {
    in_process("echo", mcp_examples::echo_tools())
}

/// Calls through the aggregator as a host would (in-process, 2026).
async fn call(
    agg: &Aggregator,
    name: &str,
    args: Value,
) -> Result<CallToolResult, mcp_types::ErrorObject> {
    let client = host(agg, mcp_client::NoHandler, Default::default()).await;
    let out = client.call_tool(name, arguments(args)).await;
    client.close().await;
    match out {
        Ok(c) => Ok(c.result),
        Err(mcp_client::ClientError::Server(e)) => Err(e),
        Err(e) => panic!("host side failed: {e}"),
    }
}

/// `r` is an error result whose text says `what`.
fn fails_saying(r: &CallToolResult, what: &str) {
    assert!(r.is_error() && text(r).contains(what), "{}", text(r));
}

#[tokio::test]
async fn faulty_upstreams_fail_clearly_and_alone() {
    let options = AggregatorOptions::default()
        .call_timeout(Duration::from_secs(2))
        .connect_timeout(Duration::from_secs(10))
        .restart_backoff((Duration::from_millis(200), Duration::from_secs(1)));
    let never = UpstreamConfig::new(
        "ghost",
        UpstreamTransport::Stdio(StdioCommand::new(
            "/nonexistent/mcp-server",
            Vec::<String>::new(),
        )),
    );
    let agg = Aggregator::start(
        vec![
            healthy(),
            faulty("dies", "die"),
            faulty("hangs", "hang"),
            faulty("babbles", "garbage"),
            never,
        ],
        options,
    )
    .await
    .expect("one failing upstream does not stop the others");
    let status = agg.status();
    let ghost = status.iter().find(|s| s.key == "ghost").expect("ghost");
    assert!(
        !ghost.connected,
        "the upstream that never starts is reported"
    );
    let error = ghost.last_error.as_ref().expect("why it failed");
    assert_eq!(error.kind(), "unavailable", "{error}");
    assert!(
        error.to_string().contains("/nonexistent/mcp-server"),
        "{error}"
    );

    let (dies, hangs, babbles, echo) = tokio::join!(
        call(&agg, "dies__act", json!({})),
        call(&agg, "hangs__act", json!({})),
        call(&agg, "babbles__act", json!({})),
        call(&agg, "echo__echo", json!({"text": "still here"})),
    );
    fails_saying(&dies.expect("a result"), "`dies`");
    fails_saying(&hangs.expect("a result"), "`hangs` did not answer");
    fails_saying(&babbles.expect("a result"), "`babbles`");
    assert_eq!(
        text(&echo.expect("echo")),
        "still here",
        "the healthy upstream is unaffected"
    );

    // The dead one is restarted with backoff and serves again.
    let back = mcp_examples::wait_until(Duration::from_secs(10), || {
        let status = agg.status();
        std::future::ready(status.iter().any(|s| s.key == "dies" && s.connected))
    })
    .await;
    assert!(back, "the upstream that died was restarted");

    agg.shutdown().await;
    let remaining = settle_marked(MARKER, 0).await;
    assert_eq!(remaining, 0, "no child process is left behind");
}

/// A handler whose two tools clash once sanitised.
struct Named(&'static str);

#[async_trait::async_trait]
impl ServerHandler for Named {
    fn capabilities(&self) -> ServerCapabilities {
        tools_only()
    }
    async fn list_tools(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListToolsResult, mcp_types::ErrorObject> {
        let mut tools = vec![object_tool(self.0)];
        if self.0.contains('.') {
            tools.push(object_tool(self.0.replace('.', "_")));
        }
        listing(tools)
    }
    async fn call_tool(
        &self,
        _: &RequestContext,
        _: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, mcp_types::ErrorObject> {
        text_outcome("ok")
    }
}

#[tokio::test]
async fn clashing_namespaces_and_names_stop_start_up_naming_both() {
    let e = Aggregator::start(
        vec![
            in_process("fff-nix", Named("a")),
            in_process("fff_nix", Named("b")),
        ],
        Default::default(),
    )
    .await
    .err()
    .expect("a clash");
    assert_eq!(
        e.to_string(),
        "upstreams `fff-nix` and `fff_nix` both use the namespace `fff_nix`"
    );
    let e = Aggregator::start(
        vec![in_process("x", Named("admin.list"))],
        Default::default(),
    )
    .await
    .err()
    .expect("a clash");
    assert_eq!(
        e.to_string(),
        "`x/admin.list` and `x/admin_list` are both exposed as `x__admin_list`"
    );
}

#[tokio::test]
async fn names_outside_the_should_rules_stay_callable() {
    let agg = Aggregator::start(
        vec![in_process("odd", Named("with space"))],
        Default::default(),
    )
    .await
    .expect("start");
    let names: Vec<String> = agg.tools().into_iter().map(|t| t.name).collect();
    assert!(names.contains(&"odd__with_space".to_owned()), "{names:?}");
    let r = call(&agg, "odd__with_space", json!({}))
        .await
        .expect("call");
    assert_eq!(text(&r), "ok");
    agg.shutdown().await;
}

#[tokio::test]
async fn unknown_tools_are_invalid_params() {
    let agg = Aggregator::start(vec![healthy()], Default::default())
        .await
        .expect("start");
    let e = call(&agg, "echo__nope", json!({}))
        .await
        .expect_err("unknown");
    assert_eq!(e.code, -32602);
    agg.shutdown().await;
}

#[tokio::test]
async fn merged_lists_page_deterministically_and_stale_cursors_are_refused() {
    let options = AggregatorOptions::default().page_size(3);
    let notes = in_process("notes", mcp_examples::notes_tools());
    let agg = Aggregator::start(vec![notes, healthy()], options)
        .await
        .expect("start");
    let (a, b) = mcp_types::transport::memory_pair(16);
    let server = Server::new(agg.clone());
    let notifier = server.clone();
    agg.on_list_changed(move |w| notifier.notify_list_changed(w));
    tokio::spawn(async move { server.serve(b).await });
    let client = mcp_client::Client::connect(a, mcp_client::NoHandler, Default::default())
        .await
        .expect("host");
    let all: Vec<String> = client
        .list_tools()
        .await
        .expect("paged list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(
        all,
        [
            "echo__echo",
            "echo__pixel",
            "echo__weather",
            "echo__fail",
            "echo__count",
            "echo__greet",
            "notes__add",
            "notes__list"
        ],
        "upstreams in key order, each in its own order, across pages"
    );
    let again: Vec<String> = client
        .list_tools()
        .await
        .expect("again")
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(all, again, "the same order every time");
    let first = client
        .request("tools/list", json!({}), &Default::default())
        .await
        .expect("page 1");
    let cursor = first["nextCursor"].as_str().expect("more pages").to_owned();
    // A cursor of another catalog generation (issued before a list change) is refused.
    let e = client
        .request(
            "tools/list",
            json!({"cursor": "999.3"}),
            &Default::default(),
        )
        .await
        .expect_err("stale");
    assert!(matches!(e, mcp_client::ClientError::Server(e) if e.code == -32602));
    let ok = client
        .request("tools/list", json!({"cursor": cursor}), &Default::default())
        .await
        .expect("current cursor");
    assert_eq!(ok["tools"].as_array().map(Vec::len), Some(3));
    agg.shutdown().await;
}

/// A tool that runs until its caller cancels it (or five seconds pass), and says when it
/// began (`.0`) and when it was cancelled (`.1`).
struct Patient(
    std::sync::Arc<tokio::sync::Notify>,
    std::sync::Arc<tokio::sync::Notify>,
);

#[async_trait::async_trait]
impl ServerHandler for Patient {
    fn capabilities(&self) -> ServerCapabilities {
        tools_only()
    }
    async fn list_tools(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListToolsResult, mcp_types::ErrorObject> {
        listing([object_tool("wait")])
    }
    async fn call_tool(
        &self,
        ctx: &RequestContext,
        _: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, mcp_types::ErrorObject> {
        self.0.notify_one();
        if tokio::time::timeout(Duration::from_secs(5), ctx.cancelled())
            .await
            .is_ok()
        {
            self.1.notify_one();
            return Err(mcp_types::ErrorObject::new(-32800, "cancelled"));
        }
        Ok(Outcome::Complete(CallToolResult::default()))
    }
}

#[tokio::test]
async fn a_host_cancelling_a_call_cancels_it_upstream() {
    let began = std::sync::Arc::new(tokio::sync::Notify::new());
    let seen = std::sync::Arc::new(tokio::sync::Notify::new());
    let agg = Aggregator::start(
        vec![in_process("slow", Patient(began.clone(), seen.clone()))],
        Default::default(),
    )
    .await
    .expect("start");
    let host = host(&agg, mcp_client::NoHandler, Default::default()).await;
    let cancel = std::sync::Arc::new(tokio::sync::Notify::new());
    let opts = mcp_client::CallOptions::default().cancel(cancel.clone());
    let call = host.call_tool_with("slow__wait", Default::default(), &opts);
    let trigger = async {
        tokio::time::timeout(Duration::from_secs(5), began.notified())
            .await
            .expect("the call reached the upstream");
        cancel.notify_one();
    };
    let (out, ()) = tokio::join!(call, trigger);
    assert!(
        matches!(out, Err(mcp_client::ClientError::Cancelled)),
        "{out:?}"
    );
    tokio::time::timeout(Duration::from_secs(3), seen.notified())
        .await
        .expect("the upstream saw the cancellation");
    host.close().await;
    agg.shutdown().await;
}

/// A stdio server with `lookup` (idempotent) and `order` (no annotations). It records every
/// call in the file named by argv[1] and dies on the first call of each tool.
fn flaky_script() -> String {
    python_upstream(
        "flaky",
        "log = sys.argv[1]",
        json!([
            {"name": "lookup", "inputSchema": {"type": "object"}, "annotations": {"idempotentHint": true, "destructiveHint": false}},
            {"name": "order", "inputSchema": {"type": "object"}},
        ]),
        r#"
name = msg["params"]["name"]
with open(log, "a+") as f:
    f.seek(0)
    before = f.read().split()
    f.write(name + "\n")
if name not in before:
    sys.exit(3)
send({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": "ok " + name}]}})
"#,
    )
}

#[tokio::test]
async fn only_idempotent_calls_are_retried_after_a_dropped_connection() {
    for session in [SessionMode::Shared, SessionMode::default()] {
        idempotent_retry(session).await;
    }
}

/// Shared: the one connection drops and restarts. Per host: each host's own session drops
/// and the retry opens a new one.
async fn idempotent_retry(session: SessionMode) {
    let log = std::env::temp_dir().join(format!("mcp-proxy-flaky-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let shared = session == SessionMode::Shared;
    let flaky = UpstreamConfig::new(
        "flaky",
        UpstreamTransport::Stdio(StdioCommand::new(
            "python3",
            [
                "-c".to_owned(),
                flaky_script(),
                log.display().to_string(),
                MARKER.to_owned(),
            ],
        )),
    )
    .trusted(true)
    .session(session);
    let options = AggregatorOptions::default()
        .connect_timeout(Duration::from_secs(10))
        .restart_backoff((Duration::from_millis(100), Duration::from_secs(1)));
    let agg = Aggregator::start(vec![flaky], options)
        .await
        .expect("start");
    let calls = |name: &str| {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| *l == name)
            .count()
    };

    let restarts = agg.status()[0].restarts;
    let order = call(&agg, "flaky__order", json!({}))
        .await
        .expect("a result");
    fails_saying(&order, "`flaky`");
    assert_eq!(calls("order"), 1, "a non-idempotent call is never repeated");

    if shared {
        // Let the restart after `order` finish, so `lookup` meets a live upstream first.
        let restarted = mcp_examples::wait_until(Duration::from_secs(10), || {
            let s = &agg.status()[0];
            std::future::ready(s.restarts > restarts && s.connected)
        })
        .await;
        assert!(restarted, "the upstream restarted after `order`");
    }
    let lookup = call(&agg, "flaky__lookup", json!({}))
        .await
        .expect("a result");
    assert_eq!(
        text(&lookup),
        "ok lookup",
        "an idempotent call is retried once restarted (calls: {})",
        calls("lookup")
    );
    assert_eq!(calls("lookup"), 2);

    agg.shutdown().await;
    let _ = std::fs::remove_file(&log);
}

/// Tools `grow` and whatever `grow` added; `grow` adds `extra` and announces the change.
struct Growing(std::sync::Arc<std::sync::Mutex<Vec<&'static str>>>);

#[async_trait::async_trait]
impl ServerHandler for Growing {
    fn capabilities(&self) -> ServerCapabilities {
        changing_tools()
    }
    async fn list_tools(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListToolsResult, mcp_types::ErrorObject> {
        let names = self.0.lock().map(|n| n.clone()).unwrap_or_default();
        listing(names.into_iter().map(object_tool))
    }
    async fn call_tool(
        &self,
        ctx: &RequestContext,
        p: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, mcp_types::ErrorObject> {
        if p.name == "grow" {
            if let Ok(mut n) = self.0.lock() {
                n.retain(|t| *t != "grow");
                n.push("extra");
            }
            ctx.list_changed(mcp_server::ListChanged::Tools);
        }
        text_outcome(format!("ran {}", p.name))
    }
}

#[tokio::test]
async fn calls_follow_the_catalog_after_an_upstream_list_change() {
    let names = std::sync::Arc::new(std::sync::Mutex::new(vec!["grow"]));
    let agg = Aggregator::start(
        vec![in_process("g", Growing(names.clone()))],
        Default::default(),
    )
    .await
    .expect("start");
    let r = call(&agg, "g__grow", json!({})).await.expect("grow");
    assert_eq!(text(&r), "ran grow");
    let listed = mcp_examples::wait_until(Duration::from_secs(5), || {
        std::future::ready(agg.tools().iter().any(|t| t.name == "g__extra"))
    })
    .await;
    assert!(
        listed,
        "the new tool is listed after the upstream's list change"
    );
    let r = call(&agg, "g__extra", json!({}))
        .await
        .expect("the new tool routes");
    assert_eq!(text(&r), "ran extra");
    let e = call(&agg, "g__grow", json!({}))
        .await
        .expect_err("the removed tool no longer routes");
    assert_eq!(e.code, -32602);
    agg.shutdown().await;
}
