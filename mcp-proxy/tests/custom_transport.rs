//! An upstream on a transport of the embedder's own (`UpstreamTransport::Custom`): its
//! connector opens the connection at start and again when the connection ends, and calls
//! go through it like any other upstream's.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_proxy::{
    Aggregator, AggregatorOptions, SessionMode, UpstreamConfig, UpstreamConnector,
    UpstreamTransport,
};
use mcp_server::{Outcome, RequestContext, Server, ServerHandler};
use mcp_types::protocol::*;
use mcp_types::transport::{memory_pair, Transport};
use mcp_types::ErrorObject;
use serde_json::json;

mod common;
use common::{listing, object_tool, text_outcome, tools_only};

/// Says which connection answered.
struct Numbered(usize);

#[async_trait::async_trait]
impl ServerHandler for Numbered {
    fn capabilities(&self) -> ServerCapabilities {
        tools_only()
    }
    async fn list_tools(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        listing([object_tool("which")])
    }
    async fn call_tool(
        &self,
        _: &RequestContext,
        _: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        text_outcome(format!("connection {}", self.0))
    }
}

/// A connector over in-memory pairs, each served by a server of its own; it keeps the
/// server side of the latest so the test can cut it.
#[derive(Default)]
struct Pairs {
    opened: AtomicUsize,
    latest: Mutex<Option<Arc<dyn Transport>>>,
}

#[async_trait::async_trait]
impl UpstreamConnector for Pairs {
    async fn connect(&self) -> Result<Box<dyn Transport>, mcp_proxy::UpstreamError> {
        let n = self.opened.fetch_add(1, Ordering::SeqCst) + 1;
        let (ours, theirs) = memory_pair(16);
        let theirs: Arc<dyn Transport> = Arc::new(theirs);
        if let Ok(mut l) = self.latest.lock() {
            *l = Some(theirs.clone());
        }
        let server = Server::new(Numbered(n));
        tokio::spawn(async move { server.serve(theirs).await });
        Ok(Box::new(ours))
    }

    fn describe(&self) -> String {
        "memory pairs".into()
    }
}

fn text(call: &mcp_client::ToolCall) -> String {
    match call.result.content.first() {
        Some(ContentBlock::Text(t)) => t.text.clone(),
        other => format!("{other:?}"),
    }
}

#[tokio::test]
async fn a_custom_transport_is_opened_by_its_connector_and_again_after_it_ends() {
    let pairs = Arc::new(Pairs::default());
    let upstream = UpstreamConfig::new("own", UpstreamTransport::Custom(pairs.clone()))
        .session(SessionMode::Shared);
    assert_eq!(format!("{:?}", upstream.transport), "custom memory pairs");
    let options = AggregatorOptions::default()
        .restart_backoff((Duration::from_millis(50), Duration::from_millis(200)));
    let agg = Aggregator::start(vec![upstream], options)
        .await
        .expect("start");
    let host = common::host(&agg, mcp_client::NoHandler, Default::default()).await;
    let first = host
        .call_tool("own__which", common::arguments(json!({})))
        .await
        .expect("a call through the custom transport");
    assert_eq!(text(&first), "connection 1");

    // The far side goes away: the aggregator opens a new connection through the connector.
    let cut = pairs
        .latest
        .lock()
        .ok()
        .and_then(|l| l.clone())
        .expect("open");
    cut.close().await;
    let again = std::sync::Mutex::new(None);
    mcp_examples::wait_until(Duration::from_secs(2), || async {
        let call = host
            .call_tool("own__which", common::arguments(json!({})))
            .await;
        match call {
            Ok(call) if !call.result.is_error() => {
                *again.lock().expect("lock") = Some(text(&call));
                true
            }
            _ => false,
        }
    })
    .await;
    let again = again.into_inner().expect("lock");
    assert_eq!(again.as_deref(), Some("connection 2"));
    assert_eq!(pairs.opened.load(Ordering::SeqCst), 2);
    assert_eq!(agg.status()[0].restarts, 1);
    host.close().await;
    agg.shutdown().await;
}
