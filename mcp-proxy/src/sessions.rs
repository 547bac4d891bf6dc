//! Upstream sessions per host: how hosts share a legacy upstream.
//!
//! Legacy JSON-RPC cannot say which call an upstream's request or log line belongs to;
//! the protocol's own answer is one session per client. In [`SessionMode::PerHost`] each
//! host session ([`mcp_server::HostSession`]: a stdio connection, a legacy HTTP session)
//! has an upstream session to itself. The first host to arrive whose capabilities are
//! those the connection opened at start declared ([`start_capabilities`]) takes that
//! connection (which lists the catalog), so a gateway serving one such host, as on stdio,
//! runs no second copy of each upstream; every other host gets a session of its own
//! (a process for a stdio upstream, a new `Mcp-Session-Id` for an HTTP one), opened at its
//! first request there with exactly that host's capabilities, capped, and closed when the
//! host goes or after it has been idle. The first host's connection is never handed to
//! another host after it goes: what it left in the upstream's session stays its own. A 2026-07-28 upstream carries everything per request and is always
//! shared; so is every upstream for a lone 2026-07-28 HTTP request, which has no session.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use mcp_client::Client;
use mcp_server::{HostSession, HostSessionId};
use mcp_types::protocol::{ClientCapabilities, ListChangedCapability};
use serde_json::Map;
use tokio::sync::OnceCell;

use crate::bridge::Calls;

/// What a legacy upstream hears of a host's capabilities at the handshake of that host's
/// session: the requests the gateway relays to a host (sampling, elicitation, roots), as
/// the host declared them. `roots.listChanged` is left out: the gateway does not pass a
/// host's root changes on.
pub fn bridged_capabilities(host: &ClientCapabilities) -> ClientCapabilities {
    ClientCapabilities {
        sampling: host.sampling.clone(),
        elicitation: host.elicitation.clone(),
        roots: host
            .roots
            .as_ref()
            .map(|_| ListChangedCapability::default()),
        ..Default::default()
    }
}

/// What the connection to a legacy upstream opened at start, before any host, declares:
/// everything the gateway can relay. A request on it reaches a host only if that host
/// declared the capability. In [`SessionMode::PerHost`] the first host whose
/// [`bridged_capabilities`] are exactly these takes that connection; any other host has a
/// session of its own, so the upstream is never told a host can do what it cannot.
pub fn start_capabilities() -> ClientCapabilities {
    ClientCapabilities {
        sampling: Some(Map::new()),
        elicitation: Some(Map::new()),
        roots: Some(ListChangedCapability::default()),
        ..Default::default()
    }
}

/// Whether `host`'s [`bridged_capabilities`] are exactly [`start_capabilities`], read
/// without building either (a relayed call asks).
pub fn fits_start(host: &ClientCapabilities) -> bool {
    let empty = |m: &Option<Map<String, serde_json::Value>>| m.as_ref().is_some_and(Map::is_empty);
    empty(&host.sampling) && empty(&host.elicitation) && host.roots.is_some()
}

/// How hosts share an upstream.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionMode {
    /// One connection for every host. A legacy upstream's request or log line reaches a
    /// host only when it can be tied to exactly one call (the task it names, or the only
    /// call in flight); any other request is refused upstream and any other log line
    /// stays in the gateway's log. Right for stateless upstreams that never ask or log.
    Shared,
    /// Each host session gets an upstream session of its own (the default).
    PerHost(PerHostLimits),
}

impl Default for SessionMode {
    /// Per host: a legacy upstream that asks questions or logs must not leak between hosts,
    /// and only its own session tells it exactly what its host can do.
    fn default() -> Self {
        SessionMode::PerHost(PerHostLimits::default())
    }
}

/// Bounds on the upstream sessions opened for hosts.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PerHostLimits {
    /// Most host sessions open at once on this upstream besides the first host's; a host
    /// beyond it is refused with an error that says so.
    pub max_sessions: usize,
    /// A host's upstream session closes after this long idle (checked again this long after
    /// a call that was still in flight, so within twice it).
    pub idle_timeout: Duration,
}

impl Default for PerHostLimits {
    fn default() -> Self {
        PerHostLimits {
            max_sessions: 64,
            idle_timeout: Duration::from_secs(600),
        }
    }
}

impl PerHostLimits {
    /// Limits of `max_sessions` sessions, each closed after `idle_timeout` idle.
    pub fn new(max_sessions: usize, idle_timeout: Duration) -> Self {
        PerHostLimits {
            max_sessions,
            idle_timeout,
        }
    }
}

/// One connection to an upstream, and the host calls in flight on it (for routing what
/// the upstream sends during them).
#[derive(Clone)]
pub(crate) struct Link {
    pub(crate) client: Client,
    pub(crate) calls: Arc<Calls>,
}

/// Why a host got no session of its own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LinkError {
    /// The cap is reached.
    #[error(
        "upstream `{upstream}` already holds its limit of {max} host sessions; try again later"
    )]
    Full {
        /// The upstream's key.
        upstream: String,
        /// The cap.
        max: usize,
    },
    /// Connecting failed.
    #[error("{0}")]
    Connect(String),
}

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
        let mut entries = self.entries.lock().ok()?;
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
        Fut: std::future::Future<Output = Result<Link, String>>,
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
                Err(LinkError::Connect(SHUTTING_DOWN.into()))
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
        let mut entries = self
            .entries
            .lock()
            .map_err(|_| LinkError::Connect("host sessions unavailable".into()))?;
        if self.closed.load(Ordering::SeqCst) {
            return Err(LinkError::Connect(SHUTTING_DOWN.into()));
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
        let mut entries = self.entries.lock().ok()?;
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
        let entries = self.entries.lock().ok()?;
        let e = entries.get(&host).filter(|e| Arc::ptr_eq(&e.link, cell))?;
        Some(e.last_used + idle)
    }

    fn is_idle(&self, host: HostSessionId, cell: &Arc<OnceCell<Link>>, idle: Duration) -> bool {
        let Ok(entries) = self.entries.lock() else {
            return false;
        };
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
        self.entries.lock().map(|e| e.len()).unwrap_or(0)
    }

    /// How many host calls are in flight on the hosts' sessions.
    pub(crate) fn in_flight(&self) -> usize {
        self.entries
            .lock()
            .map(|e| {
                e.values()
                    .filter_map(|e| e.link.get())
                    .map(|l| l.calls.in_flight())
                    .sum()
            })
            .unwrap_or(0)
    }

    /// Closes every host session, all at once, and opens none after.
    pub(crate) async fn close_all(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let links: Vec<Link> = self
            .entries
            .lock()
            .map(|mut e| {
                e.drain()
                    .filter_map(|(_, e)| e.link.get().cloned())
                    .collect()
            })
            .unwrap_or_default();
        let mut closing = tokio::task::JoinSet::new();
        for l in links {
            closing.spawn(async move { l.client.close().await });
        }
        while closing.join_next().await.is_some() {}
    }
}

/// Why a host gets no session once the gateway is shutting down.
const SHUTTING_DOWN: &str = "the gateway is shutting down";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_start_is_bridged_equal_to_start() {
        let caps = |v: serde_json::Value| -> ClientCapabilities {
            serde_json::from_value(v).expect("capabilities")
        };
        for host in [
            caps(serde_json::json!({})),
            caps(serde_json::json!({"sampling": {}, "elicitation": {}, "roots": {}})),
            caps(
                serde_json::json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}}),
            ),
            caps(serde_json::json!({"sampling": {}, "elicitation": {"form": {}}, "roots": {}})),
            caps(serde_json::json!({"sampling": {}, "roots": {}})),
            caps(
                serde_json::json!({"sampling": {}, "elicitation": {}, "roots": {}, "experimental": {"x": {}}}),
            ),
        ] {
            assert_eq!(
                fits_start(&host),
                bridged_capabilities(&host) == start_capabilities(),
                "{host:?}"
            );
        }
        let all = caps(serde_json::json!({"sampling": {}, "elicitation": {}, "roots": {}}));
        assert!(fits_start(&all));
    }
}
