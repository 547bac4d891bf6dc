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
//!   DELETE ends the session.
//!
//! [`StreamableHttp`] is a hyper service, so it mounts in any hyper (or axum) server;
//! [`serve`] runs one on a listener. Host and Origin are checked against allow-lists
//! that default to loopback (DNS rebinding), and bodies are capped.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::future::Future;
use std::hash::BuildHasher;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Body, Frame as BodyFrame};
use mcp_types::protocol::method;
use mcp_types::transport::{memory_pair, Incoming, MemoryTransport, Transport};
use mcp_types::{
    codes, headers, meta, ErrorObject, ErrorResponse, Frame, Message, RequestId, Revision,
};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::Server;

/// The body of every response this module writes.
pub type HttpBody = UnsyncBoxBody<Bytes, Infallible>;

/// How the HTTP endpoint behaves.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The endpoint path (default `/mcp`).
    pub path: String,
    /// Host names accepted in `Host` (any port). Default: loopback names only.
    pub allowed_hosts: Vec<String>,
    /// Host names accepted in `Origin` (any scheme and port), when the header is present.
    /// Default: loopback names only.
    pub allowed_origins: Vec<String>,
    /// Largest request body (default 4 MiB); larger is `413`.
    pub max_body_bytes: usize,
    /// How often an idle SSE stream gets a keep-alive comment (default 15 s).
    pub keep_alive: Duration,
    /// Events kept per stream for `Last-Event-ID` replay (default 256).
    pub replay_events: usize,
}

fn loopback() -> Vec<String> {
    ["localhost", "127.0.0.1", "[::1]", "::1"]
        .map(String::from)
        .to_vec()
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            path: "/mcp".into(),
            allowed_hosts: loopback(),
            allowed_origins: loopback(),
            max_body_bytes: 4 * 1024 * 1024,
            keep_alive: Duration::from_secs(15),
            replay_events: 256,
        }
    }
}

/// A Streamable HTTP endpoint around a [`Server`]. Cheap to clone.
#[derive(Clone)]
pub struct StreamableHttp {
    inner: Arc<Inner>,
}

struct Inner {
    server: Server,
    options: HttpOptions,
    sessions: Mutex<HashMap<String, Arc<LegacySession>>>,
    ids: RandomState,
    counter: AtomicU64,
}

fn json_body(v: &impl serde::Serialize) -> HttpBody {
    let bytes = serde_json::to_vec(v).unwrap_or_default();
    Full::new(Bytes::from(bytes)).boxed_unsync()
}

fn empty() -> HttpBody {
    Full::new(Bytes::new()).boxed_unsync()
}

fn respond(status: StatusCode, body: HttpBody, content_type: Option<&str>) -> Response<HttpBody> {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    if let Some(ct) = content_type {
        if let Ok(v) = header::HeaderValue::from_str(ct) {
            r.headers_mut().insert(header::CONTENT_TYPE, v);
        }
    }
    r
}

fn rpc_error(
    status: StatusCode,
    id: Option<RequestId>,
    code: i64,
    message: impl Into<String>,
) -> Response<HttpBody> {
    let e = Message::Error(ErrorResponse::new(id, ErrorObject::new(code, message)));
    respond(status, json_body(&e), Some("application/json"))
}

/// The HTTP status a 2026-07-28 error answer travels with.
fn modern_status(code: i64) -> StatusCode {
    match code {
        codes::HEADER_MISMATCH
        | codes::MISSING_REQUIRED_CLIENT_CAPABILITY
        | codes::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        codes::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        codes::PARSE_ERROR | codes::INVALID_REQUEST => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

fn header_str<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

fn accepts_sse(h: &HeaderMap) -> bool {
    header_str(h, header::ACCEPT.as_str()).is_some_and(|a| a.contains("text/event-stream"))
}

fn sse_event(id: Option<&str>, msg: &Message) -> Bytes {
    let data = msg.to_bytes();
    let mut out = Vec::with_capacity(data.len() + 40);
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"event: message\ndata: ");
    out.extend_from_slice(&data);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// An SSE body fed by a channel, with keep-alive comments while idle.
struct ChannelBody {
    rx: mpsc::Receiver<Bytes>,
    keep_alive: tokio::time::Interval,
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<BodyFrame<Bytes>, Infallible>>> {
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(b)) => return Poll::Ready(Some(Ok(BodyFrame::data(b)))),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => {}
        }
        if self.keep_alive.poll_tick(cx).is_ready() {
            return Poll::Ready(Some(Ok(BodyFrame::data(Bytes::from_static(
                b": keep-alive\n\n",
            )))));
        }
        Poll::Pending
    }
}

fn sse_response(rx: mpsc::Receiver<Bytes>, keep_alive: Duration) -> Response<HttpBody> {
    let mut interval =
        tokio::time::interval_at(tokio::time::Instant::now() + keep_alive, keep_alive);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut r = respond(
        StatusCode::OK,
        ChannelBody {
            rx,
            keep_alive: interval,
        }
        .boxed_unsync(),
        Some("text/event-stream"),
    );
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache"),
    );
    r.headers_mut()
        .insert("x-accel-buffering", header::HeaderValue::from_static("no"));
    r
}

/// The `_meta` protocol version of a request body, if it has one.
fn meta_version(msg: &Message) -> Option<String> {
    mcp_revisions::negotiate::request_protocol_version(msg)
}

fn host_of(authority: &str) -> &str {
    let a = authority.trim();
    if let Some(rest) = a.strip_prefix('[') {
        return rest.split_once(']').map_or(a, |(h, _)| h);
    }
    a.rsplit_once(':')
        .filter(|(_, p)| p.chars().all(|c| c.is_ascii_digit()))
        .map_or(a, |(h, _)| h)
}

impl StreamableHttp {
    /// An endpoint serving `server` with `options`.
    pub fn new(server: Server, options: HttpOptions) -> Self {
        StreamableHttp {
            inner: Arc::new(Inner {
                server,
                options,
                sessions: Mutex::new(HashMap::new()),
                ids: RandomState::new(),
                counter: AtomicU64::new(1),
            }),
        }
    }

    /// Legacy sessions open now.
    pub fn session_count(&self) -> usize {
        self.inner.sessions.lock().map(|s| s.len()).unwrap_or(0)
    }

    fn allowed(list: &[String], host: &str) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        list.iter().any(|a| {
            a.trim_start_matches('[')
                .trim_end_matches(']')
                .eq_ignore_ascii_case(host)
        })
    }

    /// Answers one HTTP request.
    pub async fn handle<B>(&self, req: Request<B>) -> Response<HttpBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let o = &self.inner.options;
        if req.uri().path() != o.path {
            return respond(StatusCode::NOT_FOUND, empty(), None);
        }
        let host = header_str(req.headers(), header::HOST.as_str())
            .or(req.uri().authority().map(|a| a.as_str()));
        if !host.is_some_and(|h| Self::allowed(&o.allowed_hosts, host_of(h))) {
            tracing::warn!(?host, "rejected: Host not allowed");
            return rpc_error(
                StatusCode::FORBIDDEN,
                None,
                codes::INVALID_REQUEST,
                "Forbidden: Host not allowed",
            );
        }
        if let Some(origin) = header_str(req.headers(), header::ORIGIN.as_str()) {
            let authority = origin.split_once("://").map_or(origin, |(_, a)| a);
            if !Self::allowed(&o.allowed_origins, host_of(authority)) {
                tracing::warn!(origin, "rejected: Origin not allowed");
                return rpc_error(
                    StatusCode::FORBIDDEN,
                    None,
                    codes::INVALID_REQUEST,
                    "Forbidden: Origin not allowed",
                );
            }
        }
        match *req.method() {
            Method::POST => self.post(req).await,
            Method::GET => self.get(req.headers()),
            Method::DELETE => self.delete(req.headers()).await,
            _ => respond(StatusCode::METHOD_NOT_ALLOWED, empty(), None),
        }
    }

    async fn post<B>(&self, req: Request<B>) -> Response<HttpBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (parts, body) = req.into_parts();
        let limit = self.inner.options.max_body_bytes;
        let bytes = match Limited::new(body, limit).collect().await {
            Ok(c) => c.to_bytes(),
            Err(e)
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some() =>
            {
                return rpc_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    None,
                    codes::INVALID_REQUEST,
                    format!("Request body exceeds {limit} bytes"),
                )
            }
            Err(e) => {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    None,
                    codes::INVALID_REQUEST,
                    format!("Unreadable body: {e}"),
                )
            }
        };
        let frame = match Frame::parse(&bytes) {
            Ok(f) => f,
            Err(e) => {
                let err = mcp_types::transport::invalid_frame_error(&e);
                return rpc_error(StatusCode::BAD_REQUEST, None, err.code, err.message);
            }
        };
        let h = &parts.headers;
        let header_version = header_str(h, headers::PROTOCOL_VERSION);
        let modern = match &frame {
            Frame::Single(m) => {
                meta_version(m).is_some()
                    || (header_version == Some(Revision::V2026_07_28.as_str())
                        && h.get(headers::SESSION_ID).is_none())
            }
            Frame::Batch(_) => false,
        };
        if modern {
            return self.modern(frame, h).await;
        }
        match header_str(h, headers::SESSION_ID) {
            Some(id) => {
                let session = self
                    .inner
                    .sessions
                    .lock()
                    .ok()
                    .and_then(|s| s.get(id).cloned());
                let Some(session) = session else {
                    return rpc_error(
                        StatusCode::NOT_FOUND,
                        None,
                        codes::INVALID_REQUEST,
                        "Session not found",
                    );
                };
                if let Some(v) = header_version {
                    if Revision::parse(v).map_or(true, |r| {
                        !self.inner.server.options().supported.contains(&r)
                    }) {
                        return rpc_error(
                            StatusCode::BAD_REQUEST,
                            None,
                            codes::INVALID_REQUEST,
                            format!("Bad Request: unsupported MCP-Protocol-Version {v:?}"),
                        );
                    }
                }
                session
                    .post(frame, accepts_sse(h), &self.inner.options)
                    .await
            }
            None => {
                let is_init = matches!(&frame, Frame::Single(Message::Request(r)) if r.method == method::INITIALIZE);
                if !is_init {
                    return rpc_error(
                        StatusCode::BAD_REQUEST,
                        None,
                        codes::INVALID_REQUEST,
                        "Bad Request: Mcp-Session-Id header is required (or 2026-07-28 _meta)",
                    );
                }
                let id = self.new_session_id();
                let session = LegacySession::start(
                    self.inner.server.clone(),
                    self.inner.options.replay_events,
                );
                if let Ok(mut s) = self.inner.sessions.lock() {
                    s.insert(id.clone(), session.clone());
                }
                let mut r = session
                    .post(frame, accepts_sse(h), &self.inner.options)
                    .await;
                if let Ok(v) = header::HeaderValue::from_str(&id) {
                    r.headers_mut().insert(headers::SESSION_ID, v);
                }
                r
            }
        }
    }

    fn new_session_id(&self) -> String {
        let n = self.inner.counter.fetch_add(1, Ordering::Relaxed);
        let a = self.inner.ids.hash_one((n, std::time::SystemTime::now()));
        let b = self.inner.ids.hash_one((a, n.rotate_left(17)));
        format!("{a:016x}{b:016x}")
    }

    /// A 2026-07-28 request: headers checked against the body, then served statelessly.
    async fn modern(&self, frame: Frame, h: &HeaderMap) -> Response<HttpBody> {
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
        if let Err((code, why)) = check_modern_headers(h, &Message::Request(req.clone())) {
            tracing::info!("rejected 2026 request: {why}");
            return rpc_error(StatusCode::BAD_REQUEST, Some(req.id), code, why);
        }
        let sse = accepts_sse(h);
        let (client, server_end) = memory_pair(32);
        let server = self.inner.server.clone();
        tokio::spawn(async move { server.serve(server_end).await });
        let id = req.id.clone();
        if client
            .send(Frame::Single(Message::Request(req)))
            .await
            .is_err()
        {
            return rpc_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                Some(id.clone()),
                codes::INTERNAL_ERROR,
                "server unavailable",
            );
        }
        // Until the first message, the answer may still be a plain JSON response with its own status.
        let first = loop {
            match client.recv().await {
                Ok(Incoming::Frame(f)) => {
                    let msgs = f.into_messages();
                    if let Some(m) = msgs.iter().find(|m| answers(m, &id)) {
                        break Ok(m.clone());
                    }
                    if sse {
                        break Err(msgs);
                    }
                }
                Ok(Incoming::Invalid { .. }) => continue,
                Err(_) => {
                    return rpc_error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        Some(id.clone()),
                        codes::INTERNAL_ERROR,
                        "request ended without an answer",
                    )
                }
            }
        };
        match first {
            Ok(m) => {
                client.close().await;
                let status = match &m {
                    Message::Error(e) => modern_status(e.error.code),
                    _ => StatusCode::OK,
                };
                respond(status, json_body(&m), Some("application/json"))
            }
            Err(notifications) => {
                let (tx, rx) = mpsc::channel(32);
                tokio::spawn(async move {
                    for n in notifications {
                        if tx.send(sse_event(None, &n)).await.is_err() {
                            client.close().await;
                            return;
                        }
                    }
                    loop {
                        let msgs = match client.recv().await {
                            Ok(Incoming::Frame(f)) => f.into_messages(),
                            Ok(Incoming::Invalid { .. }) => continue,
                            Err(_) => break,
                        };
                        for m in msgs {
                            let done = answers(&m, &id);
                            // A closed stream is the client's cancellation: stop the request.
                            if tx.send(sse_event(None, &m)).await.is_err() || done {
                                client.close().await;
                                return;
                            }
                        }
                    }
                });
                sse_response(rx, self.inner.options.keep_alive)
            }
        }
    }

    fn session_of(&self, h: &HeaderMap) -> Result<Arc<LegacySession>, Box<Response<HttpBody>>> {
        let Some(id) = header_str(h, headers::SESSION_ID) else {
            return Err(Box::new(
                if header_str(h, headers::PROTOCOL_VERSION) == Some(Revision::V2026_07_28.as_str())
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
        self.inner
            .sessions
            .lock()
            .ok()
            .and_then(|s| s.get(id).cloned())
            .ok_or_else(|| {
                Box::new(rpc_error(
                    StatusCode::NOT_FOUND,
                    None,
                    codes::INVALID_REQUEST,
                    "Session not found",
                ))
            })
    }

    fn get(&self, h: &HeaderMap) -> Response<HttpBody> {
        let session = match self.session_of(h) {
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
        let (tx, rx) = mpsc::channel(64);
        session.attach_get(tx, header_str(h, headers::LAST_EVENT_ID));
        sse_response(rx, self.inner.options.keep_alive)
    }

    async fn delete(&self, h: &HeaderMap) -> Response<HttpBody> {
        let session = match self.session_of(h) {
            Ok(s) => s,
            Err(r) => return *r,
        };
        if let (Ok(mut s), Some(id)) = (
            self.inner.sessions.lock(),
            header_str(h, headers::SESSION_ID),
        ) {
            s.remove(id);
        }
        session.conn.close().await;
        respond(StatusCode::OK, empty(), None)
    }
}

/// Whether `m` is the answer to request `id`.
fn answers(m: &Message, id: &RequestId) -> bool {
    matches!(m, Message::Response(_) | Message::Error(_)) && m.id() == Some(id)
}

/// Checks a 2026-07-28 request's headers and `_meta`, in the order the spec's examples
/// imply: a missing version header (`-32020`), `_meta` without the version or capabilities
/// (`-32602`), then header against body (`-32020`); the version itself is checked later.
fn check_modern_headers(h: &HeaderMap, msg: &Message) -> Result<(), (i64, String)> {
    let mismatch = |why: String| (codes::HEADER_MISMATCH, format!("Header mismatch: {why}"));
    let Some(header_version) = header_str(h, headers::PROTOCOL_VERSION) else {
        return Err(mismatch("missing MCP-Protocol-Version header".into()));
    };
    let meta_obj: serde_json::Map<String, Value> = match msg {
        Message::Request(r) => r
            .params_as::<serde_json::Map<String, Value>>()
            .ok()
            .and_then(|p| p.get("_meta").and_then(Value::as_object).cloned())
            .unwrap_or_default(),
        _ => serde_json::Map::new(),
    };
    for key in [meta::PROTOCOL_VERSION, meta::CLIENT_CAPABILITIES] {
        if !meta_obj.contains_key(key) {
            return Err((
                codes::INVALID_PARAMS,
                format!("Invalid params: _meta lacks {key}"),
            ));
        }
    }
    let body_version = meta_obj
        .get(meta::PROTOCOL_VERSION)
        .and_then(Value::as_str)
        .unwrap_or_default();
    if header_version != body_version {
        return Err(mismatch(format!(
            "MCP-Protocol-Version header value '{header_version}' does not match body value '{body_version}'"
        )));
    }
    let Message::Request(r) = msg else {
        return Ok(());
    };
    match header_str(h, headers::METHOD) {
        None => return Err(mismatch("missing Mcp-Method header".into())),
        Some(m) if m != r.method => {
            return Err(mismatch(format!(
                "Mcp-Method header value '{m}' does not match body value '{}'",
                r.method
            )))
        }
        Some(_) => {}
    }
    if let Some(field) = headers::name_member(&r.method) {
        let body: Option<String> = r
            .params
            .as_deref()
            .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
            .and_then(|p| p.get(field).and_then(Value::as_str).map(str::to_owned));
        let header = h.get(headers::NAME).map(|v| {
            v.to_str()
                .map_err(|_| mismatch("Mcp-Name header has invalid characters".into()))
        });
        match header.transpose()? {
            None => return Err(mismatch("missing Mcp-Name header".into())),
            Some(raw) => {
                let decoded = headers::decode_value(raw.trim())
                    .ok_or_else(|| mismatch("Mcp-Name header is malformed base64".into()))?;
                if Some(&decoded) != body.as_ref() {
                    return Err(mismatch(format!(
                        "Mcp-Name header value '{decoded}' does not match body value '{}'",
                        body.unwrap_or_default()
                    )));
                }
            }
        }
    }
    Ok(())
}

/// JSON mode: the answers collected so far, and who waits for them.
type JsonAnswers = (Vec<Message>, Option<oneshot::Sender<Vec<Message>>>);

/// One SSE stream of a legacy session: its events (for replay) and where they go now.
struct Stream {
    events: VecDeque<(u64, Bytes)>,
    next_seq: u64,
    sink: Option<mpsc::Sender<Bytes>>,
    /// Requests of this POST still unanswered.
    pending: usize,
    /// JSON mode: answers collected, and who waits for them.
    json: Option<JsonAnswers>,
}

#[derive(Default)]
struct Routing {
    streams: HashMap<u64, Stream>,
    waiting: HashMap<RequestId, u64>,
    progress: HashMap<String, u64>,
    open_posts: Vec<u64>,
    get_stream: Option<u64>,
    /// Server-initiated messages with nowhere to go yet, for the next GET stream.
    parked: Vec<Message>,
}

/// A legacy (initialize) session: one server connection, many HTTP requests.
struct LegacySession {
    conn: MemoryTransport,
    routing: Mutex<Routing>,
    next_stream: AtomicU64,
    replay_events: usize,
}

impl LegacySession {
    fn start(server: Server, replay_events: usize) -> Arc<LegacySession> {
        let (conn, server_end) = memory_pair(64);
        tokio::spawn(async move { server.serve(server_end).await });
        let session = Arc::new(LegacySession {
            conn,
            routing: Mutex::new(Routing::default()),
            next_stream: AtomicU64::new(1),
            replay_events,
        });
        let router = session.clone();
        tokio::spawn(async move {
            loop {
                match router.conn.recv().await {
                    Ok(Incoming::Frame(f)) => {
                        for m in f.into_messages() {
                            router.route(m);
                        }
                    }
                    Ok(Incoming::Invalid { .. }) => continue,
                    Err(_) => break,
                }
            }
        });
        session
    }

    fn push(&self, r: &mut Routing, stream_id: u64, msg: Message) {
        let Some(stream) = r.streams.get_mut(&stream_id) else {
            return;
        };
        if let Some((answers, _)) = &mut stream.json {
            match &msg {
                Message::Response(_) | Message::Error(_) => answers.push(msg),
                other => {
                    tracing::warn!(method = ?other.method(), "dropped: the client asked for JSON, not a stream")
                }
            }
            return;
        }
        stream.next_seq += 1;
        let event = sse_event(Some(&format!("{stream_id}-{}", stream.next_seq)), &msg);
        stream.events.push_back((stream.next_seq, event.clone()));
        while stream.events.len() > self.replay_events {
            stream.events.pop_front();
        }
        if let Some(sink) = &stream.sink {
            // A full or closed sink: the client resumes with Last-Event-ID from the log.
            if sink.try_send(event).is_err() {
                stream.sink = None;
            }
        }
    }

    fn finish(&self, r: &mut Routing, stream_id: u64) {
        r.open_posts.retain(|s| *s != stream_id);
        if let Some(stream) = r.streams.get_mut(&stream_id) {
            stream.sink = None;
            if let Some((answers, tx)) = &mut stream.json {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(std::mem::take(answers));
                }
            }
        }
    }

    fn route(&self, msg: Message) {
        let Ok(mut r) = self.routing.lock() else {
            return;
        };
        let r = &mut *r;
        let target = match &msg {
            Message::Response(_) | Message::Error(_) => {
                msg.id().and_then(|id| r.waiting.remove(id))
            }
            Message::Notification(n) => {
                let token = n
                    .params_as::<serde_json::Map<String, Value>>()
                    .ok()
                    .and_then(|p| p.get(meta::PROGRESS_TOKEN).map(Value::to_string));
                token
                    .and_then(|t| r.progress.get(&t).copied())
                    .or_else(|| r.open_posts.last().copied())
            }
            Message::Request(_) => r.open_posts.last().copied(),
        };
        let is_answer = matches!(msg, Message::Response(_) | Message::Error(_));
        match target.or(r.get_stream) {
            Some(stream_id) => {
                self.push(r, stream_id, msg);
                if is_answer {
                    let done = r.streams.get_mut(&stream_id).is_some_and(|s| {
                        s.pending = s.pending.saturating_sub(1);
                        s.pending == 0
                    });
                    if done && Some(stream_id) != r.get_stream {
                        self.finish(r, stream_id);
                    }
                }
            }
            None if is_answer => tracing::debug!("answer to a request no stream waits for"),
            None => r.parked.push(msg),
        }
    }

    async fn post(&self, frame: Frame, sse: bool, options: &HttpOptions) -> Response<HttpBody> {
        let msgs = match &frame {
            Frame::Single(m) => vec![m.clone()],
            Frame::Batch(b) => b.clone(),
        };
        let requests: Vec<&mcp_types::Request> = msgs
            .iter()
            .filter_map(|m| match m {
                Message::Request(r) => Some(r),
                _ => None,
            })
            .collect();
        if requests.is_empty() {
            // Notifications and answers to our requests.
            return match self.conn.send(frame).await {
                Ok(()) => respond(StatusCode::ACCEPTED, empty(), None),
                Err(_) => rpc_error(
                    StatusCode::NOT_FOUND,
                    None,
                    codes::INVALID_REQUEST,
                    "Session closed",
                ),
            };
        }
        let stream_id = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(256);
        let (json_tx, json_rx) = oneshot::channel();
        if let Ok(mut r) = self.routing.lock() {
            for req in &requests {
                r.waiting.insert(req.id.clone(), stream_id);
                let token = req
                    .params_as::<serde_json::Map<String, Value>>()
                    .ok()
                    .and_then(|p| {
                        p.get("_meta")
                            .and_then(|m| m.get(meta::PROGRESS_TOKEN))
                            .map(Value::to_string)
                    });
                if let Some(t) = token {
                    r.progress.insert(t, stream_id);
                }
            }
            r.open_posts.push(stream_id);
            r.streams.insert(
                stream_id,
                Stream {
                    events: VecDeque::new(),
                    next_seq: 0,
                    sink: sse.then_some(tx),
                    pending: requests.len(),
                    json: (!sse).then(|| (Vec::new(), Some(json_tx))),
                },
            );
        }
        let single = matches!(frame, Frame::Single(_));
        if self.conn.send(frame).await.is_err() {
            return rpc_error(
                StatusCode::NOT_FOUND,
                None,
                codes::INVALID_REQUEST,
                "Session closed",
            );
        }
        if sse {
            return sse_response(rx, options.keep_alive);
        }
        match json_rx.await {
            Ok(mut answers) if answers.len() == 1 && single => respond(
                StatusCode::OK,
                json_body(&answers.remove(0)),
                Some("application/json"),
            ),
            Ok(answers) => respond(
                StatusCode::OK,
                json_body(&Frame::Batch(answers)),
                Some("application/json"),
            ),
            Err(_) => rpc_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                None,
                codes::INTERNAL_ERROR,
                "request ended without an answer",
            ),
        }
    }

    /// A GET stream: a fresh one for server-initiated messages, or with `Last-Event-ID` the
    /// replay of the stream that id belongs to, continued if that stream is still live.
    fn attach_get(&self, tx: mpsc::Sender<Bytes>, last_event: Option<&str>) {
        let Ok(mut r) = self.routing.lock() else {
            return;
        };
        let resume = last_event.and_then(|l| {
            let (s, q) = l.split_once('-')?;
            Some((s.parse::<u64>().ok()?, q.parse::<u64>().ok()?))
        });
        if let Some((stream_id, seq)) = resume {
            let live = r.open_posts.contains(&stream_id) || r.get_stream == Some(stream_id);
            if let Some(stream) = r.streams.get_mut(&stream_id) {
                for (_, e) in stream.events.iter().filter(|(s, _)| *s > seq) {
                    if tx.try_send(e.clone()).is_err() {
                        break;
                    }
                }
                if live {
                    stream.sink = Some(tx);
                }
                return;
            }
        }
        let stream_id = self.next_stream.fetch_add(1, Ordering::Relaxed);
        r.streams.insert(
            stream_id,
            Stream {
                events: VecDeque::new(),
                next_seq: 0,
                sink: Some(tx),
                pending: 0,
                json: None,
            },
        );
        r.get_stream = Some(stream_id);
        for m in std::mem::take(&mut r.parked) {
            self.push(&mut r, stream_id, m);
        }
    }
}

impl<B> hyper::service::Service<Request<B>> for StreamableHttp
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<HttpBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<HttpBody>, Infallible>> + Send>>;

    fn call(&self, req: Request<B>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { Ok(this.handle(req).await) })
    }
}

/// Serves `http` on `listener` (HTTP/1.1) until the listener fails.
pub async fn serve(listener: tokio::net::TcpListener, http: StreamableHttp) -> std::io::Result<()> {
    loop {
        let (stream, peer) = listener.accept().await?;
        let service = http.clone();
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await
            {
                tracing::debug!(%peer, "connection ended: {e}");
            }
        });
    }
}

/// Binds `addr` and serves `server` at `options.path` (see [`serve`]). Returns the bound
/// address (useful with port 0) and the serving task.
pub async fn bind(
    addr: SocketAddr,
    server: Server,
    options: HttpOptions,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<std::io::Result<()>>)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let http = StreamableHttp::new(server, options);
    Ok((local, tokio::spawn(serve(listener, http))))
}
