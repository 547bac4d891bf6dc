//! Making room for a connection that waits: the open connections of a listener, what
//! each is doing, and which of them to close when the accept loop holds a connection it
//! has no room for (past `max_connections`, or out of file descriptors).
//!
//! Only a connection that is idle between requests goes: at least one response written
//! on it, none being served, and not a byte of a next request read. Closing it loses
//! nothing (its client got every answer it asked for; HTTP/1.1 lets a server close an
//! idle persistent connection at any time, and clients open a new one), where holding
//! it would keep a waiting client from being served until the idle or header timeout. A
//! connection that has not sent its first request yet is not closed for room: its
//! request may be on its way, and closing it would leave that request unanswered.
//!
//! The longest idle goes first. When none is idle, the next connection whose response
//! ends goes instead (`wanted`), so a waiting client is served as soon as any client
//! has its answer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::Notify;

/// The open connections of one listener.
#[derive(Default)]
pub(super) struct Room {
    open: Mutex<HashMap<u64, Arc<ConnState>>>,
    next_id: AtomicU64,
    /// The accept loop waits for a connection to close: the next idle one that sees
    /// this closes, and clears it.
    wanted: AtomicBool,
    /// A connection closed.
    gone: Notify,
}

impl Room {
    /// A new connection's state, counted open until the returned guard drops.
    pub(super) fn enter(self: &Arc<Self>) -> (Arc<ConnState>, Entered) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let state = Arc::new(ConnState::new(self.clone()));
        self.open.lock().insert(id, state.clone());
        (
            state,
            Entered {
                room: self.clone(),
                id,
            },
        )
    }

    /// The accept loop needs one connection to close: the one idle longest is asked
    /// now, and until [`Room::settled`] the next to become idle goes too. Whether one
    /// was idle to ask.
    pub(super) fn make_room(&self) -> bool {
        self.wanted.store(true, Ordering::SeqCst);
        let oldest = self
            .open
            .lock()
            .values()
            .filter(|c| c.evictable())
            .min_by_key(|c| c.last_progress())
            .cloned();
        match oldest {
            Some(c) => {
                c.evict.notify_one();
                true
            }
            None => false,
        }
    }

    /// The accept loop has its room (or stops asking for now).
    pub(super) fn settled(&self) {
        self.wanted.store(false, Ordering::SeqCst);
    }

    /// Resolves once some connection closes (enable it before asking for room, so a
    /// close in between is not missed).
    pub(super) fn gone(&self) -> tokio::sync::futures::Notified<'_> {
        self.gone.notified()
    }

    /// Whether the connection `state` should close now to make room: it is idle, and
    /// room is still wanted (taking the request, so only one closes for it).
    pub(super) fn take_eviction(&self, state: &ConnState) -> bool {
        state.evictable()
            && self
                .wanted
                .compare_exchange(true, false, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
    }

    /// Connections open now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.open.lock().len()
    }
}

/// A connection counted open in its [`Room`]; dropping it counts it closed.
pub(super) struct Entered {
    room: Arc<Room>,
    id: u64,
}

impl Entered {
    /// The room it is counted in.
    pub(super) fn room(&self) -> &Room {
        &self.room
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        self.room.open.lock().remove(&self.id);
        self.room.gone.notify_waiters();
    }
}

/// What one connection is doing: when bytes last moved, whether a write waits for the
/// client to read, how many requests are being served, and whether it is idle between
/// requests.
pub(super) struct ConnState {
    start: Instant,
    /// Milliseconds from `start` to the last byte moved.
    progress_ms: AtomicU64,
    pub(super) write_blocked: AtomicBool,
    active: AtomicUsize,
    /// A response has been written on it.
    served: AtomicBool,
    /// Bytes were read since the last response ended: a request is arriving.
    reading: AtomicBool,
    /// Asks its task to close it if it still may ([`Room::take_eviction`]).
    pub(super) evict: Notify,
    /// Its request head timed out with something to answer: the socket writes a `408`
    /// as it is dropped.
    pub(super) timed_out: AtomicBool,
    room: Arc<Room>,
}

impl ConnState {
    fn new(room: Arc<Room>) -> ConnState {
        ConnState {
            start: Instant::now(),
            progress_ms: AtomicU64::new(0),
            write_blocked: AtomicBool::new(false),
            active: AtomicUsize::new(0),
            served: AtomicBool::new(false),
            reading: AtomicBool::new(false),
            evict: Notify::new(),
            timed_out: AtomicBool::new(false),
            room,
        }
    }

    pub(super) fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.progress_ms.store(ms, Ordering::Relaxed);
    }

    /// Bytes came in.
    pub(super) fn read_some(&self) {
        self.touch();
        self.reading.store(true, Ordering::Relaxed);
    }

    pub(super) fn last_progress(&self) -> Instant {
        self.start + Duration::from_millis(self.progress_ms.load(Ordering::Relaxed))
    }

    /// Whether nothing moved for `timeout` while nothing is served, or while the
    /// response waits for a client that does not read.
    pub(super) fn idle(&self, timeout: Duration) -> bool {
        self.last_progress().elapsed() >= timeout
            && (self.active.load(Ordering::SeqCst) == 0
                || self.write_blocked.load(Ordering::Relaxed))
    }

    /// Whether closing it loses nothing: served before, nothing served now, no write
    /// waiting (the end of a response may still be on its way out), nothing of a next
    /// request read.
    fn evictable(&self) -> bool {
        self.served.load(Ordering::Relaxed)
            && self.active.load(Ordering::SeqCst) == 0
            && !self.write_blocked.load(Ordering::Relaxed)
            && !self.reading.load(Ordering::Relaxed)
    }

    /// Whether a request head timed out on it with something to answer: a request was
    /// arriving, or none had come yet (its client may send one still, and should read
    /// why it was cut off rather than find the connection gone).
    pub(super) fn owes_timeout_answer(&self) -> bool {
        !self.served.load(Ordering::Relaxed) || self.reading.load(Ordering::Relaxed)
    }

    /// A request is being served (its head was read).
    pub(super) fn begin(&self) {
        self.active.fetch_add(1, Ordering::SeqCst);
    }

    /// A response ended (its body dropped). When room is wanted, its task is told, so
    /// that it closes if it is idle now.
    pub(super) fn end(&self) {
        self.served.store(true, Ordering::Relaxed);
        self.reading.store(false, Ordering::Relaxed);
        self.active.fetch_sub(1, Ordering::SeqCst);
        self.touch();
        // Paired with `make_room`'s store and scan (a plain load on x86): either it sees
        // this connection idle, or this sees it wanted.
        if self.room.wanted.load(Ordering::SeqCst) {
            self.evict.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_connection_idle_after_a_response_is_closed_for_room() {
        let room = Arc::new(Room::default());
        let (fresh, _a) = room.enter();
        let (served, _b) = room.enter();
        served.begin();
        served.end();
        let (busy, _c) = room.enter();
        busy.begin();
        assert!(room.make_room());
        assert!(
            !room.take_eviction(&fresh),
            "no request yet: may be on its way"
        );
        assert!(!room.take_eviction(&busy));
        assert!(room.take_eviction(&served));
        assert!(
            !room.take_eviction(&served),
            "one closes per request for room"
        );
        served.read_some();
        assert!(!room.make_room(), "a next request is arriving on it");
        room.settled();
        assert_eq!(room.len(), 3);
        drop(_a);
        assert_eq!(room.len(), 2);
    }

    #[tokio::test]
    async fn when_none_is_idle_the_next_to_finish_is_told() {
        let room = Arc::new(Room::default());
        let (busy, _a) = room.enter();
        busy.begin();
        assert!(!room.make_room());
        assert!(!room.take_eviction(&busy), "busy");
        busy.end();
        tokio::time::timeout(Duration::from_secs(1), busy.evict.notified())
            .await
            .expect("told once its response ended");
        assert!(room.take_eviction(&busy));
    }
}
