//! [`SessionHandover`]: how a legacy session outlives the replica that opened it. The
//! endpoint tells the handover each session's [`SessionSnapshot`] as it changes, and when
//! a request names a session whose replica cannot be reached (stopped, killed, rolled),
//! the replica that got the request takes the session over: it becomes the session's
//! holder where replicas share state, resumes the session from its snapshot under the
//! same id (no new `initialize`: the host's log level and subscriptions carry on), and
//! serves the request.
//!
//! A replica serves a session it holds without asking anyone while its hold is current
//! ([`SessionHandover::current`]); once it lapsed (the replica was stopped, or cut off
//! from the others), it asks before it serves, and lets go of a session another replica
//! took over meanwhile.

use async_trait::async_trait;

use super::SessionStoreError;
use crate::seal::ReplicaId;
pub use crate::session::SessionSnapshot;

/// What came of [`SessionHandover::take_over`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TakeOver {
    /// This replica holds the session now: it is resumed from this snapshot.
    Taken(SessionSnapshot),
    /// Another replica holds it (it took the session over first): the request goes there.
    HeldBy(ReplicaId),
    /// There is no record of it (never kept, ended, expired, or lost with the store's
    /// data): the client gets `404` and initializes again.
    Gone,
}

/// Keeps legacy sessions' snapshots where every replica finds them, and moves a session
/// to the replica that asks for it when its holder is gone. Given by
/// [`super::HttpOptions::session_handover`]; used only with [`super::HttpOptions::peers`].
#[async_trait]
pub trait SessionHandover: Send + Sync + 'static {
    /// Session `id`, held by this replica, stands as `snapshot` now (its `initialize` was
    /// answered, or its host set a log level or subscribed). On the request path: must not
    /// block (queue the write).
    fn kept(&self, id: &str, snapshot: SessionSnapshot);

    /// Session `id` ended here (closed, expired, evicted): its record goes, unless another
    /// replica holds the session now. Must not block.
    fn ended(&self, id: &str);

    /// Whether this replica may serve session `id`, which it holds, without asking: its
    /// hold is current (renewed within its lease) and was confirmed since the last lapse.
    /// On the request path of every legacy request: cheap, never blocks.
    fn current(&self, id: &str) -> bool;

    /// Whether session `id`, held here, is still this replica's (asked when
    /// [`SessionHandover::current`] says no): `false` once another replica took it over,
    /// and this replica lets its session go. When that cannot be known (the shared state
    /// is out of reach), `true`: no other replica can take a session over then either.
    async fn still_held(&self, id: &str) -> bool;

    /// Takes session `id` over for this replica, its holder `from` being out of reach (or
    /// this replica itself, restarted): [`TakeOver::Taken`] when this replica holds it now
    /// (of several asking at once, exactly one), [`TakeOver::HeldBy`] when another replica
    /// than `from` holds it.
    async fn take_over(&self, id: &str, from: ReplicaId) -> Result<TakeOver, SessionStoreError>;
}
