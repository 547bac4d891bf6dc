//! The HTTP edge as tower layers and services, for an embedder that mounts the MCP
//! service ([`super::StreamableHttp`]) in a stack of its own (axum, tower): the `Host` and
//! `Origin` guard and authorization as [`tower_layer::Layer`]s in front of it, and the
//! probes, the metrics and the protected resource metadata as services the embedder
//! routes where it wants. Each does what the endpoint does with the same option
//! ([`HttpOptions::allowed_hosts`], [`HttpOptions::authorization`], …) and answers the same
//! way; the endpoint's own checks stay for whoever configures it alone.
//!
//! A request [`AuthorizationLayer`] lets through carries its [`Authenticated`] principal;
//! the endpoint serves it as that principal (views, tasks and legacy sessions are
//! theirs), as it would had it checked the credentials itself.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use tower_layer::Layer;
use tower_service::Service;

use super::reply::{empty, respond, HttpBody};
use super::{guard, health, metrics, Health, HttpOptions, Metrics};
use crate::auth::{Authorization, Principal};

/// The principal whose credentials [`AuthorizationLayer`] accepted, in the request's
/// extensions.
#[derive(Debug, Clone)]
pub struct Authenticated(pub Arc<Principal>);

type Answer = Pin<Box<dyn Future<Output = Result<Response<HttpBody>, Infallible>> + Send>>;

/// Refuses (`403`, a JSON-RPC error body) a request whose `Host` or `Origin` the options
/// do not allow, before the service behind it sees it: the DNS-rebinding guard.
#[derive(Clone)]
pub struct HostGuardLayer {
    options: Arc<HttpOptions>,
}

impl HostGuardLayer {
    /// With the `Host` and `Origin` lists of `options` ([`HttpOptions::allowed_hosts`],
    /// [`HttpOptions::allowed_origins`]; loopback by default).
    pub fn new(options: &HttpOptions) -> Self {
        HostGuardLayer {
            options: Arc::new(options.clone()),
        }
    }
}

impl<S> Layer<S> for HostGuardLayer {
    type Service = HostGuard<S>;

    fn layer(&self, inner: S) -> HostGuard<S> {
        HostGuard {
            inner,
            options: self.options.clone(),
        }
    }
}

/// The service [`HostGuardLayer`] makes.
#[derive(Clone)]
pub struct HostGuard<S> {
    inner: S,
    options: Arc<HttpOptions>,
}

impl<S, B> Service<Request<B>> for HostGuard<S>
where
    S: Service<Request<B>, Response = Response<HttpBody>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response<HttpBody>;
    type Error = Infallible;
    type Future = Answer;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Answer {
        let (parts, body) = req.into_parts();
        if let Some(what) = super::origin_check(&self.options, &parts, true) {
            return Box::pin(std::future::ready(Ok(super::forbidden(what))));
        }
        Box::pin(self.inner.call(Request::from_parts(parts, body)))
    }
}

/// Checks every request's credentials with an [`Authorization`] before the service behind
/// it sees it: refused with the `401`/`403` and challenge the spec gives, else let through
/// with its [`Authenticated`] principal. Answers the protected resource metadata document
/// itself where the request asks for it (see also [`ResourceMetadataService`]).
#[derive(Clone)]
pub struct AuthorizationLayer {
    auth: Arc<Authorization>,
}

impl AuthorizationLayer {
    /// Checking with `auth`.
    pub fn new(auth: Authorization) -> Self {
        AuthorizationLayer {
            auth: Arc::new(auth),
        }
    }
}

impl<S> Layer<S> for AuthorizationLayer {
    type Service = Authorize<S>;

    fn layer(&self, inner: S) -> Authorize<S> {
        Authorize {
            inner,
            auth: self.auth.clone(),
        }
    }
}

/// The service [`AuthorizationLayer`] makes.
#[derive(Clone)]
pub struct Authorize<S> {
    inner: S,
    auth: Arc<Authorization>,
}

impl<S, B> Service<Request<B>> for Authorize<S>
where
    S: Service<Request<B>, Response = Response<HttpBody>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = Response<HttpBody>;
    type Error = Infallible;
    type Future = Answer;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Answer {
        // The clone that was made ready serves this request; a fresh one waits for the next.
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let auth = self.auth.clone();
        Box::pin(async move {
            let (mut parts, body) = req.into_parts();
            if let Some(document) = guard::metadata(&auth, &parts) {
                return Ok(document);
            }
            match guard::check(&auth, &parts).await {
                guard::Verdict::Answer(refused) => Ok(refused),
                guard::Verdict::Serve(principal) => {
                    if let Some(p) = principal {
                        parts.extensions.insert(Authenticated(p));
                    }
                    inner.call(Request::from_parts(parts, body)).await
                }
            }
        })
    }
}

/// `GET` answered by a function of nothing but the request's method: the services below.
fn get_only(method: &Method, answer: impl FnOnce() -> Response<HttpBody>) -> Response<HttpBody> {
    if method == Method::GET || method == Method::HEAD {
        answer()
    } else {
        respond(StatusCode::METHOD_NOT_ALLOWED, empty(), None)
    }
}

type Ready = std::future::Ready<Result<Response<HttpBody>, Infallible>>;

macro_rules! answering_service {
    ($t:ty, |$s:ident, $m:ident| $answer:expr) => {
        impl<B> Service<Request<B>> for $t {
            type Response = Response<HttpBody>;
            type Error = Infallible;
            type Future = Ready;

            fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
                Poll::Ready(Ok(()))
            }

            fn call(&mut self, req: Request<B>) -> Ready {
                let $s = &*self;
                let $m = req.method();
                std::future::ready(Ok(get_only($m, || $answer)))
            }
        }
    };
}

/// Liveness or readiness, answered wherever it is routed: `200` live; ready `200` or
/// `503` from a [`Health`], with its details as JSON only if made with them.
#[derive(Clone)]
pub struct HealthService {
    health: Option<Arc<dyn Health>>,
    details: bool,
}

impl HealthService {
    /// Liveness: `200 ok` while the process serves.
    pub fn liveness() -> Self {
        HealthService {
            health: None,
            details: false,
        }
    }

    /// Readiness from `health`; `details`: the JSON of [`super::Readiness::detail`] too
    /// (it may name upstreams and their errors: route such a service only where the
    /// callers may read them).
    pub fn readiness(health: Arc<dyn Health>, details: bool) -> Self {
        HealthService {
            health: Some(health),
            details,
        }
    }
}

answering_service!(HealthService, |s, method| match &s.health {
    None => health::live(),
    Some(h) => health::ready(h.as_ref(), s.details),
});

/// The metrics in their text format, wherever routed (they name every upstream and tool:
/// route them where only operators reach).
#[derive(Clone)]
pub struct MetricsService {
    metrics: Arc<dyn Metrics>,
}

impl MetricsService {
    /// Rendering `metrics`.
    pub fn new(metrics: Arc<dyn Metrics>) -> Self {
        MetricsService { metrics }
    }
}

answering_service!(MetricsService, |s, method| metrics::scrape(
    s.metrics.as_ref(),
    method
));

/// The protected resource metadata document (RFC 9728) of an [`Authorization`], for an
/// embedder that routes it itself (at
/// [`crate::auth::ProtectedResource::metadata_path`], at the origin's root).
#[derive(Clone)]
pub struct ResourceMetadataService {
    document: Bytes,
}

impl ResourceMetadataService {
    /// The document of `auth`'s resource.
    pub fn new(auth: &Authorization) -> Self {
        ResourceMetadataService {
            document: Bytes::from(auth.resource().document().to_string()),
        }
    }
}

answering_service!(ResourceMetadataService, |s, method| respond(
    StatusCode::OK,
    Full::new(s.document.clone()).boxed_unsync(),
    Some("application/json")
));
