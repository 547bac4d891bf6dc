//! Requests whose params and answers stay raw JSON: what a relay sends on for its host.

use std::sync::atomic::Ordering;

use mcp_revisions::features;
use mcp_types::protocol::ProgressToken;
use mcp_types::raw::RawObject;
use mcp_types::{meta, Revision};
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

impl Client {
    /// Sends `method` with params already written in this connection's revision, as raw
    /// JSON (a relay's): nothing in them is decoded, translated or reordered, and the
    /// answer comes back as the server wrote it.
    ///
    /// Only `_meta` may change: for a 2026-07-28 server the envelope keys this client
    /// writes are added where absent (protocol version, client info, and this client's
    /// capabilities unless the params declare the host's), and a progress token when
    /// `opts.progress` is set. An `InputRequiredResult` comes back as it is, for the
    /// caller to answer; timeouts and `opts.cancel` work as for [`Client::request`].
    pub async fn request_raw(
        &self,
        method_name: &str,
        params: Box<RawValue>,
        opts: &CallOptions,
    ) -> Result<Box<RawValue>, ClientError> {
        let token = opts.progress.as_ref().map(|tx| {
            let key = format!("p{}", self.next_progress.fetch_add(1, Ordering::Relaxed));
            let token = ProgressToken::String(key);
            if let Ok(mut m) = self.shared.progress.lock() {
                m.insert(token.clone(), tx.clone());
            }
            token
        });
        let params = self.with_hop_meta(params, token.as_ref())?;
        let timeout = opts.timeout.or(self.options.request_timeout);
        let id = self.peer.next_id();
        let call = self
            .peer
            .request_with_id(id.clone(), method_name, Some(params), timeout);
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
        if let Some(token) = token {
            if let Ok(mut m) = self.shared.progress.lock() {
                m.remove(&token);
            }
        }
        out
    }

    /// `params` with this hop's `_meta` keys: the envelope (2026-07-28) and the progress
    /// token. Untouched (the same box) when there is nothing to add.
    fn with_hop_meta(
        &self,
        params: Box<RawValue>,
        token: Option<&ProgressToken>,
    ) -> Result<Box<RawValue>, ClientError> {
        let modern = features::per_request_meta(self.revision);
        if !modern && token.is_none() {
            return Ok(params);
        }
        let mut o = RawObject::from_raw(&params).map_err(|e| ClientError::InvalidResult {
            method: "params".into(),
            reason: format!("params must be an object: {e}"),
        })?;
        let token = token.map(|t| serde_json::value::to_raw_value(t).unwrap_or_default());
        meta::edit_raw(&mut o, |m| {
            if let Some(t) = &token {
                m.insert(meta::PROGRESS_TOKEN, t.clone());
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
                    }
                }
            }
            true
        });
        if !o.is_modified() {
            drop(o);
            return Ok(params);
        }
        Ok(o.to_raw())
    }
}
