//! What a server's connections are doing, for metrics ([`Server::stats`]): the hosts
//! connected, by the revision they speak, and the answers refused because they could not
//! be said in the host's revision.
//!
//! [`Server::stats`]: crate::Server::stats

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use mcp_types::Revision;

/// Counts shared by every connection of one [`crate::Server`].
#[derive(Debug, Default)]
pub struct ServerStats {
    hosts: [AtomicUsize; Revision::ALL.len()],
    refusals: AtomicU64,
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
