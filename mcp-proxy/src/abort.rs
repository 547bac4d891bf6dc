//! A task that lives as long as its owner.

/// Aborts a task when dropped (a detached `JoinHandle` would let it run on).
pub(crate) struct AbortOnDrop<T>(pub(crate) tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
