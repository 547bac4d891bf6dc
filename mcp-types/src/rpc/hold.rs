//! Back-pressure on a connection this side reads with its own loop (stdio, a child's
//! pipes, memory): a request past [`Inbound::max_in_flight`] is held, not refused, and
//! reading pauses until answers go out, so a peer that pipelines is slowed down by the
//! stream it writes to. A detached peer ([`Peer::deliver`], HTTP) refuses instead.
//!
//! While requests are held the loop still reads, so that notifications (a cancellation:
//! one of a held request withdraws it) and the answers to this side's own requests get
//! through, as long as at most as many requests again as the bound are held. Past that
//! it stops reading, unless this side waits for an answer of the peer: a handler asking
//! the peer something during its call (sampling, elicitation) must get the answer, which
//! the peer wrote behind the requests it pipelined, or the loop and the handlers would
//! wait on each other for good. Then the loop reads on and refuses what it cannot hold
//! ([`codes::SERVER_BUSY`](crate::codes::SERVER_BUSY)), as before back-pressure.
//!
//! The normal path pays one counter compare (in `admit`) and, per answer sent and per
//! request this side sends, one flag read; the queue, the wake-ups and the `select`
//! exist only while a request is held.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures_util::StreamExt;

use super::{Inbound, Peer};
use crate::jsonrpc::{Frame, Message, Notification, Request};
use crate::protocol::{method, CancelledNotificationParams};
use crate::transport::{CloseReason, Closed, Frames, Incoming};

impl Peer {
    /// Holds `first`, a request past the bound, and reads on as the module says until
    /// every held request is served; `Some` when the connection closed meanwhile (held
    /// requests are dropped with it).
    pub(super) async fn hold(
        &self,
        first: Request,
        frames: &mut Frames,
        inbound: &Arc<dyn Inbound>,
    ) -> Option<CloseReason> {
        let max = inbound.max_in_flight();
        if max == 0 {
            // Nothing would ever make room.
            self.refuse(first, max);
            return None;
        }
        let mut held = VecDeque::from([first]);
        self.shared.held.store(true, Ordering::SeqCst);
        let closed = loop {
            while !held.is_empty() && self.room(max) {
                if let Some(r) = held.pop_front() {
                    self.serve(r, inbound);
                }
            }
            if held.is_empty() {
                break None;
            }
            let wake = self.shared.wake.notified();
            if held.len() >= max && self.shared.pending.is_empty() {
                wake.await;
                continue;
            }
            let next = tokio::select! {
                biased;
                () = wake => continue,
                next = frames.next() => next,
            };
            match next {
                Some(Ok(incoming)) => self.take_held(incoming, &mut held, max, inbound).await,
                Some(Err(Closed(reason))) => break Some(reason),
                None => break Some(CloseReason::Closed),
            }
        };
        self.shared.held.store(false, Ordering::SeqCst);
        closed
    }

    /// Counts one more request in if the bound leaves room. Sequentially consistent with
    /// `answering` and `wake_held`: after the flag is set, either this sees the room an
    /// answer made or that answer sees the flag and wakes the loop.
    fn room(&self, max: usize) -> bool {
        self.shared
            .serving
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }

    /// What was read while requests are held: a request joins them (or is refused once
    /// as many as the bound are held), the rest is taken as ever.
    async fn take_held(
        &self,
        incoming: Incoming,
        held: &mut VecDeque<Request>,
        max: usize,
        inbound: &Arc<dyn Inbound>,
    ) {
        match incoming {
            Incoming::Frame(Frame::Single(Message::Request(r))) => match held.len() < max {
                true => held.push_back(r),
                false => self.refuse(r, max),
            },
            Incoming::Frame(Frame::Single(Message::Notification(n))) => {
                withdraw(held, &n);
                inbound.notification(self, n).await;
            }
            other => self.take_other(other, inbound).await,
        }
    }

    /// Tells a read loop holding requests that something it waits for happened: room
    /// was made, or this side sent a request whose answer it must read. One flag read
    /// when no request is held.
    pub(super) fn wake_held(&self) {
        if self.shared.held.load(Ordering::SeqCst) {
            self.shared.wake.notify_one();
        }
    }
}

/// A cancellation of a held request withdraws it: never served, never answered (what a
/// cancelled request gets).
fn withdraw(held: &mut VecDeque<Request>, n: &Notification) {
    if n.method != method::CANCELLED {
        return;
    }
    let Ok(CancelledNotificationParams {
        request_id: Some(id),
        ..
    }) = n.params_as()
    else {
        return;
    };
    let before = held.len();
    held.retain(|r| r.id != id);
    if held.len() < before {
        tracing::debug!(%id, "a held request was cancelled before it was served");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    use async_trait::async_trait;
    use serde_json::value::RawValue;
    use tokio::sync::Semaphore;

    use super::super::{error_response, response};
    use super::*;
    use crate::transport::{memory_pair, MemoryTransport, Transport};
    use crate::ErrorObject;

    /// Serves `hold` once the test lets it (counting how many wait at once), `ask` by
    /// asking the other side a `question` first, anything else at once.
    struct Gated {
        max: usize,
        gate: Semaphore,
        waiting: AtomicUsize,
        most: AtomicUsize,
    }

    fn gated(max: usize) -> Arc<Gated> {
        Arc::new(Gated {
            max,
            gate: Semaphore::new(0),
            waiting: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
        })
    }

    #[async_trait]
    impl Inbound for Gated {
        async fn request(&self, peer: &Peer, r: Request) -> Message {
            match r.method.as_str() {
                "hold" => {
                    let now = self.waiting.fetch_add(1, Ordering::SeqCst) + 1;
                    self.most.fetch_max(now, Ordering::SeqCst);
                    if let Ok(permit) = self.gate.acquire().await {
                        permit.forget();
                    }
                    self.waiting.fetch_sub(1, Ordering::SeqCst);
                }
                "ask" => {
                    if let Err(e) = peer.request("question", None, None).await {
                        return error_response(r.id, ErrorObject::new(-1, e.to_string()));
                    }
                }
                _ => {}
            }
            response(r.id, RawValue::from_string("{}".into()).expect("raw"))
        }
        async fn notification(&self, _peer: &Peer, _n: Notification) {}
        fn max_in_flight(&self) -> usize {
            self.max
        }
    }

    fn request(id: i64, method: &str) -> Frame {
        let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"}}"#);
        Frame::parse(text.as_bytes()).expect("frame")
    }

    fn cancel(id: i64) -> Frame {
        let text = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#
        );
        Frame::parse(text.as_bytes()).expect("frame")
    }

    /// The next answer the served side sends, as (id, error code if an error); its
    /// `question`s are answered on the way.
    async fn next_answer(client: &MemoryTransport) -> (i64, Option<i64>) {
        loop {
            let read = tokio::time::timeout(Duration::from_secs(5), client.recv()).await;
            let Ok(Ok(Incoming::Frame(Frame::Single(msg)))) = read else {
                panic!("an answer within 5 s, got {read:?}");
            };
            match msg {
                Message::Request(q) => {
                    let ok = response(q.id, RawValue::from_string("{}".into()).expect("raw"));
                    client.send(Frame::Single(ok)).await.expect("send");
                }
                Message::Response(r) => return (r.id.to_string().parse().expect("id"), None),
                Message::Error(e) => {
                    let id = e.id.map(|i| i.to_string()).unwrap_or_default();
                    return (id.parse().expect("id"), Some(e.error.code));
                }
                Message::Notification(_) => {}
            }
        }
    }

    /// A peer serving `inbound` on one end of a pipe; the other end.
    fn serving(inbound: Arc<Gated>) -> (Peer, MemoryTransport) {
        let (client, server) = memory_pair(64);
        let (peer, _) = Peer::start(Arc::new(server), inbound);
        (peer, client)
    }

    #[tokio::test]
    async fn requests_past_the_bound_wait_for_room_instead_of_being_refused() {
        let inbound = gated(2);
        let (peer, client) = serving(inbound.clone());
        for id in 1..=6 {
            client.send(request(id, "hold")).await.expect("send");
        }
        while inbound.waiting.load(Ordering::SeqCst) < 2 {
            tokio::task::yield_now().await;
        }
        assert_eq!(peer.in_flight(), 2);
        inbound.gate.add_permits(6);
        let mut answers = Vec::new();
        for _ in 1..=6 {
            answers.push(next_answer(&client).await);
        }
        answers.sort();
        let all: Vec<_> = (1..=6).map(|id| (id, None)).collect();
        assert_eq!(answers, all, "every request served, none refused");
        assert_eq!(
            inbound.most.load(Ordering::SeqCst),
            2,
            "never past the bound"
        );
    }

    #[tokio::test]
    async fn a_held_loop_reads_the_answers_its_handlers_wait_for() {
        // Two in flight, each asking the client; two held; the client answers the
        // questions only after all six requests, as a pipelining host would.
        let (_peer, client) = serving(gated(2));
        for id in 1..=6 {
            client.send(request(id, "ask")).await.expect("send");
        }
        let mut answers = Vec::new();
        for _ in 1..=6 {
            answers.push(next_answer(&client).await);
        }
        answers.sort();
        let busy = Some(crate::codes::SERVER_BUSY);
        assert_eq!(
            answers,
            [
                (1, None),
                (2, None),
                (3, None),
                (4, None),
                (5, busy),
                (6, busy)
            ],
            "no deadlock: past what it holds, the loop refuses rather than stop reading \
             the answers its handlers wait for"
        );
    }

    #[tokio::test]
    async fn a_cancelled_held_request_is_never_served() {
        let inbound = gated(2);
        let (_peer, client) = serving(inbound.clone());
        for frame in [
            request(1, "hold"),
            request(2, "hold"),
            request(3, "quick"),
            cancel(3),
            request(4, "quick"),
        ] {
            client.send(frame).await.expect("send");
        }
        while inbound.waiting.load(Ordering::SeqCst) < 2 {
            tokio::task::yield_now().await;
        }
        inbound.gate.add_permits(2);
        let mut answers = Vec::new();
        for _ in 0..3 {
            answers.push(next_answer(&client).await);
        }
        // Anything of 3 would have come before 4's answer; one more request shows the
        // connection goes on.
        client.send(request(5, "quick")).await.expect("send");
        answers.push(next_answer(&client).await);
        answers.sort();
        assert_eq!(answers, [(1, None), (2, None), (4, None), (5, None)]);
    }

    #[tokio::test]
    async fn a_detached_peer_refuses_past_the_bound() {
        let inbound = gated(1);
        let (out, sent) = memory_pair(8);
        let peer = Peer::detached(Arc::new(out));
        let as_dyn: Arc<dyn Inbound> = inbound.clone();
        for id in 1..=2 {
            let Frame::Single(msg) = request(id, "hold") else {
                unreachable!("one message")
            };
            peer.deliver(Frame::Single(msg), &as_dyn).await;
        }
        assert_eq!(
            next_answer(&sent).await,
            (2, Some(crate::codes::SERVER_BUSY))
        );
        inbound.gate.add_permits(1);
        assert_eq!(next_answer(&sent).await, (1, None));
    }
}
