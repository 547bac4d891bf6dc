//! A new legacy session when the server ends the one in use.
//!
//! A server answers `404` to a request carrying an `Mcp-Session-Id` it no longer knows
//! (the session expired, or the server restarted). The client MUST then start a new
//! session with a new `InitializeRequest` without a session id (2025-11-25 transport,
//! Session Management, item 4). The transport does that itself, with the params of the
//! `initialize` that opened the first session, then sends `notifications/initialized`,
//! opens the new session's GET stream and sends the refused request again: the server
//! never processed it, so sending it again cannot run anything twice. Requests refused
//! together wait for one renewal. A server that answers the new `initialize` with another
//! protocol version, or with no session, cannot take the caller's requests as it
//! negotiated them: the transport closes with [`CloseReason::SessionEnded`], which fails
//! every request waiting, and the caller reconnects as after any closed connection.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use mcp_types::jsonrpc::Request;
use mcp_types::transport::CloseReason;
use mcp_types::{codes, ErrorObject, Frame, Message, RequestId};
use parking_lot::Mutex;
use serde_json::value::RawValue;
use serde_json::Value;

use super::{headers, Shared};

/// Longest a new session's `initialize` may take to be answered.
const RENEWAL_TIMEOUT: Duration = Duration::from_secs(30);

/// What the transport tells of a new session it started because the server ended the
/// last one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionRenewal {
    /// How many sessions this transport has started this way, this one included.
    pub renewals: u64,
}

/// Called each time the transport starts a new session because the server ended the last
/// one ([`super::HttpConfig::on_session_renewed`]): for a caller's logs, metrics, or to
/// list again what the new session offers.
pub type SessionRenewedHook = Arc<dyn Fn(&SessionRenewal) + Send + Sync>;

/// The renewal state of one transport.
pub(super) struct Renewal {
    /// The params of the `initialize` that opened the first session.
    params: Mutex<Option<Box<RawValue>>>,
    /// One renewal at a time; requests refused meanwhile wait for it.
    running: tokio::sync::Mutex<()>,
    count: AtomicU64,
    hook: Option<SessionRenewedHook>,
}

impl Renewal {
    pub(super) fn new(hook: Option<SessionRenewedHook>) -> Self {
        Renewal {
            params: Mutex::new(None),
            running: tokio::sync::Mutex::new(()),
            count: AtomicU64::new(0),
            hook,
        }
    }

    /// Keeps `params` of an `initialize` for the sessions started later.
    pub(super) fn remember(&self, params: Option<Box<RawValue>>) {
        *self.params.lock() = params;
    }

    pub(super) fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}

impl Shared {
    /// Starts a new session in place of `ended`, unless another request already did.
    /// An error fails the refused request; a new session the caller cannot use closes the
    /// transport as well.
    pub(super) async fn renew(self: &Arc<Self>, ended: Option<&str>) -> Result<(), ErrorObject> {
        let _one = self.renewal.running.lock().await;
        if self.session_id().as_deref() != ended {
            return Ok(());
        }
        let params = self.renewal.params.lock().clone();
        let Some(params) = params else {
            return Err(expired("no initialize to start a new session with"));
        };
        tracing::warn!(url = %self.url, "the server ended the session (HTTP 404); starting a new one");
        let opened = tokio::time::timeout(RENEWAL_TIMEOUT, self.initialize(params)).await;
        let (session, version) = match opened {
            Ok(Ok(new)) => new,
            Ok(Err(why)) => return Err(self.lost(why)),
            Err(_) => return Err(self.lost(format!("no answer within {RENEWAL_TIMEOUT:?}"))),
        };
        let negotiated = self.legacy_version.lock().clone();
        if negotiated.is_some_and(|v| v != version) {
            return Err(self.lost(format!(
                "the new session speaks {version}, not the version negotiated before"
            )));
        }
        *self.session.lock() = Some(session.clone());
        self.initialized(&session).await;
        let renewals = self.renewal.count.fetch_add(1, Ordering::Relaxed) + 1;
        *self.get_stream_open.lock() = false;
        if let Some(opened) = self.clone().open_get_stream() {
            let _ = tokio::time::timeout(Duration::from_secs(2), opened).await;
        }
        tracing::info!(url = %self.url, renewals, "a new session started");
        if let Some(hook) = &self.renewal.hook {
            hook(&SessionRenewal { renewals });
        }
        Ok(())
    }

    /// Sends `initialize` with `params` outside any session: the new session's id and the
    /// version its answer names.
    async fn initialize(&self, params: Box<RawValue>) -> Result<(String, String), String> {
        let n = self.renewal.count() + 1;
        let id = RequestId::String(format!("mcp-client-session-renewal-{n}"));
        let frame = Frame::Single(Message::Request(Request::raw(
            id.clone(),
            mcp_types::protocol::method::INITIALIZE,
            Some(params),
        )));
        let body = Bytes::from(serde_json::to_vec(&frame).map_err(|e| e.to_string())?);
        let resp = self.post(body, &frame, None).await.map_err(|e| e.message)?;
        let status = resp.status();
        let session = resp
            .headers()
            .get(headers::SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let sse = super::is_event_stream(&resp);
        if !status.is_success() {
            return Err(format!("initialize answered HTTP {status}"));
        }
        let answer = match sse {
            true => self.sse_answer(resp.into_body(), &id).await?,
            false => {
                let bytes = self.body(resp).await.map_err(|e| e.message)?;
                answer_in(&bytes, &id).ok_or("initialize got no answer")?
            }
        };
        let version = match answer {
            Message::Response(r) => r
                .result_as::<serde_json::Map<String, Value>>()
                .ok()
                .and_then(|m| m.get("protocolVersion")?.as_str().map(str::to_owned))
                .ok_or("initialize answered without a protocol version")?,
            Message::Error(e) => return Err(format!("initialize refused: {}", e.error.message)),
            _ => return Err("initialize got no answer".into()),
        };
        let session = session.ok_or("the server gave the new session no id")?;
        Ok((session, version))
    }

    /// The answer with `id` among the events of an SSE body.
    async fn sse_answer(
        &self,
        mut body: hyper::body::Incoming,
        id: &RequestId,
    ) -> Result<Message, String> {
        let mut parser = crate::sse::SseParser::with_limit(self.max_message_bytes);
        while let Some(frame) = body.frame().await {
            let chunk = frame.map_err(|e| e.to_string())?;
            let Ok(data) = chunk.into_data() else {
                continue;
            };
            for event in parser.feed(&data).map_err(|e| e.to_string())? {
                if let Some(m) = answer_in(event.data.as_bytes(), id) {
                    return Ok(m);
                }
            }
        }
        Err("the stream ended before initialize was answered".into())
    }

    /// Tells the server the new session is initialized.
    async fn initialized(&self, session: &str) {
        let frame = Frame::Single(Message::Notification(mcp_types::Notification {
            method: mcp_types::protocol::method::INITIALIZED.into(),
            params: None,
            extra: Default::default(),
        }));
        let body = Bytes::from_static(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        match self.post(body, &frame, Some(session)).await {
            Ok(r) if r.status().is_success() => {}
            Ok(r) => tracing::warn!(status = %r.status(), "notifications/initialized was refused"),
            Err(e) => tracing::warn!("notifications/initialized failed: {}", e.message),
        }
    }

    /// Closes the transport: the server ended the session and no usable one replaced it.
    fn lost(&self, why: String) -> ErrorObject {
        tracing::warn!(url = %self.url, "no new session: {why}");
        self.closed
            .lock()
            .get_or_insert(CloseReason::SessionEnded(why.clone()));
        self.shutdown.notify_waiters();
        expired(&why)
    }
}

/// The message answering `id` in `text`, if it is one.
fn answer_in(text: &[u8], id: &RequestId) -> Option<Message> {
    Frame::parse(text)
        .ok()?
        .into_messages()
        .into_iter()
        .find(|m| matches!(m, Message::Response(_) | Message::Error(_)) && m.id() == Some(id))
}

fn expired(why: &str) -> ErrorObject {
    ErrorObject::new(
        codes::INTERNAL_ERROR,
        format!(
            "HTTP 404: the server ended the session, and a new one could not be started: {why}"
        ),
    )
}
