//! What a server's connections are doing, for metrics ([`Server::stats`]): the hosts
//! connected, by the revision they speak, the answers refused because they could not
//! be said in the host's revision, and the legacy HTTP sessions ended to make room or
//! refused for want of it.
//!
//! [`Server::stats`]: crate::Server::stats

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use mcp_types::Revision;

/// Counts shared by every connection of one [`crate::Server`].
#[derive(Debug, Default)]
pub struct ServerStats {
    hosts: [AtomicUsize; Revision::ALL.len()],
    refusals: AtomicU64,
    /// By [`SessionPressure`]: idle sessions ended for a new one, `initialize`s refused.
    evicted: [AtomicU64; 2],
    refused: [AtomicU64; 2],
    forwarded: AtomicU64,
}

/// What kept a legacy HTTP session's `initialize` from simply being added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionPressure {
    /// The session table was full (`HttpOptions::max_sessions`).
    TableFull,
    /// The client held its quota (`HttpOptions::max_sessions_per_client`).
    ClientQuota,
}

/// Legacy HTTP sessions ended to make room for new ones, and `initialize`s refused for
/// want of room, since the server started (see `mcp_server::http::HttpOptions`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionCounts {
    /// Idle sessions (no request running, no stream open) ended, oldest first, because
    /// the table was full.
    pub evicted_table_full: u64,
    /// A client's own idle sessions ended, oldest first, because it held its quota.
    pub evicted_client_quota: u64,
    /// `initialize`s refused (`503`) because every session was in use.
    pub refused_table_full: u64,
    /// `initialize`s refused (`429`) because every session of that client (principal,
    /// or address without authorization) was in use and it held its quota.
    pub refused_client_quota: u64,
}

/// How many hosts speak one revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostCount {
    /// The revision.
    pub revision: Revision,
    /// Hosts connected speaking it: stdio connections and legacy HTTP sessions (a lone
    /// 2026-07-28 HTTP request is no connection), counted from their first request.
    pub hosts: usize,
}

impl ServerStats {
    /// The hosts connected now, for every revision.
    pub fn hosts(&self) -> Vec<HostCount> {
        Revision::ALL
            .iter()
            .zip(&self.hosts)
            .map(|(r, n)| HostCount {
                revision: *r,
                hosts: n.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// Results and requests not sent as they were because the host's revision cannot
    /// express them (the host got an error instead), since the server started.
    pub fn translation_refusals(&self) -> u64 {
        self.refusals.load(Ordering::Relaxed)
    }

    /// Legacy HTTP sessions evicted and refused so far.
    pub fn sessions(&self) -> SessionCounts {
        let get = |a: &[AtomicU64; 2], p: SessionPressure| a[p as usize].load(Ordering::Relaxed);
        SessionCounts {
            evicted_table_full: get(&self.evicted, SessionPressure::TableFull),
            evicted_client_quota: get(&self.evicted, SessionPressure::ClientQuota),
            refused_table_full: get(&self.refused, SessionPressure::TableFull),
            refused_client_quota: get(&self.refused, SessionPressure::ClientQuota),
        }
    }

    /// Requests taken to the replica holding their state, over the internal hop (see
    /// `mcp_server::http::HttpOptions::peers`), since the server started.
    pub fn forwarded(&self) -> u64 {
        self.forwarded.load(Ordering::Relaxed)
    }

    pub(crate) fn forward_sent(&self) {
        self.forwarded.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn session_evicted(&self, why: SessionPressure) {
        self.evicted[why as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn session_refused(&self, why: SessionPressure) {
        self.refused[why as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn host_joined(&self, revision: Revision) {
        if let Some(n) = self.slot(revision) {
            n.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn host_left(&self, revision: Revision) {
        if let Some(n) = self.slot(revision) {
            n.fetch_sub(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn refused(&self) {
        self.refusals.fetch_add(1, Ordering::Relaxed);
    }

    fn slot(&self, revision: Revision) -> Option<&AtomicUsize> {
        let i = Revision::ALL.iter().position(|r| *r == revision)?;
        self.hosts.get(i)
    }
}
