//! Taking a request to the replica that holds what it names: the whole exchange, the
//! request as it came (its credentials too: the owner checks them again) with the hop
//! header (`hop.rs`), and the owner's response streamed back as it comes (SSE included).
//! A replica that cannot be reached leaves the request to be served here, where what it
//! names is not (`404` for a session, the handler's own error for its state).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame as BodyFrame, Incoming};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use mcp_types::codes;

use super::cluster::Peers;
use super::hop;
use super::reply::{rpc_error, HttpBody};
use crate::seal::{ReplicaId, Sealer};

/// How long connecting to a replica may take before it counts as gone.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// What came of forwarding.
pub(super) enum Forwarded {
    /// The owner's answer (or a `502` when it failed after the request went out).
    Answer(Response<HttpBody>),
    /// No replica to take it to: not known, or not reachable. Nothing was sent.
    Unreachable,
}

/// Forwards requests to other replicas.
pub(super) struct Forwarder {
    client: Client<HttpConnector, Full<Bytes>>,
    peers: Arc<dyn Peers>,
    sealer: Arc<Sealer>,
    /// Counts what is forwarded, when the endpoint's server keeps counts.
    stats: Option<Arc<crate::ServerStats>>,
}

impl Forwarder {
    pub(super) fn new(peers: Arc<dyn Peers>, sealer: Arc<Sealer>) -> Forwarder {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(CONNECT_TIMEOUT));
        connector.set_nodelay(true);
        let client = Client::builder(hyper_util::rt::TokioExecutor::new()).build(connector);
        Forwarder {
            client,
            peers,
            sealer,
            stats: None,
        }
    }

    /// Counting each request it forwards in `stats`.
    pub(super) fn counted(mut self, stats: Arc<crate::ServerStats>) -> Forwarder {
        self.stats = Some(stats);
        self
    }

    /// This replica.
    pub(super) fn replica(&self) -> ReplicaId {
        self.sealer.replica()
    }

    /// Whether `replica` is among the live replicas [`Peers`] knows.
    pub(super) fn is_live(&self, replica: ReplicaId) -> bool {
        self.peers.address(replica).is_some()
    }

    /// What seals and signs for this replica.
    pub(super) fn sealer(&self) -> &Sealer {
        &self.sealer
    }

    /// Sends `body` (a notification) as a POST to `path` of every other replica, each on
    /// a task of its own, not waiting for their answers.
    pub(super) fn tell_all(self: &Arc<Self>, path: &str, body: Bytes) {
        let me = self.replica();
        for to in self.peers.replicas().into_iter().filter(|r| *r != me) {
            let mut parts = Request::new(());
            *parts.method_mut() = http::Method::POST;
            let Ok(uri) = path.parse() else {
                return;
            };
            *parts.uri_mut() = uri;
            let headers = parts.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            headers.insert(
                header::ACCEPT,
                http::HeaderValue::from_static("application/json, text/event-stream"),
            );
            let (parts, ()) = parts.into_parts();
            let (me, body) = (self.clone(), body.clone());
            tokio::spawn(async move {
                match me.forward(to, &parts, body).await {
                    Forwarded::Answer(r) if r.status().is_success() => {}
                    Forwarded::Answer(r) => {
                        tracing::warn!(replica = %to, status = %r.status(), "a replica refused a notice")
                    }
                    Forwarded::Unreachable => {}
                }
            });
        }
    }

    /// The request (`parts`, `body`) answered by replica `to`, if it is live.
    pub(super) async fn forward(
        &self,
        to: ReplicaId,
        parts: &http::request::Parts,
        body: Bytes,
    ) -> Forwarded {
        let Some(base) = self.peers.address(to) else {
            tracing::warn!(replica = %to, "no address for the replica holding a request's state");
            return Forwarded::Unreachable;
        };
        self.forward_at(to, base, parts, body).await
    }

    /// The request answered by replica `to` at the address it was last known at, live or
    /// not (see [`Peers::last_known`]).
    pub(super) async fn forward_last_known(
        &self,
        to: ReplicaId,
        parts: &http::request::Parts,
        body: Bytes,
    ) -> Forwarded {
        match self.peers.last_known(to) {
            Some(base) => self.forward_at(to, base, parts, body).await,
            None => Forwarded::Unreachable,
        }
    }

    async fn forward_at(
        &self,
        to: ReplicaId,
        base: http::Uri,
        parts: &http::request::Parts,
        body: Bytes,
    ) -> Forwarded {
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        let Some(uri) = base.authority().and_then(|a| {
            format!("{}://{a}{path}", base.scheme_str().unwrap_or("http"))
                .parse::<http::Uri>()
                .ok()
        }) else {
            tracing::warn!(replica = %to, "the replica's address is not a base URL");
            return Forwarded::Unreachable;
        };
        let Some(signed) = hop::sign(&self.sealer, to, &parts.method, path, &body) else {
            return Forwarded::Unreachable;
        };
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = parts.method.clone();
        *request.uri_mut() = uri;
        copy_end_to_end(&parts.headers, request.headers_mut());
        request.headers_mut().insert(hop::HOP.clone(), signed);
        if let Some(s) = &self.stats {
            s.forward_sent();
        }
        let answered = tokio::select! {
            r = self.client.request(request) => r,
            () = self.gone(to) => {
                // Stopped, say: what it was sent it will refuse once it runs again, as its
                // hold on what the request names has lapsed by then.
                tracing::warn!(replica = %to, "the replica holding a request's state left the live replicas before answering");
                return Forwarded::Unreachable;
            }
        };
        match answered {
            Ok(response) => Forwarded::Answer(relayed(response)),
            Err(e) if e.is_connect() => {
                tracing::warn!(replica = %to, "the replica holding a request's state is unreachable: {e}");
                Forwarded::Unreachable
            }
            Err(e) => {
                if refuses_connections(&base).await {
                    // It closed a kept-alive connection as the request went out, and takes
                    // no new one: it is stopping (a graceful stop closes only connections
                    // with nothing to answer) or gone. Served here, as if unreachable.
                    tracing::warn!(replica = %to, "the replica holding a request's state closed its connection and takes no new one: {e}");
                    return Forwarded::Unreachable;
                }
                tracing::warn!(replica = %to, "forwarding to the replica failed: {e}");
                Forwarded::Answer(rpc_error(
                    StatusCode::BAD_GATEWAY,
                    None,
                    codes::INTERNAL_ERROR,
                    "the replica holding this request's state failed to answer",
                ))
            }
        }
    }
}

impl Forwarder {
    /// Resolves once replica `to` is not (or no longer) among the live replicas [`Peers`]
    /// knows, and has not come back within a poll.
    async fn gone(&self, to: ReplicaId) {
        let mut missing = 0;
        loop {
            tokio::time::sleep(GONE_POLL).await;
            missing = if self.peers.address(to).is_none() {
                missing + 1
            } else {
                0
            };
            if missing >= 2 {
                return;
            }
        }
    }
}

/// Whether the replica at `base` refuses new connections now.
async fn refuses_connections(base: &http::Uri) -> bool {
    let Some(authority) = base.authority() else {
        return false;
    };
    let port = authority.port_u16().unwrap_or(80);
    let connecting = tokio::net::TcpStream::connect((authority.host(), port));
    matches!(
        tokio::time::timeout(CONNECT_TIMEOUT, connecting).await,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused
    )
}

/// How often a forward waiting for its answer looks whether the replica is still live.
const GONE_POLL: Duration = Duration::from_millis(100);

/// Headers meant for one connection only (RFC 9110 §7.6.1), which a hop does not carry on.
const HOP_BY_HOP: [HeaderName; 7] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

/// `from`'s headers but those of one connection (and any hop header: the forwarder's own
/// replaces it).
fn copy_end_to_end(from: &HeaderMap, to: &mut HeaderMap) {
    for (name, value) in from {
        if HOP_BY_HOP.contains(name) || name == header::CONTENT_LENGTH || name == hop::HOP {
            continue;
        }
        to.append(name.clone(), value.clone());
    }
}

/// The owner's response, as the client gets it.
fn relayed(response: Response<Incoming>) -> Response<HttpBody> {
    let (parts, body) = response.into_parts();
    let mut out = Response::new(Relayed(body).boxed_unsync());
    *out.status_mut() = parts.status;
    copy_end_to_end(&parts.headers, out.headers_mut());
    out
}

/// The owner's body; if it breaks off, the client's ends there (logged).
struct Relayed(Incoming);

impl Body for Relayed {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<BodyFrame<Bytes>, Infallible>>> {
        match Pin::new(&mut self.0).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => Poll::Ready(Some(Ok(frame))),
            Poll::Ready(Some(Err(e))) => {
                tracing::warn!("a forwarded response broke off: {e}");
                Poll::Ready(None)
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.0.size_hint()
    }
}
