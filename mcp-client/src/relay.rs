//! Requests whose params and answers stay raw JSON: what a relay sends on for its host.

use std::sync::atomic::Ordering;

use mcp_revisions::features;
use mcp_types::protocol::ProgressToken;
use mcp_types::raw::RawObject;
use mcp_types::rpc::Reclaimed;
use mcp_types::{meta, RequestId, Revision};
use serde_json::value::RawValue;

use crate::{CallOptions, Client, ClientError, ClientOptions};

/// The 2026-07-28 `_meta` envelope this client writes on every request, encoded once.
pub(crate) struct Envelope {
    version: Box<RawValue>,
    capabilities: Box<RawValue>,
    info: Box<RawValue>,
}

impl Envelope {
    pub(crate) fn new(revision: Revision, options: &ClientOptions) -> Self {
        Envelope {
            version: encode(revision.as_str()),
            capabilities: encode(&options.capabilities),
            info: encode(&options.info),
        }
    }
}

fn encode<T: serde::Serialize + ?Sized>(value: &T) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).unwrap_or_else(|_| RawValue::NULL.to_owned())
}

/// A raw request ready to go (see [`Client::prepare_raw`]): params written once, in the
/// connection's revision, with this hop's `_meta`.
pub struct RawRequest {
    method: String,
    params: Box<RawValue>,
    /// Releases the progress registration when the request is done (or dropped unsent).
    progress: Option<ProgressGuard>,
}

impl RawRequest {
    /// The params as they will be sent.
    pub fn params(&self) -> &RawValue {
        &self.params
    }
}

struct ProgressGuard {
    client: Client,
    token: ProgressToken,
}

impl Drop for ProgressGuard {
    fn drop(&mut self) {
        if let Ok(mut m) = self.client.shared.progress.lock() {
            m.remove(&self.token);
        }
    }
}

impl Client {
    /// This client's 2026-07-28 envelope members, encoded: its protocol version and its
    /// `clientInfo` (for a relay that writes a request's `_meta` in one go).
    pub fn envelope_raw(&self) -> (&RawValue, &RawValue) {
        (&self.envelope.version, &self.envelope.info)
    }

    /// Prepares a request whose params are already in this connection's revision, read one
    /// level deep (a relay's): nothing in them is decoded, translated or reordered. Only
    /// `_meta` may change: for a 2026-07-28 server the envelope keys this client writes
    /// are added where absent (protocol version, client info, and this client's
    /// capabilities unless the params declare the host's), and a progress token when
    /// `opts.progress` is set (registered until the request is done). The params are
    /// written out once, here, so the request owns them.
    pub fn prepare_raw(
        &self,
        method_name: &str,
        mut params: RawObject<'_>,
        opts: &CallOptions,
    ) -> RawRequest {
        let progress = opts.progress.as_ref().map(|tx| {
            let key = format!("p{}", self.next_progress.fetch_add(1, Ordering::Relaxed));
            let token = ProgressToken::String(key);
            if let Ok(mut m) = self.shared.progress.lock() {
                m.insert(token.clone(), tx.clone());
            }
            ProgressGuard {
                client: self.clone(),
                token,
            }
        });
        let modern = features::per_request_meta(self.revision);
        if modern || progress.is_some() {
            let token = progress.as_ref().map(|g| encode(&g.token));
            meta::edit_raw(&mut params, |m| {
                let mut changed = false;
                if let Some(t) = &token {
                    m.insert(meta::PROGRESS_TOKEN, t.clone());
                    changed = true;
                }
                if modern {
                    let e = &self.envelope;
                    for (key, value) in [
                        (meta::PROTOCOL_VERSION, &e.version),
                        (meta::CLIENT_CAPABILITIES, &e.capabilities),
                        (meta::CLIENT_INFO, &e.info),
                    ] {
                        if !m.contains_key(key) {
                            m.insert(key, value.clone());
                            changed = true;
                        }
                    }
                }
                changed
            });
        }
        RawRequest {
            method: method_name.to_owned(),
            params: params.to_raw(),
            progress,
        }
    }

    /// Sends a prepared request; the answer comes back as the server wrote it. An
    /// `InputRequiredResult` comes back as it is, for the caller to answer; timeouts and
    /// `opts.cancel` work as for [`Client::request`].
    pub async fn send_raw(
        &self,
        request: RawRequest,
        opts: &CallOptions,
    ) -> Result<Box<RawValue>, ClientError> {
        let RawRequest {
            method,
            params,
            progress,
        } = request;
        let timeout = opts.timeout.or(self.options.request_timeout);
        let id = self.peer.next_id();
        let call = self
            .peer
            .request_with_id(id.clone(), &method, Some(params), timeout);
        let out = match &opts.cancel {
            None => call.await.map_err(ClientError::from),
            Some(cancel) => tokio::select! {
                r = call => r.map_err(ClientError::from),
                () = cancel.notified() => {
                    self.peer.cancel(&id, "cancelled by the caller").await;
                    Err(ClientError::Cancelled)
                }
            },
        };
        drop(progress);
        out
    }

    /// Sends a prepared request whose answer goes to `then`, called on the connection's
    /// read loop (keep it short, never block): the answer as the server wrote it, or why
    /// none came (an error answer, the connection closed, no answer within `timeout`,
    /// after which the server is told the request is cancelled). Nothing is spawned or
    /// awaited. Returns the request's id, for [`Client::reclaim`] and
    /// [`Client::cancel_now`].
    pub fn send_then(
        &self,
        request: RawRequest,
        timeout: Option<std::time::Duration>,
        then: impl FnOnce(Result<Box<RawValue>, ClientError>) + Send + 'static,
    ) -> Result<RequestId, ClientError> {
        let RawRequest {
            method,
            params,
            progress,
        } = request;
        let id = self.peer.next_id();
        self.peer
            .request_then(id.clone(), &method, Some(params), timeout, move |answer| {
                drop(progress);
                then(answer.map_err(ClientError::from))
            })
            .map_err(|c| ClientError::Closed(c.0))?;
        Ok(id)
    }

    /// Takes back a request sent with [`Client::send_then`]: its callback is dropped
    /// uncalled and its answer comes to the returned future instead. `None` once it was
    /// answered.
    pub fn reclaim(&self, id: &RequestId) -> Option<Reclaimed> {
        self.peer.reclaim(id)
    }

    /// Drops the callback of a request sent with [`Client::send_then`] and tells the
    /// server it is cancelled, without waiting.
    pub fn cancel_now(&self, id: &RequestId, reason: &str) {
        self.peer.cancel_now(id, reason);
    }

    /// [`Client::prepare_raw`] and [`Client::send_raw`] in one.
    pub async fn request_raw(
        &self,
        method_name: &str,
        params: RawObject<'_>,
        opts: &CallOptions,
    ) -> Result<Box<RawValue>, ClientError> {
        let request = self.prepare_raw(method_name, params, opts);
        self.send_raw(request, opts).await
    }
}
