//! The relay alone, built from its parts over an upstream served in process: a call's gates
//! and its answer, by a table of cases.

use std::sync::Arc;

use mcp_server::Outcome;
use mcp_types::codes;
use mcp_types::raw::RawObject;
use serde_json::Value;

use super::Relay;
use crate::aggregator::downgrade::Downgrade;
use crate::aggregator::flights::Flights;
use crate::aggregator::links::Links;
use crate::aggregator::own_lists::OwnSessions;
use crate::aggregator::tasks::Tasks;
use crate::aggregator::test_parts::{connect, ids, in_process, parts, request, sealer};
use crate::aggregator::visibility::Visibility;
use crate::policy::{Confirm, Confirmation, GlobFilter, Surface, ToolFilter, Verdict};

/// A confirmation hook that refuses every call it is asked about.
struct Refuses;

#[async_trait::async_trait]
impl Confirm for Refuses {
    async fn confirm(&self, _: &Confirmation<'_>) -> Verdict {
        Verdict::Refuse("not today".into())
    }
}

/// A relay to upstream `fs` (tools `read` and `delete`, neither annotated: both may be
/// destructive), its tools filtered by `deny`, calls confirmed by `confirm`.
async fn relay(deny: &[&str], confirm: Option<Arc<dyn Confirm>>) -> Relay {
    let mut config = in_process("fs", vec!["read", "delete"]);
    config.tools = Arc::new(GlobFilter {
        allow: None,
        deny: deny.iter().map(|d| d.to_string()).collect(),
    }) as Arc<dyn ToolFilter>;
    let (pool, catalog) = parts(vec![config]);
    let i = ids(1)[0];
    let client = connect(&pool, i).await;
    let listing = pool.first_listing(&client).await.expect("listed");
    catalog.set_listing(i, listing);
    let own = Arc::new(OwnSessions::new(
        pool.clone(),
        catalog.clone(),
        Arc::default(),
    ));
    let links = Links::new(pool, own.clone());
    let flights = Flights::new(links, Arc::default(), sealer(), false, Downgrade::default());
    let keys = ["fs".to_string()].into_iter().collect();
    let visibility = Arc::new(Visibility::new(None, Surface::Direct, keys));
    let tasks = Tasks::new(flights, Arc::default(), visibility.clone());
    Relay::new(
        tasks,
        own,
        catalog,
        visibility,
        Arc::default(),
        super::Watch {
            confirm,
            ..Default::default()
        },
        Downgrade::default(),
    )
}

/// What the host got: a result's text and `isError`, or an error's code and message.
#[derive(Debug, PartialEq)]
enum Got {
    Result { text: String, is_error: bool },
    Error { code: i64, message: String },
}

async fn call(relay: &Relay, name: &str) -> Got {
    let held = request().await;
    let mut params = RawObject::new();
    params.insert_str("name", name);
    match relay.relay_call(&held.ctx, &params).await {
        Ok(Outcome::Complete(r)) => {
            let v: Value = serde_json::from_str(r.body.get()).expect("a result");
            Got::Result {
                text: v["content"][0]["text"].as_str().unwrap_or_default().into(),
                is_error: v["isError"] == Value::Bool(true),
            }
        }
        Ok(_) => panic!("not a plain result"),
        Err(e) => Got::Error {
            code: e.code,
            message: e.message,
        },
    }
}

#[tokio::test]
async fn each_gate_refuses_or_lets_through_what_it_should() {
    struct Case {
        name: &'static str,
        deny: &'static [&'static str],
        confirm: Option<Arc<dyn Confirm>>,
        tool: &'static str,
        /// What the host gets: a result's text (and whether it is an error), else an
        /// error's code and the start of its message.
        result: Option<(&'static str, bool)>,
        error: Option<(i64, &'static str)>,
    }
    let cases = [
        Case {
            name: "a listed tool is called under its real name",
            deny: &[],
            confirm: None,
            tool: "fs__read",
            result: Some(("ran read", false)),
            error: None,
        },
        Case {
            name: "a name nothing lists is an unknown tool",
            deny: &[],
            confirm: None,
            tool: "fs__write",
            result: None,
            error: Some((codes::INVALID_PARAMS, "Unknown tool: fs__write")),
        },
        Case {
            name: "a tool the policy denies is refused and its upstream named",
            deny: &["delete"],
            confirm: None,
            tool: "fs__delete",
            result: None,
            error: Some((
                codes::INVALID_PARAMS,
                "Tool fs__delete of upstream `fs` is not allowed",
            )),
        },
        Case {
            name: "the confirmation hook's refusal is the host's isError result",
            deny: &[],
            confirm: Some(Arc::new(Refuses)),
            tool: "fs__delete",
            result: Some(("The call to fs__delete was refused: not today", true)),
            error: None,
        },
    ];
    for case in cases {
        let relay = relay(case.deny, case.confirm).await;
        let got = call(&relay, case.tool).await;
        match (case.result, case.error) {
            (Some((text, is_error)), None) => assert_eq!(
                got,
                Got::Result {
                    text: text.into(),
                    is_error
                },
                "{}",
                case.name
            ),
            (None, Some((code, starts))) => match got {
                Got::Error { code: c, message } => {
                    assert_eq!(c, code, "{}", case.name);
                    assert!(message.starts_with(starts), "{}: {message}", case.name);
                }
                other => panic!("{}: {other:?}", case.name),
            },
            _ => unreachable!("a case says one outcome"),
        }
    }
}
