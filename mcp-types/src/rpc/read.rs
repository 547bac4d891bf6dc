//! The read loop: every frame the transport gives, taken in order. Answers resolve this
//! side's requests, notifications go to the [`Inbound`] on the loop, requests are counted
//! in and served on a task of their own (or on the loop: [`Inbound::request_now`]).

use std::sync::Arc;

use futures_util::StreamExt;

use super::{Inbound, Peer};
use crate::jsonrpc::{Frame, Message, Request};
use crate::transport::{CloseReason, Closed, Incoming};

impl Peer {
    /// Reads until the transport closes, then fails every request still waiting.
    pub(super) async fn read_loop(self, inbound: Arc<dyn Inbound>) -> CloseReason {
        let mut frames = self.shared.transport.clone().frames();
        let reason = loop {
            let over = match frames.next().await {
                Some(Ok(Incoming::Frame(Frame::Single(msg)))) => self.take(msg, &inbound).await,
                Some(Ok(incoming)) => {
                    self.take_other(incoming, &inbound).await;
                    None
                }
                Some(Err(Closed(reason))) => break reason,
                // `frames` never ends before the transport closes; if one did, it is closed.
                None => break CloseReason::Closed,
            };
            // A request past the bound: held, and reading paused, until answers make room.
            if let Some(r) = over {
                if let Some(reason) = self.hold(r, &mut frames, &inbound).await {
                    break reason;
                }
            }
        };
        // Every waiting request fails with the close reason.
        self.shut(reason.clone(), &inbound).await;
        reason
    }

    /// Takes one message; gives back a request past [`Inbound::max_in_flight`], for the
    /// caller to hold or refuse.
    pub(super) async fn take(&self, msg: Message, inbound: &Arc<dyn Inbound>) -> Option<Request> {
        match msg {
            Message::Request(r) => match self.admit(r, inbound.max_in_flight()) {
                Ok(r) => self.serve(r, inbound),
                Err(r) => return Some(r),
            },
            Message::Notification(n) => inbound.notification(self, n).await,
            Message::Response(r) => self.resolve(&r.id, Ok(r.result)),
            Message::Error(e) => match e.id {
                Some(id) => self.resolve(&id, Err(e.error)),
                None => self.unaddressed_error(e.error),
            },
        }
        None
    }

    /// Serves a request counted in: on the read loop if `inbound` takes it there, else on
    /// a task of its own.
    pub(super) fn serve(&self, r: Request, inbound: &Arc<dyn Inbound>) {
        let Some(r) = inbound.request_now(self, r) else {
            return;
        };
        let peer = self.clone();
        let inbound = inbound.clone();
        tokio::spawn(async move {
            let answer = inbound.request(&peer, r).await;
            let _ = peer.send(answer).await;
        });
    }

    /// Takes what comes while no request is to be held: a message (one past the bound is
    /// refused), a batch, or a line that was no frame (answered with its error).
    pub(super) async fn take_other(&self, incoming: Incoming, inbound: &Arc<dyn Inbound>) {
        match incoming {
            Incoming::Frame(Frame::Single(msg)) => {
                if let Some(r) = self.take(msg, inbound).await {
                    self.refuse(r, inbound.max_in_flight());
                }
            }
            Incoming::Frame(Frame::Batch(msgs)) => self.take_batch(msgs, inbound).await,
            Incoming::Invalid { error, hint } => self.invalid_line(error, hint).await,
        }
    }
}
