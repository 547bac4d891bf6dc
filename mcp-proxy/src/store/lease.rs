//! [`Lease`]: whether this replica's hold on what it keeps in the state store is current.
//! Each heartbeat that reaches the store renews it; a replica that could not beat for a
//! whole TTL (it was stopped, or cut off) may have been counted gone by the others, who
//! then take its sessions over, so what it holds must be confirmed again before it is
//! served: each such lapse starts a new generation.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

/// A replica's hold on its entries in the store, renewed by its heartbeats.
#[derive(Debug)]
pub struct Lease {
    ttl: Duration,
    renewed: Mutex<Option<Instant>>,
    generation: AtomicU64,
    unreachable: AtomicBool,
}

impl Lease {
    /// A lease lasting `ttl` from each renewal, never renewed yet.
    pub fn new(ttl: Duration) -> Self {
        Lease {
            ttl,
            renewed: Mutex::new(None),
            generation: AtomicU64::new(0),
            unreachable: AtomicBool::new(false),
        }
    }

    /// A heartbeat reached the store now. After a lapse, a new generation begins: `true`.
    pub fn renewed(&self) -> bool {
        let now = Instant::now();
        let mut renewed = self.renewed.lock();
        let lapsed = renewed.is_none_or(|at| now.duration_since(at) >= self.ttl);
        if lapsed {
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
        *renewed = Some(now);
        self.unreachable.store(false, Ordering::SeqCst);
        lapsed
    }

    /// A heartbeat could not reach the store.
    pub fn failed(&self) {
        self.unreachable.store(true, Ordering::SeqCst);
    }

    /// The generation now, if the lease is current (renewed within its TTL).
    pub fn current(&self) -> Option<u64> {
        let at = (*self.renewed.lock())?;
        (at.elapsed() < self.ttl).then(|| self.generation.load(Ordering::SeqCst))
    }

    /// Whether the last heartbeat failed to reach the store.
    pub fn unreachable(&self) -> bool {
        self.unreachable.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_lease_lapses_after_its_ttl_and_a_renewal_after_a_lapse_starts_a_generation() {
        let lease = Lease::new(Duration::from_secs(3));
        assert_eq!(lease.current(), None, "never renewed");
        assert!(lease.renewed(), "the first generation");
        let first = lease.current().expect("current");
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(!lease.renewed());
        assert_eq!(
            lease.current(),
            Some(first),
            "renewed in time: the same generation"
        );
        tokio::time::advance(Duration::from_secs(3)).await;
        assert_eq!(lease.current(), None, "lapsed");
        lease.failed();
        assert!(lease.unreachable());
        assert!(lease.renewed(), "renewed after a lapse");
        assert!(!lease.unreachable());
        assert_eq!(lease.current(), Some(first + 1), "a new generation");
        let _ = lease.renewed();
    }
}
