//! 2026-07-28 requests: each POST is one request, served without a session of the
//! protocol's: its own session object and a peer without a read loop, which the request
//! is handed to directly. A `tools/call` goes to [`crate::ServerHandler::call_tool_raw`]
//! where it is read (a relay answers it without a task); anything else runs on a task. The answer goes back as JSON,
//! or, when notifications come first and the client takes a stream, as SSE events until
//! the answer. A client that goes away before the answer cancels the request.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame as BodyFrame};
use mcp_types::rpc::{Inbound, Peer};
use mcp_types::transport::CloseReason;
use mcp_types::{codes, Frame, Message, Request, RequestId};

use super::checks::{accepts_sse, check_modern_headers, check_param_headers};
use super::exchange::Exchange;
use super::reply::{
    empty, keep_alive, lone_answer, modern_status, respond, rpc_error, sse, sse_event, HttpBody,
    KEEP_ALIVE,
};
use crate::Server;

/// Serves one 2026-07-28 POST.
pub(super) async fn serve(
    server: &Server,
    keep_alive_every: std::time::Duration,
    frame: Frame,
    h: &HeaderMap,
    caller: crate::context::Caller,
) -> Response<HttpBody> {
    let Frame::Single(msg) = frame else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            codes::INVALID_REQUEST,
            "Batches are not allowed",
        );
    };
    let req = match msg {
        Message::Request(r) => r,
        // No client-to-server notifications are defined on this transport; accept and drop.
        Message::Notification(_) => return respond(StatusCode::ACCEPTED, empty(), None),
        _ => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                None,
                codes::INVALID_REQUEST,
                "Clients do not send responses",
            )
        }
    };
    if let Err((code, why)) = check_modern_headers(h, &req)
        .and_then(|()| mirrored(server, h, &req, caller.principal.as_deref()))
    {
        tracing::info!("rejected 2026 request: {why}");
        return rpc_error(StatusCode::BAD_REQUEST, Some(req.id), code, why);
    }
    let id = req.id.clone();
    let mut call = InFlight::start(server, caller);
    call.peer
        .deliver(Frame::Single(Message::Request(req)), &call.inbound)
        .await;
    let sse_ok = accepts_sse(h);
    // Until the first message, the answer may still be plain JSON with its own status.
    let first = loop {
        match call.exchange.next().await {
            Some(m) if answers(&m, &id) => {
                call.finished();
                let status = match &m {
                    Message::Error(e) => modern_status(e.error.code),
                    _ => StatusCode::OK,
                };
                return lone_answer(status, &m);
            }
            Some(m) if sse_ok => break m,
            // A client that takes no stream hears only the answer.
            Some(_) => continue,
            None => {
                return rpc_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    Some(id),
                    codes::INTERNAL_ERROR,
                    "request ended without an answer",
                )
            }
        }
    };
    sse(Events {
        call,
        first: Some(first),
        id,
        keep_alive: keep_alive(keep_alive_every),
        done: false,
    }
    .boxed_unsync())
}

/// The `Mcp-Param-*` check of a `tools/call`, for the tool the handler says it is.
fn mirrored(
    server: &Server,
    h: &HeaderMap,
    req: &Request,
    principal: Option<&crate::auth::Principal>,
) -> Result<(), (i64, String)> {
    if req.method != mcp_types::protocol::method::TOOLS_CALL {
        return Ok(());
    }
    let Some(name) = h
        .get(&super::checks::names::NAME)
        .and_then(|v| v.to_str().ok())
    else {
        return Ok(());
    };
    // The Mcp-Name header was just checked equal to the body's name.
    let name = mcp_types::headers::decode_value(name.trim()).unwrap_or_default();
    check_param_headers(h, req, &server.handler().header_params(&name, principal))
}

/// Whether `m` is the answer to request `id`.
pub(super) fn answers(m: &Message, id: &RequestId) -> bool {
    matches!(m, Message::Response(_) | Message::Error(_)) && m.id() == Some(id)
}

/// One request being served: its exchange, the session and peer it runs in. Dropped
/// before its answer (the client went away), it cancels the request.
struct InFlight {
    exchange: Arc<Exchange>,
    peer: Peer,
    inbound: Arc<dyn Inbound>,
    answered: bool,
}

impl InFlight {
    fn start(server: &Server, caller: crate::context::Caller) -> InFlight {
        let exchange = Arc::new(Exchange::default());
        let inbound: Arc<dyn Inbound> = server.session(caller);
        InFlight {
            peer: Peer::detached(exchange.clone()),
            exchange,
            inbound,
            answered: false,
        }
    }

    fn finished(&mut self) {
        self.answered = true;
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.exchange.close_now(CloseReason::PeerClosed);
        if self.answered {
            return;
        }
        // Closing the stream is the client's cancellation.
        let (peer, inbound) = (self.peer.clone(), self.inbound.clone());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { peer.shut(CloseReason::PeerClosed, &inbound).await });
        }
    }
}

/// The SSE body of a 2026 request: its notifications, then its answer.
struct Events {
    call: InFlight,
    first: Option<Message>,
    id: RequestId,
    keep_alive: tokio::time::Interval,
    done: bool,
}

impl Body for Events {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<BodyFrame<Bytes>, Self::Error>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let next = match self.first.take() {
            Some(m) => Poll::Ready(Some(m)),
            None => self.call.exchange.poll_next(cx),
        };
        match next {
            Poll::Ready(Some(m)) => {
                if answers(&m, &self.id) {
                    self.done = true;
                    self.call.finished();
                }
                Poll::Ready(Some(Ok(BodyFrame::data(sse_event(None, &m)))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                if self.keep_alive.poll_tick(cx).is_ready() {
                    return Poll::Ready(Some(Ok(BodyFrame::data(Bytes::from_static(KEEP_ALIVE)))));
                }
                Poll::Pending
            }
        }
    }
}
