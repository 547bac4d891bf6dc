//! The call relay's own behaviour: calls taken without a task keep the gateway serving
//! when hosts go away in the middle of them, and time out like any other.

mod common;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use common::{host, in_process, listing, object_tool, text, text_outcome, tools_only};
use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig};
use mcp_server::{Outcome, RequestContext, ServerHandler};
use mcp_types::protocol::*;
use serde_json::Map;
use tokio::sync::{Notify, Semaphore};

/// `wait` answers once the test releases the calls waiting (each adds a permit to
/// `entered` as it begins); `now` at once.
#[derive(Clone)]
struct Slow {
    entered: Arc<Semaphore>,
    release: Arc<Notify>,
}

#[async_trait]
impl ServerHandler for Slow {
    fn capabilities(&self) -> ServerCapabilities {
        tools_only()
    }
    async fn list_tools(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListToolsResult, mcp_types::ErrorObject> {
        listing(["wait", "now"].map(object_tool))
    }
    async fn call_tool(
        &self,
        _: &RequestContext,
        p: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, mcp_types::ErrorObject> {
        if p.name == "wait" {
            // Waiting before it says it began: a release after that reaches it.
            let released = self.release.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            self.entered.add_permits(1);
            released.await;
        }
        text_outcome(p.name)
    }
}

fn slow(options: AggregatorOptions) -> (Vec<UpstreamConfig>, AggregatorOptions, Slow) {
    let slow = Slow {
        entered: Arc::new(Semaphore::new(0)),
        release: Arc::new(Notify::new()),
    };
    (vec![in_process("slow", slow.clone())], options, slow)
}

#[test]
fn hosts_that_leave_mid_call_leave_the_gateway_serving() {
    // On a runtime of its own, watched from here: a gateway that locked itself up (as
    // one once did, cancelling calls under a lock their answers needed) fails the test
    // instead of hanging it.
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(leave_mid_call());
        let _ = done.send(());
    });
    finished
        .recv_timeout(Duration::from_secs(30))
        .expect("the gateway kept serving after its hosts left mid-call");
}

async fn leave_mid_call() {
    let (ups, options, slow) = slow(AggregatorOptions::default());
    let agg = Aggregator::start(ups, options).await.expect("start");
    // Several hosts leave with calls in flight (their connections close under them), the
    // answers coming after they left...
    for _ in 0..3 {
        let gone = host(&agg, mcp_client::NoHandler, Default::default()).await;
        let calls: Vec<_> = (0..4)
            .map(|_| {
                let gone = gone.clone();
                tokio::spawn(async move { gone.call_tool("slow__wait", Map::new()).await })
            })
            .collect();
        let begun = tokio::time::timeout(Duration::from_secs(5), slow.entered.acquire_many(4));
        begun
            .await
            .expect("the calls reached the upstream")
            .expect("open")
            .forget();
        gone.close().await;
        slow.release.notify_waiters();
        for c in calls {
            let _ = tokio::time::timeout(Duration::from_secs(5), c).await;
        }
    }
    // ...and the next host is served, by the same gateway, at once.
    let next = host(&agg, mcp_client::NoHandler, Default::default()).await;
    let r = tokio::time::timeout(
        Duration::from_secs(5),
        next.call_tool("slow__now", Map::new()),
    )
    .await
    .expect("the gateway still answers")
    .expect("call");
    assert_eq!(text(&r.result), "now");
    next.close().await;
    agg.shutdown().await;
}

#[tokio::test]
async fn a_call_without_an_answer_in_time_is_an_error_result() {
    let options = AggregatorOptions::default().call_timeout(Duration::from_millis(200));
    let (ups, options, _never_released) = slow(options);
    let agg = Aggregator::start(ups, options).await.expect("start");
    let host = host(&agg, mcp_client::NoHandler, Default::default()).await;
    let wait = host.call_tool("slow__wait", Map::new());
    let r = tokio::time::timeout(Duration::from_secs(5), wait)
        .await
        .expect("answered in time")
        .expect("a result");
    assert!(r.result.is_error(), "{:?}", r.result);
    assert!(
        text(&r.result).contains("did not answer within"),
        "{}",
        text(&r.result)
    );
    // The connection is fine afterwards.
    let r = host.call_tool("slow__now", Map::new()).await.expect("call");
    assert_eq!(text(&r.result), "now");
    host.close().await;
    agg.shutdown().await;
}
