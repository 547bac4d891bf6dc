//! Era bridging: upstreams that ask their client (elicitation) during a call — a legacy one
//! with a real request, a 2026 one with `InputRequiredResult` — reached through the
//! Aggregator by 2026 and legacy hosts (our client, in memory).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_client::{CallOptions, ClientError, ClientHandler, ClientOptions, EraChoice, NoHandler};
use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig, UpstreamTransport};
use mcp_server::Server;
use mcp_types::protocol::*;
use mcp_types::{ErrorObject, Revision};
use serde_json::{json, Map, Value};

mod common;
use common::*;

/// The echo server's tools spoken in 2025-06-18: `greet` sends a real
/// `elicitation/create` to its client (the gateway) during the call.
fn legacy_echo() -> UpstreamConfig {
    UpstreamConfig::new(
        "echo",
        UpstreamTransport::InProcess(Server::new(mcp_examples::echo_tools())),
    )
    .revision(Revision::V2025_06_18)
}

struct Ada;

#[async_trait::async_trait]
impl ClientHandler for Ada {
    async fn elicit(&self, p: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        assert_eq!(p.message, "What is your name?");
        let mut content = Map::new();
        content.insert("name".into(), json!("Ada"));
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
            ..Default::default()
        })
    }
}

fn options(era: EraChoice, elicitation: bool) -> ClientOptions {
    ClientOptions::default()
        .era(era)
        .capabilities(ClientCapabilities {
            elicitation: elicitation.then(Map::new),
            ..Default::default()
        })
}

/// The same tools spoken in 2026-07-28: `greet` answers `InputRequiredResult`.
fn modern_echo() -> UpstreamConfig {
    legacy_echo().revision(Revision::V2026_07_28)
}

#[tokio::test]
async fn upstream_elicitation_reaches_hosts_of_both_eras_from_upstreams_of_both_eras() {
    for upstream in [legacy_echo(), modern_echo()] {
        let pinned = upstream.revision;
        let agg = Aggregator::start(vec![upstream], Default::default())
            .await
            .expect("start");
        for era in [EraChoice::Modern, EraChoice::Legacy(Revision::V2025_06_18)] {
            let client = host(&agg, Ada, options(era, true)).await;
            let r = client
                .call_tool("echo__greet", Map::new())
                .await
                .unwrap_or_else(|e| panic!("call: {e:?} {pinned:?} upstream, {era:?} host"));
            assert_eq!(
                text(&r.result),
                "Hello, Ada!",
                "{pinned:?} upstream, {era:?} host"
            );
            client.close().await;
        }
        agg.shutdown().await;
    }
}

#[tokio::test]
async fn a_host_without_elicitation_gets_the_upstreams_failure() {
    let agg = Aggregator::start(vec![legacy_echo()], Default::default())
        .await
        .expect("start");
    let client = host(&agg, NoHandler, options(EraChoice::Modern, false)).await;
    match client.call_tool("echo__greet", Map::new()).await {
        // With a session of its own the upstream hears what the host declared and refuses
        // itself; on a shared one the gateway refuses for the host.
        Err(ClientError::Server(e)) => {
            assert!(
                e.message.contains("does not support elicitation/create")
                    || e.message
                        .contains("Missing required client capability: elicitation"),
                "{}",
                e.message
            )
        }
        other => panic!("expected the upstream's error, got {other:?}"),
    }
    client.close().await;
    agg.shutdown().await;
}

#[tokio::test]
async fn request_state_is_single_use_expires_and_cannot_be_invented() {
    let options_agg = AggregatorOptions::default().input_timeout(Duration::from_millis(300));
    let agg = Aggregator::start(vec![legacy_echo()], options_agg)
        .await
        .expect("start");
    let client = host(&agg, NoHandler, options(EraChoice::Modern, true)).await;
    let raw = CallOptions::default().return_input_required(true);
    let (state, key) = greeted(&client).await;
    let retry = |state: &str| {
        json!({"name": "echo__greet", "arguments": {}, "requestState": state,
               "inputResponses": {key.clone(): {"action": "accept", "content": {"name": "Grace"}}}})
    };
    let refused = |r: Result<Value, ClientError>| match r {
        Err(ClientError::Server(e)) => assert_eq!(e.code, -32602, "{}", e.message),
        other => panic!("expected -32602, got {other:?}"),
    };
    let mut invented = state.clone();
    invented.pop();
    invented.push(if state.ends_with('0') { '1' } else { '0' });
    refused(client.request("tools/call", retry(&invented), &raw).await);

    let done = client
        .request("tools/call", retry(&state), &raw)
        .await
        .expect("answered");
    assert_eq!(done["content"][0]["text"], "Hello, Grace!", "{done}");
    refused(client.request("tools/call", retry(&state), &raw).await);

    let (state, _) = greeted(&client).await;
    // The state expiring is the behaviour under test: the gateway's own timer drops it
    // after input_timeout (300 ms) and tells no one, so there is no event to wait on.
    // 800 ms, well past it.
    tokio::time::sleep(Duration::from_millis(800)).await;
    refused(client.request("tools/call", retry(&state), &raw).await);
    client.close().await;
    agg.shutdown().await;
}

/// A call parked for a 2026 host's answers resumes after a reload: the aggregator the
/// reload makes takes the parked calls over, so the host's retry, with the gateway's
/// `requestState`, reaches the upstream's open request and gets its answer.
#[tokio::test]
async fn a_call_parked_for_the_hosts_answers_resumes_after_a_reload() {
    let agg = Aggregator::start(vec![legacy_echo()], Default::default())
        .await
        .expect("start");
    let live = mcp_proxy::live::Live::new(agg);
    let server = live.server(Default::default());
    let (a, b) = mcp_types::transport::memory_pair(16);
    tokio::spawn(async move { server.serve(b).await });
    let client = mcp_client::Client::connect(a, NoHandler, options(EraChoice::Modern, true))
        .await
        .expect("host connects");
    let mut opts = CallOptions::default();
    opts.return_input_required = true;
    let asked = client
        .request("tools/call", json!({"name": "echo__greet"}), &opts)
        .await
        .expect("a question");
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let state = asked["requestState"].clone();
    let key = asked["inputRequests"]
        .as_object()
        .and_then(|r| r.keys().next().cloned())
        .expect("one question");

    let reloaded = live
        .reload(
            vec![legacy_echo()],
            Default::default(),
            |_| true,
            Duration::from_secs(5),
        )
        .await
        .expect("reload");
    assert!(reloaded.started.is_empty() && reloaded.closed.is_empty());

    let retry = json!({
        "name": "echo__greet",
        "inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}},
        "requestState": state,
    });
    let answer = client
        .request("tools/call", retry, &opts)
        .await
        .expect("the parked call's answer");
    assert_eq!(answer["content"][0]["text"], "Hello, Ada!", "{answer}");
    client.close().await;
    live.current().shutdown().await;
}

/// Arguments of `greet_long`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct LongArgs {
    text: String,
}

/// An upstream whose `greet_long` asks the name (as `greet` does), then answers with the
/// length of the text it was called with: on the round that completes it, too.
fn long_greeter(revision: Revision) -> UpstreamConfig {
    let mut tools = mcp_server::ToolRegistry::new();
    tools.tool(
        "greet_long",
        "Asks the name, then counts the text.",
        |a: LongArgs, ctx: mcp_server::RequestContext| async move {
            let Some(answer) = ctx.input_response("name") else {
                let question = mcp_examples::name_question("long:1");
                return Ok(mcp_server::Outcome::InputRequired(question));
            };
            let name = answer.pointer("/content/name").and_then(Value::as_str);
            let text = format!("Hello, {}! {} bytes", name.unwrap_or("?"), a.text.len());
            Ok(mcp_server::Outcome::Complete(CallToolResult {
                content: vec![ContentBlock::text(text)],
                ..Default::default()
            }))
        },
    );
    UpstreamConfig::new("long", UpstreamTransport::InProcess(Server::new(tools))).revision(revision)
}

/// A large call lets go of its arguments once they are upstream, unless a round of input
/// must send them again: a 2026 upstream's question is answered by a new request carrying
/// them, on behalf of a legacy host; a legacy upstream's by the request already there.
#[tokio::test]
async fn a_large_calls_question_is_answered_in_every_era_pairing() {
    let long = "x".repeat(200 * 1024);
    for upstream in [Revision::V2025_06_18, Revision::V2026_07_28] {
        let agg = Aggregator::start(vec![long_greeter(upstream)], Default::default())
            .await
            .expect("start");
        for era in [EraChoice::Modern, EraChoice::Legacy(Revision::V2025_06_18)] {
            let client = host(&agg, Ada, options(era, true)).await;
            let mut args = Map::new();
            args.insert("text".into(), json!(long));
            let r = client
                .call_tool("long__greet_long", args)
                .await
                .unwrap_or_else(|e| panic!("call: {e:?} {upstream:?} upstream, {era:?} host"));
            assert_eq!(
                text(&r.result),
                format!("Hello, Ada! {} bytes", long.len()),
                "{upstream:?} upstream, {era:?} host"
            );
            client.close().await;
        }
        agg.shutdown().await;
    }
}

/// An upstream whose `ask` asks its client `question` once, and how often `ask` ran.
fn asker(question: Value) -> (UpstreamConfig, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let mut tools = mcp_server::ToolRegistry::new();
    tools.tool(
        "ask",
        "Asks once, then counts the text.",
        move |a: LongArgs, ctx: mcp_server::RequestContext| {
            let (runs, question) = (counted.clone(), question.clone());
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                if ctx.input_response("q").is_none() {
                    let mut requests = Map::new();
                    requests.insert("q".into(), question);
                    return Ok(mcp_server::Outcome::InputRequired(InputRequiredResult {
                        input_requests: Some(requests),
                        request_state: Some("ask:1".into()),
                        ..Default::default()
                    }));
                }
                Ok(mcp_server::Outcome::Complete(CallToolResult {
                    content: vec![ContentBlock::text(format!("{} bytes", a.text.len()))],
                    ..Default::default()
                }))
            }
        },
    );
    let up = UpstreamConfig::new("ask", UpstreamTransport::InProcess(Server::new(tools)))
        .revision(Revision::V2026_07_28);
    (up, runs)
}

/// A legacy (2025-06-18) host that declared elicitation or not calls `ask` with `text`,
/// whose upstream asks `question`: the call's error, and how often the upstream ran it.
async fn ask_legacy_host(question: Value, elicitation: bool, text: String) -> (ErrorObject, usize) {
    let (up, runs) = asker(question);
    let agg = Aggregator::start(vec![up], Default::default())
        .await
        .expect("start");
    let era = EraChoice::Legacy(Revision::V2025_06_18);
    let client = host(&agg, Ada, options(era, elicitation)).await;
    let mut args = Map::new();
    args.insert("text".into(), json!(text));
    let error = match client.call_tool("ask__ask", args).await {
        Err(ClientError::Server(e)) => e,
        other => panic!("expected an error, got {other:?}"),
    };
    client.close().await;
    agg.shutdown().await;
    (error, runs.load(Ordering::SeqCst))
}

/// A legacy host that declared no capability a question needs lets go of a large call's
/// arguments: the 2026 upstream's question is refused for want of the capability, and the
/// call never runs again (which it could only do without its arguments).
#[tokio::test]
async fn a_host_that_cannot_be_asked_is_refused_and_the_call_runs_once() {
    let question = json!({"method": "elicitation/create", "params": {
        "mode": "form", "message": "What is your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
    }});
    let (e, runs) = ask_legacy_host(question, false, "x".repeat(200 * 1024)).await;
    assert_eq!(
        e.code,
        mcp_types::codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        "{}",
        e.message
    );
    assert_eq!(runs, 1, "the call ran once");
}

/// A question of none of the kinds `InputRequest` allows (sampling, elicitation, roots)
/// cannot be put to a legacy host as a request of its revision: refused, the host is not
/// asked, and the call does not run again.
#[tokio::test]
async fn a_question_of_no_known_kind_is_refused_for_a_legacy_host() {
    let question = json!({"method": "custom/ask", "params": {"what": "anything"}});
    let (e, runs) = ask_legacy_host(question, true, "short".into()).await;
    assert!(
        e.message.contains("custom/ask") && e.message.contains("not a kind of input request"),
        "{}",
        e.message
    );
    assert_eq!(runs, 1, "the call ran once");
}
