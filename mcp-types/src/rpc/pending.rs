//! Requests this side sent, waiting for their answers: awaited by a task (a oneshot
//! channel), or taken by a callback on the read loop when the answer arrives, with an
//! optional deadline swept by a timer task that runs only while callbacks wait.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::value::RawValue;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::RpcError;
use crate::transport::CloseReason;
use crate::{ErrorObject, RequestId};

/// What the callback of a request gets: its result, or why it has none.
pub type Answer = Result<Box<RawValue>, RpcError>;

/// A callback that takes a request's answer (see [`super::Peer::request_then`]).
pub type Then = Box<dyn FnOnce(Answer) + Send>;

/// A task's end of a wait: the answer, or why there is none.
pub(crate) type AnswerReceiver = oneshot::Receiver<Answer>;

/// How a request waits.
enum Waiter {
    /// A task awaits the answer.
    Task(oneshot::Sender<Answer>),
    /// A callback takes it; `deadline` keys it in the deadline index.
    Then {
        then: Then,
        deadline: Option<(Instant, u64, Duration)>,
    },
}

/// How often waiting callbacks are checked against their deadlines: timeouts are seconds
/// long, so a tenth of a second late is on time.
const SWEEP: Duration = Duration::from_millis(100);

/// A multiply-rotate hash for the ids this side picks itself (sequential integers): the
/// table never holds a key a peer chose, so there is nothing to flood and no need for
/// SipHash's cost on every request and answer.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn write_isize(&mut self, n: isize) {
        self.write_u64(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

#[derive(Default)]
struct Table {
    waiters: HashMap<RequestId, Waiter, BuildHasherDefault<IdHasher>>,
    /// Deadlines of callbacks, earliest first.
    deadlines: BTreeMap<(Instant, u64), RequestId>,
    next_seq: u64,
    sweeping: bool,
}

/// The table of requests waiting for answers.
#[derive(Default)]
pub(crate) struct Pending(Mutex<Table>);

/// A waiter taken out of the table, to be handed its answer outside the lock.
pub(crate) struct Taken(Waiter);

impl Taken {
    /// Hands `answer` to whoever waits.
    pub(crate) fn answer(self, answer: Result<Box<RawValue>, ErrorObject>) {
        self.settle(answer.map_err(RpcError::Error));
    }

    /// Tells whoever waits that no answer will come.
    pub(crate) fn fail(self, error: RpcError) {
        self.settle(Err(error));
    }

    fn settle(self, answer: Answer) {
        match self.0 {
            Waiter::Task(tx) => {
                let _ = tx.send(answer);
            }
            Waiter::Then { then, .. } => then(answer),
        }
    }
}

impl Pending {
    /// Registers a task waiting for `id`.
    pub(crate) fn wait(&self, id: RequestId) -> AnswerReceiver {
        let (tx, rx) = oneshot::channel();
        self.0.lock().waiters.insert(id, Waiter::Task(tx));
        rx
    }

    /// Registers a callback for `id`; true when a sweeper must be started for its deadline.
    pub(crate) fn then(&self, id: RequestId, then: Then, timeout: Option<Duration>) -> bool {
        let mut t = self.0.lock();
        let deadline = timeout.map(|d| {
            t.next_seq += 1;
            (Instant::now() + d, t.next_seq, d)
        });
        if let Some((at, seq, _)) = deadline {
            t.deadlines.insert((at, seq), id.clone());
        }
        t.waiters.insert(id, Waiter::Then { then, deadline });
        let start = deadline.is_some() && !t.sweeping;
        if start {
            t.sweeping = true;
        }
        start
    }

    /// The id of the one request waiting, when exactly one is.
    pub(crate) fn sole(&self) -> Option<RequestId> {
        let t = self.0.lock();
        match t.waiters.len() {
            1 => t.waiters.keys().next().cloned(),
            _ => None,
        }
    }

    /// Whether no request is waiting.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.lock().waiters.is_empty()
    }

    /// Whether a request `id` is waiting.
    pub(crate) fn contains(&self, id: &RequestId) -> bool {
        self.0.lock().waiters.contains_key(id)
    }

    /// Takes the waiter of `id`, if any.
    pub(crate) fn take(&self, id: &RequestId) -> Option<Taken> {
        let mut t = self.0.lock();
        let w = t.waiters.remove(id)?;
        if let Waiter::Then {
            deadline: Some((at, seq, _)),
            ..
        } = &w
        {
            t.deadlines.remove(&(*at, *seq));
        }
        Some(Taken(w))
    }

    /// Turns the callback of `id` into a task's wait: the callback is dropped, and the
    /// answer comes through the returned channel, with the deadline the callback had.
    pub(crate) fn reclaim(
        &self,
        id: &RequestId,
    ) -> Option<(AnswerReceiver, Option<(Instant, Duration)>)> {
        let mut t = self.0.lock();
        let Some(Waiter::Then { deadline, .. }) = t.waiters.get(id) else {
            return None;
        };
        let deadline = *deadline;
        if let Some((at, seq, _)) = deadline {
            t.deadlines.remove(&(at, seq));
        }
        let (tx, rx) = oneshot::channel();
        // The old waiter (and its callback) is dropped here.
        t.waiters.insert(id.clone(), Waiter::Task(tx));
        Some((rx, deadline.map(|(at, _, d)| (at, d))))
    }

    /// Takes every callback whose deadline has passed, with its timeout.
    fn expired(&self, now: Instant) -> (Vec<(RequestId, Duration, Taken)>, bool) {
        let mut t = self.0.lock();
        let mut out = Vec::new();
        while let Some((&(at, seq), _)) = t.deadlines.first_key_value() {
            if at > now {
                break;
            }
            let Some(id) = t.deadlines.remove(&(at, seq)) else {
                break;
            };
            if let Some(w) = t.waiters.remove(&id) {
                let d = match &w {
                    Waiter::Then {
                        deadline: Some((_, _, d)),
                        ..
                    } => *d,
                    _ => Duration::ZERO,
                };
                out.push((id, d, Taken(w)));
            }
        }
        let more = !t.deadlines.is_empty();
        if !more {
            t.sweeping = false;
        }
        (out, more)
    }

    /// Takes every waiter (the connection closed).
    pub(crate) fn drain(&self) -> Vec<Taken> {
        let mut t = self.0.lock();
        t.deadlines.clear();
        t.waiters.drain().map(|(_, w)| Taken(w)).collect()
    }
}

/// Times out callbacks past their deadline, while any waits; `on_timeout` tells the
/// other side (a `notifications/cancelled`). Ends when none is left or the peer is gone.
pub(crate) async fn sweep<S: Send + Sync + 'static>(
    owner: Weak<S>,
    pending: impl Fn(&S) -> &Pending + Send + 'static,
    on_timeout: impl Fn(&Arc<S>, RequestId) + Send + 'static,
) {
    let mut tick = tokio::time::interval(SWEEP);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(owner) = owner.upgrade() else {
            return;
        };
        let (expired, more) = pending(&owner).expired(Instant::now());
        for (id, d, taken) in expired {
            taken.fail(RpcError::Timeout(d));
            on_timeout(&owner, id);
        }
        if !more {
            return;
        }
    }
}

/// The error a waiter gets when the connection closed.
pub(crate) fn closed(reason: Option<CloseReason>) -> RpcError {
    RpcError::Closed(reason.unwrap_or(CloseReason::PeerClosed))
}
