//! Notifications outside any request: a [`Subscriber`] is somewhere a handler can send
//! `notifications/resources/updated` (or any other notification) later, after the request
//! that named it has been answered.
//!
//! A legacy host's subscriber is its session (a stdio connection, a legacy HTTP session):
//! the notification goes on the connection, in the session's revision. A 2026-07-28 client
//! has no session to send to; its subscriber is the `subscriptions/listen` stream it opened,
//! and every notification on it carries that stream's `subscriptionId`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::Value;

use crate::context::Notifier;
use crate::HostSession;

/// Names one [`Subscriber`] among all of this process's, never reused: a legacy host
/// session's number, or one of a `subscriptions/listen` stream's own from the same series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubscriberId(u64);

impl SubscriberId {
    /// The number behind the id (for logs).
    pub fn get(self) -> u64 {
        self.0
    }
}

impl std::fmt::Display for SubscriberId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "subscriber-{}", self.0)
    }
}

/// Why a notification was not sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotifyError {
    /// The connection, session or stream has ended.
    #[error("the subscriber has gone")]
    Gone,
    /// The subscriber's revision cannot carry this notification.
    #[error("{method} cannot be sent in MCP {revision}: {reason}")]
    NotInRevision {
        /// The notification's method.
        method: String,
        /// The subscriber's revision.
        revision: mcp_types::Revision,
        /// What the translation said.
        reason: String,
    },
    /// The params could not be encoded.
    #[error("notification params not encodable: {0}")]
    Encode(String),
}

/// Where a handler sends notifications outside any request (see the module docs). Cheap to
/// clone; holding one keeps nothing open. Get one from
/// [`crate::RequestContext::subscriber`].
#[derive(Clone)]
pub struct Subscriber {
    /// The session or stream: its id and its end.
    life: HostSession,
    notifier: Notifier,
    /// A listen stream's `_meta` tag (`subscriptionId`).
    tag: Option<Value>,
    /// A listen stream is open once its acknowledgement went: nothing is sent before it.
    open: Option<Arc<AtomicBool>>,
}

impl std::fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriber")
            .field("id", &self.id())
            .field("revision", &self.notifier.revision)
            .field("ended", &self.is_ended())
            .finish()
    }
}

impl Subscriber {
    /// A legacy host session's subscriber.
    pub(crate) fn session(host: HostSession, notifier: Notifier) -> Self {
        Subscriber {
            life: host,
            notifier,
            tag: None,
            open: None,
        }
    }

    /// A `subscriptions/listen` stream's subscriber, tagging what it sends with `tag` once
    /// `open` is set; `life` ends with the stream.
    pub(crate) fn listen(
        life: HostSession,
        notifier: Notifier,
        tag: Value,
        open: Arc<AtomicBool>,
    ) -> Self {
        Subscriber {
            life,
            notifier,
            tag: Some(tag),
            open: Some(open),
        }
    }

    /// Its id: what per-subscriber state is keyed by.
    pub fn id(&self) -> SubscriberId {
        SubscriberId(self.life.id().get())
    }

    /// The revision its notifications are written in.
    pub fn revision(&self) -> mcp_types::Revision {
        self.notifier.revision
    }

    /// Whether its session or stream has ended.
    pub fn is_ended(&self) -> bool {
        self.life.is_ended() || self.notifier.peer.close_reason().is_some()
    }

    /// Resolves once its session or stream ends (at once if it has): let its state go then.
    pub async fn ended(&self) {
        self.life.ended().await
    }

    /// Sends `method_name` with `params` (in the crate's union model), translated to the
    /// subscriber's revision; a listen stream's notifications carry its `subscriptionId` in
    /// `_meta`. One sent to a listen stream before its acknowledgement is dropped (the
    /// spec allows nothing before it) and counts as sent.
    pub async fn notify(&self, method_name: &str, mut params: Value) -> Result<(), NotifyError> {
        if self.is_ended() {
            return Err(NotifyError::Gone);
        }
        if let Some(open) = &self.open {
            if !open.load(Ordering::SeqCst) {
                tracing::debug!(
                    method = method_name,
                    "notification before the acknowledgement dropped"
                );
                return Ok(());
            }
        }
        if let (Some(Value::Object(tag)), Value::Object(p)) = (&self.tag, &mut params) {
            if let Value::Object(m) = p
                .entry("_meta")
                .or_insert_with(|| Value::Object(Default::default()))
            {
                m.extend(tag.clone());
            }
        }
        let raw = self.notifier.translated(method_name, params)?;
        self.notifier
            .peer
            .notify(method_name, Some(raw))
            .await
            .map_err(|_| NotifyError::Gone)
    }
}
