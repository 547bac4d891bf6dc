//! Health for an orchestrator: `GET /healthz` (the process serves: `200`) and
//! `GET /readyz` (`200` when the [`Health`] says ready, `503` when not). Probes carry no
//! credentials and come from the orchestrator's own address, so neither needs a token or
//! a loopback `Host`; the readiness details (which may name upstreams and their errors)
//! go only to a request whose `Host` and `Origin` pass the endpoint's checks, and never
//! where the endpoint requires tokens (a probe has none).

use bytes::Bytes;
use http::{Method, Response, StatusCode};
use http_body_util::{BodyExt, Full};

use super::reply::{empty, respond};
use super::HttpBody;

/// The liveness path.
pub const LIVE_PATH: &str = "/healthz";
/// The readiness path.
pub const READY_PATH: &str = "/readyz";

/// Whether the service is ready, and why.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Readiness {
    /// Ready to serve.
    pub ready: bool,
    /// What it depends on, as JSON (served to callers that pass the `Host` check).
    pub detail: serde_json::Value,
}

impl Readiness {
    /// `ready`, with `detail`.
    pub fn new(ready: bool, detail: serde_json::Value) -> Self {
        Readiness { ready, detail }
    }
}

/// Says whether the service behind an endpoint is ready (for `/readyz`).
pub trait Health: Send + Sync + 'static {
    /// How it is now. Called for every probe: keep it cheap, never blocking.
    fn readiness(&self) -> Readiness;
}

/// The answer to a probe at `path`, if `path` is one; `trusted`: the request passed the
/// `Host` and `Origin` checks.
pub(super) fn probe(
    health: &dyn Health,
    method: &Method,
    path: &str,
    trusted: bool,
) -> Option<Response<HttpBody>> {
    if path != LIVE_PATH && path != READY_PATH {
        return None;
    }
    if method != Method::GET && method != Method::HEAD {
        return Some(respond(StatusCode::METHOD_NOT_ALLOWED, empty(), None));
    }
    if path == LIVE_PATH {
        return Some(live());
    }
    Some(ready(health, trusted))
}

/// The liveness answer: the process serves.
pub(super) fn live() -> Response<HttpBody> {
    text(StatusCode::OK, "ok\n")
}

/// The readiness answer of `health`, with its details if `trusted`.
pub(super) fn ready(health: &dyn Health, trusted: bool) -> Response<HttpBody> {
    let r = health.readiness();
    let status = if r.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    if !trusted {
        return text(status, if r.ready { "ready\n" } else { "not ready\n" });
    }
    let body = serde_json::json!({"ready": r.ready, "detail": r.detail}).to_string();
    let body = Full::new(Bytes::from(body)).boxed_unsync();
    respond(status, body, Some("application/json"))
}

fn text(status: StatusCode, s: &'static str) -> Response<HttpBody> {
    let body = Full::new(Bytes::from_static(s.as_bytes())).boxed_unsync();
    respond(status, body, Some("text/plain; charset=utf-8"))
}
