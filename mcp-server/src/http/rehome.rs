//! Where a request naming a legacy session is served, among replicas: here when the
//! session is held here (and still this replica's), at its holder when that can be
//! reached, and otherwise here again after taking the session over (see `handover.rs`):
//! the session resumes from its snapshot under the same id, so the host carries on
//! without a new `initialize`.

use std::sync::Arc;

use bytes::Bytes;
use http::Response;

use super::handover::{SessionHandover, TakeOver};
use super::legacy::LegacySession;
use super::moved::{moved, Relayed};
use super::reply::HttpBody;
use super::session_id;
use super::{sessions, StreamableHttp};
use crate::auth::{Principal, PrincipalDigest};
use crate::seal::ReplicaId;

/// A request naming a legacy session, as it reached this replica.
pub(super) struct SessionRequest<'a> {
    /// The session's id.
    pub(super) id: &'a str,
    pub(super) parts: &'a http::request::Parts,
    pub(super) body: &'a Bytes,
    /// Whose credentials it came with.
    pub(super) principal: Option<&'a Arc<Principal>>,
    /// It came from its client, not over a replica's hop: it may be forwarded.
    pub(super) direct: bool,
}

/// What came of following a session from replica to replica.
enum Followed {
    /// The holder's answer.
    Answer(Response<HttpBody>),
    /// This replica cannot be reached: the session is to be taken over from it.
    Gone(ReplicaId),
    /// Not reached (it led here, or past the hops allowed).
    NotReached,
}

impl StreamableHttp {
    /// The answer of the replica holding the session `r` names, when that is another
    /// replica; `None`: serve it here (held here, taken over, or `404`).
    pub(super) async fn session_elsewhere(
        &self,
        r: &SessionRequest<'_>,
    ) -> Option<Response<HttpBody>> {
        let sealer = self.inner.sealer.as_deref()?;
        let sessions = &self.inner.sessions;
        let handover = sessions.handover().cloned();
        if sessions.holds(r.id) {
            match &handover {
                Some(h) if !h.current(r.id) && !h.still_held(r.id).await => {
                    sessions.let_go(r.id).await;
                }
                _ => return None,
            }
        }
        // An id this deployment did not issue is served here: `404`.
        let claims = session_id::open(sealer, r.id).ok()?;
        let mut from = claims.owner;
        if r.direct {
            // Where the session was last found, else where it was opened.
            let to = self.inner.holders.get(r.id).unwrap_or(claims.owner);
            match self.follow(r, to, claims.owner).await {
                Followed::Answer(answer) => return Some(answer),
                Followed::Gone(gone) => from = gone,
                Followed::NotReached => {}
            }
        }
        let handover = handover?;
        if claims.principal != PrincipalDigest::of(r.principal.map(|p| &**p)) {
            // Not its holder's: refused here as any other's request would be.
            return None;
        }
        self.take_over(r, from, claims.owner, handover.as_ref())
            .await
    }

    /// Takes the session over from `from`, gone, and resumes it here; when another replica
    /// holds it, the request goes there (a forwarded one is sent back to its sender with the
    /// holder's name, while the holder is live: at most one hop at a time).
    async fn take_over(
        &self,
        r: &SessionRequest<'_>,
        mut from: ReplicaId,
        opened_by: ReplicaId,
        handover: &dyn SessionHandover,
    ) -> Option<Response<HttpBody>> {
        let me = self.inner.sealer.as_deref()?.replica();
        // One take-over at a time here: a second request for the same session waits for
        // the first to resume it, then finds it held.
        let _one = self.inner.taking_over.lock().await;
        if self.inner.sessions.holds(r.id) {
            return None;
        }
        // At most twice: the holder named by the record may be gone too.
        for _ in 0..2 {
            match handover.take_over(r.id, from).await {
                Ok(TakeOver::Taken(snapshot)) => {
                    self.resume(r, snapshot).await;
                    return None;
                }
                Ok(TakeOver::HeldBy(holder)) if holder != me => {
                    if !r.direct {
                        if self.is_live(holder) {
                            return Some(moved(holder));
                        }
                        from = holder;
                        continue;
                    }
                    match self.follow(r, holder, opened_by).await {
                        Followed::Answer(answer) => return Some(answer),
                        Followed::Gone(gone) => from = gone,
                        Followed::NotReached => return None,
                    }
                }
                Ok(TakeOver::Gone) => return self.last_try(r, opened_by).await,
                Ok(_) => return None,
                Err(e) => {
                    // No split brain: without the store, no replica can take a session
                    // over; the client initializes again.
                    tracing::warn!("a legacy session could not be taken over: {e}");
                    return None;
                }
            }
        }
        None
    }

    /// The request taken to replica `to` and on, as each replica that no longer holds the
    /// session names the one that does (at most three forwards, each one hop); where it
    /// was answered is remembered for the session opened by `opened_by`.
    async fn follow(
        &self,
        r: &SessionRequest<'_>,
        mut to: ReplicaId,
        opened_by: ReplicaId,
    ) -> Followed {
        let me = self.inner.sealer.as_deref().map(|s| s.replica());
        for _ in 0..3 {
            if Some(to) == me {
                break;
            }
            match self.relay(r, to).await {
                Relayed::Answer(answer) => {
                    self.inner.holders.note(r.id, to, opened_by);
                    return Followed::Answer(answer);
                }
                Relayed::Moved(holder) => to = holder,
                Relayed::Unreachable => {
                    self.inner.holders.forget(r.id);
                    return Followed::Gone(to);
                }
            }
        }
        Followed::NotReached
    }

    /// Resumes the session taken over, from `snapshot`, and holds it here.
    async fn resume(&self, r: &SessionRequest<'_>, snapshot: super::SessionSnapshot) {
        let caller = crate::context::Caller {
            http: None,
            principal: r.principal.cloned(),
        };
        let client = sessions::client_of(&caller, None);
        let session = Arc::new(LegacySession::start(
            &self.inner.server,
            &self.inner.options,
            caller,
        ));
        let _resuming = session.hold();
        if !session.resume(&snapshot).await {
            session.end().await;
            return;
        }
        let added = self
            .inner
            .sessions
            .insert(r.id.to_owned(), session.clone(), client);
        match added.await {
            Ok(()) => tracing::info!("a legacy session was taken over from a replica gone"),
            Err(refused) => {
                tracing::warn!("a legacy session taken over was not admitted here: {refused}");
                session.end().await;
            }
        }
    }
}
