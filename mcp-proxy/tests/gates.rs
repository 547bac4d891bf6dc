//! The gates of a `tools/call` (route, view, policy, task plan, pinning, confirmation)
//! are written once: a call that goes without a task of its own and the same call driven
//! on one (a progress token sends it there) are refused and allowed alike. Each case is
//! run both ways, from a 2025-11-25 host (the revision with every gate: tasks and
//! elicitation), and must give the outcome the table says.

use std::sync::{Arc, Mutex};

use mcp_client::{CallOptions, Client, ClientError, ClientHandler, EraChoice, NoHandler};
use mcp_proxy::pins::{PinAction, Pins};
use mcp_proxy::policy::{AskHost, Confirm, Confirmation, GlobFilter, Verdict};
use mcp_proxy::views::{Audience, View, ViewRules};
use mcp_proxy::{Aggregator, AggregatorOptions};
use mcp_types::protocol::*;
use mcp_types::{ErrorObject, Revision};
use serde_json::{json, Map, Value};

mod common;
use common::*;

/// `plain` (no hints: it may be destructive), `reader` (read-only), `secret` (denied by
/// the upstream's filter), `hidden` (outside every view), `no_task` (forbids tasks).
fn shop() -> Ran {
    let object = json!({"type": "object"});
    Ran(vec![
        json!({"name": "plain", "inputSchema": object}),
        json!({"name": "reader", "inputSchema": object, "annotations": {"readOnlyHint": true}}),
        json!({"name": "secret", "inputSchema": object, "annotations": {"readOnlyHint": true}}),
        json!({"name": "hidden", "inputSchema": object, "annotations": {"readOnlyHint": true}}),
        json!({"name": "no_task", "inputSchema": object, "annotations": {"readOnlyHint": true},
               "execution": {"taskSupport": "forbidden"}}),
    ])
}

/// The confirmation hook of a gateway: none, one that refuses, one that asks the user.
#[derive(Clone, Copy, Debug)]
enum Hook {
    None,
    Refuse,
    Ask,
}

struct Refuse;

#[async_trait::async_trait]
impl Confirm for Refuse {
    async fn confirm(&self, _: &Confirmation<'_>) -> Verdict {
        Verdict::Refuse("not today".into())
    }
}

/// A gateway over `shop()` (trusted hints: `reader` needs no confirmation) with the filter
/// and view of every case, `hook`, and every unpinned tool asking the user when `ask_pins`.
async fn gateway(hook: Hook, ask_pins: bool) -> Aggregator {
    let filter = GlobFilter {
        allow: None,
        deny: vec!["secret".into()],
    };
    let view = View::new("everyone").tools(GlobFilter {
        allow: None,
        deny: vec!["shop__hidden".into()],
    });
    let mut options = AggregatorOptions::default()
        .views(Arc::new(ViewRules::new().rule(Audience::everyone(), view)));
    options = match hook {
        Hook::None => options,
        Hook::Refuse => options.confirm(Arc::new(Refuse)),
        Hook::Ask => options.confirm(Arc::new(AskHost)),
    };
    if ask_pins {
        let mut pins = Pins::new();
        pins.unpinned = PinAction::Ask;
        options = options.pins(pins);
    }
    let shop = in_process("shop", shop()).trusted(true).tools(filter);
    Aggregator::start(vec![shop], options).await.expect("start")
}

/// Answers every question yes, counting them.
#[derive(Clone, Default)]
struct Yes(Arc<Mutex<usize>>);

#[async_trait::async_trait]
impl ClientHandler for Yes {
    async fn elicit(&self, _: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        if let Ok(mut n) = self.0.lock() {
            *n += 1;
        }
        let mut content = Map::new();
        content.insert("confirm".into(), json!(true));
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
            ..Default::default()
        })
    }
}

/// What a call came to, comparable across paths.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    /// A JSON-RPC error: its code and message.
    Error(i64, String),
    /// A result: whether it is an error, and its text.
    Result(bool, String),
}

async fn call(client: &Client, params: Value, full: bool) -> Seen {
    let mut opts = CallOptions::default();
    // Progress is relayed by a task: the same call, driven on one.
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    if full {
        opts = opts.progress(tx);
    }
    match client.request(method::TOOLS_CALL, params, &opts).await {
        Ok(v) => {
            let r: CallToolResult = serde_json::from_value(v).expect("a result");
            Seen::Result(r.is_error == Some(true), text(&r))
        }
        Err(ClientError::Server(e)) => Seen::Error(e.code, e.message),
        Err(other) => panic!("the call failed: {other:?}"),
    }
}

/// One row: the gateway, whether the host can answer questions, the call, what it gives.
struct Case {
    hook: Hook,
    ask_pins: bool,
    elicits: bool,
    params: Value,
    expect: fn(&Seen) -> bool,
}

fn ran(tool: &'static str) -> impl Fn(&Seen) -> bool {
    move |s| *s == Seen::Result(false, format!("ran {tool}"))
}

fn cases() -> Vec<Case> {
    let case = |hook, ask_pins, elicits, params, expect| Case {
        hook,
        ask_pins,
        elicits,
        params,
        expect,
    };
    let unknown = |s: &Seen| matches!(s, Seen::Error(-32602, m) if m.starts_with("Unknown tool"));
    vec![
        // Route: a tool nobody has, one outside the view, one the policy denies.
        case(
            Hook::None,
            false,
            false,
            json!({"name": "shop__nothing"}),
            unknown,
        ),
        case(
            Hook::None,
            false,
            false,
            json!({"name": "shop__hidden"}),
            unknown,
        ),
        case(
            Hook::None,
            false,
            false,
            json!({"name": "shop__secret"}),
            |s| matches!(s, Seen::Error(-32602, m) if m.contains("not allowed by this gateway's policy")),
        ),
        case(
            Hook::None,
            false,
            false,
            json!({"arguments": {}}),
            |s| matches!(s, Seen::Error(-32602, m) if m.contains("`name`")),
        ),
        // Task plan: a task asked of a tool that forbids one.
        case(
            Hook::None,
            false,
            false,
            json!({"name": "shop__no_task", "task": {}}),
            |s| matches!(s, Seen::Error(-32601, m) if m.contains("cannot run as a task")),
        ),
        // Nothing in the way.
        case(
            Hook::None,
            false,
            false,
            json!({"name": "shop__plain"}),
            |s| ran("plain")(s),
        ),
        // Confirmation: refused by the hook; asked of a host that cannot answer, and of
        // one that says yes; not asked for a read-only tool with trusted hints.
        case(
            Hook::Refuse,
            false,
            false,
            json!({"name": "shop__plain"}),
            |s| matches!(s, Seen::Result(true, m) if m.contains("not today")),
        ),
        case(
            Hook::Ask,
            false,
            false,
            json!({"name": "shop__plain"}),
            |s| matches!(s, Seen::Result(true, m) if m.contains("cannot ask")),
        ),
        case(
            Hook::Ask,
            false,
            true,
            json!({"name": "shop__plain"}),
            |s| ran("plain")(s),
        ),
        case(
            Hook::Refuse,
            false,
            false,
            json!({"name": "shop__reader"}),
            |s| ran("reader")(s),
        ),
        // Pinning: an unpinned tool asks the user, who cannot answer, or says yes.
        case(
            Hook::None,
            true,
            false,
            json!({"name": "shop__reader"}),
            |s| matches!(s, Seen::Result(true, m) if m.contains("approval")),
        ),
        case(
            Hook::None,
            true,
            true,
            json!({"name": "shop__reader"}),
            |s| ran("reader")(s),
        ),
    ]
}

#[tokio::test]
async fn both_paths_refuse_and_allow_the_same_calls_at_every_gate() {
    let era = EraChoice::Legacy(Revision::V2025_11_25);
    for (row, c) in cases().into_iter().enumerate() {
        let agg = gateway(c.hook, c.ask_pins).await;
        let answered = Yes::default();
        let client = match c.elicits {
            true => host(&agg, answered.clone(), eliciting(era)).await,
            false => {
                host(
                    &agg,
                    NoHandler,
                    eliciting(era).capabilities(Default::default()),
                )
                .await
            }
        };
        let fast = call(&client, c.params.clone(), false).await;
        let full = call(&client, c.params.clone(), true).await;
        assert_eq!(fast, full, "row {row} ({:?}, {})", c.hook, c.params);
        assert!(
            (c.expect)(&fast),
            "row {row} ({:?}, {}): {fast:?}",
            c.hook,
            c.params
        );
        if c.elicits {
            let asked = answered.0.lock().map(|n| *n).unwrap_or_default();
            assert_eq!(asked, 2, "row {row}: the user is asked once on each path");
        }
        client.close().await;
        agg.shutdown().await;
    }
}
