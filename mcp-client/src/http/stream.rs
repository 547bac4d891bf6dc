//! Reading a server's SSE answers: the events of one body, bounded by
//! `max_message_bytes`, and the resumption of a broken legacy stream with `Last-Event-ID`.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;
use mcp_types::protocol::method;
use mcp_types::{codes, ErrorObject, Frame, Message, RequestId};

use super::Shared;

impl Shared {
    /// Reads an SSE answer to `ids`; one request's stream is dropped once that request is
    /// cancelled ([`Shared::cancelled`]), so a timed-out call holds no connection upstream.
    pub(super) async fn read_sse_until_cancelled(
        self: &Arc<Self>,
        body: hyper::body::Incoming,
        ids: &[RequestId],
    ) {
        let [id] = ids else {
            return self.clone().read_sse(body, ids.to_vec()).await;
        };
        let cancel = Arc::new(tokio::sync::Notify::new());
        self.streams.lock().insert(id.clone(), cancel.clone());
        tokio::select! {
            () = self.clone().read_sse(body, ids.to_vec()) => {}
            () = cancel.notified() => {
                tracing::debug!(%id, "the request was cancelled: its SSE stream is dropped");
            }
        }
        self.streams.lock().remove(id);
    }

    /// Drops the SSE stream of the request a `notifications/cancelled` in `frame` names.
    pub(super) fn cancelled(&self, frame: &Frame) {
        let Frame::Single(Message::Notification(n)) = frame else {
            return;
        };
        if n.method != method::CANCELLED {
            return;
        }
        let params = n.params_as::<mcp_types::protocol::CancelledNotificationParams>();
        let Some(id) = params.ok().and_then(|p| p.request_id) else {
            return;
        };
        let cancel = self.streams.lock().get(&id).cloned();
        if let Some(cancel) = cancel {
            // A permit: the reader takes it even if it is not waiting at this moment.
            cancel.notify_one();
        }
    }

    /// Reads an SSE body; resumes it with `Last-Event-ID` while answers are still due.
    pub(super) async fn read_sse(
        self: Arc<Self>,
        body: hyper::body::Incoming,
        mut pending: Vec<RequestId>,
    ) {
        let mut body = body;
        let mut last_id: Option<String> = None;
        let mut resumes = 0;
        loop {
            let before = self.retry_ms.load(std::sync::atomic::Ordering::Relaxed);
            let ended_cleanly = self.read_events(body, &mut pending, &mut last_id).await;
            if pending.is_empty() || ended_cleanly.is_none() || self.is_closed() {
                return;
            }
            // The stream broke before every answer came: resume it (legacy servers with event ids).
            let Some(last) = last_id.clone().filter(|_| resumes < self.max_resumes) else {
                let error = ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    "the server closed the stream before answering",
                );
                return self.fail(&pending, error).await;
            };
            resumes += 1;
            // The server's `retry:` says how long to wait; without one, back off a little.
            let retry = self.retry_ms.load(std::sync::atomic::Ordering::Relaxed);
            let wait = if retry != before || retry > 0 {
                retry
            } else {
                100 * resumes as u64
            };
            tokio::time::sleep(Duration::from_millis(wait)).await;
            match self.get(Some(&last)).await {
                Some(b) => body = b,
                None => {
                    let error = ErrorObject::new(
                        codes::INTERNAL_ERROR,
                        "the stream broke and could not be resumed",
                    );
                    return self.fail(&pending, error).await;
                }
            }
        }
    }

    /// Reads events until the body ends. `Some(())` when it ended, `None` when we are closing.
    pub(super) async fn read_events(
        self: &Arc<Self>,
        mut body: hyper::body::Incoming,
        pending: &mut Vec<RequestId>,
        last_id: &mut Option<String>,
    ) -> Option<()> {
        let mut parser = crate::sse::SseParser::with_limit(self.max_message_bytes);
        loop {
            let frame = tokio::select! {
                f = body.frame() => f,
                () = self.shutdown.notified() => return None,
            };
            let chunk = match frame {
                Some(Ok(f)) => match f.into_data() {
                    Ok(d) => d,
                    Err(_) => continue,
                },
                Some(Err(e)) => {
                    tracing::debug!("SSE stream broke: {e}");
                    return Some(());
                }
                None => return Some(()),
            };
            let events = match parser.feed(&chunk) {
                Ok(events) => events,
                Err(e) => {
                    tracing::warn!("SSE stream refused: {e}");
                    let error =
                        ErrorObject::new(codes::INTERNAL_ERROR, format!("the server's {e}"));
                    self.fail(pending, error).await;
                    pending.clear();
                    return Some(());
                }
            };
            for event in events {
                if let Some(ms) = event.retry {
                    self.retry_ms
                        .store(ms, std::sync::atomic::Ordering::Relaxed);
                }
                if event.id.is_some() {
                    last_id.clone_from(&event.id);
                }
                if event.data.is_empty() {
                    continue; // a priming event
                }
                match Frame::parse(event.data.as_bytes()) {
                    Ok(f) => {
                        for m in f.into_messages() {
                            if matches!(m, Message::Response(_) | Message::Error(_)) {
                                if let Some(id) = m.id() {
                                    pending.retain(|p| p != id);
                                }
                            }
                            self.take(m).await;
                        }
                    }
                    Err(e) => tracing::warn!("bad SSE event data: {e}"),
                }
            }
        }
    }
}
