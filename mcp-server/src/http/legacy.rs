//! Legacy sessions (2025-03-26 … 2025-11-25): `initialize` opens one, later POSTs name it
//! with `Mcp-Session-Id`. The session object keeps the handshake; its peer has no read
//! loop: each POST hands its messages over directly, and what the session sends goes
//! through the [`Router`] to the POST it belongs to (or the GET stream).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame as BodyFrame};
use mcp_types::rpc::{Inbound, Peer};
use mcp_types::transport::CloseReason;
use mcp_types::{codes, meta, Frame, Message, RequestId};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::reply::{
    empty, frame_body, json, keep_alive, respond, rpc_error, sse, HttpBody, KEEP_ALIVE,
};
use super::routing::{Decision, Mode, Router};
use crate::Server;

/// One legacy session: the server's session object, its peer, and the router its
/// messages go through.
pub(super) struct LegacySession {
    inbound: Arc<dyn Inbound>,
    peer: Peer,
    router: Arc<Router>,
    keep_alive: Duration,
}

impl LegacySession {
    pub(super) fn start(server: &Server, replay_events: usize, keep_alive: Duration) -> Self {
        let router = Arc::new(Router::new(replay_events));
        LegacySession {
            inbound: server.host_session(),
            peer: Peer::detached(router.clone()),
            router,
            keep_alive,
        }
    }

    /// One POST: its messages go to the session, and the answers to its requests come
    /// back as JSON (when the client takes no stream, or when a lone answer comes first)
    /// or as an SSE stream.
    pub(super) async fn post(&self, frame: Frame, sse_ok: bool) -> Response<HttpBody> {
        let single = matches!(frame, Frame::Single(_));
        let requests: Vec<(RequestId, Option<String>)> = match &frame {
            Frame::Single(m) => request_of(m).into_iter().collect(),
            Frame::Batch(b) => b.iter().filter_map(request_of).collect(),
        };
        if requests.is_empty() {
            // Notifications, and answers to the server's requests.
            self.peer.deliver(frame, &self.inbound).await;
            return respond(StatusCode::ACCEPTED, empty(), None);
        }
        if !sse_ok {
            let (tx, rx) = oneshot::channel();
            self.router
                .open_post(&requests, Mode::Json(Vec::new(), Some(tx)));
            self.peer.deliver(frame, &self.inbound).await;
            return match rx.await {
                Ok(mut answers) if answers.len() == 1 && single => {
                    json(StatusCode::OK, &answers.remove(0))
                }
                Ok(answers) => respond(
                    StatusCode::OK,
                    frame_body(&Frame::Batch(answers)),
                    Some("application/json"),
                ),
                Err(_) => ended(),
            };
        }
        if !single || requests.len() != 1 {
            let (tx, rx) = mpsc::channel(256);
            self.router.open_post(&requests, Mode::Sse(Some(tx)));
            self.peer.deliver(frame, &self.inbound).await;
            return self.stream(rx);
        }
        let (tx, rx) = oneshot::channel();
        self.router.open_post(&requests, Mode::Undecided(tx));
        self.peer.deliver(frame, &self.inbound).await;
        match rx.await {
            Ok(Decision::Json(m)) => json(StatusCode::OK, &m),
            Ok(Decision::Sse(rx)) => self.stream(rx),
            Err(_) => ended(),
        }
    }

    /// A GET stream (see [`Router::attach_get`]).
    pub(super) fn get(&self, last_event: Option<&str>) -> Response<HttpBody> {
        let (tx, rx) = mpsc::channel(256);
        self.router.attach_get(tx, last_event);
        self.stream(rx)
    }

    /// The session ends (DELETE): what it was doing is cancelled.
    pub(super) async fn end(&self) {
        self.router.end();
        self.peer.shut(CloseReason::Closed, &self.inbound).await;
    }

    fn stream(&self, rx: mpsc::Receiver<Bytes>) -> Response<HttpBody> {
        sse(Events {
            rx,
            keep_alive: keep_alive(self.keep_alive),
        }
        .boxed_unsync())
    }
}

fn ended() -> Response<HttpBody> {
    rpc_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        None,
        codes::INTERNAL_ERROR,
        "request ended without an answer",
    )
}

/// A request's id and progress token (as JSON text), for routing what answers it.
fn request_of(m: &Message) -> Option<(RequestId, Option<String>)> {
    let Message::Request(r) = m else {
        return None;
    };
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(rename = "_meta", borrow, default)]
        meta: Option<&'a serde_json::value::RawValue>,
    }
    let token = r
        .params
        .as_deref()
        .and_then(|p| serde_json::from_str::<Params<'_>>(p.get()).ok())
        .and_then(|p| p.meta)
        .and_then(|m| serde_json::from_str::<serde_json::Map<String, Value>>(m.get()).ok())
        .and_then(|m| m.get(meta::PROGRESS_TOKEN).map(Value::to_string));
    Some((r.id.clone(), token))
}

/// An SSE body fed by the router, with keep-alive comments while idle.
struct Events {
    rx: mpsc::Receiver<Bytes>,
    keep_alive: tokio::time::Interval,
}

impl Body for Events {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<BodyFrame<Bytes>, Self::Error>>> {
        use std::task::Poll;
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(b)) => return Poll::Ready(Some(Ok(BodyFrame::data(b)))),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => {}
        }
        if self.keep_alive.poll_tick(cx).is_ready() {
            return Poll::Ready(Some(Ok(BodyFrame::data(Bytes::from_static(KEEP_ALIVE)))));
        }
        Poll::Pending
    }
}
