//! A legacy upstream's questions, relayed to the host: a 2024-11-05…2025-11-25 server asks
//! its client (sampling, elicitation) in the middle of a call. (How any server, the
//! gateway included, asks a legacy host its questions is
//! `mcp-server/src/session/legacy_questions.rs`.) The gateway cannot answer; the host
//! must. The upstream's request is routed to the host call in flight on that upstream,
//! handed to the host as an `InputRequiredResult` (which the server session turns into a
//! real request for a legacy host), and the host's answer goes back upstream when the
//! host retries with the `requestState` the gateway gave it.
//!
//! Legacy JSON-RPC links a server→client request to the call it serves only for tasks
//! (2025-11-25 `related-task`): such a request goes to the held `tasks/result` of its
//! task. Any other goes to the one call in flight on that connection; with several in
//! flight it names none of them, and it is refused (no host ever sees another host's
//! question). Per-host upstream sessions (`SessionMode::PerHost`) keep each host's calls
//! on a connection of their own, so that its questions can always be tied to it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_client::{ClientError, ClientHandler};
use mcp_server::HostSessionId;
use mcp_types::protocol::*;
use mcp_types::{codes, ErrorObject};
use parking_lot::Mutex;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot, Notify};

/// An upstream's request, waiting for the host's answer.
pub(crate) struct Ask {
    method: &'static str,
    params: Value,
    reply: oneshot::Sender<Result<Value, ErrorObject>>,
}

/// What reaches a call from its upstream while it runs, besides progress.
pub(crate) enum Event {
    /// A request for the host (sampling, elicitation).
    Ask(Ask),
    /// A log message tied to this call.
    Log(LoggingMessageNotificationParams),
}

/// A call's mailbox: the upstream's connection puts events in, the call takes them out.
/// A few words of memory per call, where a channel would allocate a block of slots.
#[derive(Default)]
pub(crate) struct Inbox {
    queue: Mutex<Vec<Event>>,
    ready: Notify,
    closed: AtomicBool,
}

/// Where the events of one call go: its [`Inbox`], drained by the task that drives the
/// call, or (a call answered from a callback, with no task) a handler of its own.
pub(crate) trait EventSink: Send + Sync {
    /// Delivers `event`; gives it back when the call has ended.
    fn deliver(&self, event: Event) -> Result<(), Box<Event>>;

    /// The call has ended: events that came for it fail.
    fn close(&self) {}
}

impl EventSink for Inbox {
    fn deliver(&self, event: Event) -> Result<(), Box<Event>> {
        self.push(event)
    }

    fn close(&self) {
        Inbox::close(self)
    }
}

impl Inbox {
    /// Delivers `event`; gives it back when the call has ended.
    pub(crate) fn push(&self, event: Event) -> Result<(), Box<Event>> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(Box::new(event));
        }
        self.queue.lock().push(event);
        self.ready.notify_one();
        Ok(())
    }

    /// Everything delivered so far, waiting until there is something.
    pub(crate) async fn next(&self) -> Vec<Event> {
        loop {
            let taken = std::mem::take(&mut *self.queue.lock());
            if !taken.is_empty() {
                return taken;
            }
            self.ready.notified().await;
        }
    }

    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        // Requests still queued fail now: their reply senders are dropped.
        self.queue.lock().clear();
    }
}

/// A call in flight on one upstream, for routing what the upstream sends during it.
#[derive(Clone)]
struct Slot {
    id: u64,
    /// The upstream task it waits on (a held `tasks/result`).
    task: Option<String>,
    /// What its host declared.
    caps: Arc<ClientCapabilities>,
    /// Its host's session, when it has one.
    host: Option<HostSessionId>,
    sink: Arc<dyn EventSink>,
}

/// The host calls in flight on one upstream that its requests can be routed to.
#[derive(Default)]
pub(crate) struct Calls {
    next: AtomicU64,
    slots: Mutex<Vec<Slot>>,
    /// Woken when a call enters, for a task's request waiting for its task's call.
    entered: Notify,
    /// Whether hosts hold resource subscriptions on this connection (it is not idle then).
    held: std::sync::atomic::AtomicBool,
    /// Whether only one host's calls are ever in flight here at once (a host's own session,
    /// a pooled one): then every call in flight is that host's.
    one_host: bool,
}

/// Removes a call's slot when the call ends.
pub(crate) struct SlotGuard {
    calls: Arc<Calls>,
    id: u64,
    sink: Arc<dyn EventSink>,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        self.sink.close();
        self.calls.slots.lock().retain(|x| x.id != self.id);
    }
}

impl Calls {
    /// The calls of a connection that serves one host at a time (see [`Calls::log_slot`]).
    pub(crate) fn for_one_host() -> Self {
        Calls {
            one_host: true,
            ..Calls::default()
        }
    }

    /// Registers a call made for a host that declared `caps`, in host session `host`
    /// (waiting on upstream task `task`, for a held `tasks/result`).
    pub(crate) fn enter(
        self: &Arc<Self>,
        caps: Arc<ClientCapabilities>,
        host: Option<HostSessionId>,
        task: Option<String>,
    ) -> (SlotGuard, Arc<Inbox>) {
        let inbox = Arc::new(Inbox::default());
        let guard = self.enter_sink(caps, host, task, inbox.clone());
        (guard, inbox)
    }

    /// Marks whether hosts hold resource subscriptions on this connection.
    pub(crate) fn hold(&self, held: bool) {
        self.held.store(held, Ordering::SeqCst);
    }

    /// Whether hosts hold resource subscriptions on this connection.
    pub(crate) fn is_held(&self) -> bool {
        self.held.load(Ordering::SeqCst)
    }

    /// How many host calls are in flight here.
    pub(crate) fn in_flight(&self) -> usize {
        self.slots.lock().len()
    }

    /// [`Calls::enter`] with events going to `sink`.
    pub(crate) fn enter_sink(
        self: &Arc<Self>,
        caps: Arc<ClientCapabilities>,
        host: Option<HostSessionId>,
        task: Option<String>,
        sink: Arc<dyn EventSink>,
    ) -> SlotGuard {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.slots.lock().push(Slot {
            id,
            task,
            caps,
            host,
            sink: sink.clone(),
        });
        self.entered.notify_waiters();
        SlotGuard {
            calls: self.clone(),
            id,
            sink,
        }
    }

    /// The call an upstream request belongs to: for a request that names a task
    /// (2025-11-25 `related-task`), the call held for that task and no other (it may come
    /// later, up to `deadline`); else the one call that waits on no task (see [`Calls::plain_slot`]).
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
                .iter()
                .rev()
                .find(|x| x.task.as_deref() == Some(t))
                .cloned();
            if found.is_some() {
                return found;
            }
            if tokio::time::timeout_at(deadline, entered).await.is_err() {
                return None;
            }
        }
    }

    /// The call a request that names no task belongs to: the one call in flight on this
    /// connection that waits on no task (a task's requests name their task, so held
    /// `tasks/result`s do not compete). With several, the request names none of them and
    /// no host may see another host's question: it belongs to no call.
    fn plain_slot(&self, method: &str) -> Option<Slot> {
        let s = self.slots.lock();
        let mut plain = s.iter().filter(|x| x.task.is_none());
        let (Some(only), None) = (plain.next(), plain.next()) else {
            let calls = s.iter().filter(|x| x.task.is_none()).count();
            if calls > 1 {
                tracing::warn!(
                    method,
                    calls,
                    "refused an upstream request: several calls in flight on this connection and it names none of them"
                );
            }
            return None;
        };
        Some(only.clone())
    }

    /// The one call a log message belongs to: the held call of the task it names, else
    /// the only call in flight, or, on a connection that serves one host at a time, the
    /// first when every call in flight is one host session's (the calls of a host sharing
    /// a pooled session). Otherwise a log line names none of them, and no host may see
    /// another host's traffic: it belongs to no call.
    fn log_slot(&self, task: Option<&str>) -> Option<Slot> {
        let s = self.slots.lock();
        match task {
            Some(t) => s
                .iter()
                .rev()
                .find(|x| x.task.as_deref() == Some(t))
                .cloned(),
            None => {
                let first = s.first()?;
                let one_host =
                    self.one_host && first.host.is_some() && s.iter().all(|x| x.host == first.host);
                (s.len() == 1 || one_host).then(|| first.clone())
            }
        }
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
        let Some(slot) = slot else {
            return Err(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!(
                    "{method} is answered by a host only during a call through this gateway, \
                     when the request can be tied to exactly one call"
                ),
            ));
        };
        let declared = match method {
            method::SAMPLING_CREATE_MESSAGE => slot.caps.sampling.is_some(),
            method::ELICITATION_CREATE => slot.caps.elicitation.is_some(),
            method::ROOTS_LIST => slot.caps.roots.is_some(),
            _ => false,
        };
        if !declared {
            return Err(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("the host behind this gateway does not support {method}"),
            ));
        }
        let (reply, answer) = oneshot::channel();
        slot.sink
            .deliver(Event::Ask(Ask {
                method,
                params,
                reply,
            }))
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
    /// The upstream's configuration key, for the log lines kept in the gateway's log.
    pub(crate) upstream: Arc<str>,
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

    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        let m = method::ROOTS_LIST;
        decode(m, self.calls.ask(m, json!({}), self.wait).await?)
    }

    fn log_message(
        &self,
        mut params: LoggingMessageNotificationParams,
    ) -> Option<LoggingMessageNotificationParams> {
        // A task's messages name it by the upstream's id, which hosts never see.
        let task = params
            .meta
            .as_mut()
            .and_then(|m| m.remove(mcp_types::meta::RELATED_TASK))
            .and_then(|t| t.get("taskId")?.as_str().map(str::to_owned));
        if params.meta.as_ref().is_some_and(|m| m.is_empty()) {
            params.meta = None;
        }
        let undelivered = match self.calls.log_slot(task.as_deref()) {
            Some(slot) => slot.sink.deliver(Event::Log(params)).err().map(|e| *e),
            None => Some(Event::Log(params)),
        };
        if let Some(Event::Log(l)) = undelivered {
            tracing::info!(
                target: "mcp_proxy::upstream_log",
                upstream = %self.upstream,
                level = ?l.level,
                logger = l.logger.as_deref().unwrap_or_default(),
                "{}",
                l.data
            );
        }
        None
    }
}

/// An upstream request's future: the answer as the upstream wrote it.
pub(crate) type UpstreamCall =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Box<RawValue>, ClientError>> + Send>>;

/// One upstream request in flight, with everything that flows while it runs.
pub(crate) struct Flight {
    pub(crate) method: String,
    /// The request, owned so that it can wait parked; polled only while a host call drives
    /// it (its answer waits in the connection meanwhile).
    pub(crate) call: UpstreamCall,
    /// Its progress, when the host asked for progress.
    pub(crate) progress: Option<mpsc::UnboundedReceiver<ProgressNotificationParams>>,
    pub(crate) cancel: Arc<Notify>,
    /// Its slot among the upstream's calls, and what reaches it there (requests, logs).
    pub(crate) slot: (SlotGuard, Arc<Inbox>),
    /// Requests handed to the host, by input key, waiting for the retry.
    pub(crate) pending: Vec<(String, oneshot::Sender<Result<Value, ErrorObject>>)>,
    /// Requests handed over so far: input keys are never reused within one flight.
    pub(crate) asked: usize,
    /// What the host's request was for: a retry resumes it only for the same request.
    pub(crate) binding: crate::aggregator::request_state::RequestBinding,
    /// The pooled session it runs on (last: it goes back after the slot is left).
    pub(crate) lease: Option<Arc<crate::sessions::pool::Lease>>,
}

/// What happened next to a flight.
pub(crate) enum Step {
    /// The upstream answered (or the request failed).
    Done(Result<Box<RawValue>, ClientError>),
    /// A progress notification.
    Progress(ProgressNotificationParams),
    /// Log messages of this call, and one round of the upstream's requests (maybe empty).
    Events {
        logs: Vec<LoggingMessageNotificationParams>,
        asks: Vec<Ask>,
    },
}

impl Flight {
    /// Waits for what happens next: the answer, progress, or the upstream's requests and
    /// log lines.
    pub(crate) async fn next(&mut self) -> Step {
        let (call, progress, inbox) = (&mut self.call, &mut self.progress, &self.slot.1);
        let progress = async {
            match progress {
                Some(rx) => rx.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = call => {
                if let Some(lease) = self.lease.as_ref().filter(|_| crate::sessions::pool::answered(&r)) {
                    lease.answered();
                }
                Step::Done(r)
            }
            Some(p) = progress => Step::Progress(p),
            events = inbox.next() => {
                let (mut logs, mut asks) = (Vec::new(), Vec::new());
                for e in events {
                    match e {
                        Event::Log(l) => logs.push(l),
                        Event::Ask(a) => asks.push(a),
                    }
                }
                Step::Events { logs, asks }
            }
        }
    }

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

/// Marks the gateway's own `requestState` values (sealed: `aggregator/request_state.rs`).
pub(crate) const STATE_PREFIX: &str = "mcp-proxy.";
