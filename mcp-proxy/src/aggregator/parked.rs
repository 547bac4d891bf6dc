//! Calls parked for a host's answers ([`Parked`]): an upstream asked the host something
//! during a call, the host was handed the questions under a `requestState`, and the call
//! waits here until the host's retry brings that state back, or until it expires.
//!
//! The aggregators a reload makes share one table, so a retry that arrives after a
//! reload resumes the call it answers.
//!
//! A call waits under a slot number, which the host never sees as such: it is sealed into
//! the `requestState` (`request_state.rs`). Numbers start at a random place in each
//! process, so a state sealed before a restart with the same keys names no call after it.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

/// What waits, by slot (see the module).
pub(crate) struct Parked<T> {
    waiting: Mutex<HashMap<u64, T>>,
    next: AtomicU64,
}

impl<T> Default for Parked<T> {
    fn default() -> Self {
        Parked {
            waiting: Mutex::new(HashMap::new()),
            next: AtomicU64::new(std::collections::hash_map::RandomState::new().hash_one(0u8)),
        }
    }
}

impl<T: Send + 'static> Parked<T> {
    /// Parks `item` in a fresh slot; after `wait` unresumed, it is taken out and given to
    /// `expired` (which cancels what it was doing).
    pub(crate) fn park(
        self: &Arc<Self>,
        item: T,
        wait: Duration,
        expired: impl FnOnce(T) + Send + 'static,
    ) -> u64 {
        let slot = self.next.fetch_add(1, Ordering::Relaxed);
        self.waiting.lock().insert(slot, item);
        let table = Arc::downgrade(self);
        let key = slot;
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            let item = table.upgrade().and_then(|t| t.waiting.lock().remove(&key));
            if let Some(item) = item {
                expired(item);
            }
        });
        slot
    }

    /// Takes what is parked in `slot`: once, and only before it expires.
    #[cfg(test)]
    pub(crate) fn take(&self, slot: u64) -> Option<T> {
        self.take_if(slot, |_| true)
    }

    /// [`Parked::take`], only if `fits` what is parked: what does not fit stays for the
    /// request it was parked for.
    pub(crate) fn take_if(&self, slot: u64, fits: impl FnOnce(&T) -> bool) -> Option<T> {
        let mut waiting = self.waiting.lock();
        let item = waiting.get(&slot)?;
        if !fits(item) {
            return None;
        }
        waiting.remove(&slot)
    }

    /// How many wait now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.waiting.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_parked_item_is_taken_once_from_its_own_slot() {
        let parked = Arc::new(Parked::default());
        let a = parked.park("a", Duration::from_secs(60), |_| {});
        let b = parked.park("b", Duration::from_secs(60), |_| {});
        assert_ne!(a, b);
        assert_eq!(parked.take(b.wrapping_add(1)), None);
        assert_eq!(parked.take(b), Some("b"));
        assert_eq!(parked.take(b), None, "a slot resumes one call, once");
        assert_eq!(parked.len(), 1);
        assert_eq!(parked.take_if(a, |item| *item == "b"), None);
        assert_eq!(parked.len(), 1, "what does not fit stays parked");
        assert_eq!(parked.take_if(a, |item| *item == "a"), Some("a"));
        assert_eq!(parked.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn an_item_nobody_resumes_expires_and_is_handed_over() {
        let parked = Arc::new(Parked::default());
        let (tx, mut expired) = tokio::sync::mpsc::unbounded_channel();
        let state = parked.park(7, Duration::from_secs(30), move |n| {
            let _ = tx.send(n);
        });
        tokio::time::advance(Duration::from_secs(29)).await;
        tokio::task::yield_now().await;
        assert!(expired.try_recv().is_err(), "not before its time");
        assert_eq!(parked.len(), 1);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(expired.recv().await, Some(7));
        assert_eq!(parked.take(state), None, "an expired state resumes nothing");
    }

    #[tokio::test(start_paused = true)]
    async fn a_resumed_item_does_not_expire() {
        let parked = Arc::new(Parked::default());
        let (tx, mut expired) = tokio::sync::mpsc::unbounded_channel::<u8>();
        let state = parked.park(1, Duration::from_secs(5), move |n| {
            let _ = tx.send(n);
        });
        assert_eq!(parked.take(state), Some(1));
        tokio::time::advance(Duration::from_secs(10)).await;
        // The timer's task has ended: the sender it held is dropped, nothing sent.
        assert_eq!(expired.recv().await, None);
    }
}
