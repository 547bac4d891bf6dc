//! Why an upstream could not be used is told by kind: in its status, in `/readyz`, and in
//! the metrics, so an operator can tell refused credentials from an upstream that is down.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_client::http::HttpConfig;
use mcp_proxy::{
    Aggregator, AggregatorOptions, UpstreamConfig, UpstreamConnector, UpstreamError,
    UpstreamTransport,
};
use mcp_server::auth::{ApiKey, ApiKeys, Authorization, Principal, ProtectedResource};
use mcp_server::http::{bind, HttpOptions};
use mcp_server::{Server, ToolRegistry};
use mcp_types::transport::Transport;

/// An MCP endpoint on loopback that takes only its API key.
async fn protected_endpoint() -> std::net::SocketAddr {
    let keys = ApiKeys::new().with(ApiKey::new(
        "k",
        "key-0123456789abcdef",
        Principal::new("p"),
    ));
    let resource = ProtectedResource::new("http://127.0.0.1/mcp").expect("resource");
    let options = HttpOptions::default().authorization(Authorization::new(keys, resource));
    let server = Server::new(ToolRegistry::new());
    let (addr, _task) = bind("127.0.0.1:0".parse().expect("address"), server, options)
        .await
        .expect("bind");
    addr
}

/// A connector that never has a connection.
struct Nowhere;

#[async_trait]
impl UpstreamConnector for Nowhere {
    async fn connect(&self) -> Result<Box<dyn Transport>, UpstreamError> {
        Err(UpstreamError::Unavailable("the tunnel is down".into()))
    }
}

#[tokio::test]
async fn refused_credentials_and_an_absent_upstream_are_told_apart() {
    let addr = protected_endpoint().await;
    let refused = UpstreamConfig::new(
        "refused",
        UpstreamTransport::Http(HttpConfig::new(format!("http://{addr}/mcp"))),
    );
    let absent = UpstreamConfig::new("absent", UpstreamTransport::Custom(Arc::new(Nowhere)));
    let agg = Aggregator::start(vec![refused, absent], AggregatorOptions::default())
        .await
        .expect("failing upstreams do not stop the aggregator");
    let status = agg.status();
    let kind = |key: &str| {
        let s = status.iter().find(|s| s.key == key).expect("listed");
        assert!(!s.connected, "{s:?}");
        s.last_error.as_ref().map(UpstreamError::kind)
    };
    assert_eq!(kind("refused"), Some("unauthorized"), "{status:?}");
    assert_eq!(kind("absent"), Some("unavailable"), "{status:?}");

    let metrics = agg.metrics().render(&status);
    for (key, kind) in [("refused", "unauthorized"), ("absent", "unavailable")] {
        let sample =
            format!("mcp_gateway_upstream_failures_total{{upstream=\"{key}\",kind=\"{kind}\"}}");
        assert!(
            metrics
                .lines()
                .any(|l| l.starts_with(&sample) && !l.ends_with(" 0")),
            "{sample} in\n{metrics}"
        );
    }
    let ready = mcp_server::http::Health::readiness(&agg);
    let details = ready.detail.to_string();
    assert!(
        details.contains(r#""lastErrorKind":"unauthorized""#),
        "{details}"
    );
    agg.shutdown().await;
}
