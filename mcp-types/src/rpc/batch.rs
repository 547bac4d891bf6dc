//! JSON-RPC batches: bounded in count, served a few requests at a time, or refused
//! where the connection's revision has none.
//!
//! A batch costs the sender one array and can cost the receiver one task and one answer
//! per element, so an unbounded batch turns a megabyte of input into hundreds of
//! megabytes held at once. The [`Inbound`] decides whether a batch is taken
//! ([`Inbound::batch`]); one it refuses is answered, in one frame, with that error for
//! every request in it.

use std::sync::Arc;

use super::{error_response, Inbound, Peer};
use crate::codes;
use crate::jsonrpc::{Frame, Message, Request};
use crate::ErrorObject;

/// Most messages in one batch a peer takes unless its [`Inbound`] says otherwise.
pub const DEFAULT_MAX_BATCH_MESSAGES: usize = 64;

/// Most requests of one batch served at the same time.
const BATCH_CONCURRENCY: usize = 8;

/// `Ok` for a batch of `len` messages within `max`; the `-32600` that names the limit
/// otherwise.
pub fn check_batch_len(len: usize, max: usize) -> Result<(), ErrorObject> {
    if len <= max {
        return Ok(());
    }
    Err(ErrorObject::new(
        codes::INVALID_REQUEST,
        format!("a batch of {len} messages is over the limit of {max}"),
    ))
}

impl Peer {
    /// Takes a batch: answers and notifications as they come, requests on one task, at
    /// most [`BATCH_CONCURRENCY`] at a time, answered together in their order.
    pub(super) async fn take_batch(&self, msgs: Vec<Message>, inbound: &Arc<dyn Inbound>) {
        if let Err(refusal) = inbound.batch(msgs.len()) {
            tracing::warn!(messages = msgs.len(), "batch refused: {}", refusal.message);
            return self.refuse_batch(msgs, refusal, inbound).await;
        }
        let mut requests = Vec::new();
        for msg in msgs {
            match msg {
                Message::Request(r) => requests.push(r),
                // Never a request (those are apart), so nothing comes back.
                other => drop(Box::pin(self.take(other, inbound)).await),
            }
        }
        if requests.is_empty() {
            return;
        }
        let peer = self.clone();
        let inbound = inbound.clone();
        tokio::spawn(async move {
            let answers = serve(&peer, &inbound, requests).await;
            let _ = peer.shared.transport.send(Frame::Batch(answers)).await;
        });
    }

    /// Answers every request of a refused batch with `refusal`; answers to this side's
    /// requests and notifications in it are still taken (they cost nothing to hold).
    async fn refuse_batch(
        &self,
        msgs: Vec<Message>,
        refusal: ErrorObject,
        inbound: &Arc<dyn Inbound>,
    ) {
        let mut answers = Vec::new();
        for msg in msgs {
            match msg {
                Message::Request(r) => answers.push(error_response(r.id, refusal.clone())),
                // Never a request (those are apart), so nothing comes back.
                other => drop(Box::pin(self.take(other, inbound)).await),
            }
        }
        if !answers.is_empty() {
            let _ = self.shared.transport.send(Frame::Batch(answers)).await;
        }
    }
}

/// Serves `requests` a few at a time; their answers in the order they came.
async fn serve(peer: &Peer, inbound: &Arc<dyn Inbound>, requests: Vec<Request>) -> Vec<Message> {
    let mut answers: Vec<Option<Message>> = requests.iter().map(|_| None).collect();
    let mut queue = requests.into_iter().enumerate();
    let mut running = tokio::task::JoinSet::new();
    loop {
        while running.len() < BATCH_CONCURRENCY {
            let Some((i, r)) = queue.next() else {
                break;
            };
            let (peer, inbound) = (peer.clone(), inbound.clone());
            running.spawn(async move { (i, inbound.request(&peer, r).await) });
        }
        match running.join_next().await {
            Some(Ok((i, answer))) => answers[i] = Some(answer),
            // A request whose handler panicked has no answer to give.
            Some(Err(_)) => {}
            None => break,
        }
    }
    answers.into_iter().flatten().collect()
}
