//! Streamable HTTP, client side, for both eras, over hyper with rustls for `https`.
//!
//! Every message is a POST. A 2026-07-28 request carries the mirrored headers
//! (`MCP-Protocol-Version` from its `_meta`, `Mcp-Method`, `Mcp-Name`, and
//! `Mcp-Param-{Name}` for arguments whose schema property has `x-mcp-header`). In the
//! legacy era the transport keeps the `Mcp-Session-Id` the server assigns at `initialize`,
//! sends the negotiated `MCP-Protocol-Version`, opens the GET stream for server-initiated
//! messages, resumes a broken stream with `Last-Event-ID`, and ends the session with
//! DELETE on close. Answers arrive as JSON or SSE; an HTTP error becomes the JSON-RPC error
//! of the requests it answered, so no call waits forever.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::auth::Credentials;
use async_trait::async_trait;
use bytes::Bytes;
use http::{header, HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client as HyperClient;
use mcp_types::headers::{self, HeaderParam};
use mcp_types::protocol::{method, Tool};
use mcp_types::transport::{
    send_without_waiting, CloseReason, Closed, Incoming, Transport, TrySendError,
};
use mcp_types::{codes, ErrorObject, ErrorResponse, Frame, Message, RequestId, Revision};
use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use tokio::sync::mpsc;

mod auth;
mod config;
mod renew;
mod stream;
mod trace;

pub(crate) use auth::{configured_headers, insert_credentials, refusal};
pub use config::HttpConfig;
pub use renew::{SessionRenewal, SessionRenewedHook};

pub(crate) type Connector = hyper_rustls::HttpsConnector<HttpConnector>;

/// `http` and `https` (rustls, webpki roots) over TCP with `TCP_NODELAY`: a request goes
/// out in two writes (headers, body), and without it the second waits for the server's
/// delayed ACK, some 40 ms per call.
pub(crate) fn connector() -> Connector {
    let mut tcp = HttpConnector::new();
    tcp.set_nodelay(true);
    tcp.enforce_http(false);
    hyper_rustls::HttpsConnectorBuilder::new()
        .with_webpki_roots()
        .https_or_http()
        .enable_http1()
        .wrap_connector(tcp)
}

/// Why an HTTP transport could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The URL does not parse or is not http(s).
    #[error("invalid URL {0:?}")]
    Url(String),
    /// A configured header is not a valid HTTP header.
    #[error("invalid header {0:?}")]
    Header(String),
}

struct Shared {
    client: HyperClient<Connector, Full<Bytes>>,
    auth: Option<Arc<dyn crate::auth::AuthProvider>>,
    url: Uri,
    extra: HeaderMap,
    session: Mutex<Option<String>>,
    /// The legacy revision negotiated at `initialize`, sent on every later request.
    legacy_version: Mutex<Option<String>>,
    /// Which requests are `initialize`, to read the negotiated version off the answer.
    initialize_ids: Mutex<Vec<RequestId>>,
    tool_headers: RwLock<HashMap<String, Vec<HeaderParam>>>,
    tx: mpsc::Sender<Incoming>,
    closed: Mutex<Option<CloseReason>>,
    shutdown: tokio::sync::Notify,
    max_resumes: usize,
    /// The longest JSON body or SSE event read.
    max_message_bytes: usize,
    get_stream_open: Mutex<bool>,
    /// The last `retry:` (milliseconds) a server sent on an SSE stream.
    retry_ms: std::sync::atomic::AtomicU64,
    /// A new legacy session when the server ends one (`renew.rs`).
    renewal: renew::Renewal,
    /// The SSE answers being read, by the one request each answers: a request cancelled
    /// (or timed out) has its stream dropped, and with it the connection it held.
    streams: Mutex<HashMap<RequestId, Arc<tokio::sync::Notify>>>,
}

/// The `data` of an error made of a request the server refused at the HTTP level: its
/// status, for a caller to tell a refused credential (`401`, `403`) from a failure.
pub(crate) fn status_data(status: StatusCode) -> serde_json::Value {
    serde_json::json!({ "httpStatus": status.as_u16() })
}

/// Adds the HTTP status to an error answer that came with a failure status (a `401`
/// with a JSON-RPC body says who refused, and the status says it was the credentials).
fn mark_status(error: &mut ErrorObject, status: StatusCode) {
    match &mut error.data {
        None => error.data = Some(status_data(status)),
        Some(serde_json::Value::Object(o)) if !o.contains_key("httpStatus") => {
            o.insert("httpStatus".into(), status.as_u16().into());
        }
        Some(_) => {}
    }
}

/// A Streamable HTTP connection to one server endpoint.
pub struct HttpTransport {
    shared: Arc<Shared>,
    rx: tokio::sync::Mutex<mpsc::Receiver<Incoming>>,
}

impl HttpTransport {
    /// A transport to `config.url`. Nothing is sent until the first message.
    pub fn new(config: HttpConfig) -> Result<HttpTransport, HttpError> {
        let url: Uri = config
            .url
            .parse()
            .map_err(|_| HttpError::Url(config.url.clone()))?;
        if !matches!(url.scheme_str(), Some("http" | "https")) {
            return Err(HttpError::Url(config.url));
        }
        let extra = configured_headers(&config.headers)?;
        let client = HyperClient::builder(hyper_util::rt::TokioExecutor::new()).build(connector());
        let (tx, rx) = mpsc::channel(256);
        Ok(HttpTransport {
            shared: Arc::new(Shared {
                client,
                auth: config.auth.clone(),
                url,
                extra,
                session: Mutex::new(None),
                legacy_version: Mutex::new(None),
                initialize_ids: Mutex::new(Vec::new()),
                tool_headers: RwLock::new(HashMap::new()),
                tx,
                closed: Mutex::new(None),
                shutdown: tokio::sync::Notify::new(),
                max_resumes: config.max_resumes,
                max_message_bytes: config.max_message_bytes,
                get_stream_open: Mutex::new(false),
                retry_ms: std::sync::atomic::AtomicU64::new(0),
                renewal: renew::Renewal::new(config.on_session_renewed.clone()),
                streams: Mutex::new(HashMap::new()),
            }),
            rx: tokio::sync::Mutex::new(rx),
        })
    }

    /// The legacy session id, once the server assigned one.
    pub fn session_id(&self) -> Option<String> {
        self.shared.session_id()
    }

    /// How many times the server ended the legacy session (`404`) and this transport
    /// started a new one.
    pub fn session_renewals(&self) -> u64 {
        self.shared.renewal.count()
    }
}

/// Whether `resp`'s body is an SSE stream.
fn is_event_stream<B>(resp: &http::Response<B>) -> bool {
    resp.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/event-stream"))
}

fn is_initialize(frame: &Frame) -> bool {
    matches!(frame, Frame::Single(Message::Request(r)) if r.method == method::INITIALIZE)
}

fn request_ids(frame: &Frame) -> Vec<RequestId> {
    match frame {
        Frame::Single(Message::Request(r)) => vec![r.id.clone()],
        Frame::Batch(b) => b
            .iter()
            .filter_map(|m| match m {
                Message::Request(r) => Some(r.id.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn set(h: &mut HeaderMap, name: &str, value: &str) {
    if let (Ok(n), Ok(v)) = (
        HeaderName::from_bytes(name.as_bytes()),
        HeaderValue::from_str(value),
    ) {
        h.insert(n, v);
    }
}

impl Shared {
    fn session_id(&self) -> Option<String> {
        self.session.lock().clone()
    }

    fn is_closed(&self) -> bool {
        self.closed.lock().is_some()
    }

    async fn push(&self, m: Message) {
        let _ = self.tx.send(Incoming::Frame(Frame::Single(m))).await;
    }

    /// Fails each of `ids` with `error` (an HTTP failure must not leave a call waiting).
    async fn fail(&self, ids: &[RequestId], error: ErrorObject) {
        for id in ids {
            self.push(Message::Error(ErrorResponse::new(
                Some(id.clone()),
                error.clone(),
            )))
            .await;
        }
    }

    fn headers_for(
        &self,
        frame: &Frame,
        credentials: Option<&Credentials>,
        session: Option<&str>,
    ) -> HeaderMap {
        let mut h = self.headers_with(credentials);
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(s) = session {
            set(&mut h, headers::SESSION_ID, s);
        }
        let single = match frame {
            Frame::Single(m) => Some(m),
            Frame::Batch(_) => None,
        };
        if let Some(Message::Request(r)) = single {
            trace::trace_headers(&mut h, r);
        }
        let modern = single.and_then(mcp_revisions::negotiate::request_protocol_version);
        match modern {
            Some(v) => {
                set(&mut h, headers::PROTOCOL_VERSION, &v);
                if let Some(Message::Request(r)) = single {
                    self.mirror(&mut h, r);
                }
            }
            // `initialize` negotiates the version: the header is for the requests after it.
            None if is_initialize(frame) => {}
            None => {
                let legacy = self.legacy_version.lock().clone();
                if let Some(v) = legacy {
                    set(&mut h, headers::PROTOCOL_VERSION, &v);
                }
            }
        }
        h
    }

    /// The 2026 headers mirrored from a request body.
    fn mirror(&self, h: &mut HeaderMap, r: &mcp_types::Request) {
        set(h, headers::METHOD, &r.method);
        let params: serde_json::Map<String, Value> = r.params_as().unwrap_or_default();
        if let Some(name) = headers::name_member(&r.method)
            .and_then(|f| params.get(f))
            .and_then(Value::as_str)
        {
            set(h, headers::NAME, &headers::encode_value(name));
        }
        if r.method == method::TOOLS_CALL {
            let (Some(tool), Some(Value::Object(args))) = (
                params.get("name").and_then(Value::as_str),
                params.get("arguments"),
            ) else {
                return;
            };
            let specs = self
                .tool_headers
                .read()
                .get(tool)
                .cloned()
                .unwrap_or_default();
            for p in specs {
                if let Some(v) = headers::param_value(args, &p.path) {
                    set(
                        h,
                        &format!("{}{}", headers::PARAM_PREFIX, p.header.to_ascii_lowercase()),
                        &v,
                    );
                }
            }
        }
    }

    async fn exchange(self: Arc<Self>, frame: Frame) {
        let ids = request_ids(&frame);
        if let Frame::Single(Message::Request(r)) = &frame {
            if r.method == method::INITIALIZE {
                self.note_initialize(r);
            }
        }
        let body = Bytes::from(serde_json::to_vec(&frame).unwrap_or_default());
        let mut renewed = false;
        let resp = loop {
            let session = self.session_id();
            let resp = match self.post(body.clone(), &frame, session.as_deref()).await {
                Ok(r) => r,
                Err(error) => return self.fail(&ids, error).await,
            };
            // A 404 to a request in a session: the server ended that session (it expired,
            // or the server restarted) without processing the request, which is sent
            // again, once, in a new one (2025-11-25 transport, Session Management, item 4).
            let expired = resp.status() == StatusCode::NOT_FOUND
                && session.is_some()
                && !ids.is_empty()
                && !renewed
                && !is_initialize(&frame);
            if !expired {
                break resp;
            }
            drop(resp);
            if let Err(error) = self.renew(session.as_deref()).await {
                return self.fail(&ids, error).await;
            }
            renewed = true;
        };
        self.answered(resp, &ids).await;
    }

    /// Reads the answer to a POST that carried the requests `ids`.
    async fn answered(
        self: &Arc<Self>,
        resp: http::Response<hyper::body::Incoming>,
        ids: &[RequestId],
    ) {
        let status = resp.status();
        if let Some(s) = resp
            .headers()
            .get(headers::SESSION_ID)
            .and_then(|v| v.to_str().ok())
        {
            *self.session.lock() = Some(s.to_owned());
        }
        if status == StatusCode::ACCEPTED {
            return;
        }
        let is_sse = is_event_stream(&resp);
        if is_sse && status.is_success() {
            self.read_sse_until_cancelled(resp.into_body(), ids).await;
            return;
        }
        let bytes = match self.body(resp).await {
            Ok(b) => b,
            Err(error) => return self.fail(ids, error).await,
        };
        match Frame::parse(&bytes) {
            Ok(parsed) => {
                for mut m in parsed.into_messages() {
                    // An HTTP-level error answer may not name the request: it answers ours.
                    if let (Message::Error(e), [only]) = (&mut m, ids) {
                        e.id.get_or_insert_with(|| only.clone());
                    }
                    if let (Message::Error(e), false) = (&mut m, status.is_success()) {
                        mark_status(&mut e.error, status);
                    }
                    self.take(m).await;
                }
            }
            Err(_) if !ids.is_empty() => {
                let text = String::from_utf8_lossy(&bytes);
                let error = ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    format!(
                        "HTTP {status}: {}",
                        text.chars().take(200).collect::<String>()
                    ),
                )
                .with_data(status_data(status));
                self.fail(ids, error).await;
            }
            Err(_) => {
                if !status.is_success() {
                    tracing::warn!(%status, "a notification was not accepted");
                }
            }
        }
    }

    /// A JSON answer's body, at most `max_message_bytes` of it.
    async fn body(
        &self,
        resp: http::Response<hyper::body::Incoming>,
    ) -> Result<Bytes, ErrorObject> {
        let status = resp.status();
        let limit = self.max_message_bytes;
        match http_body_util::Limited::new(resp.into_body(), limit)
            .collect()
            .await
        {
            Ok(c) => Ok(c.to_bytes()),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                tracing::warn!(%status, "an answer longer than {limit} bytes was refused");
                Err(ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    format!("the server's answer is longer than {limit} bytes"),
                ))
            }
            Err(_) => Ok(Bytes::new()),
        }
    }

    /// Notes an `initialize` request: its answer sets the negotiated version, and its
    /// params open a new session if the server ends this one.
    fn note_initialize(&self, r: &mcp_types::Request) {
        self.initialize_ids.lock().push(r.id.clone());
        self.renewal.remember(r.params.clone());
    }

    /// Takes one message from the server, noting what `initialize` negotiated.
    async fn take(self: &Arc<Self>, m: Message) {
        if let Message::Response(r) = &m {
            let was_init = {
                let mut i = self.initialize_ids.lock();
                let found = i.contains(&r.id);
                i.retain(|x| x != &r.id);
                found
            };
            if was_init {
                if let Ok(v) = r.result_as::<serde_json::Map<String, Value>>() {
                    if let Some(version) = v.get("protocolVersion").and_then(Value::as_str) {
                        *self.legacy_version.lock() = Some(version.to_owned());
                    }
                }
                // Opened before the caller hears the answer, so the stream exists before
                // any request the caller makes next (a reconnect of a POST stream is then
                // never mistaken for it, nor it for a reconnect).
                if let Some(opened) = self.clone().open_get_stream() {
                    let _ = tokio::time::timeout(Duration::from_secs(2), opened).await;
                }
            }
        }
        self.push(m).await;
    }

    async fn get(&self, last_event: Option<&str>) -> Option<hyper::body::Incoming> {
        let mut req = Request::new(Full::new(Bytes::new()));
        *req.method_mut() = Method::GET;
        *req.uri_mut() = self.url.clone();
        let mut h = self.base_headers("GET");
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        if let Some(s) = self.session_id() {
            set(&mut h, headers::SESSION_ID, &s);
        }
        let legacy = self.legacy_version.lock().clone();
        if let Some(v) = legacy {
            set(&mut h, headers::PROTOCOL_VERSION, &v);
        }
        if let Some(l) = last_event {
            set(&mut h, headers::LAST_EVENT_ID, l);
        }
        *req.headers_mut() = h;
        let resp = self.client.request(req).await.ok()?;
        let sse = is_event_stream(&resp);
        (resp.status().is_success() && sse).then(|| resp.into_body())
    }

    /// Legacy: the GET stream for server-initiated messages, reopened when it drops.
    /// What it returns resolves once the first GET is answered; the caller waits for it
    /// a little (two seconds: a server that holds its response head back is not waited
    /// for).
    fn open_get_stream(self: Arc<Self>) -> Option<tokio::sync::oneshot::Receiver<()>> {
        {
            let mut open = self.get_stream_open.lock();
            if *open || self.session.lock().is_none() {
                return None;
            }
            *open = true;
        }
        let first = self.clone();
        let session = self.session_id();
        let (opened_tx, opened) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let this = first;
            let mut last_id = None;
            let mut failures = 0;
            let mut opened_tx = Some(opened_tx);
            // A stream belongs to its session: a new session opens a stream of its own.
            while !this.is_closed() && failures <= this.max_resumes && this.session_id() == session
            {
                let got = this.get(last_id.as_deref()).await;
                if let Some(tx) = opened_tx.take() {
                    let _ = tx.send(());
                }
                match got {
                    Some(body) => {
                        failures = 0;
                        if this
                            .read_events(body, &mut Vec::new(), &mut last_id)
                            .await
                            .is_none()
                        {
                            return;
                        }
                    }
                    // 405: this server offers no GET stream.
                    None => return,
                }
                failures += 1;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        Some(opened)
    }
}

#[async_trait]
impl Transport for HttpTransport {
    async fn send(&self, frame: Frame) -> Result<(), Closed> {
        send_without_waiting(self, frame)
    }

    fn try_send(&self, frame: Frame) -> Result<(), TrySendError> {
        if let Some(r) = self.close_reason() {
            return Err(TrySendError::Closed(Closed(r)));
        }
        self.shared.cancelled(&frame);
        // Each message is its own HTTP exchange; answers arrive through `recv`.
        tokio::spawn(self.shared.clone().exchange(frame));
        Ok(())
    }

    async fn recv(&self) -> Result<Incoming, Closed> {
        if let Some(r) = self.close_reason() {
            return Err(Closed(r));
        }
        let mut rx = self.rx.lock().await;
        tokio::select! {
            m = rx.recv() => m.ok_or(Closed(CloseReason::PeerClosed)),
            () = self.shared.shutdown.notified() => Err(Closed(CloseReason::Closed)),
        }
    }

    async fn close(&self) {
        self.shared.closed.lock().get_or_insert(CloseReason::Closed);
        self.shared.shutdown.notify_waiters();
        let session = self.shared.session.lock().take();
        if let Some(s) = session {
            let mut req = Request::new(Full::new(Bytes::new()));
            *req.method_mut() = Method::DELETE;
            *req.uri_mut() = self.shared.url.clone();
            let mut h = self.shared.base_headers("DELETE");
            set(&mut h, headers::SESSION_ID, &s);
            *req.headers_mut() = h;
            let _ =
                tokio::time::timeout(Duration::from_secs(5), self.shared.client.request(req)).await;
        }
    }

    fn close_reason(&self) -> Option<CloseReason> {
        self.shared.closed.lock().clone()
    }

    fn mirrors_tool_headers(&self) -> bool {
        true
    }

    fn tools_listed(&self, tools: &[Tool]) {
        let map = tools
            .iter()
            .filter_map(|t| {
                let params = headers::listed_header_params(t.input_schema.as_ref()).ok()?;
                (!params.is_empty()).then(|| (t.name.clone(), params))
            })
            .collect();
        *self.shared.tool_headers.write() = map;
    }
}

/// The revisions whose transport is Streamable HTTP (2024-11-05 used HTTP+SSE).
pub fn speaks_streamable_http(r: Revision) -> bool {
    mcp_revisions::features::streamable_http(r)
}
