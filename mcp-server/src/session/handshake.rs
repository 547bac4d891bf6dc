//! A legacy session's handshake and what its host set since ([`SessionSnapshot`]), so that
//! another process can serve the session on without a new `initialize`: the endpoint
//! keeps a snapshot where replicas share state each time it changes, and a replica taking
//! the session over resumes a new session object from it.

use std::collections::BTreeSet;
use std::sync::Arc;

use mcp_types::protocol::{LoggingLevel, ResourceRequestParams};
use mcp_types::rpc::Peer;
use mcp_types::Revision;
use serde_json::value::RawValue;

use super::declared::Declared;
use super::{Asker, LegacyState, RequestMeta, Session};
use crate::context::Cancellation;

/// What a legacy session was opened with and what its host set since: enough for
/// another process to serve it under the same id without a new `initialize`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionSnapshot {
    /// The revision negotiated at `initialize`.
    pub revision: Revision,
    /// The client's capabilities, as it wrote them (JSON).
    pub capabilities: String,
    /// The client's `clientInfo` (JSON).
    pub client_info: String,
    /// The level it set with `logging/setLevel`, if any.
    pub log_level: Option<LoggingLevel>,
    /// The resources it subscribed to (`resources/subscribe`), in order.
    pub subscriptions: Vec<String>,
}

impl SessionSnapshot {
    /// A session opened at `revision` by a client declaring `capabilities` and
    /// `client_info` (their JSON), nothing set since.
    pub fn new(
        revision: Revision,
        capabilities: impl Into<String>,
        client_info: impl Into<String>,
    ) -> Self {
        SessionSnapshot {
            revision,
            capabilities: capabilities.into(),
            client_info: client_info.into(),
            log_level: None,
            subscriptions: Vec::new(),
        }
    }

    /// With `level` set.
    #[must_use]
    pub fn with_log_level(mut self, level: Option<LoggingLevel>) -> Self {
        self.log_level = level;
        self
    }

    /// With `uris` subscribed to.
    #[must_use]
    pub fn with_subscriptions(mut self, uris: Vec<String>) -> Self {
        self.subscriptions = uris;
        self
    }
}

/// Told each time a session's snapshot changes.
pub(crate) type SharedWatcher = dyn Fn(SessionSnapshot) + Send + Sync;

/// A [`SharedWatcher`], as it is handed over.
pub(crate) type Watcher = Box<SharedWatcher>;

/// Why a snapshot could not be resumed.
#[derive(Debug, thiserror::Error)]
#[error("a session snapshot that does not read: {0}")]
pub(crate) struct Unreadable(String);

impl Session {
    /// Its snapshot, once `initialize` settled its handshake.
    pub(crate) fn snapshot(&self) -> Option<SessionSnapshot> {
        let state = self.legacy_state()?;
        let client_info = state
            .declared
            .info
            .as_deref()
            .and_then(|i| serde_json::to_string(i).ok())
            .unwrap_or_else(|| "{}".into());
        Some(SessionSnapshot {
            revision: state.revision,
            capabilities: state.declared.capabilities_raw.get().to_owned(),
            client_info,
            log_level: state.log_level,
            subscriptions: self.subscribed.lock().iter().cloned().collect(),
        })
    }

    /// From now on, `watcher` is told of each change of its snapshot (its handshake, log
    /// level, subscriptions), after the change.
    pub(crate) fn watch(&self, watcher: Watcher) {
        *self.watcher.lock() = Some(Arc::from(watcher));
    }

    /// Tells the watcher, if any, of the snapshot as it is now.
    pub(super) fn changed(&self) {
        let watcher = self.watcher.lock().clone();
        if let (Some(w), Some(s)) = (watcher, self.snapshot()) {
            w(s);
        }
    }

    /// A subscription of its host's was made (`true`) or ended.
    pub(super) fn subscription(&self, uri: &str, subscribed: bool) {
        let changed = {
            let mut set = self.subscribed.lock();
            if subscribed {
                set.insert(uri.to_owned())
            } else {
                set.remove(uri)
            }
        };
        if changed {
            self.changed();
        }
    }

    /// Takes up the session `snapshot` describes, as if its `initialize` had been answered
    /// here, then subscribes to its resources again through the handler (a subscription
    /// the handler refuses now is logged and dropped).
    pub(crate) async fn resume(
        &self,
        peer: &Peer,
        snapshot: &SessionSnapshot,
    ) -> Result<(), Unreadable> {
        let capabilities = RawValue::from_string(snapshot.capabilities.clone())
            .map_err(|e| Unreadable(e.to_string()))?;
        let info = RawValue::from_string(snapshot.client_info.clone())
            .map_err(|e| Unreadable(e.to_string()))?;
        let declared =
            Declared::read(&capabilities, Some(&info)).map_err(|e| Unreadable(e.to_string()))?;
        let revision = snapshot.revision;
        *self.legacy.lock() = Some(LegacyState {
            revision,
            declared: declared.clone(),
            log_level: snapshot.log_level.clone(),
        });
        self.forward_list_changes(peer, revision);
        let mut subscribed = BTreeSet::new();
        for uri in &snapshot.subscriptions {
            let asker = Asker {
                revision,
                declared: declared.clone(),
                log_level: snapshot.log_level.clone(),
            };
            let cancelled = Arc::new(Cancellation::default());
            let ctx = self.context(peer, asker, &RequestMeta::of(None), cancelled);
            let params = ResourceRequestParams {
                uri: uri.clone(),
                ..Default::default()
            };
            match self.handler.subscribe(&ctx, params, true).await {
                Ok(()) => {
                    subscribed.insert(uri.clone());
                }
                Err(e) => {
                    tracing::warn!(%uri, "a resumed session's subscription was not made again: {}", e.message);
                }
            }
        }
        *self.subscribed.lock() = subscribed;
        Ok(())
    }
}
