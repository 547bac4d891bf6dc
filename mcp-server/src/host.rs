//! The host behind a request, as far as a connection tells: one [`HostSession`] per
//! stdio connection and per legacy HTTP session (`Mcp-Session-Id`). A 2026-07-28 request
//! over HTTP stands alone and has none.
//!
//! A handler keys per-host state by it (a gateway opens one upstream session per host,
//! so that an upstream's questions and log lines can only reach the host they belong to)
//! and lets that state go when [`HostSession::ended`] resolves.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// Names one host session among all of this process's, never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostSessionId(u64);

impl HostSessionId {
    /// The number behind the id (for logs).
    pub fn get(self) -> u64 {
        self.0
    }
}

impl std::fmt::Display for HostSessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "host-{}", self.0)
    }
}

struct State {
    id: HostSessionId,
    ended: AtomicBool,
    notify: Notify,
}

/// One host's connection or session, seen from the requests it makes. Cheap to clone;
/// holding one does not keep the connection open.
#[derive(Clone)]
pub struct HostSession(Arc<State>);

impl std::fmt::Debug for HostSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostSession")
            .field("id", &self.0.id)
            .field("ended", &self.is_ended())
            .finish()
    }
}

impl HostSession {
    /// A new session and the guard that ends it when dropped (held by the connection).
    pub(crate) fn start() -> (HostSession, HostSessionGuard) {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let state = Arc::new(State {
            id: HostSessionId(NEXT.fetch_add(1, Ordering::Relaxed)),
            ended: AtomicBool::new(false),
            notify: Notify::new(),
        });
        (
            HostSession(state.clone()),
            HostSessionGuard(HostSession(state)),
        )
    }

    /// Its id.
    pub fn id(&self) -> HostSessionId {
        self.0.id
    }

    /// Whether the connection or session has ended.
    pub fn is_ended(&self) -> bool {
        self.0.ended.load(Ordering::SeqCst)
    }

    /// Resolves once the connection closes or the session is deleted or expires (at once
    /// if it already has).
    pub async fn ended(&self) {
        loop {
            let notified = self.0.notify.notified();
            tokio::pin!(notified);
            // Registered before the check, so an end in between still wakes us.
            notified.as_mut().enable();
            if self.is_ended() {
                return;
            }
            notified.await;
        }
    }

    pub(crate) fn end(&self) {
        self.0.ended.store(true, Ordering::SeqCst);
        self.0.notify.notify_waiters();
    }
}

/// Ends its [`HostSession`] when dropped: the connection holds it.
pub(crate) struct HostSessionGuard(HostSession);

impl HostSessionGuard {
    pub(crate) fn session(&self) -> &HostSession {
        &self.0
    }
}

impl Drop for HostSessionGuard {
    fn drop(&mut self) {
        self.0.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn dropping_the_guard_ends_the_session_and_wakes_waiters() {
        let (a, guard) = HostSession::start();
        let (b, _other) = HostSession::start();
        assert_ne!(a.id(), b.id());
        let waiter = tokio::spawn({
            let a = a.clone();
            async move { a.ended().await }
        });
        tokio::task::yield_now().await;
        assert!(!a.is_ended());
        drop(guard);
        tokio::time::timeout(std::time::Duration::from_secs(1), waiter)
            .await
            .expect("woken")
            .expect("joined");
        assert!(a.is_ended());
        assert!(!b.is_ended());
        a.ended().await;
    }
}
