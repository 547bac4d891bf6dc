//! What a legacy HTTP session may hold is bounded: an idle session expires (its id gets
//! `404`, and the handler sees its host session end), sessions are capped in number (an
//! `initialize` past the cap gets `503` while every session has a stream open; one whose
//! stream closed makes room), requests in flight are capped per session (`429`, nothing
//! queued), and calls leave nothing behind but a bounded replay log.
//! Driven in-process through the hyper service.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use mcp_server::http::{HttpBody, HttpOptions, StreamableHttp};
use mcp_server::{HostSession, NoArgs, Outcome, Server, ToolRegistry};
use mcp_types::protocol::{CallToolResult, ContentBlock};
use serde_json::{json, Value};
use tokio::sync::Semaphore;

struct Answer {
    status: StatusCode,
    session: Option<String>,
    body: Option<Value>,
}

async fn send(http: &StreamableHttp, method: &str, session: Option<&str>, body: Value) -> Answer {
    send_with(http, method, session, body, false).await
}

async fn send_with(
    http: &StreamableHttp,
    method: &str,
    session: Option<&str>,
    body: Value,
    sse: bool,
) -> Answer {
    let mut b = Request::builder()
        .method(method)
        .uri("/mcp")
        .header("host", "127.0.0.1:8080")
        .header(
            "accept",
            if sse {
                "application/json, text/event-stream"
            } else {
                "application/json"
            },
        );
    if let Some(id) = session {
        b = b.header("mcp-session-id", id);
    }
    let text = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    let req = b.body(Full::new(Bytes::from(text))).expect("request");
    let resp = http.handle(req).await;
    let status = resp.status();
    let session = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    // JSON, or the last event of an SSE stream (the answer).
    let body = serde_json::from_str(&text).ok().or_else(|| {
        text.lines()
            .rev()
            .find_map(|l| l.strip_prefix("data: "))
            .and_then(|d| serde_json::from_str(d).ok())
    });
    Answer {
        status,
        session,
        body,
    }
}

fn initialize(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
}

fn call(id: i64, name: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": args}})
}

/// Opens a session; its id.
async fn open(http: &StreamableHttp) -> String {
    let a = send(http, "POST", None, initialize(0)).await;
    assert_eq!(a.status, StatusCode::OK, "{:?}", a.body);
    let id = a.session.expect("a session id");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        send(http, "POST", Some(&id), note).await.status,
        StatusCode::ACCEPTED
    );
    id
}

fn text_of(a: &Answer) -> String {
    a.body.as_ref().map_or(String::new(), |b| {
        b["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    })
}

/// Tools that note the host session they are called in.
fn tools_noting_hosts(seen: Arc<Mutex<Vec<HostSession>>>) -> ToolRegistry {
    let mut tools = mcp_examples::echo_tools();
    tools.tool(
        "note_host",
        "Notes its host session.",
        move |_: NoArgs, ctx| {
            let seen = seen.clone();
            async move {
                if let (Ok(mut s), Some(h)) = (seen.lock(), ctx.host_session()) {
                    s.push(h.clone());
                }
                Ok(Outcome::Complete(CallToolResult {
                    content: vec![ContentBlock::text("noted")],
                    ..Default::default()
                }))
            }
        },
    );
    tools
}

#[tokio::test]
async fn an_idle_session_expires_ends_its_host_session_and_its_id_gets_404() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let options = HttpOptions::default().session_idle_timeout(Duration::from_millis(200));
    let http = StreamableHttp::new(Server::new(tools_noting_hosts(seen.clone())), options);
    let id = open(&http).await;
    let a = send(&http, "POST", Some(&id), call(1, "note_host", json!({}))).await;
    assert_eq!(text_of(&a), "noted", "{:?}", a.body);
    let host = seen.lock().expect("lock")[0].clone();
    assert!(!host.is_ended());
    // No request comes: the sweeper ends it, and the handler hears it.
    tokio::time::timeout(Duration::from_secs(2), host.ended())
        .await
        .expect("the host session ends once the session expires");
    assert_eq!(http.session_count(), 0);
    let a = send(
        &http,
        "POST",
        Some(&id),
        call(2, "echo", json!({"text": "x"})),
    )
    .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "{:?}", a.body);
    // The client initialises again and goes on.
    let again = open(&http).await;
    let a = send(
        &http,
        "POST",
        Some(&again),
        call(3, "echo", json!({"text": "y"})),
    )
    .await;
    assert_eq!(text_of(&a), "y");
}

#[tokio::test(start_paused = true)]
async fn a_session_in_use_does_not_expire() {
    let options = HttpOptions::default().session_idle_timeout(Duration::from_millis(200));
    let http = StreamableHttp::new(Server::new(mcp_examples::echo_tools()), options);
    let id = open(&http).await;
    for i in 0..8 {
        // Sessions are idle on tokio's clock, paused here: 8 × 100 ms pass at once.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let a = send(
            &http,
            "POST",
            Some(&id),
            call(i, "echo", json!({"text": "k"})),
        )
        .await;
        assert_eq!(a.status, StatusCode::OK, "call {i}: {:?}", a.body);
    }
    // A call running longer than the idle timeout keeps it too.
    let a = send(
        &http,
        "POST",
        Some(&id),
        call(9, "count", json!({"to": 20})),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(http.session_count(), 1);
}

/// A legacy GET stream of `session`, open while the response is held.
async fn open_stream(http: &StreamableHttp, session: &str) -> http::Response<HttpBody> {
    let req = Request::builder()
        .method("GET")
        .uri("/mcp")
        .header("host", "127.0.0.1:8080")
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .body(Full::new(Bytes::new()))
        .expect("request");
    let r = http.handle(req).await;
    assert_eq!(r.status(), StatusCode::OK);
    r
}

#[tokio::test]
async fn past_the_session_cap_a_session_with_a_stream_open_is_not_ended() {
    let options = HttpOptions::default().max_sessions(2);
    let http = StreamableHttp::new(Server::new(mcp_examples::echo_tools()), options);
    let first = open(&http).await;
    let second = open(&http).await;
    let first_stream = open_stream(&http, &first).await;
    let _second_stream = open_stream(&http, &second).await;
    let a = send(&http, "POST", None, initialize(7)).await;
    assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(a.session.is_none());
    let body = a.body.expect("a JSON-RPC error");
    assert_eq!(body["id"], 7, "{body}");
    assert_eq!(body["error"]["code"], -32000, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("sessions")));
    assert_eq!(http.session_count(), 2);
    // Its stream closed, the first is idle: it makes room.
    drop(first_stream);
    let _third = open(&http).await;
    assert_eq!(http.session_count(), 2);
    let gone = send(
        &http,
        "POST",
        Some(&first),
        call(1, "echo", json!({"text": "z"})),
    )
    .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    let a = send(
        &http,
        "POST",
        Some(&second),
        call(2, "echo", json!({"text": "y"})),
    )
    .await;
    assert_eq!(text_of(&a), "y");
}

#[tokio::test]
async fn calls_leave_no_per_call_entries_and_replay_stays_bounded() {
    let options = HttpOptions::default().replay_events(8).replay_bytes(4096);
    let http = StreamableHttp::new(Server::new(mcp_examples::echo_tools()), options);
    let id = open(&http).await;
    for i in 0..150 {
        let a = match i % 3 {
            // JSON only.
            0 => {
                send(
                    &http,
                    "POST",
                    Some(&id),
                    call(i, "echo", json!({"text": "a"})),
                )
                .await
            }
            // A stream allowed, a lone answer: plain JSON.
            1 => {
                let c = call(i, "echo", json!({"text": "a"}));
                send_with(&http, "POST", Some(&id), c, true).await
            }
            // Progress first: an SSE stream.
            _ => {
                let mut c = call(i, "count", json!({"to": 3}));
                c["params"]["_meta"] = json!({"progressToken": format!("p{i}")});
                send_with(&http, "POST", Some(&id), c, true).await
            }
        };
        assert_eq!(a.status, StatusCode::OK, "call {i}: {:?}", a.body);
        assert!(
            a.body.as_ref().is_some_and(|b| b.get("result").is_some()),
            "call {i}: {:?}",
            a.body
        );
    }
    let held = http.retained_entries();
    assert_eq!(
        (held.streams, held.waiting, held.progress, held.parked),
        (0, 0, 0, 0),
        "{held:?}"
    );
    assert!(held.replay_events <= 8, "{held:?}");
    assert!(held.replay_bytes <= 4096, "{held:?}");
    assert!(
        held.replay_events > 0,
        "the SSE calls' events are kept for replay: {held:?}"
    );
}

/// A tool that waits for a permit, so calls stay in flight until the test lets them go;
/// each call adds a permit to `entered` as it starts.
fn held_tools(gate: Arc<Semaphore>, entered: Arc<Semaphore>) -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    tools.tool("wait", "Waits for the gate.", move |_: NoArgs, _ctx| {
        let (gate, entered) = (gate.clone(), entered.clone());
        async move {
            entered.add_permits(1);
            if let Ok(p) = gate.acquire().await {
                p.forget();
            }
            Ok(Outcome::Complete(CallToolResult {
                content: vec![ContentBlock::text("through")],
                ..Default::default()
            }))
        }
    });
    tools
}

#[tokio::test]
async fn requests_past_the_in_flight_cap_are_refused_with_429() {
    let (gate, entered) = (Arc::new(Semaphore::new(0)), Arc::new(Semaphore::new(0)));
    let options = HttpOptions::default().max_in_flight_per_session(2);
    let tools = held_tools(gate.clone(), entered.clone());
    let http = StreamableHttp::new(Server::new(tools), options);
    let id = open(&http).await;
    let waiting: Vec<_> = (1..=2)
        .map(|i| {
            let (http, id) = (http.clone(), id.clone());
            tokio::spawn(
                async move { send(&http, "POST", Some(&id), call(i, "wait", json!({}))).await },
            )
        })
        .collect();
    tokio::time::timeout(Duration::from_secs(2), entered.acquire_many(2))
        .await
        .expect("both calls in flight")
        .expect("the semaphore is open")
        .forget();
    assert_eq!(http.retained_entries().waiting, 2);
    let a = send(&http, "POST", Some(&id), call(3, "wait", json!({}))).await;
    assert_eq!(a.status, StatusCode::TOO_MANY_REQUESTS);
    let body = a.body.expect("a JSON-RPC error");
    assert_eq!(
        (body["id"].clone(), body["error"]["code"].clone()),
        (json!(3), json!(-32000)),
        "{body}"
    );
    gate.add_permits(3);
    for w in waiting {
        let a = w.await.expect("joined");
        assert_eq!(text_of(&a), "through");
    }
    let a = send(&http, "POST", Some(&id), call(4, "wait", json!({}))).await;
    assert_eq!(text_of(&a), "through", "room again once answered");
}

#[tokio::test]
async fn expired_sessions_leave_no_task_behind() {
    let options = HttpOptions::default().session_idle_timeout(Duration::from_millis(100));
    let http = StreamableHttp::new(Server::new(mcp_examples::echo_tools()), options);
    // The sweeper, once running, stays: count from the first session on.
    let first = open(&http).await;
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    for _ in 0..50 {
        open(&http).await;
    }
    assert!(
        metrics.num_alive_tasks() >= before + 50,
        "each session forwards list changes on a task of its own"
    );
    let _ = first;
    // Neither the sweep nor a task's end is an event a test can wait on.
    let settled = mcp_examples::wait_until(Duration::from_secs(3), || {
        std::future::ready(http.session_count() == 0 && metrics.num_alive_tasks() < before)
    })
    .await;
    assert!(
        settled,
        "{} sessions, {} tasks alive (was {before} with one session)",
        http.session_count(),
        metrics.num_alive_tasks()
    );
}
