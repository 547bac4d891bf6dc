//! Era bridging for legacy upstreams: a 2024-11-05…2025-11-25 server asks its client
//! (sampling, elicitation) in the middle of a call. The gateway cannot answer; the host
//! must. The upstream's request is routed to the host call in flight on that upstream,
//! handed to the host as an `InputRequiredResult` (which the server session turns into a
//! real request for a legacy host), and the host's answer goes back upstream when the
//! host retries with the `requestState` the gateway gave it.
//!
//! Legacy JSON-RPC links a server→client request to the call it serves only for tasks
//! (2025-11-25 `related-task`): such a request goes to the held `tasks/result` of its
//! task. Any other goes to the most recent call in flight on that upstream (with one call
//! in flight, as is usual for an agent, that is exact; with more a warning is logged).

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_client::{ClientError, ClientHandler};
use mcp_types::protocol::*;
use mcp_types::{codes, ErrorObject};
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc, oneshot, Notify};

/// An upstream's request, waiting for the host's answer.
pub(crate) struct Ask {
    method: &'static str,
    params: Value,
    reply: oneshot::Sender<Result<Value, ErrorObject>>,
}

/// A call in flight: its id, the upstream task it waits on (a held `tasks/result`), the
/// capabilities its host declared, and where its upstream's requests go.
type Slot = (
    u64,
    Option<String>,
    ClientCapabilities,
    mpsc::UnboundedSender<Ask>,
);

/// The host calls in flight on one upstream that its requests can be routed to.
#[derive(Default)]
pub(crate) struct Calls {
    next: AtomicU64,
    slots: Mutex<Vec<Slot>>,
    /// Woken when a call enters, for a task's request waiting for its task's call.
    entered: Notify,
}

/// Removes a call's slot when the call ends.
pub(crate) struct SlotGuard {
    calls: Arc<Calls>,
    id: u64,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        if let Ok(mut s) = self.calls.slots.lock() {
            s.retain(|(id, ..)| *id != self.id);
        }
    }
}

impl Calls {
    /// Registers a call made for a host that declared `caps` (waiting on upstream task
    /// `task`, for a held `tasks/result`).
    pub(crate) fn enter(
        self: &Arc<Self>,
        caps: ClientCapabilities,
        task: Option<String>,
    ) -> (SlotGuard, mpsc::UnboundedReceiver<Ask>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::unbounded_channel();
        if let Ok(mut s) = self.slots.lock() {
            s.push((id, task, caps, tx));
        }
        self.entered.notify_waiters();
        (
            SlotGuard {
                calls: self.clone(),
                id,
            },
            rx,
        )
    }

    /// The call an upstream request belongs to: for a request that names a task
    /// (2025-11-25 `related-task`), the call held for that task and no other (it may come
    /// later, up to `deadline`); else the latest call that waits on no task.
    async fn slot_for(
        &self,
        method: &str,
        task: Option<&str>,
        deadline: tokio::time::Instant,
    ) -> Option<Slot> {
        let Some(t) = task else {
            return self.plain_slot(method);
        };
        loop {
            let entered = self.entered.notified();
            tokio::pin!(entered);
            // Registered before the look, so a call entering in between still wakes us.
            entered.as_mut().enable();
            let found = self
                .slots
                .lock()
                .ok()
                .and_then(|s| s.iter().rev().find(|x| x.1.as_deref() == Some(t)).cloned());
            if found.is_some() {
                return found;
            }
            if tokio::time::timeout_at(deadline, entered).await.is_err() {
                return None;
            }
        }
    }

    fn plain_slot(&self, method: &str) -> Option<Slot> {
        let s = self.slots.lock().ok()?;
        let plain = s.iter().filter(|x| x.1.is_none()).count();
        if plain > 1 || (plain == 0 && s.len() > 1) {
            tracing::warn!(
                method,
                calls = s.len(),
                "several calls in flight on this upstream; its request goes to the latest"
            );
        }
        s.iter()
            .rev()
            .find(|x| x.1.is_none())
            .or_else(|| s.last())
            .cloned()
    }

    async fn ask(
        &self,
        method: &'static str,
        mut params: Value,
        wait: Duration,
    ) -> Result<Value, ErrorObject> {
        // The upstream's task id is the gateway's to route by; hosts know tasks by other ids.
        let task = params
            .get_mut("_meta")
            .and_then(Value::as_object_mut)
            .and_then(|m| m.remove(mcp_types::meta::RELATED_TASK))
            .and_then(|t| t.get("taskId")?.as_str().map(str::to_owned));
        if params
            .get("_meta")
            .and_then(Value::as_object)
            .is_some_and(|m| m.is_empty())
        {
            if let Some(p) = params.as_object_mut() {
                p.remove("_meta");
            }
        }
        // One limit for finding the call and for its host's answer.
        let deadline = tokio::time::Instant::now() + wait;
        let slot = self.slot_for(method, task.as_deref(), deadline).await;
        let Some((_, _, caps, tx)) = slot else {
            return Err(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("{method} is answered by a host only during a call through this gateway"),
            ));
        };
        let declared = match method {
            method::SAMPLING_CREATE_MESSAGE => caps.sampling.is_some(),
            method::ELICITATION_CREATE => caps.elicitation.is_some(),
            _ => false,
        };
        if !declared {
            return Err(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("the host behind this gateway does not support {method}"),
            ));
        }
        let (reply, answer) = oneshot::channel();
        tx.send(Ask {
            method,
            params,
            reply,
        })
        .map_err(|_| ErrorObject::new(codes::INTERNAL_ERROR, "the host's call has ended"))?;
        match tokio::time::timeout_at(deadline, answer).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!("the host did not answer {method}; the call ended or expired"),
            )),
            Err(_) => Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!("the host did not answer {method} within {wait:?}"),
            )),
        }
    }
}

/// The `ClientHandler` of a legacy upstream's connection: hands its requests to hosts.
#[derive(Clone)]
pub(crate) struct Bridge {
    pub(crate) calls: Arc<Calls>,
    pub(crate) wait: Duration,
}

fn decode<T: serde::de::DeserializeOwned>(method: &str, v: Value) -> Result<T, ErrorObject> {
    serde_json::from_value(v).map_err(|e| {
        ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("the host's answer to {method} is invalid: {e}"),
        )
    })
}

#[async_trait]
impl ClientHandler for Bridge {
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        let m = method::SAMPLING_CREATE_MESSAGE;
        decode(m, self.calls.ask(m, json!(params), self.wait).await?)
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let m = method::ELICITATION_CREATE;
        decode(m, self.calls.ask(m, json!(params), self.wait).await?)
    }
}

/// An upstream request's future.
pub(crate) type UpstreamCall =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value, ClientError>> + Send>>;

/// One upstream request in flight, with everything that flows while it runs.
pub(crate) struct Flight {
    pub(crate) method: String,
    /// The request, owned so that it can wait parked; polled only while a host call drives
    /// it (its answer waits in the connection meanwhile).
    pub(crate) call: UpstreamCall,
    pub(crate) progress: mpsc::UnboundedReceiver<ProgressNotificationParams>,
    pub(crate) logs: broadcast::Receiver<TypedNotification>,
    pub(crate) cancel: Arc<Notify>,
    /// Legacy upstreams: its requests, and the slot that routes them here.
    pub(crate) asks: Option<(SlotGuard, mpsc::UnboundedReceiver<Ask>)>,
    /// Requests handed to the host, by input key, waiting for the retry.
    pub(crate) pending: Vec<(String, oneshot::Sender<Result<Value, ErrorObject>>)>,
    /// Requests handed over so far: input keys are never reused within one flight.
    pub(crate) asked: usize,
}

/// The next upstream request(s), all that are waiting, as one round.
pub(crate) async fn next_asks(
    asks: &mut Option<(SlotGuard, mpsc::UnboundedReceiver<Ask>)>,
) -> Option<Vec<Ask>> {
    let (_, rx) = asks.as_mut()?;
    let first = rx.recv().await?;
    let mut all = vec![first];
    while let Ok(more) = rx.try_recv() {
        all.push(more);
    }
    Some(all)
}

impl Flight {
    /// Turns upstream requests into one round of input requests, keeping their reply
    /// channels for the host's retry.
    pub(crate) fn hand_over(&mut self, asks: Vec<Ask>) -> serde_json::Map<String, Value> {
        let mut requests = serde_json::Map::new();
        for a in asks {
            let key = format!("upstream_{}", self.asked);
            self.asked += 1;
            requests.insert(key.clone(), json!({"method": a.method, "params": a.params}));
            self.pending.push((key, a.reply));
        }
        requests
    }

    /// Hands the host's answers (by input key) to the waiting upstream requests; a missing
    /// one is an error to the upstream.
    pub(crate) fn answer(&mut self, responses: &serde_json::Map<String, Value>) {
        for (key, reply) in self.pending.drain(..) {
            let answer = responses.get(&key).cloned().ok_or_else(|| {
                ErrorObject::new(
                    codes::INVALID_PARAMS,
                    format!("the host's retry carried no answer for `{key}`"),
                )
            });
            let _ = reply.send(answer);
        }
    }

    /// Hands over the answers present (by input key) and keeps the rest waiting; answers to
    /// keys not waiting are ignored. Returns the keys answered.
    pub(crate) fn answer_some(
        &mut self,
        responses: &serde_json::Map<String, Value>,
    ) -> Vec<String> {
        let mut answered = Vec::new();
        let mut waiting = Vec::new();
        for (key, reply) in self.pending.drain(..) {
            match responses.get(&key) {
                Some(a) => {
                    let _ = reply.send(Ok(a.clone()));
                    answered.push(key);
                }
                None => waiting.push((key, reply)),
            }
        }
        self.pending = waiting;
        answered
    }
}

/// Marks the gateway's own `requestState` values.
pub(crate) const STATE_PREFIX: &str = "mcp-proxy.";

/// A fresh `requestState`: 128 unguessable bits (from std's randomly keyed SipHash), so a
/// changed or invented one names no parked call and is refused.
pub(crate) fn new_state() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let a = std::collections::hash_map::RandomState::new().hash_one(n);
    let b = std::collections::hash_map::RandomState::new().hash_one(!n);
    format!("{STATE_PREFIX}{a:016x}{b:016x}")
}
