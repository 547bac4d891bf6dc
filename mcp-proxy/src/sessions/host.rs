//! The upstream sessions of hosts that have one of their own ([`super::SessionMode::PerHost`],
//! or a pooled host that keeps state upstream): one per host session, opened at its first
//! request there, capped, and closed when the host goes or after it has been idle.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use mcp_server::{HostSession, HostSessionId};
use parking_lot::Mutex;
use tokio::sync::OnceCell;

use super::{shutting_down, Link, LinkError, PerHostLimits};

struct Entry {
    link: Arc<OnceCell<Link>>,
    last_used: Instant,
}

/// The upstream sessions of one upstream's hosts.
pub(crate) struct HostLinks {
    limits: PerHostLimits,
    entries: Mutex<HashMap<HostSessionId, Entry>>,
    /// The host that took the connection opened at start.
    first: OnceLock<HostSessionId>,
    /// Set by [`HostLinks::close_all`]: no session opens after it.
    closed: AtomicBool,
    /// Host sessions whose upstream ended them and that a new one replaced.
    restarts: AtomicU64,
}

impl HostLinks {
    pub(crate) fn new(limits: PerHostLimits) -> Self {
        HostLinks {
            limits,
            entries: Mutex::new(HashMap::new()),
            first: OnceLock::new(),
            closed: AtomicBool::new(false),
            restarts: AtomicU64::new(0),
        }
    }

    /// How many host sessions ended upstream (a crashed process) and were opened again.
    pub(crate) fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }

    /// Whether `host` is the first host, whose requests go on the connection opened at
    /// start: the first to ask whose capabilities are the ones that connection declared
    /// (`fits`) becomes it.
    pub(crate) fn is_first(&self, host: HostSessionId, fits: impl FnOnce() -> bool) -> bool {
        match self.first.get() {
            Some(first) => *first == host,
            None => fits() && *self.first.get_or_init(|| host) == host,
        }
    }

    /// The open session of `host`, if it has one now (no waiting).
    pub(crate) fn get(&self, host: HostSessionId) -> Option<Link> {
        let mut entries = self.entries.lock();
        let e = entries.get_mut(&host)?;
        let link = e.link.get().filter(|l| l.client.close_reason().is_none())?;
        e.last_used = Instant::now();
        Some(link.clone())
    }

    /// The session of `host`, opened with `open` if it has none (or its upstream went);
    /// hosts opening at once wait for one another's open, never for the cap.
    pub(crate) async fn get_or_open<F, Fut>(
        self: &Arc<Self>,
        upstream: &str,
        host: &HostSession,
        open: F,
    ) -> Result<Link, LinkError>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Link, crate::upstream_error::UpstreamError>>,
    {
        let (cell, fresh) = self.cell(upstream, host.id())?;
        let link = cell
            .get_or_try_init(|| async {
                let link = open().await.map_err(LinkError::Connect)?;
                tracing::info!(upstream, host = %host.id(), "upstream session opened for a host");
                Ok::<_, LinkError>(link)
            })
            .await;
        match link {
            Ok(link) if self.closed.load(Ordering::SeqCst) => {
                // Opened while the gateway shut down: closed, not kept.
                self.forget(host.id(), &cell);
                link.client.close().await;
                Err(shutting_down())
            }
            Ok(link) => {
                if fresh {
                    self.watch(upstream.into(), host.clone(), cell.clone());
                }
                Ok(link.clone())
            }
            Err(e) => {
                self.forget(host.id(), &cell);
                Err(e)
            }
        }
    }

    /// The cell `host`'s session is (or will be) in, and whether it is new.
    fn cell(
        &self,
        upstream: &str,
        host: HostSessionId,
    ) -> Result<(Arc<OnceCell<Link>>, bool), LinkError> {
        let mut entries = self.entries.lock();
        if self.closed.load(Ordering::SeqCst) {
            return Err(shutting_down());
        }
        if let Some(e) = entries.get_mut(&host) {
            let gone = e
                .link
                .get()
                .is_some_and(|l| l.client.close_reason().is_some());
            if !gone {
                e.last_used = Instant::now();
                return Ok((e.link.clone(), false));
            }
            // Its upstream session ended (a crashed process): a new one takes its place.
            entries.remove(&host);
            self.restarts.fetch_add(1, Ordering::Relaxed);
        }
        if entries.len() >= self.limits.max_sessions {
            tracing::warn!(
                upstream,
                max = self.limits.max_sessions,
                "host refused: upstream host sessions at their limit"
            );
            return Err(LinkError::Full {
                upstream: upstream.into(),
                max: self.limits.max_sessions,
            });
        }
        let link = Arc::new(OnceCell::new());
        entries.insert(
            host,
            Entry {
                link: link.clone(),
                last_used: Instant::now(),
            },
        );
        Ok((link, true))
    }

    /// Removes `host`'s entry if it is still `cell`.
    fn forget(&self, host: HostSessionId, cell: &Arc<OnceCell<Link>>) -> Option<Link> {
        let mut entries = self.entries.lock();
        if entries
            .get(&host)
            .is_some_and(|e| Arc::ptr_eq(&e.link, cell))
        {
            return entries.remove(&host).and_then(|e| e.link.get().cloned());
        }
        None
    }

    /// Closes `host`'s session when the host goes, when it has been idle too long, or
    /// when its upstream ends it.
    fn watch(self: &Arc<Self>, upstream: String, host: HostSession, cell: Arc<OnceCell<Link>>) {
        let me = Arc::downgrade(self);
        let idle = self.limits.idle_timeout;
        tokio::spawn(async move {
            let why = loop {
                let Some(links) = me.upgrade() else { return };
                let wake = links.idle_deadline(host.id(), &cell, idle);
                drop(links);
                let Some(mut wake) = wake else {
                    break "replaced";
                };
                if wake <= Instant::now() {
                    // Busy past its idle time: look again once a call could have ended.
                    wake = Instant::now() + idle;
                }
                tokio::select! {
                    () = host.ended() => break "host gone",
                    () = tokio::time::sleep_until(wake.into()) => {}
                }
                let Some(links) = me.upgrade() else { return };
                if links.is_idle(host.id(), &cell, idle) {
                    break "idle";
                }
            };
            let Some(links) = me.upgrade() else { return };
            if let Some(link) = links.forget(host.id(), &cell) {
                tracing::info!(upstream, host = %host.id(), why, "upstream session for a host closed");
                link.client.close().await;
            }
        });
    }

    /// When `host`'s session may next be idle long enough to close; `None` once the entry
    /// is not `cell` any more.
    fn idle_deadline(
        &self,
        host: HostSessionId,
        cell: &Arc<OnceCell<Link>>,
        idle: Duration,
    ) -> Option<Instant> {
        let entries = self.entries.lock();
        let e = entries.get(&host).filter(|e| Arc::ptr_eq(&e.link, cell))?;
        Some(e.last_used + idle)
    }

    fn is_idle(&self, host: HostSessionId, cell: &Arc<OnceCell<Link>>, idle: Duration) -> bool {
        let entries = self.entries.lock();
        let Some(e) = entries.get(&host).filter(|e| Arc::ptr_eq(&e.link, cell)) else {
            return false;
        };
        // Calls in flight, or subscriptions held, keep it.
        let busy = e
            .link
            .get()
            .is_some_and(|l| l.calls.in_flight() > 0 || l.calls.is_held());
        let gone = e
            .link
            .get()
            .is_some_and(|l| l.client.close_reason().is_some());
        gone || (!busy && e.last_used.elapsed() >= idle)
    }

    /// How many host sessions are open (or opening).
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// How many host calls are in flight on the hosts' sessions.
    pub(crate) fn in_flight(&self) -> usize {
        self.entries
            .lock()
            .values()
            .filter_map(|e| e.link.get())
            .map(|l| l.calls.in_flight())
            .sum()
    }

    /// Closes every host session, all at once, and opens none after.
    pub(crate) async fn close_all(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let links: Vec<Link> = self
            .entries
            .lock()
            .drain()
            .filter_map(|(_, e)| e.link.get().cloned())
            .collect();
        super::close_at_once(links).await;
    }
}
