//! What one connection may make this side hold or send: requests from the other side
//! served at once, and requests longer than the transport takes.
//!
//! Requests served at once are counted from the moment the read loop takes one to the
//! moment its answer is sent (whichever path answers it: a task, or a callback on the
//! read loop), so the bound holds however the [`Inbound`](super::Inbound) serves them.
//! Each request gets exactly one answer, which makes the count exact; batches have their
//! own bound (see `batch.rs`) and are not counted here. What becomes of one past the
//! bound depends on who reads the connection: a read loop holds it and stops reading
//! (`hold.rs`); a detached peer refuses it.

use std::sync::atomic::Ordering;

use serde_json::value::RawValue;

use super::{error_response, Peer, RpcError};
use crate::codes;
use crate::jsonrpc::{Message, Request};
use crate::ErrorObject;

/// Most requests from the other side served at once, unless the
/// [`Inbound`](super::Inbound) says otherwise
/// ([`Inbound::max_in_flight`](super::Inbound::max_in_flight)).
pub const DEFAULT_MAX_IN_FLIGHT: usize = 256;

/// What the envelope around a request's params takes at most, a newline included:
/// `{"jsonrpc":"2.0","id":<20 digits>,"method":"","params":}`.
const REQUEST_ENVELOPE_BYTES: usize = 66;

impl Peer {
    /// `Ok` when a request fits the transport's message limit.
    pub(super) fn fits(
        &self,
        method_name: &str,
        params: Option<&RawValue>,
    ) -> Result<(), RpcError> {
        let Some(limit) = self.shared.transport.max_message_bytes() else {
            return Ok(());
        };
        let bytes =
            params.map_or(0, |p| p.get().len()) + method_name.len() + REQUEST_ENVELOPE_BYTES;
        match bytes <= limit {
            true => Ok(()),
            false => Err(RpcError::TooLarge { bytes, limit }),
        }
    }

    /// Counts a request from the other side in when the [`Inbound`](super::Inbound)'s bound leaves room
    /// for it; gives it back uncounted otherwise, for the caller to hold (a read loop:
    /// `hold.rs`) or refuse ([`Peer::refuse`]).
    pub(super) fn admit(&self, r: Request, max: usize) -> Result<Request, Request> {
        let before = self.shared.serving.fetch_add(1, Ordering::Relaxed);
        if before < max {
            return Ok(r);
        }
        self.shared.serving.fetch_sub(1, Ordering::Relaxed);
        Err(r)
    }

    /// Answers a request past the bound at once with [`codes::SERVER_BUSY`], unserved:
    /// what a peer fed by someone else ([`Peer::deliver`]: HTTP, which says `429`) does,
    /// and a read loop only when holding more would cost unbounded memory (`hold.rs`).
    pub(super) fn refuse(&self, r: Request, max: usize) {
        tracing::warn!(method = %r.method, max, "request refused: too many in flight");
        let busy = ErrorObject::new(
            codes::SERVER_BUSY,
            format!(
                "Server busy: {max} requests of this connection are in flight already; \
                 retry once some are answered"
            ),
        );
        // Counted in so that its answer, like any other, counts it out.
        self.shared.serving.fetch_add(1, Ordering::Relaxed);
        let _ = self.send_now(error_response(r.id, busy));
    }

    /// An answer to a request of the other side is going out: one fewer in flight, and a
    /// read loop held back by the bound is told (one flag read when none is).
    pub(super) fn answering(&self, msg: &Message) {
        let answers = match msg {
            Message::Response(_) => true,
            Message::Error(e) => e.id.is_some(),
            _ => false,
        };
        if answers {
            // Sequentially consistent with the flag: either the held loop sees the room
            // or this sees the flag (see `hold.rs`).
            let _ = self
                .shared
                .serving
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
            self.wake_held();
        }
    }

    /// Requests from the other side taken and not answered yet.
    pub fn in_flight(&self) -> usize {
        self.shared.serving.load(Ordering::Relaxed)
    }
}
