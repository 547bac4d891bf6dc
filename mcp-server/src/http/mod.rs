//! Streamable HTTP, server side, for both eras on one endpoint.
//!
//! - 2026-07-28: every POST is one stateless request. The mirrored headers
//!   (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) must match the body (`-32020`
//!   and `400` otherwise); the answer is JSON, or an SSE stream when the request's
//!   notifications (progress, logs) come first. Closing the stream cancels the request.
//!   GET and DELETE are `405`.
//! - 2025-03-26 … 2025-11-25: `initialize` opens a session (`Mcp-Session-Id`); later
//!   POSTs need it (`400` without, `404` when unknown); server→client requests and
//!   notifications travel on the POST's SSE stream, or on the GET stream when no request
//!   is running; events carry ids and a GET with `Last-Event-ID` replays a stream;
//!   DELETE ends the session. A POST whose lone answer comes before anything else is
//!   answered as plain JSON.
//!
//! Requests are handed to the server's session directly (a peer without a read loop):
//! no in-memory transport, no task between the HTTP handler and the session, and none at
//! all for a call the handler takes at once.
//!
//! [`StreamableHttp`] is a hyper service, so it mounts in any hyper (or axum) server;
//! [`serve`] runs one on a listener, with `TCP_NODELAY` on every connection. Host and
//! Origin are checked against allow-lists that default to loopback (DNS rebinding).
//! With [`HttpOptions::authorization`] the endpoint is an OAuth protected resource (see
//! [`crate::auth`]): every request needs credentials, the principal reaches the handler,
//! and a legacy session serves only the subject that opened it.
//!
//! Everything a client can make the endpoint hold is bounded, the bounds in
//! [`HttpOptions`]: body size and the time it takes to arrive; legacy sessions in number,
//! per client and in idle time (an expired one ends as a `DELETE` would, and its id gets
//! `404`; one idle longest ends so for a new one that finds no room);
//! each session's requests in flight and its replay log; and, in [`serve`], connections
//! in number, in the time their headers take and in idle time. A POST's stream and its
//! routing entries go once its last answer is given.
//!
//! Which legacy sessions exist, and the bounds and policy that admit, evict and expire
//! them, are a [`SessionManager`]'s: a [`SessionTable`] in memory by default, or the one
//! [`HttpOptions::session_manager`] names; the endpoint holds the live session beside
//! each record.

mod admin;
mod body;
mod checks;
mod cluster;
mod conn;
mod exchange;
mod forward;
#[doc(hidden)]
pub mod fuzzing;
mod guard;
mod handover;
mod health;
mod hop;
pub mod layers;
mod legacy;
mod metrics;
mod modern;
mod moved;
mod options;
mod pages;
mod placed;
mod rehome;
mod reply;
mod room;
mod routing;
mod session_id;
mod session_manager;
mod session_table;
mod sessions;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use http::{header, HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Body;
use mcp_revisions::features;
use mcp_types::protocol::method;
use mcp_types::{codes, Frame, Message, Revision};

use crate::auth::Principal;
use crate::seal::Sealer;
use crate::Server;
pub use admin::{bind_admin, Admin, AdminOptions};
use checks::{
    accepts_sse, check_post_media, forbidden, header_str, names, origin_check, origin_check_host,
};
pub use cluster::{PeerNotices, Peers, Placement, ReplicaLink, StaticPeers, PEER_NOTICE};
pub use conn::{serve, serve_with_shutdown};
pub use handover::{SessionHandover, SessionSnapshot, TakeOver};
pub use health::{Health, Readiness, LIVE_PATH, READY_PATH};
use legacy::LegacySession;
pub use metrics::{Metrics, MetricsSource, METRICS_PATH};
pub use options::{
    HealthCheck, HttpOptions, PeerNoticesHandle, PeersHandle, PlacementHandle,
    SessionHandoverHandle, SessionManagerHandle,
};
pub use pages::{Pages, PagesHandle};
pub use reply::HttpBody;
use reply::{empty, respond, rpc_error};
#[doc(hidden)]
pub use routing::RouterEntries;
pub use session_manager::{
    Admitted, Eviction, EvictionReason, SessionActivity, SessionClient, SessionManager,
    SessionRecord, SessionRefused, SessionStoreError,
};
pub use session_table::SessionTable;
use sessions::Sessions;

/// A Streamable HTTP endpoint around a [`Server`]. Cheap to clone.
#[derive(Clone)]
pub struct StreamableHttp {
    inner: Arc<Inner>,
}

struct Inner {
    server: Server,
    options: HttpOptions,
    sessions: Arc<Sessions>,
    /// `None` only when no random key could be made: no legacy session opens then.
    sealer: Option<Arc<Sealer>>,
    /// With [`HttpOptions::peers`]: what takes requests to the replica holding their state.
    forwarder: Option<Arc<forward::Forwarder>>,
    /// Held while a legacy session is taken over from another replica (see `rehome.rs`).
    taking_over: tokio::sync::Mutex<()>,
    /// Where the sessions taken over were last found (see `moved.rs`).
    holders: moved::Holders,
}

impl StreamableHttp {
    /// An endpoint serving `server` with `options`; its legacy sessions are kept by
    /// [`HttpOptions::session_manager`], else by a [`SessionTable`] of its own.
    pub fn new(server: Server, options: HttpOptions) -> Self {
        let manager = match &options.session_manager {
            Some(m) => m.0.clone(),
            None => Arc::new(SessionTable::new(&options)),
        };
        let sealer = options.sealer.clone().or_else(|| match Sealer::random() {
            Ok(s) => Some(Arc::new(s)),
            Err(e) => {
                tracing::error!("no key to seal session ids ({e}): legacy sessions are refused");
                None
            }
        });
        let forwarder = options.peers.as_ref().zip(sealer.clone()).map(|(p, s)| {
            Arc::new(forward::Forwarder::new(p.0.clone(), s).counted(server.stats()))
        });
        StreamableHttp {
            inner: Arc::new(Inner {
                sessions: Sessions::new(
                    manager,
                    server.stats(),
                    sealer.clone(),
                    options.session_handover.as_ref().map(|h| h.0.clone()),
                ),
                server,
                options,
                sealer,
                forwarder,
                taking_over: tokio::sync::Mutex::new(()),
                holders: moved::Holders::default(),
            }),
        }
    }

    /// Legacy sessions this endpoint serves now (with a manager shared by several
    /// endpoints, [`SessionManager::count`] counts them all).
    pub fn session_count(&self) -> usize {
        self.inner.sessions.len()
    }

    /// The manager of its legacy sessions: to count and list them (an admin view).
    pub fn session_manager(&self) -> &Arc<dyn SessionManager> {
        self.inner.sessions.manager()
    }

    /// Its options.
    pub fn options(&self) -> &HttpOptions {
        &self.inner.options
    }

    /// What the routers of all open legacy sessions hold now, summed: streams, requests
    /// waiting, replay. For tests that look for per-call growth; not a stable API.
    #[doc(hidden)]
    pub fn retained_entries(&self) -> RouterEntries {
        self.inner.sessions.entries()
    }

    /// Answers one HTTP request. The client's address, which an `initialize` without
    /// authorization counts against [`HttpOptions::max_sessions_per_client`], is a
    /// `SocketAddr` request extension if there is one ([`serve`] knows it without).
    pub async fn handle<B>(&self, req: Request<B>) -> Response<HttpBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        self.handle_from(req, None).await
    }

    /// [`StreamableHttp::handle`] for a request from the client at `peer`.
    pub(super) async fn handle_from<B>(
        &self,
        req: Request<B>,
        peer: Option<SocketAddr>,
    ) -> Response<HttpBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (parts, body) = req.into_parts();
        if self.is_replica_hop(&parts) {
            // Another replica's: its hop, not a client's Host or credentials, vouches for
            // a notice (`placed.rs`); a forwarded client request goes on as any other.
            let bytes = match body::read(body, &self.inner.options).await {
                Ok(b) => b,
                Err(r) => return *r,
            };
            if let Some(r) = self.replica_notice(&parts, &bytes) {
                return r;
            }
            return self.handle_parts(parts, Full::new(bytes), peer).await;
        }
        self.handle_parts(parts, body, peer).await
    }

    /// [`StreamableHttp::handle_from`] once the request is in its parts.
    async fn handle_parts<B>(
        &self,
        parts: http::request::Parts,
        body: B,
        peer: Option<SocketAddr>,
    ) -> Response<HttpBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let o = &self.inner.options;
        let metadata = o
            .authorization
            .as_ref()
            .and_then(|a| guard::metadata(a, &parts));
        if let Some(h) = &o.health {
            // Details name upstreams and their errors: not for anyone without a token
            // where tokens are required, nor for a Host the endpoint would refuse.
            let trusted = o.authorization.is_none() && origin_check(o, &parts, false).is_none();
            if let Some(r) = health::probe(h.0.as_ref(), &parts.method, parts.uri.path(), trusted) {
                return r;
            }
        }
        if let Some(pages) = o.pages.as_ref().filter(|p| p.serves(parts.uri.path())) {
            if let Some(what) = origin_check_host(o, &parts) {
                return forbidden(what);
            }
            return pages.0.serve(&parts).await;
        }
        // Metrics name every upstream and tool, whatever a token's views: not for tokens.
        let scrape = o
            .metrics
            .as_ref()
            .filter(|_| o.authorization.is_none() && parts.uri.path() == METRICS_PATH);
        if metadata.is_none() && scrape.is_none() && parts.uri.path() != o.path {
            return respond(StatusCode::NOT_FOUND, empty(), None);
        }
        if let Some(what) = origin_check(o, &parts, true) {
            return forbidden(what);
        }
        if let Some(metadata) = metadata {
            return metadata;
        }
        let principal = match &o.authorization {
            // Checked in front of the endpoint, by an `AuthorizationLayer`, if at all.
            None => parts
                .extensions
                .get::<layers::Authenticated>()
                .map(|a| a.0.clone()),
            Some(auth) => match guard::check(auth, &parts).await {
                guard::Verdict::Serve(principal) => principal,
                guard::Verdict::Answer(refused) => return refused,
            },
        };
        if let Some(m) = scrape {
            return metrics::scrape(m.0.as_ref(), &parts.method);
        }
        match parts.method {
            Method::POST => match check_post_media(&parts.headers) {
                Ok(()) => self.post(parts, body, principal, peer).await,
                Err((status, why)) => {
                    tracing::info!(%status, "POST refused: {why}");
                    rpc_error(status, None, codes::INVALID_REQUEST, why)
                }
            },
            Method::GET | Method::DELETE => {
                let none = Bytes::new();
                let elsewhere = self.elsewhere(&parts, &none, None, principal.as_ref());
                if let Some(r) = elsewhere.await {
                    return r;
                }
                match parts.method {
                    Method::GET => self.get(&parts.headers, principal.as_deref()).await,
                    _ => self.delete(&parts.headers, principal.as_deref()).await,
                }
            }
            _ => respond(StatusCode::METHOD_NOT_ALLOWED, empty(), None),
        }
    }

    async fn post<B>(
        &self,
        parts: http::request::Parts,
        body: B,
        principal: Option<Arc<Principal>>,
        peer: Option<SocketAddr>,
    ) -> Response<HttpBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let bytes = match body::read(body, &self.inner.options).await {
            Ok(b) => b,
            Err(r) => return *r,
        };
        let frame = match Frame::parse(&bytes) {
            Ok(f) => f,
            Err(e) => {
                let err = mcp_types::transport::invalid_frame_error(&e);
                return rpc_error(StatusCode::BAD_REQUEST, None, err.code, err.message);
            }
        };
        let elsewhere = self.elsewhere(&parts, &bytes, Some(&frame), principal.as_ref());
        if let Some(r) = elsewhere.await {
            return r;
        }
        let mut parts = parts;
        for credential in [
            header::AUTHORIZATION,
            header::PROXY_AUTHORIZATION,
            header::COOKIE,
        ] {
            parts.headers.remove(credential);
        }
        let parts = Arc::new(parts);
        let h = &parts.headers;
        let caller = crate::context::Caller {
            http: Some(parts.clone()),
            principal,
        };
        if is_modern(&frame, h) {
            let o = &self.inner.options;
            return modern::serve(&self.inner.server, o.keep_alive, frame, h, caller).await;
        }
        match header_str(h, &names::SESSION_ID) {
            Some(id) => self.post_in_session(id, frame, h, caller.principal).await,
            None => self.open_session(frame, h, caller, peer).await,
        }
    }

    async fn post_in_session(
        &self,
        id: &str,
        frame: Frame,
        h: &HeaderMap,
        principal: Option<Arc<Principal>>,
    ) -> Response<HttpBody> {
        let session = match self.inner.sessions.get(id).await {
            Ok(s) => s,
            Err(r) => return *r,
        };
        if !session.belongs_to(principal.as_deref()) {
            return guard::not_yours();
        }
        session.adopt(principal);
        if let Some(v) = header_str(h, &names::PROTOCOL_VERSION) {
            let supported = &self.inner.server.options().supported;
            if Revision::parse(v).map_or(true, |r| !supported.contains(&r)) {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    None,
                    codes::INVALID_REQUEST,
                    format!("Bad Request: unsupported MCP-Protocol-Version {v:?}"),
                );
            }
        }
        session.post(frame, accepts_sse(h)).await
    }

    async fn open_session(
        &self,
        frame: Frame,
        h: &HeaderMap,
        caller: crate::context::Caller,
        peer: Option<SocketAddr>,
    ) -> Response<HttpBody> {
        let is_init =
            matches!(&frame, Frame::Single(Message::Request(r)) if r.method == method::INITIALIZE);
        if !is_init {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                None,
                codes::INVALID_REQUEST,
                "Bad Request: Mcp-Session-Id header is required (or 2026-07-28 _meta)",
            );
        }
        let minted = self
            .inner
            .sealer
            .as_deref()
            .map(|s| session_id::mint(s, caller.principal.as_deref()));
        let Some(Ok(id)) = minted else {
            tracing::error!("refused initialize: no session id could be sealed");
            return rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                codes::SERVER_BUSY,
                "Server busy: a session cannot be opened now",
            );
        };
        let client = sessions::client_of(&caller, peer);
        let session = Arc::new(LegacySession::start(
            &self.inner.server,
            &self.inner.options,
            caller,
        ));
        let _initializing = session.hold();
        let added = self
            .inner
            .sessions
            .insert(id.clone(), session.clone(), client);
        if let Err(refused) = added.await {
            return sessions::refusal(&refused, &frame);
        }
        let mut r = session.post(frame, accepts_sse(h)).await;
        if let Ok(v) = header::HeaderValue::from_str(&id) {
            r.headers_mut().insert(names::SESSION_ID.clone(), v);
        }
        r
    }

    async fn session_of(
        &self,
        h: &HeaderMap,
        principal: Option<&Principal>,
    ) -> Result<Arc<LegacySession>, Box<Response<HttpBody>>> {
        let Some(id) = header_str(h, &names::SESSION_ID) else {
            return Err(Box::new(
                if header_str(h, &names::PROTOCOL_VERSION)
                    .is_some_and(features::names_per_request_meta)
                {
                    respond(StatusCode::METHOD_NOT_ALLOWED, empty(), None)
                } else {
                    rpc_error(
                        StatusCode::BAD_REQUEST,
                        None,
                        codes::INVALID_REQUEST,
                        "Bad Request: Mcp-Session-Id header is required",
                    )
                },
            ));
        };
        match self.inner.sessions.get(id).await {
            Err(r) => Err(r),
            Ok(s) if !s.belongs_to(principal) => Err(Box::new(guard::not_yours())),
            Ok(s) => Ok(s),
        }
    }

    async fn get(&self, h: &HeaderMap, principal: Option<&Principal>) -> Response<HttpBody> {
        let session = match self.session_of(h, principal).await {
            Ok(s) => s,
            Err(r) => return *r,
        };
        if !accepts_sse(h) {
            return rpc_error(
                StatusCode::NOT_ACCEPTABLE,
                None,
                codes::INVALID_REQUEST,
                "GET needs Accept: text/event-stream",
            );
        }
        session.get(header_str(h, &names::LAST_EVENT_ID))
    }

    async fn delete(&self, h: &HeaderMap, principal: Option<&Principal>) -> Response<HttpBody> {
        let session = match self.session_of(h, principal).await {
            Ok(s) => s,
            Err(r) => return *r,
        };
        if let Some(id) = header_str(h, &names::SESSION_ID) {
            self.inner.sessions.remove(id).await;
        }
        session.end().await;
        respond(StatusCode::OK, empty(), None)
    }
}

/// The `_meta` key a 2026-07-28 request names its version with; its searcher is built
/// once, as building one costs more than searching a request's params.
static VERSION_KEY: std::sync::LazyLock<mcp_types::raw::KeyFinder> =
    std::sync::LazyLock::new(|| mcp_types::raw::KeyFinder::new(mcp_types::meta::PROTOCOL_VERSION));

/// Whether a POST is a 2026-07-28 request: a version in its `_meta`, or the 2026 header
/// without a session.
fn is_modern(frame: &Frame, h: &HeaderMap) -> bool {
    let Frame::Single(m) = frame else {
        return false;
    };
    let by_header = header_str(h, &names::PROTOCOL_VERSION)
        .is_some_and(features::names_per_request_meta)
        && h.get(&names::SESSION_ID).is_none();
    // The body is read only when the headers do not tell already, and only where the
    // key could be.
    by_header
        || m.params().is_some_and(|p| {
            VERSION_KEY.may_be_in(p.get())
                && mcp_revisions::negotiate::request_protocol_version(m).is_some()
        })
}

pub(super) fn not_found() -> Response<HttpBody> {
    rpc_error(
        StatusCode::NOT_FOUND,
        None,
        codes::INVALID_REQUEST,
        "Session not found",
    )
}

impl<B> hyper::service::Service<Request<B>> for StreamableHttp
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<HttpBody>;
    type Error = Infallible;
    type Future = Answering;

    fn call(&self, req: Request<B>) -> Self::Future {
        self.answering(req)
    }
}

/// A response on its way: what both service traits return.
pub type Answering = Pin<Box<dyn Future<Output = Result<Response<HttpBody>, Infallible>> + Send>>;

impl StreamableHttp {
    fn answering<B>(&self, req: Request<B>) -> Answering
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let this = self.clone();
        Box::pin(async move { Ok(this.handle(req).await) })
    }
}

/// Binds `addr` and serves `server` at `options.path` (see [`serve`]). Returns the bound
/// address (useful with port 0) and the serving task.
pub async fn bind(
    addr: SocketAddr,
    server: Server,
    options: HttpOptions,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<std::io::Result<()>>)> {
    let listener = conn::listen(addr, options.listen_backlog)?;
    let local = listener.local_addr()?;
    let http = StreamableHttp::new(server, options);
    Ok((local, tokio::spawn(serve(listener, http))))
}

/// [`bind`] with a graceful stop: once `shutdown` resolves the serving task stops
/// accepting, lets the requests being served finish for up to `drain`, and ends when
/// every connection is closed (see [`serve_with_shutdown`]).
pub async fn bind_with_shutdown(
    addr: SocketAddr,
    server: Server,
    options: HttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
    drain: std::time::Duration,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<std::io::Result<()>>)> {
    let listener = conn::listen(addr, options.listen_backlog)?;
    let local = listener.local_addr()?;
    let http = StreamableHttp::new(server, options);
    Ok((
        local,
        tokio::spawn(serve_with_shutdown(listener, http, shutdown, drain)),
    ))
}

/// The tower service: mount the endpoint in a tower or axum stack
/// (`Router::route_service`, `Router::nest_service`) and put layers in front of it. It is
/// always ready; each request is answered as [`StreamableHttp::handle`] answers it.
impl<B> tower_service::Service<Request<B>> for StreamableHttp
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<HttpBody>;
    type Error = Infallible;
    type Future = Answering;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Infallible>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        self.answering(req)
    }
}
