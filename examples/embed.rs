//! The gateway inside an application of one's own: an axum `Router` with the
//! application's routes, the gateway's Streamable HTTP endpoint nested under `/gateway`
//! (so at `/gateway/mcp`), and a tower layer in front of it that caps the requests it
//! serves at once. [`guarded_app`]: the same behind the edge's checks as tower layers,
//! the application routing the probes and metrics itself.

use std::sync::Arc;

use axum::routing::get;
use axum::Router;
use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig, UpstreamTransport};
use mcp_server::auth::{ApiKeys, Authorization, ProtectedResource};
use mcp_server::http::layers::{
    AuthorizationLayer, HealthService, HostGuardLayer, MetricsService, ResourceMetadataService,
};
use mcp_server::http::{Health, HttpOptions, Metrics, StreamableHttp};
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

/// The same gateway behind the edge's checks as tower layers, with the application
/// routing the probes and metrics itself: `/gateway/mcp` passes the `Host`/`Origin` guard
/// and then needs a bearer key of `keys` (`401` with the challenge without one; the
/// protected resource metadata at its well-known path at the root); `/healthz` and
/// `/readyz` answer anyone (readiness without details); `/metrics` sits behind the same
/// guard and authorization. `resource` is the endpoint's URL as clients use it.
pub async fn guarded_app(
    keys: ApiKeys,
    resource: &str,
) -> Result<(Router, Aggregator), Box<dyn std::error::Error + Send + Sync>> {
    let echo = UpstreamConfig::new(
        "echo",
        UpstreamTransport::InProcess(Server::new(crate::echo_tools())),
    );
    let aggregator = Aggregator::start(vec![echo], AggregatorOptions::default()).await?;
    let auth = Authorization::new(keys, ProtectedResource::new(resource)?);
    // The endpoint itself checks nothing more: the layers in front of it do.
    let options = HttpOptions::default();
    let endpoint =
        StreamableHttp::new(aggregator.server(ServerOptions::default()), options.clone());
    let checks = tower::ServiceBuilder::new()
        .layer(HostGuardLayer::new(&options))
        .layer(AuthorizationLayer::new(auth.clone()));
    let health: Arc<dyn Health> = Arc::new(aggregator.clone());
    let metrics: Arc<dyn Metrics> = Arc::new(aggregator.clone());
    let app = Router::new()
        .route("/", get(|| async { "my application\n" }))
        .nest_service("/gateway", checks.clone().service(endpoint))
        .route_service("/healthz", HealthService::liveness())
        .route_service("/readyz", HealthService::readiness(health, false))
        .route_service("/metrics", checks.service(MetricsService::new(metrics)))
        .route_service(
            &auth.resource().metadata_path(),
            ResourceMetadataService::new(&auth),
        );
    Ok((app, aggregator))
}
