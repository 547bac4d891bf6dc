//! One HTTP exchange as a transport: what the session sends for a request (its answer,
//! and the notifications before it) waits here until the HTTP response takes it. No
//! task and no channel between them: the session's send puts a frame in the queue, the
//! response (its first message, or its SSE body) takes it out.

use std::collections::VecDeque;
use std::task::{Context, Poll, Waker};

use async_trait::async_trait;
use mcp_types::transport::{CloseReason, Closed, Incoming, Transport, TrySendError};
use mcp_types::{Frame, Message};
use parking_lot::Mutex;
use tokio::sync::Notify;

#[derive(Default)]
struct State {
    queue: VecDeque<Message>,
    waker: Option<Waker>,
    closed: Option<CloseReason>,
}

/// What the session sends within one HTTP exchange.
#[derive(Default)]
pub(super) struct Exchange {
    state: Mutex<State>,
    shut: Notify,
}

impl Exchange {
    fn push(&self, frame: Frame) -> Result<(), Closed> {
        let waker = {
            let mut s = self.state.lock();
            if let Some(r) = &s.closed {
                return Err(Closed(r.clone()));
            }
            s.queue.extend(frame.into_messages());
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
        Ok(())
    }

    /// The next message sent, when there is one; `None` once closed and drained.
    pub(super) fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Option<Message>> {
        let mut s = self.state.lock();
        if let Some(m) = s.queue.pop_front() {
            return Poll::Ready(Some(m));
        }
        if s.closed.is_some() {
            return Poll::Ready(None);
        }
        s.waker = Some(cx.waker().clone());
        Poll::Pending
    }

    /// Waits for the next message sent.
    pub(super) async fn next(&self) -> Option<Message> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }

    fn shut_down(&self, reason: CloseReason) {
        let waker = {
            let mut s = self.state.lock();
            s.closed.get_or_insert(reason);
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
        self.shut.notify_waiters();
    }
}

#[async_trait]
impl Transport for Exchange {
    async fn send(&self, frame: Frame) -> Result<(), Closed> {
        self.push(frame)
    }

    fn try_send(&self, frame: Frame) -> Result<(), TrySendError> {
        self.push(frame).map_err(TrySendError::Closed)
    }

    /// Nothing arrives on an exchange this way (the HTTP layer delivers requests): it
    /// waits until the exchange closes.
    async fn recv(&self) -> Result<Incoming, Closed> {
        until_closed(&self.shut, || self.close_reason()).await
    }

    async fn close(&self) {
        self.shut_down(CloseReason::Closed);
    }

    fn close_reason(&self) -> Option<CloseReason> {
        self.state.lock().closed.clone()
    }
}

/// `recv` for a transport nothing arrives on (the HTTP layer delivers what the peer sends):
/// it waits until `reason` says the transport closed, woken by `shut` on each change.
pub(super) async fn until_closed(
    shut: &Notify,
    reason: impl Fn() -> Option<CloseReason>,
) -> Result<Incoming, Closed> {
    loop {
        // Armed before the check, so a close between the two still wakes us.
        let notified = shut.notified();
        if let Some(r) = reason() {
            return Err(Closed(r));
        }
        notified.await;
    }
}

impl Exchange {
    /// Closes the exchange from this side without waiting.
    pub(super) fn close_now(&self, reason: CloseReason) {
        self.shut_down(reason);
    }
}
