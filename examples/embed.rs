//! The gateway inside an application of one's own: an axum `Router` with the
//! application's routes, the gateway's Streamable HTTP endpoint nested under `/gateway`
//! (so at `/gateway/mcp`), and a tower layer in front of it that caps the requests it
//! serves at once.

use std::sync::Arc;

use axum::routing::get;
use axum::Router;
use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig, UpstreamTransport};
use mcp_server::http::{Health, HttpOptions, StreamableHttp};
use mcp_server::{Server, ServerOptions};

/// Requests the gateway serves at once; more wait for a slot.
pub const GATEWAY_CONCURRENCY: usize = 64;

/// The application: `GET /` is its own, `/gateway/mcp` the gateway in front of the echo
/// tools (in process here; any `UpstreamConfig` works), `/gateway/healthz` and
/// `/gateway/readyz` its probes. Returns the aggregator too, to shut it down.
pub async fn embedded_app() -> Result<(Router, Aggregator), mcp_proxy::StartError> {
    let echo = UpstreamConfig::new(
        "echo",
        UpstreamTransport::InProcess(Server::new(crate::echo_tools())),
    );
    let aggregator = Aggregator::start(vec![echo], AggregatorOptions::default()).await?;
    let server = aggregator.server(ServerOptions::default());
    let health: Arc<dyn Health> = Arc::new(aggregator.clone());
    let endpoint = StreamableHttp::new(server, HttpOptions::default().health(health));
    let gateway = tower::ServiceBuilder::new()
        .concurrency_limit(GATEWAY_CONCURRENCY)
        .service(endpoint);
    let app = Router::new()
        .route("/", get(|| async { "my application\n" }))
        .nest_service("/gateway", gateway);
    Ok((app, aggregator))
}
