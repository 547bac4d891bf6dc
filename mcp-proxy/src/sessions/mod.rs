//! Upstream sessions for hosts: how hosts share a legacy upstream.
//!
//! Legacy JSON-RPC cannot say which call an upstream's request or log line belongs to;
//! the protocol's own answer is one session per client. Two ways keep each host's traffic
//! its own:
//!
//! - [`SessionMode::Pooled`] (the default): a bounded pool of upstream sessions
//!   (`pool::SessionPool`), each carrying **one call at a time**, so whatever the
//!   upstream asks or logs during a call belongs to that call's host; a host that can be
//!   asked nothing (it declared none of sampling, elicitation, roots) has all its calls in
//!   flight share one session, whose upstream has nobody to ask. A session declares
//!   exactly the capabilities of the hosts it serves (hosts are pooled by what they
//!   declared). A host that makes the upstream keep state for it across calls (a resource
//!   subscription, a task) gets a session of its own from then on, as in `PerHost`.
//! - [`SessionMode::PerHost`]: each host session ([`mcp_server::HostSession`]: a stdio
//!   connection, a legacy HTTP session) has an upstream session to itself
//!   (`host::HostLinks`), opened at its first request there with exactly that host's
//!   capabilities, capped, and closed when the host goes or after it has been idle: for an
//!   upstream that keeps per-client state a pool would mix.
//!
//! In both, the first host to arrive whose capabilities are those the connection opened at
//! start declared ([`start_capabilities`]) takes that connection (which lists the
//! catalog), so a gateway serving one such host, as on stdio, runs no second copy of each
//! upstream. That connection is never handed to another host after it goes: what the host
//! left in the upstream's session stays its own. A 2026-07-28 upstream carries everything
//! per request and is always shared; so is every upstream for a lone 2026-07-28 HTTP
//! request, which has no session.

pub(crate) mod host;
pub(crate) mod pool;
pub(crate) mod principal;

use std::sync::Arc;
use std::time::Duration;

use mcp_client::Client;
use mcp_types::protocol::{ClientCapabilities, ListChangedCapability};
use serde_json::Map;

use crate::upstream_questions::Calls;

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
/// declared the capability. The first host whose [`bridged_capabilities`] are exactly
/// these takes that connection; any other host is served on sessions that declare what it
/// declared, so the upstream is never told a host can do what it cannot.
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
    /// Each host session gets an upstream session of its own: for an upstream that keeps
    /// state per client across calls.
    PerHost(PerHostLimits),
    /// A bounded pool of sessions, each carrying one call at a time, or the calls of one
    /// host that can be asked nothing (the default); a host that makes the upstream keep
    /// state for it gets a session of its own.
    Pooled(PoolLimits),
}

impl Default for SessionMode {
    /// Pooled: a legacy upstream that asks questions or logs must not leak between hosts,
    /// and many hosts must not cost one upstream session (a process, for stdio) each.
    fn default() -> Self {
        SessionMode::Pooled(PoolLimits::default())
    }
}

/// Bounds on the upstream sessions opened for hosts of their own.
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

/// Bounds of [`SessionMode::Pooled`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolLimits {
    /// Most pooled sessions open at once on this upstream. A call finding them all busy
    /// waits for one (within its call timeout); one finding only sessions for hosts that
    /// declared other capabilities closes the longest idle of them to open its own.
    pub max_sessions: usize,
    /// A pooled session closes after this long without a call.
    pub idle_timeout: Duration,
    /// The sessions of hosts that keep state upstream (a subscription, a task).
    pub hosts: PerHostLimits,
}

impl Default for PoolLimits {
    fn default() -> Self {
        PoolLimits {
            max_sessions: 8,
            idle_timeout: Duration::from_secs(600),
            hosts: PerHostLimits::default(),
        }
    }
}

impl PoolLimits {
    /// A pool of at most `max_sessions` sessions, each closed after `idle_timeout` without
    /// a call; hosts' own sessions as [`PerHostLimits::default`].
    pub fn new(max_sessions: usize, idle_timeout: Duration) -> Self {
        PoolLimits {
            max_sessions,
            idle_timeout,
            hosts: PerHostLimits::default(),
        }
    }

    /// Sets [`PoolLimits::hosts`].
    pub fn hosts(mut self, hosts: PerHostLimits) -> Self {
        self.hosts = hosts;
        self
    }
}

/// One connection to an upstream, and the host calls in flight on it (for routing what
/// the upstream sends during them).
#[derive(Clone)]
pub(crate) struct Link {
    pub(crate) client: Client,
    pub(crate) calls: Arc<Calls>,
    /// The pooled session's lease, for a call on one: the session goes back to the pool
    /// when the last holder lets go.
    pub(crate) lease: Option<Arc<pool::Lease>>,
}

/// Why a host's request got no upstream session.
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
    /// Every pooled session stayed busy for as long as the call may take.
    #[error("all {max} sessions of upstream `{upstream}` stayed busy; try again later")]
    Busy {
        /// The upstream's key.
        upstream: String,
        /// The pool's size.
        max: usize,
    },
    /// Connecting failed.
    #[error("{0}")]
    Connect(crate::upstream_error::UpstreamError),
}

/// Closes `links` all at once (a slow upstream does not hold the others' turn), and
/// returns when every one is closed.
pub(crate) async fn close_at_once(links: Vec<Link>) {
    let mut closing = tokio::task::JoinSet::new();
    for l in links {
        closing.spawn(async move { l.client.close().await });
    }
    while closing.join_next().await.is_some() {}
}

/// Why a host gets no session once the gateway is shutting down.
pub(crate) const SHUTTING_DOWN: &str = "the gateway is shutting down";

/// Why no session is opened once the gateway stops.
pub(crate) fn shutting_down() -> LinkError {
    LinkError::Connect(crate::upstream_error::UpstreamError::Unavailable(
        SHUTTING_DOWN.into(),
    ))
}

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
