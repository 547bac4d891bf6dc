//! The pooled upstream sessions of one upstream ([`super::SessionMode::Pooled`]): at most
//! [`PoolLimits::max_sessions`], each lent to one call at a time, or to the calls of one host
//! that can be asked nothing ([`Sharer`]).
//!
//! A call takes a [`Lease`] on a session opened with its host's capabilities: an idle one
//! if there is one, else a new one while the pool has room, else (the pool full of idle
//! sessions for other capabilities) a new one in place of the longest idle. When every
//! session is lent out the call waits its turn: a semaphore of `max_sessions` permits,
//! one per lent session, queues callers in order. A session goes back to the pool only
//! when its calls were answered; a call cancelled or timed out may still be running upstream, and
//! whatever it asked or logged would reach the next call's host, so its session is closed.
//! So is one whose upstream sent a request that is still being routed or answered when
//! the call's answer came (the request was read first; it is the call's host's, or no
//! one's, never the next host's). What remains: a log line the upstream writes after its
//! answer reaches the next call on that session, if one is in flight by then.
//!
//! A host that declared none of sampling, elicitation and roots is asked nothing: a session
//! opened with its capabilities declares none either, so the upstream has no question to
//! tie to a call, and what it logs during the host's calls is that host's (but for the
//! leftover line above). Such a host's calls in flight share one session (one upstream
//! process, not one per call up to the pool's cap), unless other calls wait for a session:
//! then its next call queues with them, so that a busy host does not keep its session from
//! everyone else for good. The session goes back to the pool when the last of its calls
//! ends, and is closed then if any of them was not answered.
//!
//! A call parked for its host's answers (an upstream's question relayed as an
//! `InputRequiredResult`) keeps its session until it is resumed or `input_timeout` ends
//! it: hosts that never answer hold sessions that long.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use mcp_server::HostSessionId;
use mcp_types::protocol::ClientCapabilities;
use parking_lot::Mutex;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use super::{shutting_down, Link, LinkError, PoolLimits};

/// One session of the pool.
struct Session {
    id: u64,
    /// What it declared at its handshake: the host capabilities it serves.
    capabilities: ClientCapabilities,
    link: Link,
    /// Since when it has had no call; `None` while lent.
    idle_since: Option<Instant>,
    /// While lent: the calls holding it, the host whose calls may share it, and its permit.
    lent: Lent,
}

/// A session's calls while it is lent.
#[derive(Default)]
struct Lent {
    calls: usize,
    /// The host whose calls share it, if it may be shared.
    sharer: Option<HostSessionId>,
    /// A call on it was not answered, or the upstream was asking when one ended: closed
    /// when its last call ends.
    spoilt: bool,
    /// One of the pool's `max_sessions` permits, held while any call holds the session.
    permit: Option<OwnedSemaphorePermit>,
}

impl Lent {
    /// A session lent to its first call, holding `permit`.
    fn first(sharer: Sharer, permit: OwnedSemaphorePermit) -> Self {
        Lent {
            calls: 1,
            sharer,
            spoilt: false,
            permit: Some(permit),
        }
    }
}

/// The host whose calls may share one pooled session: a host that can be asked nothing
/// (see the module's documentation), `None` for any other.
pub(crate) type Sharer = Option<HostSessionId>;

#[derive(Default)]
struct State {
    sessions: Vec<Session>,
    /// Sessions being opened (each by a caller holding a permit).
    opening: usize,
    /// The hosts a session being opened is for, whose other calls wait for it.
    opening_for: Vec<HostSessionId>,
}

/// The pooled sessions of one upstream.
pub(crate) struct SessionPool {
    limits: PoolLimits,
    permits: Arc<Semaphore>,
    state: Mutex<State>,
    next_id: AtomicU64,
    /// Set by [`SessionPool::close_all`]: no session opens or goes back after it.
    closed: AtomicBool,
    /// Sessions the upstream ended (a crashed process) while in the pool.
    restarts: AtomicU64,
    /// Whether the task that closes idle sessions runs.
    sweeping: AtomicBool,
    /// Told when a session being opened for a host whose calls may share it is open, or
    /// failed to open: that host's other calls may join it, or open one.
    opened_for: Notify,
    /// Callers waiting for a permit: while any waits, no call joins a shared session.
    queued: AtomicUsize,
}

/// One call's hold on a session. When the last call holding the session lets go, the
/// session goes back to the pool if every one was [`Lease::answered`] and the upstream was
/// not asking, and is closed otherwise.
pub(crate) struct Lease {
    pool: Weak<SessionPool>,
    id: u64,
    answered: AtomicBool,
}

impl Lease {
    /// The upstream answered the call (a result or an error): nothing of it runs on there,
    /// and the session may serve another host.
    pub(crate) fn answered(&self) {
        self.answered.store(true, Ordering::Release);
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.upgrade() {
            pool.give_back(self.id, self.answered.load(Ordering::Acquire));
        }
    }
}

impl SessionPool {
    pub(crate) fn new(limits: PoolLimits) -> Self {
        SessionPool {
            permits: Arc::new(Semaphore::new(limits.max_sessions.max(1))),
            limits,
            state: Mutex::new(State::default()),
            next_id: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            restarts: AtomicU64::new(0),
            sweeping: AtomicBool::new(false),
            opened_for: Notify::new(),
            queued: AtomicUsize::new(0),
        }
    }

    /// How many sessions are open (or opening).
    pub(crate) fn len(&self) -> usize {
        let state = self.state.lock();
        state.sessions.len() + state.opening
    }

    /// How many callers wait for a session, every one being lent out.
    pub(crate) fn waiting(&self) -> usize {
        self.queued.load(Ordering::SeqCst)
    }

    /// How many sessions the upstream ended while they were in the pool.
    pub(crate) fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }

    /// How many host calls are in flight on the pool's sessions.
    pub(crate) fn in_flight(&self) -> usize {
        let state = self.state.lock();
        state
            .sessions
            .iter()
            .map(|s| s.link.calls.in_flight())
            .sum()
    }

    /// A session for `capabilities` if one is there now (no waiting, no opening): one
    /// `sharer`'s calls hold, else an idle one.
    pub(crate) fn try_lease(
        self: &Arc<Self>,
        capabilities: &ClientCapabilities,
        sharer: Sharer,
    ) -> Option<Link> {
        if self.closed.load(Ordering::SeqCst) {
            return None;
        }
        if let Some(shared) = self.join(capabilities, sharer) {
            return Some(shared);
        }
        let permit = self.permits.clone().try_acquire_owned().ok()?;
        self.take_idle(capabilities, permit, false, sharer).ok()
    }

    /// A session `sharer`'s calls hold now, for one more of them, unless other callers
    /// wait for a session.
    fn join(self: &Arc<Self>, capabilities: &ClientCapabilities, sharer: Sharer) -> Option<Link> {
        sharer?;
        if self.queued.load(Ordering::SeqCst) > 0 {
            return None;
        }
        let mut state = self.state.lock();
        let s = state.sessions.iter_mut().find(|s| {
            s.lent.calls > 0
                && s.lent.sharer == sharer
                && !s.lent.spoilt
                && s.capabilities == *capabilities
                && s.link.client.close_reason().is_none()
        })?;
        s.lent.calls += 1;
        Some(self.lend(s))
    }

    /// A session `sharer`'s calls hold, waiting (until `deadline`) while one is being
    /// opened for them rather than opening another: `Ok(None)` when there is neither,
    /// `Err` when the wait ran out.
    async fn join_when_opened(
        self: &Arc<Self>,
        capabilities: &ClientCapabilities,
        sharer: Sharer,
        deadline: tokio::time::Instant,
    ) -> Result<Option<Link>, ()> {
        let Some(host) = sharer else {
            return Ok(None);
        };
        loop {
            let opened = self.opened_for.notified();
            tokio::pin!(opened);
            // Registered before the look, so a session opened in between still wakes us.
            opened.as_mut().enable();
            if let Some(shared) = self.join(capabilities, sharer) {
                return Ok(Some(shared));
            }
            if !self.state.lock().opening_for.contains(&host) {
                return Ok(None);
            }
            if tokio::time::timeout_at(deadline, opened).await.is_err() {
                return Err(());
            }
        }
    }

    /// A session for a call of a host that declared `capabilities`: one `sharer`'s calls
    /// hold, else an idle one, else one opened with `open`, waiting at most `wait` for a
    /// session to come free.
    pub(crate) async fn lease<F, Fut>(
        self: &Arc<Self>,
        upstream: &str,
        capabilities: &ClientCapabilities,
        sharer: Sharer,
        wait: Duration,
        open: F,
    ) -> Result<Link, LinkError>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Link, crate::upstream_error::UpstreamError>>,
    {
        let busy = || LinkError::Busy {
            upstream: upstream.into(),
            max: self.limits.max_sessions,
        };
        let deadline = tokio::time::Instant::now() + wait;
        match self.join_when_opened(capabilities, sharer, deadline).await {
            Ok(Some(shared)) => return Ok(shared),
            Ok(None) => {}
            Err(()) => return Err(busy()),
        }
        let acquire = self.permits.clone().acquire_owned();
        // Counted as waiting until this is done, however it ends.
        let queued = Queued::new(self);
        let acquired = tokio::time::timeout_at(deadline, acquire).await;
        drop(queued);
        let permit = match acquired {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) => return Err(shutting_down()),
            Err(_) => {
                tracing::warn!(
                    upstream,
                    max = self.limits.max_sessions,
                    "a call waited its whole timeout for a pooled upstream session"
                );
                return Err(busy());
            }
        };
        // Another call of the same host may have taken a session while this one waited.
        if let Some(shared) = self.join(capabilities, sharer) {
            return Ok(shared);
        }
        let permit = match self.take_idle(capabilities, permit, true, sharer) {
            Ok(link) => return Ok(link),
            Err(permit) => permit,
        };
        // Counted as opening until this is done, however it ends (a caller that goes away
        // drops this future in the middle).
        let _opening = Opening(self, sharer);
        let link = open().await.map_err(LinkError::Connect)?;
        tracing::info!(upstream, "pooled upstream session opened");
        self.sweep_idle();
        self.opened(capabilities.clone(), link, permit, sharer)
            .ok_or_else(shutting_down)
    }

    /// With `permit` held: lends the most recently used idle session for `capabilities`;
    /// otherwise gives the permit back, having made room for the caller to open one more
    /// if it will (`open`: closing the longest idle session if the pool is full).
    fn take_idle(
        self: &Arc<Self>,
        capabilities: &ClientCapabilities,
        permit: OwnedSemaphorePermit,
        open: bool,
        sharer: Sharer,
    ) -> Result<Link, OwnedSemaphorePermit> {
        let mut gone = Vec::new();
        let result = {
            let mut state = self.state.lock();
            // Sessions their upstream ended are dropped from the pool as they are found.
            state.sessions.retain(|s| {
                let dead = s.idle_since.is_some() && s.link.client.close_reason().is_some();
                if dead {
                    self.restarts.fetch_add(1, Ordering::Relaxed);
                }
                !dead
            });
            let idle = state
                .sessions
                .iter_mut()
                .filter(|s| s.idle_since.is_some() && s.capabilities == *capabilities)
                .max_by_key(|s| s.idle_since);
            match idle {
                Some(s) => {
                    s.idle_since = None;
                    s.lent = Lent::first(sharer, permit);
                    Ok(self.lend(s))
                }
                None if !open => Err(permit),
                None => {
                    if state.sessions.len() + state.opening >= self.limits.max_sessions {
                        let oldest = state
                            .sessions
                            .iter()
                            .enumerate()
                            .filter_map(|(k, s)| s.idle_since.map(|t| (t, k)))
                            .min();
                        if let Some((_, k)) = oldest {
                            gone.push(state.sessions.swap_remove(k).link);
                        }
                    }
                    state.opening += 1;
                    state.opening_for.extend(sharer);
                    Err(permit)
                }
            }
        };
        close_later(gone);
        result
    }

    /// A call's link to `s`, which counts the call already.
    fn lend(self: &Arc<Self>, s: &Session) -> Link {
        Link {
            client: s.link.client.clone(),
            calls: s.link.calls.clone(),
            lease: Some(Arc::new(Lease {
                pool: Arc::downgrade(self),
                id: s.id,
                answered: AtomicBool::new(false),
            })),
        }
    }

    /// A session one caller opened: in the pool, and lent to that caller at once.
    fn opened(
        self: &Arc<Self>,
        capabilities: ClientCapabilities,
        link: Link,
        permit: OwnedSemaphorePermit,
        sharer: Sharer,
    ) -> Option<Link> {
        let mut state = self.state.lock();
        if self.closed.load(Ordering::SeqCst) {
            drop(state);
            close_later(vec![link]);
            return None;
        }
        let s = Session {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            capabilities,
            link,
            idle_since: None,
            lent: Lent::first(sharer, permit),
        };
        let lent = self.lend(&s);
        state.sessions.push(s);
        Some(lent)
    }

    /// A lease ended. When it was its session's last call, the session is idle again, or
    /// closed when a call on it was not answered, the upstream was asking when one ended,
    /// its upstream ended it, or the pool is closing.
    fn give_back(&self, id: u64, answered: bool) {
        // The permit is released after the session is back: a caller it wakes finds it.
        let (gone, _permit) = {
            let mut state = self.state.lock();
            let Some(k) = state.sessions.iter().position(|s| s.id == id) else {
                return;
            };
            let s = &mut state.sessions[k];
            let asking = s.link.client.requests_being_served() > 0;
            s.lent.spoilt |= !answered || asking;
            s.lent.calls = s.lent.calls.saturating_sub(1);
            if s.lent.calls > 0 {
                return;
            }
            let ended = s.link.client.close_reason().is_some();
            let lent = std::mem::take(&mut s.lent);
            if !lent.spoilt && !ended && !self.closed.load(Ordering::SeqCst) {
                s.idle_since = Some(Instant::now());
                return;
            }
            if ended {
                self.restarts.fetch_add(1, Ordering::Relaxed);
            } else if lent.spoilt {
                tracing::debug!(
                    answered,
                    asking,
                    "a pooled upstream session whose call may still run there is closed"
                );
            }
            (state.sessions.swap_remove(k).link, lent.permit)
        };
        close_later(vec![gone]);
    }

    /// Starts (once) the task that closes sessions idle longer than the pool keeps them.
    fn sweep_idle(self: &Arc<Self>) {
        if self.sweeping.swap(true, Ordering::SeqCst) {
            return;
        }
        let pool = Arc::downgrade(self);
        let idle = self.limits.idle_timeout;
        let every = (idle / 4).max(Duration::from_millis(50));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(pool) = pool.upgrade() else { return };
                if pool.closed.load(Ordering::SeqCst) {
                    return;
                }
                let gone: Vec<Link> = {
                    let mut state = pool.state.lock();
                    let (stale, keep) = std::mem::take(&mut state.sessions)
                        .into_iter()
                        .partition(|s| s.idle_since.is_some_and(|t| t.elapsed() >= idle));
                    state.sessions = keep;
                    stale.into_iter().map(|s: Session| s.link).collect()
                };
                if !gone.is_empty() {
                    tracing::info!(
                        sessions = gone.len(),
                        "idle pooled upstream sessions closed"
                    );
                }
                close_later(gone);
            }
        });
    }

    /// Closes every session, lent or idle, and opens none after.
    pub(crate) async fn close_all(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.permits.close();
        let links: Vec<Link> = self
            .state
            .lock()
            .sessions
            .drain(..)
            .map(|s| s.link)
            .collect();
        super::close_at_once(links).await;
    }
}

/// A caller waiting for a permit, counted in [`SessionPool::queued`] until this drops.
struct Queued<'a>(&'a SessionPool);

impl<'a> Queued<'a> {
    fn new(pool: &'a SessionPool) -> Self {
        pool.queued.fetch_add(1, Ordering::SeqCst);
        Queued(pool)
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.queued.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A session being opened, counted in [`State::opening`] (and for its host in
/// [`State::opening_for`]) until this drops.
struct Opening<'a>(&'a SessionPool, Sharer);

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        {
            let mut state = self.0.state.lock();
            state.opening = state.opening.saturating_sub(1);
            if let Some(k) = self
                .1
                .and_then(|h| state.opening_for.iter().position(|x| *x == h))
            {
                state.opening_for.swap_remove(k);
            }
        }
        if self.1.is_some() {
            self.0.opened_for.notify_waiters();
        }
    }
}

/// Whether `r` is the upstream's answer to a call (a result, an error, or one it could not
/// write): nothing of the call runs on upstream after it.
pub(crate) fn answered<T>(r: &Result<T, mcp_client::ClientError>) -> bool {
    use mcp_client::ClientError as E;
    matches!(
        r,
        Ok(_) | Err(E::Server(_) | E::BadAnswer(_) | E::InvalidResult { .. })
    )
}

/// Closes `links` in the background (a lease ends in synchronous code).
fn close_later(links: Vec<Link>) {
    if links.is_empty() {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        for l in links {
            l.client.close().await;
        }
    });
}
