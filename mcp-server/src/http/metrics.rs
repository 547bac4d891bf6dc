//! Metrics for a scraper: `GET /metrics` answered with what a [`Metrics`] renders. The
//! metrics name everything the endpoint serves (upstreams, tools), whatever a caller may
//! see, so they go only to a request whose `Host` and `Origin` pass the endpoint's checks,
//! and not at all where the endpoint requires tokens (serve them on a listener of their
//! own there).

use bytes::Bytes;
use http::{Method, Response, StatusCode};
use http_body_util::{BodyExt, Full};

use super::reply::{empty, respond};
use super::HttpBody;

/// The metrics path.
pub const METRICS_PATH: &str = "/metrics";

/// Renders the metrics of the service behind an endpoint (for `/metrics`).
pub trait Metrics: Send + Sync + 'static {
    /// The metrics now, as text in the format [`Metrics::content_type`] names (the
    /// Prometheus text format or OpenMetrics). Called for every scrape: never blocking.
    fn render(&self) -> String;

    /// The media type of [`Metrics::render`]'s text (default: the Prometheus text
    /// format, version 0.0.4).
    fn content_type(&self) -> &'static str {
        "text/plain; version=0.0.4; charset=utf-8"
    }
}

/// The [`Metrics`] an endpoint answers scrapes with.
#[derive(Clone)]
pub struct MetricsSource(pub std::sync::Arc<dyn Metrics>);

impl std::fmt::Debug for MetricsSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MetricsSource")
    }
}

/// The answer to a scrape (`method` on [`METRICS_PATH`]).
pub(super) fn scrape(metrics: &dyn Metrics, method: &Method) -> Response<HttpBody> {
    if method != Method::GET && method != Method::HEAD {
        return respond(StatusCode::METHOD_NOT_ALLOWED, empty(), None);
    }
    let body = Full::new(Bytes::from(metrics.render())).boxed_unsync();
    respond(StatusCode::OK, body, Some(metrics.content_type()))
}
