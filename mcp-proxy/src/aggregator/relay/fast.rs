//! Calls relayed without a task: the common `tools/call` (no confirmation to ask, no
//! task to run, no progress to relay, no parked call to resume) is taken where it arrives,
//! forwarded at once, and answered from the upstream connection's read loop when the
//! upstream's answer comes. No task is spawned and no future is boxed for it.
//!
//! What only a task can do is handed to one when it happens: an upstream that asks the
//! host a question during the call (its request is taken back from the callback and the
//! call driven as any other), an answer that is a task or a question, a retry after the
//! upstream's connection dropped. Log lines tied to the call go to its host directly.

use crate::aggregator::id::UpstreamId;
use std::sync::{Arc, OnceLock};

use mcp_client::{CallOptions, Client, ClientError};
use mcp_revisions::features;
use mcp_server::RequestContext;
use mcp_server::{Call, Outcome, RawResult};
use mcp_types::protocol::*;
use mcp_types::raw::RawObject;
use mcp_types::{RequestId, Revision};
use parking_lot::Mutex;
use serde_json::value::RawValue;

use super::call::{answer_kind, raw_failure, tidy_result, AnswerKind, TaskPlan};
use super::gates::Admitted;
use super::Relay;
use crate::aggregator::metered;
use crate::aggregator::request_state::RequestBinding;
use crate::aggregator::route::Route;

use crate::metrics::CallMeter;
use crate::sessions::pool::{self, Lease};
use crate::sessions::Link;
use crate::upstream_questions::{Calls, Event, EventSink, Flight, SlotGuard};

/// What a call needs once it is on its way.
struct Prepared {
    i: UpstreamId,
    link: Link,
    request: mcp_client::RawRequest,
    plan: TaskPlan,
    may_retry: bool,
    meter: CallMeter,
}

/// One call in flight upstream, answered from a callback.
struct FastCall {
    /// The host's call, until answered (by the callback, a cancellation, or the task it
    /// was handed to).
    call: Mutex<Option<Call>>,
    agg: Arc<Relay>,
    i: UpstreamId,
    /// The tool called (a question's `requestState` is bound to it).
    route: Arc<Route>,
    client: Client,
    /// The calls in flight on its connection (a question escalates among them).
    calls: Arc<Calls>,
    revision: Revision,
    plan: TaskPlan,
    may_retry: bool,
    /// The upstream request's id, once sent.
    id: OnceLock<RequestId>,
    /// Its place among the upstream's calls (questions and log lines find it there).
    slot: Mutex<Option<SlotGuard>>,
    /// Its metrics, until it is counted (dropped uncounted: a cancellation).
    meter: Mutex<Option<CallMeter>>,
    /// The pooled session it runs on, until the call is over there.
    lease: Mutex<Option<Arc<Lease>>>,
}

impl Relay {
    /// Takes `call`, which the gates let through as one that needs no task, without a
    /// task; gives it back when it needs one after all (a session to open first).
    pub(super) fn call_now(
        self: &Arc<Self>,
        call: Call,
        params: RawObject<'_>,
        admitted: &Admitted,
    ) -> Option<Call> {
        let Some(p) = self.prepare_now(&call, params, admitted) else {
            return Some(call);
        };
        let mut call = call;
        if p.arguments_done(call.context()) {
            // Written into the upstream request already: a large call in flight holds
            // its arguments once, not twice.
            call.forget_arguments();
        }
        let u = &self.pool().get(p.i);
        let caps = call.context().client_capabilities_arc();
        let host = call.context().host_session().map(|h| h.id());
        let fast = Arc::new(FastCall {
            call: Mutex::new(None),
            agg: self.clone(),
            i: p.i,
            route: admitted.route.clone(),
            revision: p.link.client.revision(),
            client: p.link.client,
            calls: p.link.calls,
            lease: Mutex::new(p.link.lease),
            plan: p.plan,
            may_retry: p.may_retry,
            id: OnceLock::new(),
            slot: Mutex::new(None),
            meter: Mutex::new(Some(p.meter)),
        });
        let weak = Arc::downgrade(&fast);
        call.on_cancel(move || {
            if let Some(fast) = weak.upgrade() {
                fast.cancelled();
            }
        });
        *fast.call.lock() = Some(call);
        let slot =
            fast.calls
                .enter_sink(caps, host, None, Arc::new(FastSink(Arc::downgrade(&fast))));
        *fast.slot.lock() = Some(slot);
        let timeout = Some(self.pool().call_timeout(p.i));
        let answered = fast.clone();
        match fast
            .client
            .send_then(p.request, timeout, move |a| answered.answered(a))
        {
            Ok(id) => {
                let _ = fast.id.set(id);
            }
            Err(e) => {
                if let Some(m) = fast.meter() {
                    m.finish(metered::failure(&e), 0);
                }
                if let Some(call) = fast.take() {
                    call.respond(raw_failure(&u.config.key, e));
                }
            }
        }
        None
    }

    /// The upstream request for a call that can go without a task, or `None` when it
    /// needs one after all.
    fn prepare_now(
        &self,
        call: &Call,
        params: RawObject<'_>,
        admitted: &Admitted,
    ) -> Option<Prepared> {
        let ctx = call.context();
        let (route, plan) = (&admitted.route, &admitted.plan);
        let i = route.upstream;
        let audit = match &self.audit {
            None => None,
            Some(_) => {
                let name = super::gates::tool_name(&params).ok()?;
                self.audit_call(ctx, route, &name, &params)
            }
        };
        // A host's first call to an upstream it gets a session of its own on opens that
        // session, which takes waiting: the task path does it.
        let link = self.flights().links().link_now(i, ctx)?;
        let up = self.hop_params(ctx, route, params, plan, false, Some(&link.client));
        let Ok(up) = up else {
            // Nothing was sent: a pooled session may serve the next call as it is.
            if let Some(lease) = &link.lease {
                lease.answered();
            }
            return None;
        };
        let request = link
            .client
            .prepare_raw(method::TOOLS_CALL, up, &CallOptions::default());
        let meter = self
            .meter_call(route, request.params().get().len(), ctx.revision())
            .audited(audit);
        Some(Prepared {
            i,
            link,
            request,
            plan: plan.clone(),
            may_retry: admitted.may_retry,
            meter,
        })
    }
}

/// Arguments smaller than this stay with the call: forgetting them saves less than
/// reading the params again costs.
const FORGET_ARGUMENTS_BYTES: usize = 64 * 1024;

impl Prepared {
    /// Whether the host's call will never need its arguments again once the upstream
    /// request is written: they are large, the call is not retried (TOOL-18), and no round
    /// of input sends them anew. A legacy host's answers to a question reach the upstream
    /// through the request parked here, unless the upstream asks by answering (2026-07-28),
    /// when the retry is a new request carrying them; a 2026 host retries with its own, and
    /// a host that declared no capability an input request needs is never asked.
    fn arguments_done(&self, host: &RequestContext) -> bool {
        let asks_by_answering = || features::input_required_results(self.link.client.revision());
        let host_retries_itself = || features::input_required_results(host.revision());
        let host_never_asked = || !host.client_capabilities().answers_input_requests();
        self.request.params().get().len() >= FORGET_ARGUMENTS_BYTES
            && !self.may_retry
            && (host_retries_itself() || host_never_asked() || !asks_by_answering())
    }
}

impl FastCall {
    fn key(&self) -> &str {
        self.agg.pool().key(self.i)
    }

    /// The host's call, if nobody answered it yet; its slot is left.
    fn take(&self) -> Option<Call> {
        let call = self.call.lock().take();
        self.slot.lock().take();
        call
    }

    /// Its pooled session's lease, if it still holds one.
    fn lease(&self) -> Option<Arc<Lease>> {
        self.lease.lock().take()
    }

    /// Its metrics, if the call is not counted yet.
    fn meter(&self) -> Option<CallMeter> {
        self.meter.lock().take()
    }

    /// The upstream's answer (or why none came), on its connection's read loop.
    fn answered(self: Arc<Self>, answer: Result<Box<RawValue>, ClientError>) {
        let Some(call) = self.take() else {
            return;
        };
        // Back to the pool before the host hears the answer: its next call may take it.
        if let Some(lease) = self.lease().filter(|_| pool::answered(&answer)) {
            lease.answered();
        }
        // Every look at the answer below starts with this question: asked once.
        let escapes = answer
            .as_ref()
            .is_ok_and(|raw| mcp_types::raw::has_key_escapes(raw.get()));
        let retried = matches!(answer, Err(ClientError::Closed(_)))
            && self.may_retry
            && !call.context().is_cancelled();
        if let Some(m) = self.meter() {
            let (outcome, bytes) = metered::outcome_of(&answer, escapes);
            // A retry goes through the gates again, and is recorded there.
            let m = if retried { m.unaudited() } else { m };
            let said = answer.as_ref().err().map(ToString::to_string);
            m.finish_said(outcome, bytes, said.as_deref());
        }
        match answer {
            Ok(raw) if answer_kind(&raw, &self.plan, escapes) == AnswerKind::Plain => {
                let out = tidy_result(self.key(), raw, escapes)
                    .map(|b| Outcome::Complete(RawResult::in_revision(self.revision, b)));
                call.respond(out);
            }
            // A question or a task: decoded and relayed by the code that drives calls.
            Ok(raw) => {
                tokio::spawn(async move {
                    let out = self
                        .agg
                        .call_answer(
                            &self.route,
                            call.context(),
                            raw,
                            &self.plan,
                            Some(self.revision),
                        )
                        .await;
                    call.respond(out);
                });
            }
            Err(ClientError::Closed(reason)) if retried => {
                tokio::spawn(async move {
                    let out = self.retry(&call, reason).await;
                    call.respond(out);
                });
            }
            Err(e) => call.respond(raw_failure(self.key(), e)),
        }
    }

    /// TOOL-18: a call its trusted upstream calls idempotent goes again once the upstream
    /// has restarted.
    async fn retry(
        &self,
        call: &Call,
        reason: mcp_types::transport::CloseReason,
    ) -> Result<Outcome<RawResult>, mcp_types::ErrorObject> {
        if !self.agg.pool().reconnected(self.i).await {
            return raw_failure(self.key(), ClientError::Closed(reason));
        }
        tracing::info!(upstream = %self.key(), %reason, "retrying an idempotent call after the upstream restarted");
        let params = call.params().unwrap_or_default();
        self.agg.relay_call(call.context(), &params).await
    }

    /// The host cancelled: the upstream hears it, and the host gets what a task-driven
    /// call gives for a cancellation.
    fn cancelled(&self) {
        let Some(call) = self.take() else {
            return;
        };
        if let Some(id) = self.id.get() {
            self.client.cancel_now(id, "cancelled by the caller");
        }
        // The upstream may still be at it: its session is not lent again.
        drop(self.lease());
        call.respond(raw_failure(self.key(), ClientError::Cancelled));
    }

    /// The upstream asks the host a question during the call: the call is handed to a
    /// task that drives it as any other, and the question goes there.
    fn escalate(self: &Arc<Self>, ask: Event) -> Result<(), Box<Event>> {
        let back = |e: Event| Err(Box::new(e));
        let Some(id) = self.id.get() else {
            return back(ask);
        };
        // Taken back first: if the answer already went to the callback, the call is over.
        let Some(answer) = self.client.reclaim(id) else {
            return back(ask);
        };
        let Some(call) = self.take() else {
            return back(ask);
        };
        let ctx = call.context();
        let host = ctx.host_session().map(|h| h.id());
        let (slot, inbox) = self.calls.enter(ctx.client_capabilities_arc(), host, None);
        // A new inbox takes it.
        inbox.push(ask)?;
        let cancel = Arc::new(tokio::sync::Notify::new());
        let stop = cancel.clone();
        let client = self.client.clone();
        let flight = Flight {
            method: method::TOOLS_CALL.to_owned(),
            call: Box::pin(async move {
                let id = answer.id().clone();
                tokio::select! {
                    a = answer.answer() => a.map_err(ClientError::from),
                    () = stop.notified() => {
                        client.cancel_now(&id, "cancelled by the caller");
                        Err(ClientError::Cancelled)
                    }
                }
            }),
            progress: None,
            cancel,
            slot: (slot, inbox),
            pending: Vec::new(),
            asked: 0,
            binding: RequestBinding::of(self.key(), method::TOOLS_CALL, &self.route.tool.name),
            lease: self.lease(),
        };
        let me = self.clone();
        let meter = self.meter();
        tokio::spawn(async move {
            let ctx = call.context();
            let answer = me.agg.flights().drive(flight, ctx).await;
            if let Some(m) = meter {
                let (outcome, bytes) = metered::outcome(&answer);
                let said = answer.as_ref().err().map(ToString::to_string);
                m.finish_said(outcome, bytes, said.as_deref());
            }
            let out = match answer {
                Ok(raw) => {
                    let on = Some(me.revision);
                    me.agg.call_answer(&me.route, ctx, raw, &me.plan, on).await
                }
                Err(e) => raw_failure(me.key(), e),
            };
            call.respond(out);
        });
        Ok(())
    }
}

/// A fast call's place among its upstream's calls: what comes for it during the call.
struct FastSink(std::sync::Weak<FastCall>);

impl EventSink for FastSink {
    fn deliver(&self, event: Event) -> Result<(), Box<Event>> {
        let Some(fast) = self.0.upgrade() else {
            return Err(Box::new(event));
        };
        match event {
            Event::Log(l) => {
                let call = fast.call.lock();
                if let Some(call) = call.as_ref() {
                    call.context().log_now(l.level, l.logger.as_deref(), l.data);
                }
                Ok(())
            }
            ask @ Event::Ask(_) => fast.escalate(ask),
        }
    }
}
