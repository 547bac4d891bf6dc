//! The HTTP+SSE transport of 2024-11-05 (deprecated since 2025-03-26), client side, for
//! servers that never moved to Streamable HTTP: a GET opens an event stream whose first
//! `endpoint` event names the URL to POST messages to; every message from the server,
//! answers included, arrives on that stream.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use http::{Method, Uri};
use http_body_util::BodyExt;
use mcp_types::transport::{
    send_without_waiting, CloseReason, Closed, Incoming, Transport, TrySendError,
};
use mcp_types::{codes, ErrorObject, ErrorResponse, Frame, Message};
use parking_lot::Mutex;
use tokio::sync::{mpsc, oneshot};

use crate::http::{HttpConfig, HttpError};
use crate::http_sse_auth::Requester;
use crate::sse::SseParser;

/// A connection to a 2024-11-05 HTTP+SSE server.
pub struct SseTransport {
    requester: Requester,
    endpoint: Uri,
    tx: mpsc::Sender<Incoming>,
    rx: tokio::sync::Mutex<mpsc::Receiver<Incoming>>,
    closed: Arc<Mutex<Option<CloseReason>>>,
    shutdown: Arc<tokio::sync::Notify>,
}

/// Resolves the `endpoint` event's URL (often just a path) against the stream's URL.
fn resolve(base: &Uri, endpoint: &str) -> Option<Uri> {
    if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
        return endpoint.parse().ok();
    }
    let mut parts = base.clone().into_parts();
    parts.path_and_query = Some(endpoint.parse().ok()?);
    Uri::from_parts(parts).ok()
}

impl SseTransport {
    /// Opens the event stream at `config.url` and waits for the `endpoint` event.
    pub async fn connect(config: HttpConfig) -> Result<SseTransport, HttpError> {
        let url: Uri = config
            .url
            .parse()
            .map_err(|_| HttpError::Url(config.url.clone()))?;
        let requester = Requester::new(&config)?;
        let resp = requester
            .send(
                Method::GET,
                &url,
                Bytes::new(),
                None,
                Some("text/event-stream"),
            )
            .await
            .map_err(HttpError::Url)?;
        if !resp.status().is_success() {
            return Err(HttpError::Url(format!(
                "{}: HTTP {}",
                config.url,
                resp.status()
            )));
        }
        let (tx, rx) = mpsc::channel(256);
        let (endpoint_tx, endpoint_rx) = oneshot::channel();
        let closed = Arc::new(Mutex::new(None));
        let shutdown = Arc::new(tokio::sync::Notify::new());
        let (stream_tx, stream_closed, stream_shutdown) =
            (tx.clone(), closed.clone(), shutdown.clone());
        let limit = config.max_message_bytes;
        tokio::spawn(async move {
            let mut body = resp.into_body();
            let mut parser = SseParser::with_limit(limit);
            let mut endpoint_tx = Some(endpoint_tx);
            loop {
                let frame = tokio::select! {
                    f = body.frame() => f,
                    () = stream_shutdown.notified() => break,
                };
                let Some(Ok(frame)) = frame else { break };
                let Ok(chunk) = frame.into_data() else {
                    continue;
                };
                let events = match parser.feed(&chunk) {
                    Ok(events) => events,
                    Err(e) => {
                        tracing::warn!("SSE stream closed: the server's {e}");
                        break;
                    }
                };
                for event in events {
                    if event.event.as_deref() == Some("endpoint") {
                        if let Some(t) = endpoint_tx.take() {
                            let _ = t.send(event.data);
                        }
                        continue;
                    }
                    match Frame::parse(event.data.as_bytes()) {
                        Ok(f) => {
                            let _ = stream_tx.send(Incoming::Frame(f)).await;
                        }
                        Err(e) => tracing::warn!("bad SSE message: {e}"),
                    }
                }
            }
            stream_closed.lock().get_or_insert(CloseReason::PeerClosed);
            stream_shutdown.notify_waiters();
        });
        let endpoint = endpoint_rx.await.map_err(|_| {
            HttpError::Url(format!(
                "{}: the stream ended before the endpoint event",
                config.url
            ))
        })?;
        let endpoint = resolve(&url, &endpoint).ok_or_else(|| HttpError::Url(endpoint.clone()))?;
        Ok(SseTransport {
            requester,
            endpoint,
            tx,
            rx: tokio::sync::Mutex::new(rx),
            closed,
            shutdown,
        })
    }
}

#[async_trait]
impl Transport for SseTransport {
    async fn send(&self, frame: Frame) -> Result<(), Closed> {
        send_without_waiting(self, frame)
    }

    fn try_send(&self, frame: Frame) -> Result<(), TrySendError> {
        if let Some(r) = self.close_reason() {
            return Err(TrySendError::Closed(Closed(r)));
        }
        // Each message is its own POST; answers arrive on the stream.
        let body = Bytes::from(serde_json::to_vec(&frame).unwrap_or_default());
        let (requester, endpoint, tx) = (
            self.requester.clone(),
            self.endpoint.clone(),
            self.tx.clone(),
        );
        tokio::spawn(async move {
            let sent = requester
                .send(
                    Method::POST,
                    &endpoint,
                    body,
                    Some("application/json"),
                    None,
                )
                .await;
            let failure = match sent {
                Ok(r) if r.status().is_success() => None,
                Ok(r) => Some(format!("HTTP {}", r.status())),
                Err(e) => Some(e),
            };
            if let Some(why) = failure {
                // The answer will never come on the stream: fail the requests now.
                for m in frame.into_messages() {
                    if let Message::Request(r) = m {
                        let e =
                            ErrorObject::new(codes::INTERNAL_ERROR, format!("POST failed: {why}"));
                        let _ = tx
                            .send(Incoming::Frame(Frame::Single(Message::Error(
                                ErrorResponse::new(Some(r.id), e),
                            ))))
                            .await;
                    }
                }
            }
        });
        Ok(())
    }

    async fn recv(&self) -> Result<Incoming, Closed> {
        let mut rx = self.rx.lock().await;
        tokio::select! {
            m = rx.recv() => m.ok_or(Closed(CloseReason::PeerClosed)),
            () = self.shutdown.notified() => {
                // Drain what arrived before the stream ended.
                match rx.try_recv() {
                    Ok(m) => Ok(m),
                    Err(_) => Err(Closed(self.close_reason().unwrap_or(CloseReason::PeerClosed))),
                }
            }
        }
    }

    async fn close(&self) {
        self.closed.lock().get_or_insert(CloseReason::Closed);
        self.shutdown.notify_waiters();
    }

    fn close_reason(&self) -> Option<CloseReason> {
        self.closed.lock().clone()
    }
}
