//! Calls parked for a host's answers ([`Parked`]): an upstream asked the host something
//! during a call, the host was handed the questions under a `requestState`, and the call
//! waits here until the host's retry brings that state back, or until it expires.
//!
//! The aggregators a reload makes share one table, so a retry that arrives after a
//! reload resumes the call it answers.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::upstream_questions::new_state;

/// What waits, by the `requestState` handed to the host (see the module).
pub(crate) struct Parked<T> {
    waiting: Mutex<HashMap<String, T>>,
}

impl<T> Default for Parked<T> {
    fn default() -> Self {
        Parked {
            waiting: Mutex::new(HashMap::new()),
        }
    }
}

impl<T: Send + 'static> Parked<T> {
    /// Parks `item` under a fresh, unpredictable state; after `wait` unresumed, it is
    /// taken out and given to `expired` (which cancels what it was doing).
    pub(crate) fn park(
        self: &Arc<Self>,
        item: T,
        wait: Duration,
        expired: impl FnOnce(T) + Send + 'static,
    ) -> String {
        let state = new_state();
        self.waiting.lock().insert(state.clone(), item);
        let table = Arc::downgrade(self);
        let key = state.clone();
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            let item = table.upgrade().and_then(|t| t.waiting.lock().remove(&key));
            if let Some(item) = item {
                expired(item);
            }
        });
        state
    }

    /// Takes what is parked under `state`: once, and only before it expires.
    #[cfg(test)]
    pub(crate) fn take(&self, state: &str) -> Option<T> {
        self.take_if(state, |_| true)
    }

    /// [`Parked::take`], only if `fits` what is parked: what does not fit stays for the
    /// request it was parked for.
    pub(crate) fn take_if(&self, state: &str, fits: impl FnOnce(&T) -> bool) -> Option<T> {
        let mut waiting = self.waiting.lock();
        let item = waiting.get(state)?;
        if !fits(item) {
            return None;
        }
        waiting.remove(state)
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
    async fn a_parked_item_is_taken_once_under_its_own_state() {
        let parked = Arc::new(Parked::default());
        let a = parked.park("a", Duration::from_secs(60), |_| {});
        let b = parked.park("b", Duration::from_secs(60), |_| {});
        assert_ne!(a, b);
        assert!(a.starts_with(crate::upstream_questions::STATE_PREFIX));
        assert_eq!(parked.take("unknown"), None);
        assert_eq!(parked.take(&b), Some("b"));
        assert_eq!(parked.take(&b), None, "a state resumes one call, once");
        assert_eq!(parked.len(), 1);
        assert_eq!(parked.take_if(&a, |item| *item == "b"), None);
        assert_eq!(parked.len(), 1, "what does not fit stays parked");
        assert_eq!(parked.take_if(&a, |item| *item == "a"), Some("a"));
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
        assert_eq!(
            parked.take(&state),
            None,
            "an expired state resumes nothing"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_resumed_item_does_not_expire() {
        let parked = Arc::new(Parked::default());
        let (tx, mut expired) = tokio::sync::mpsc::unbounded_channel::<u8>();
        let state = parked.park(1, Duration::from_secs(5), move |n| {
            let _ = tx.send(n);
        });
        assert_eq!(parked.take(&state), Some(1));
        tokio::time::advance(Duration::from_secs(10)).await;
        // The timer's task has ended: the sender it held is dropped, nothing sent.
        assert_eq!(expired.recv().await, None);
    }
}
