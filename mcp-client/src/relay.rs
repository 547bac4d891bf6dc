//! Requests whose params and answers stay raw JSON: what a relay sends on for its host.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use mcp_revisions::features;
use mcp_types::protocol::{LoggingLevel, ProgressToken};
use mcp_types::raw::RawObject;
use mcp_types::rpc::Reclaimed;
use mcp_types::{meta, RequestId, Revision};
use parking_lot::Mutex;
use serde_json::value::RawValue;

use crate::{CallOptions, Client, ClientError, ClientOptions};

/// The 2026-07-28 `_meta` envelope this client writes on every request, encoded once.
pub(crate) struct Envelope {
    version: Box<RawValue>,
    capabilities: Box<RawValue>,
    info: Box<RawValue>,
    /// The last host's whole `_meta` (see [`Client::host_meta`]).
    host: Mutex<Option<HostMeta>>,
    /// The last `_meta` written from a host's own (see [`Client::memo_meta`]).
    written: Mutex<Option<MemoMeta>>,
}

/// A `_meta` written from a host's own `_meta` text.
struct MemoMeta {
    from: Box<str>,
    meta: MetaRewrite,
}

/// What a relay does with a host's own `_meta` on its way upstream (see
/// [`Client::memo_meta`]).
#[derive(Clone, Debug)]
pub enum MetaRewrite {
    /// It goes on as the host wrote it.
    Keep,
    /// It goes: nothing of it is left for the upstream.
    Remove,
    /// This text goes in its place.
    Write(Box<RawValue>),
}

/// The longest host `_meta` whose rewrite is kept: an envelope is far shorter, and a host
/// that sends more is not worth copying for.
const MEMO_MAX_BYTES: usize = 4096;

/// A `_meta` written for one host, and what it was written from.
struct HostMeta {
    /// Kept so that the pointer compared is never reused for another value.
    capabilities: Arc<RawValue>,
    level: Option<LoggingLevel>,
    meta: Box<RawValue>,
}

impl Envelope {
    pub(crate) fn new(revision: Revision, options: &ClientOptions) -> Self {
        Envelope {
            version: encode(revision.as_str()),
            capabilities: encode(&options.capabilities),
            info: encode(&options.info),
            host: Mutex::new(None),
            written: Mutex::new(None),
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
        self.client.shared.progress.lock().remove(&self.token);
    }
}

impl Client {
    /// Writes this client's 2026-07-28 envelope into the `_meta` of a request the caller
    /// is editing (read with [`RawObject::parse`], written back once by the caller): the
    /// protocol version and `clientInfo` (each hop writes its own), and this client's
    /// capabilities unless the caller put the ones it speaks for there. Nothing for a
    /// server of an earlier revision. The values are borrowed from the client, so nothing
    /// is copied until the `_meta` is written. Returns whether anything was written.
    pub fn write_envelope<'m>(&'m self, meta: &mut RawObject<'m>) -> bool {
        if !features::per_request_meta(self.revision) {
            return false;
        }
        let e = &self.envelope;
        meta.insert(meta::PROTOCOL_VERSION, &*e.version);
        meta.insert(meta::CLIENT_INFO, &*e.info);
        if !meta.contains_key(meta::CLIENT_CAPABILITIES) {
            meta.insert(meta::CLIENT_CAPABILITIES, &*e.capabilities);
        }
        true
    }

    /// The whole `_meta` a relay sends on this connection for a host that wrote none of
    /// its own beyond its hop's keys: the host's `capabilities` as it wrote them, its log
    /// `level`, and this hop's protocol version and `clientInfo`, in that order. Written
    /// once and kept while the same host keeps calling: `capabilities` is compared by
    /// pointer, so pass the host session's own shared value (a host that declared its
    /// capabilities once, at `initialize`). `None` for a server of an earlier revision.
    pub fn host_meta(
        &self,
        capabilities: &Arc<RawValue>,
        level: Option<&LoggingLevel>,
    ) -> Option<Box<RawValue>> {
        if !features::per_request_meta(self.revision) {
            return None;
        }
        let mut last = self.envelope.host.lock();
        if let Some(h) = last
            .as_ref()
            .filter(|h| Arc::ptr_eq(&h.capabilities, capabilities) && h.level.as_ref() == level)
        {
            return Some(h.meta.clone());
        }
        let level_raw = level.map(encode);
        let mut m = RawObject::new();
        m.insert(meta::CLIENT_CAPABILITIES, &**capabilities);
        if let Some(level) = level_raw.as_deref() {
            m.insert(meta::LOG_LEVEL, level);
        }
        self.write_envelope(&mut m);
        let meta = m.to_raw();
        *last = Some(HostMeta {
            capabilities: capabilities.clone(),
            level: level.cloned(),
            meta: meta.clone(),
        });
        Some(meta)
    }

    /// What a relay does with a host's own `_meta` text `from` when that depends on
    /// nothing but the text and this connection: `write` decides, and its answer is kept
    /// while the next host `_meta` is the same text, as a host's envelope is from one
    /// request to the next (whatever the upstream's revision: one that hears no envelope
    /// still loses the host's hop keys).
    pub fn memo_meta(&self, from: &str, write: impl FnOnce() -> MetaRewrite) -> MetaRewrite {
        {
            let last = self.envelope.written.lock();
            if let Some(m) = last.as_ref().filter(|m| *m.from == *from) {
                return m.meta.clone();
            }
        }
        let meta = write();
        if from.len() <= MEMO_MAX_BYTES {
            *self.envelope.written.lock() = Some(MemoMeta {
                from: from.into(),
                meta: meta.clone(),
            });
        }
        meta
    }

    /// [`Client::write_envelope`] for params whose `_meta` the caller does not otherwise
    /// edit: `_meta` is read, given the envelope and written back (only `_meta` changes).
    pub fn add_envelope(&self, params: &mut RawObject<'_>) -> bool {
        if !features::per_request_meta(self.revision) {
            return false;
        }
        let written = match params.get("_meta") {
            None => Some(RawObject::new()),
            Some(m) => RawObject::from_raw(m).ok(),
        }
        .map(|mut m| {
            self.write_envelope(&mut m);
            m.to_raw()
        });
        match written {
            Some(m) => {
                params.insert("_meta", m);
                true
            }
            None => false,
        }
    }

    /// Prepares a request whose params are already in this connection's revision, read one
    /// level deep, with this hop's `_meta` written (a relay's; see
    /// [`Client::write_envelope`]): nothing in them is decoded, translated or reordered.
    /// Only a progress token is added to `_meta` when `opts.progress` is set (registered
    /// until the request is done). The params are written out once, here, so the request
    /// owns them.
    pub fn prepare_raw(
        &self,
        method_name: &str,
        mut params: RawObject<'_>,
        opts: &CallOptions,
    ) -> RawRequest {
        let progress = opts.progress.as_ref().map(|tx| {
            let key = format!("p{}", self.next_progress.fetch_add(1, Ordering::Relaxed));
            let token = ProgressToken::String(key);
            self.shared
                .progress
                .lock()
                .insert(token.clone(), tx.clone());
            ProgressGuard {
                client: self.clone(),
                token,
            }
        });
        if let Some(g) = &progress {
            meta::set_raw(&mut params, meta::PROGRESS_TOKEN, &encode(&g.token), false);
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
            .map_err(ClientError::from)?;
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

    /// [`Client::prepare_raw`] and [`Client::send_raw`] in one, with this client's
    /// envelope written into `_meta` (see [`Client::write_envelope`]).
    pub async fn request_raw(
        &self,
        method_name: &str,
        mut params: RawObject<'_>,
        opts: &CallOptions,
    ) -> Result<Box<RawValue>, ClientError> {
        self.add_envelope(&mut params);
        let request = self.prepare_raw(method_name, params, opts);
        self.send_raw(request, opts).await
    }
}
