//! A JSON-RPC peer over a [`Transport`]: the part client and server share.
//!
//! [`Peer::start`] runs the read loop. Responses are matched to the requests this side
//! sent; requests and notifications from the other side go to an [`Inbound`] handler,
//! each request on its own task so a slow one never holds up the rest (or, where the
//! handler can take it without waiting, on the read loop itself: [`Inbound::request_now`]).
//! A request this side sends is awaited ([`Peer::request`]) or answered into a callback on
//! the read loop ([`Peer::request_then`]: no task, for a relay). When the transport closes,
//! every request still waiting fails with the reason.

mod batch;
mod hold;
mod limits;
mod pending;
mod read;
mod reclaimed;
mod unreadable;

pub use batch::{check_batch_len, DEFAULT_MAX_BATCH_MESSAGES};
pub use limits::DEFAULT_MAX_IN_FLIGHT;
pub use pending::{Answer, Then};
pub use reclaimed::Reclaimed;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;
use serde_json::json;
use serde_json::value::RawValue;

use crate::jsonrpc::{ErrorResponse, Frame, Message, Notification, Request, RequestId, Response};
use crate::protocol::method;
use crate::transport::{CloseReason, Closed, Transport, TrySendError};
use crate::ErrorObject;
use pending::Pending;

/// Why a request this side sent got no result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RpcError {
    /// The peer answered with an error.
    #[error("peer error {}: {}", .0.code, .0.message)]
    Error(ErrorObject),
    /// The transport closed before the answer came.
    #[error("connection closed before the answer: {0}")]
    Closed(CloseReason),
    /// No answer in time; a `notifications/cancelled` was sent.
    #[error("no answer within {0:?}; the request was cancelled")]
    Timeout(Duration),
    /// The peer's answer could not be taken: it could not be read (cut short, not JSON,
    /// not UTF-8, over the message limit) or it came under an id no request has, and it
    /// was tied to this request, which would otherwise wait for its timeout. Says what
    /// was wrong, with the code ([`crate::codes::INTERNAL_ERROR`]) to pass it on with.
    #[error("{}", .0.message)]
    BadAnswer(ErrorObject),
    /// The request is longer than the transport takes (see
    /// [`Transport::max_message_bytes`]); it was not sent.
    #[error("the request is about {bytes} bytes, over the {limit}-byte message limit")]
    TooLarge {
        /// Its length as written, at most this.
        bytes: usize,
        /// The transport's limit.
        limit: usize,
    },
}

/// Handles what the other side sends.
#[async_trait]
pub trait Inbound: Send + Sync + 'static {
    /// Answers a request: return the response or error response to send.
    async fn request(&self, peer: &Peer, request: Request) -> Message;

    /// Takes a request on the read loop, without a task of its own, if this side can: a
    /// handler that only has to start work and answer later (a relay forwarding the
    /// request, answering from a callback) returns `None`. Anything else gives the
    /// request back, and it goes to [`Inbound::request`] on its own task. Must not block.
    /// Default: gives every request back.
    fn request_now(&self, _peer: &Peer, request: Request) -> Option<Request> {
        Some(request)
    }

    /// Takes a notification. Runs on the read loop: keep it short.
    async fn notification(&self, peer: &Peer, notification: Notification);

    /// Whether a batch of `len` messages is taken: `Err` gives the error every request in
    /// it is answered with (none is served). Default: batches of at most
    /// [`DEFAULT_MAX_BATCH_MESSAGES`].
    fn batch(&self, len: usize) -> Result<(), ErrorObject> {
        check_batch_len(len, DEFAULT_MAX_BATCH_MESSAGES)
    }

    /// Most requests from the other side this side serves at once (default
    /// [`DEFAULT_MAX_IN_FLIGHT`]). On a connection read by its own loop ([`Peer::start`])
    /// one more is held and reading pauses until answers go out; on a detached peer
    /// ([`Peer::deliver`]) it is answered at once with [`crate::codes::SERVER_BUSY`].
    fn max_in_flight(&self) -> usize {
        DEFAULT_MAX_IN_FLIGHT
    }

    /// The connection closed. Requests still being handled may stop (default: nothing).
    async fn closed(&self, _reason: &CloseReason) {}
}

struct Shared {
    transport: Arc<dyn Transport>,
    pending: Pending,
    next_id: AtomicI64,
    closed: Mutex<Option<CloseReason>>,
    /// Requests from the other side taken and not answered yet.
    serving: std::sync::atomic::AtomicUsize,
    /// Whether the read loop holds a request back for want of room (`hold.rs`), and how
    /// it is told that room was made or that this side waits for the peer's answers.
    held: std::sync::atomic::AtomicBool,
    wake: tokio::sync::Notify,
}

impl Shared {
    fn new(transport: Arc<dyn Transport>) -> Arc<Shared> {
        Arc::new(Shared {
            transport,
            pending: Pending::default(),
            next_id: AtomicI64::new(1),
            closed: Mutex::new(None),
            serving: Default::default(),
            held: Default::default(),
            wake: tokio::sync::Notify::new(),
        })
    }
}

/// One side of a JSON-RPC connection. Cheap to clone.
#[derive(Clone)]
pub struct Peer {
    shared: Arc<Shared>,
}

impl Peer {
    /// Starts the read loop on `transport`. The returned handle ends, with the reason, when
    /// the transport closes.
    pub fn start(
        transport: Arc<dyn Transport>,
        inbound: Arc<dyn Inbound>,
    ) -> (Peer, tokio::task::JoinHandle<CloseReason>) {
        let peer = Peer {
            shared: Shared::new(transport),
        };
        let reader = peer.clone();
        let handle = tokio::spawn(async move { reader.read_loop(inbound).await });
        (peer, handle)
    }

    /// A peer without a read loop, for a transport that is not one stream (each HTTP
    /// request brings its own messages): what arrives is handed to it with
    /// [`Peer::deliver`], and [`Peer::shut`] ends it.
    pub fn detached(transport: Arc<dyn Transport>) -> Peer {
        Peer {
            shared: Shared::new(transport),
        }
    }

    /// Takes a frame that arrived other than through the transport's `recv`, as the read
    /// loop takes what it reads: answers resolve this side's requests, requests go to
    /// `inbound` (on a task, unless it takes them at once), notifications to `inbound`.
    /// A request past [`Inbound::max_in_flight`] is refused: whoever delivers cannot be
    /// made to wait here (HTTP answers `429` before it comes to that).
    pub async fn deliver(&self, frame: Frame, inbound: &Arc<dyn Inbound>) {
        self.take_other(crate::transport::Incoming::Frame(frame), inbound)
            .await;
    }

    /// Ends a detached peer: `inbound` hears it, and requests still waiting fail.
    pub async fn shut(&self, reason: CloseReason, inbound: &Arc<dyn Inbound>) {
        self.shared.closed.lock().get_or_insert(reason.clone());
        inbound.closed(&reason).await;
        for waiter in self.shared.pending.drain() {
            waiter.fail(pending::closed(Some(reason.clone())));
        }
    }

    /// The transport under this peer.
    pub fn transport(&self) -> &Arc<dyn Transport> {
        &self.shared.transport
    }

    /// Why the connection closed, once it has.
    pub fn close_reason(&self) -> Option<CloseReason> {
        self.shared.closed.lock().clone()
    }

    /// A fresh request id.
    pub fn next_id(&self) -> RequestId {
        RequestId::from(self.shared.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Sends a request and waits for its answer. On `timeout`, sends `notifications/cancelled`.
    pub async fn request(
        &self,
        method_name: &str,
        params: Option<Box<RawValue>>,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>, RpcError> {
        let id = self.next_id();
        self.request_with_id(id, method_name, params, timeout).await
    }

    /// [`Peer::request`] with a caller-chosen id (to tie progress or cancellation to it).
    pub async fn request_with_id(
        &self,
        id: RequestId,
        method_name: &str,
        params: Option<Box<RawValue>>,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>, RpcError> {
        if let Some(reason) = self.close_reason() {
            return Err(RpcError::Closed(reason));
        }
        self.fits(method_name, params.as_deref())?;
        let rx = self.shared.pending.wait(id.clone());
        self.wake_held();
        let msg = Message::Request(Request::raw(id.clone(), method_name, params));
        if let Err(Closed(reason)) = self.send(msg).await {
            self.forget(&id);
            return Err(RpcError::Closed(reason));
        }
        let answer = match timeout {
            Some(t) => match tokio::time::timeout(t, rx).await {
                Ok(a) => a,
                Err(_) => {
                    self.forget(&id);
                    self.cancel(&id, "timed out").await;
                    return Err(RpcError::Timeout(t));
                }
            },
            None => rx.await,
        };
        match answer {
            Ok(answer) => answer,
            Err(_) => Err(RpcError::Closed(
                self.close_reason().unwrap_or(CloseReason::PeerClosed),
            )),
        }
    }

    /// Sends a request whose answer goes to `then`, called on the read loop (keep it
    /// short and never block): the result, or why none came (the connection closed, or no
    /// answer within `timeout`, after which `notifications/cancelled` is sent). Nothing is
    /// spawned or awaited; a transport that cannot take the request at once gets it from a
    /// task.
    pub fn request_then(
        &self,
        id: RequestId,
        method_name: &str,
        params: Option<Box<RawValue>>,
        timeout: Option<Duration>,
        then: impl FnOnce(Answer) + Send + 'static,
    ) -> Result<(), RpcError> {
        if let Some(reason) = self.close_reason() {
            return Err(RpcError::Closed(reason));
        }
        self.fits(method_name, params.as_deref())?;
        if self
            .shared
            .pending
            .then(id.clone(), Box::new(then), timeout)
        {
            let owner = Arc::downgrade(&self.shared);
            tokio::spawn(pending::sweep(
                owner,
                |s: &Shared| &s.pending,
                |s: &Arc<Shared>, id| {
                    let peer = Peer { shared: s.clone() };
                    peer.cancel_now(&id, "timed out")
                },
            ));
        }
        self.wake_held();
        let msg = Message::Request(Request::raw(id.clone(), method_name, params));
        self.send_now(msg)
            .inspect_err(|_| self.forget(&id))
            .map_err(|Closed(reason)| RpcError::Closed(reason))
    }

    /// Sends `notifications/cancelled` for a request this side sent.
    pub async fn cancel(&self, id: &RequestId, reason: &str) {
        self.forget(id);
        let _ = self
            .notify(method::CANCELLED, cancelled_params(id, reason))
            .await;
    }

    /// [`Peer::cancel`] without waiting (from a callback).
    pub fn cancel_now(&self, id: &RequestId, reason: &str) {
        self.forget(id);
        let _ = self.notify_now(method::CANCELLED, cancelled_params(id, reason));
    }

    fn forget(&self, id: &RequestId) {
        drop(self.shared.pending.take(id));
    }

    /// Sends a notification.
    pub async fn notify(
        &self,
        method_name: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), Closed> {
        self.send(Message::Notification(Notification {
            method: method_name.to_owned(),
            params,
            extra: Default::default(),
        }))
        .await
    }

    /// [`Peer::notify`] without waiting (see [`Peer::send_now`]).
    pub fn notify_now(
        &self,
        method_name: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), Closed> {
        self.send_now(Message::Notification(Notification {
            method: method_name.to_owned(),
            params,
            extra: Default::default(),
        }))
    }

    /// Sends one message.
    pub async fn send(&self, msg: Message) -> Result<(), Closed> {
        self.answering(&msg);
        self.shared.transport.send(Frame::Single(msg)).await
    }

    /// Sends one message without waiting: at once where the transport can take it, else
    /// from a task of its own (the order of messages sent that way is not kept).
    pub fn send_now(&self, msg: Message) -> Result<(), Closed> {
        self.answering(&msg);
        match self.shared.transport.try_send(Frame::Single(msg)) {
            Ok(()) => Ok(()),
            Err(TrySendError::Closed(c)) => Err(c),
            Err(TrySendError::WouldWait(frame)) => {
                let transport = self.shared.transport.clone();
                tokio::spawn(async move { transport.send(*frame).await });
                Ok(())
            }
        }
    }

    /// Closes the transport.
    pub async fn close(&self) {
        self.shared.transport.close().await;
    }

    fn resolve(&self, id: &RequestId, answer: Result<Box<RawValue>, ErrorObject>) {
        match self.shared.pending.take(id) {
            Some(waiter) => waiter.answer(answer),
            None => self.stray_answer(id, answer),
        }
    }
}

fn cancelled_params(id: &RequestId, reason: &str) -> Option<Box<RawValue>> {
    serde_json::value::to_raw_value(&json!({"requestId": id, "reason": reason})).ok()
}

/// A success response to `id` with a raw result.
pub fn response(id: RequestId, result: Box<RawValue>) -> Message {
    Message::Response(Response {
        id,
        result,
        extra: Default::default(),
    })
}

/// An error response to `id`.
pub fn error_response(id: RequestId, error: ErrorObject) -> Message {
    Message::Error(ErrorResponse::new(Some(id), error))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::memory_pair;

    /// Echoes requests; `slow` never answers. Says when a `slow` one begins and when a
    /// notification comes.
    #[derive(Default)]
    struct Echo {
        notified: Mutex<Vec<String>>,
        heard: tokio::sync::Notify,
        slow_began: tokio::sync::Notify,
    }

    #[async_trait]
    impl Inbound for Echo {
        async fn request(&self, _peer: &Peer, r: Request) -> Message {
            if r.method == "slow" {
                self.slow_began.notify_one();
                std::future::pending::<()>().await;
            }
            match r.method.as_str() {
                "fail" => error_response(r.id, ErrorObject::new(-32000, "nope")),
                _ => response(
                    r.id,
                    r.params
                        .unwrap_or_else(|| RawValue::from_string("{}".into()).expect("raw")),
                ),
            }
        }
        async fn notification(&self, _peer: &Peer, n: Notification) {
            let params = n.params.map(|p| p.get().to_owned()).unwrap_or_default();
            self.notified.lock().push(format!("{} {params}", n.method));
            self.heard.notify_one();
        }
    }

    fn raw(s: &str) -> Option<Box<RawValue>> {
        Some(RawValue::from_string(s.into()).expect("raw"))
    }

    #[tokio::test]
    async fn concurrent_requests_are_correlated_and_errors_and_timeouts_reported() {
        let (a, b) = memory_pair(16);
        let (client, _) = Peer::start(Arc::new(a), Arc::new(Echo::default()));
        let server_side = Arc::new(Echo::default());
        let (_server, _) = Peer::start(Arc::new(b), server_side.clone());
        let (x, y) = tokio::join!(
            client.request("x", raw(r#"{"n":1}"#), None),
            client.request("y", raw(r#"{"n":2}"#), None)
        );
        assert_eq!(x.expect("x").get(), r#"{"n":1}"#);
        assert_eq!(y.expect("y").get(), r#"{"n":2}"#);
        assert!(
            matches!(client.request("fail", None, None).await, Err(RpcError::Error(e)) if e.code == -32000)
        );
        let t = Duration::from_millis(50);
        assert_eq!(
            client.request("slow", None, Some(t)).await.unwrap_err(),
            RpcError::Timeout(t)
        );
        tokio::time::timeout(Duration::from_secs(5), server_side.heard.notified())
            .await
            .expect("the other side heard");
        let notified = server_side.notified.lock().clone();
        assert_eq!(
            notified,
            [r#"notifications/cancelled {"reason":"timed out","requestId":4}"#],
            "a timeout tells the other side"
        );
    }

    #[tokio::test]
    async fn callbacks_get_answers_errors_timeouts_and_closes() {
        let (a, b) = memory_pair(16);
        let (client, _) = Peer::start(Arc::new(a), Arc::new(Echo::default()));
        let server_side = Arc::new(Echo::default());
        let (server, _) = Peer::start(Arc::new(b), server_side.clone());
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let outcome = |tag: &'static str| {
            let tx = tx.clone();
            move |a: Answer| {
                let _ = tx.send(match a {
                    Ok(r) => format!("{tag} ok {}", r.get()),
                    Err(e) => format!("{tag} {e}"),
                });
            }
        };
        let t = Some(Duration::from_millis(150));
        client
            .request_then(client.next_id(), "x", raw(r#"{"n":1}"#), t, outcome("x"))
            .expect("send");
        client
            .request_then(client.next_id(), "fail", None, t, outcome("fail"))
            .expect("send");
        let slow = client.next_id();
        client
            .request_then(slow.clone(), "slow", None, t, outcome("slow"))
            .expect("send");
        let mut got = Vec::new();
        for _ in 0..3 {
            let line = tokio::time::timeout(Duration::from_secs(5), rx.recv())
                .await
                .expect("no hang")
                .expect("answer");
            got.push(line);
        }
        got.sort();
        assert_eq!(
            got,
            [
                "fail peer error -32000: nope",
                "slow no answer within 150ms; the request was cancelled",
                r#"x ok {"n":1}"#,
            ]
        );
        tokio::time::timeout(Duration::from_secs(5), server_side.heard.notified())
            .await
            .expect("the other side heard");
        let notified = server_side.notified.lock().clone();
        assert_eq!(
            notified,
            [format!(
                r#"notifications/cancelled {{"reason":"timed out","requestId":{slow}}}"#
            )],
            "a timeout tells the other side"
        );
        // A request taken back answers through its future; a close fails the rest.
        let taken = client.next_id();
        client
            .request_then(taken.clone(), "x", raw("{}"), None, outcome("never"))
            .expect("send");
        let back = client.reclaim(&taken).expect("still waiting");
        assert_eq!(back.answer().await.expect("answer").get(), "{}");
        client
            .request_then(client.next_id(), "slow", None, None, outcome("closing"))
            .expect("send");
        server.close().await;
        let line = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("no hang")
            .expect("answer");
        assert_eq!(
            line,
            "closing connection closed before the answer: closed by the peer"
        );
        assert!(
            rx.try_recv().is_err(),
            "the reclaimed callback was never called"
        );
    }

    #[tokio::test]
    async fn closing_fails_requests_in_flight() {
        let (a, b) = memory_pair(16);
        let (client, _) = Peer::start(Arc::new(a), Arc::new(Echo::default()));
        let server_side = Arc::new(Echo::default());
        let (server, _) = Peer::start(Arc::new(b), server_side.clone());
        let call = tokio::spawn({
            let client = client.clone();
            async move { client.request("slow", None, None).await }
        });
        tokio::time::timeout(Duration::from_secs(5), server_side.slow_began.notified())
            .await
            .expect("the request reached the other side");
        server.close().await;
        let got = tokio::time::timeout(Duration::from_secs(5), call)
            .await
            .expect("no hang")
            .expect("join");
        assert_eq!(got.unwrap_err(), RpcError::Closed(CloseReason::PeerClosed));
    }
}
