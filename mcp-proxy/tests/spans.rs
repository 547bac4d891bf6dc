//! The gateway's `tracing` spans: each host request is an `mcp.request` span (method,
//! revision, tool, outcome) and each call relayed to an upstream an `mcp.upstream_call`
//! span under it (upstream, tool as the upstream names it, the host's revision, outcome),
//! on the fast path a call takes and on the task path a call with progress takes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mcp_client::StdioCommand;
use mcp_proxy::{Aggregator, AggregatorOptions, SessionMode, UpstreamConfig, UpstreamTransport};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

mod common;
use common::python::python_upstream;

/// One span as it was closed: its name, fields, and its parent's name.
#[derive(Debug, Clone, Default)]
struct Seen {
    name: String,
    fields: HashMap<String, String>,
    parent: Option<String>,
    closed: bool,
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<HashMap<u64, Seen>>>);

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut seen = Seen {
            name: attrs.metadata().name().to_owned(),
            parent: ctx
                .span(id)
                .and_then(|s| s.parent())
                .map(|p| p.name().to_owned()),
            ..Default::default()
        };
        attrs.record(&mut Fields(&mut seen.fields));
        if let Ok(mut spans) = self.0.lock() {
            spans.insert(id.into_u64(), seen);
        }
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        if let Some(seen) = self
            .0
            .lock()
            .ok()
            .as_mut()
            .and_then(|s| s.get_mut(&id.into_u64()))
        {
            values.record(&mut Fields(&mut seen.fields));
        }
    }
    fn on_close(&self, id: Id, _: Context<'_, S>) {
        if let Some(seen) = self
            .0
            .lock()
            .ok()
            .as_mut()
            .and_then(|s| s.get_mut(&id.into_u64()))
        {
            seen.closed = true;
        }
    }
}

fn upstream() -> UpstreamConfig {
    let tools = json!([{"name": "ok", "inputSchema": {"type": "object"}},
                       {"name": "oops", "inputSchema": {"type": "object"}}]);
    let on_call = r#"
send({"jsonrpc": "2.0", "id": i, "result": {"content": [], "isError": msg["params"]["name"] == "oops"}})
"#;
    let script = python_upstream("up", "", tools, on_call);
    UpstreamConfig::new(
        "up",
        UpstreamTransport::Stdio(StdioCommand::new("python3", ["-c".to_owned(), script])),
    )
    .session(SessionMode::Shared)
}

#[tokio::test]
async fn each_relayed_call_is_an_upstream_span_under_its_host_request() {
    let recorder = Recorder::default();
    let subscriber = tracing_subscriber::registry().with(recorder.clone());
    let _default = tracing::subscriber::set_default(subscriber);

    let agg = Aggregator::start(vec![upstream()], AggregatorOptions::default())
        .await
        .expect("start");
    let host = common::host(&agg, mcp_client::NoHandler, Default::default()).await;
    host.call_tool("up__ok", common::arguments(json!({})))
        .await
        .expect("ok");
    let oops = host
        .call_tool("up__oops", common::arguments(json!({})))
        .await
        .expect("a result");
    assert_eq!(oops.result.is_error, Some(true));
    // With a progress token the call takes the task path.
    let (progress, _updates) = tokio::sync::mpsc::unbounded_channel();
    let options = mcp_client::CallOptions::default().progress(progress);
    host.call_tool_with("up__ok", common::arguments(json!({})), &options)
        .await
        .expect("ok with progress");
    host.close().await;
    agg.shutdown().await;

    let spans: Vec<Seen> = recorder
        .0
        .lock()
        .expect("spans")
        .values()
        .cloned()
        .collect();
    let upstream_calls: Vec<&Seen> = spans
        .iter()
        .filter(|s| s.name == "mcp.upstream_call")
        .collect();
    assert_eq!(upstream_calls.len(), 3, "{spans:#?}");
    for (tool, outcome, n) in [("ok", "ok", 2), ("oops", "is_error", 1)] {
        let of_tool: Vec<_> = upstream_calls
            .iter()
            .filter(|s| s.fields.get("tool").map(String::as_str) == Some(tool))
            .collect();
        assert_eq!(of_tool.len(), n, "{spans:#?}");
        for s in of_tool {
            assert_eq!(s.fields.get("upstream").map(String::as_str), Some("up"));
            assert_eq!(s.fields.get("outcome").map(String::as_str), Some(outcome));
            assert!(s.fields.contains_key("host_revision"), "{s:?}");
            assert_eq!(s.parent.as_deref(), Some("mcp.request"), "{s:?}");
            assert!(s.closed, "{s:?}");
        }
    }
    let calls: Vec<&Seen> = spans
        .iter()
        .filter(|s| {
            s.name == "mcp.request"
                && s.fields.get("method").map(String::as_str) == Some("tools/call")
        })
        .collect();
    assert_eq!(calls.len(), 3, "{spans:#?}");
    for s in calls {
        assert!(
            s.fields.get("tool").is_some_and(|t| t.starts_with("up__")),
            "{s:?}"
        );
        assert_eq!(
            s.fields.get("outcome").map(String::as_str),
            Some("ok"),
            "{s:?}"
        );
        assert!(s.closed, "{s:?}");
    }
}
