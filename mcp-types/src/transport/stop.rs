//! A one-shot stop signal for a transport's reader: `close` sets it, and a `recv` waiting
//! for the stream ends at once.
//!
//! A reader waits for its stream on every message. `tokio::sync::Notify` would do, but a
//! `Notified` that waits enters the notifier's waiter list under a lock and leaves it under
//! the lock again when the read completes first, which is every time: on a relay that is a
//! few hundred instructions per message for a signal that comes once. Here the waiting
//! reader leaves its waker in a slot, and leaves it there for the next read (the same
//! task's waker is not replaced).

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};

use parking_lot::Mutex;

/// Set once; wakes whoever waits in [`Stop::until`].
#[derive(Debug, Default)]
pub(super) struct Stop {
    set: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Stop {
    /// Sets the signal and wakes the reader waiting for it, if any.
    pub(super) fn set(&self) {
        self.set.store(true, Ordering::SeqCst);
        let waker = self.waker.lock().take();
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// What `work` gives, or `None` once the signal is set (before it or while it waits).
    pub(super) async fn until<T>(&self, work: impl Future<Output = T>) -> Option<T> {
        let mut work = pin!(work);
        std::future::poll_fn(|cx| {
            if self.set.load(Ordering::SeqCst) {
                return Poll::Ready(None);
            }
            if let Poll::Ready(out) = work.as_mut().poll(cx) {
                return Poll::Ready(Some(out));
            }
            self.wait(cx)
        })
        .await
    }

    /// Leaves `cx`'s waker for [`Stop::set`]; ready if the signal came meanwhile.
    fn wait<T>(&self, cx: &Context<'_>) -> Poll<Option<T>> {
        {
            let mut w = self.waker.lock();
            match w.as_ref() {
                Some(old) if old.will_wake(cx.waker()) => {}
                _ => *w = Some(cx.waker().clone()),
            }
        }
        // Set before the waker was left: `set` may have found the slot empty.
        if self.set.load(Ordering::SeqCst) {
            return Poll::Ready(None);
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    // Paused time: the timeout below fires only once the reader is idle, waiting.
    #[tokio::test(start_paused = true)]
    async fn a_waiting_reader_ends_when_the_signal_is_set() {
        let stop = Arc::new(Stop::default());
        let mut waiting = {
            let stop = stop.clone();
            tokio::spawn(async move { stop.until(std::future::pending::<()>()).await })
        };
        let early = tokio::time::timeout(Duration::from_millis(20), &mut waiting).await;
        assert!(early.is_err(), "ended before the signal: {early:?}");
        stop.set();
        let out = tokio::time::timeout(Duration::from_secs(5), waiting).await;
        assert_eq!(out.ok().and_then(Result::ok), Some(None));
    }

    #[tokio::test]
    async fn work_that_is_ready_is_given_and_a_set_signal_stops_the_next() {
        let stop = Stop::default();
        assert_eq!(stop.until(async { 7 }).await, Some(7));
        stop.set();
        assert_eq!(stop.until(async { 8 }).await, None);
    }
}
