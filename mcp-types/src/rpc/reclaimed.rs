//! A request taken back from its callback: its answer comes to a future instead.

use std::time::Duration;

use serde_json::value::RawValue;

use super::{pending, Peer, RpcError};
use crate::jsonrpc::RequestId;

impl Peer {
    /// Takes back a request sent with [`Peer::request_then`]: its callback is dropped
    /// uncalled, and its answer will come to the returned future instead (which keeps
    /// the request's deadline). `None` when it is no longer waiting.
    pub fn reclaim(&self, id: &RequestId) -> Option<Reclaimed> {
        let (rx, deadline) = self.shared.pending.reclaim(id)?;
        Some(Reclaimed {
            peer: self.clone(),
            id: id.clone(),
            rx,
            deadline,
        })
    }
}

/// The answer of a request taken back from its callback ([`Peer::reclaim`]): a future,
/// which fails with [`RpcError::Timeout`] at the request's deadline (and then sends
/// `notifications/cancelled`).
pub struct Reclaimed {
    peer: Peer,
    id: RequestId,
    rx: pending::AnswerReceiver,
    deadline: Option<(tokio::time::Instant, Duration)>,
}

impl Reclaimed {
    /// The id of the request.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// Waits for the answer.
    pub async fn answer(self) -> Result<Box<RawValue>, RpcError> {
        let Reclaimed {
            peer,
            id,
            rx,
            deadline,
        } = self;
        let answer = match deadline {
            Some((at, d)) => match tokio::time::timeout_at(at, rx).await {
                Ok(a) => a,
                Err(_) => {
                    peer.cancel(&id, "timed out").await;
                    return Err(RpcError::Timeout(d));
                }
            },
            None => rx.await,
        };
        match answer {
            Ok(answer) => answer,
            Err(_) => Err(pending::closed(peer.close_reason())),
        }
    }
}
