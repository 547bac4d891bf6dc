//! `tools/call` on the read loop: for a handler that answers calls from callbacks (a
//! relay), the session checks the request and builds its context without a task, hands
//! it over as a [`Call`], and sends the answer whenever the handler gives it.

use std::sync::Arc;

use mcp_revisions::features;
use mcp_types::protocol::*;
use mcp_types::raw::{ParamsLayout, RawObject};
use mcp_types::rpc::{error_response, response, Peer};
use mcp_types::{ErrorObject, Message, Request, RequestId, Revision};
use serde_json::value::RawValue;

use super::meta::RequestMeta;
use super::route::Answer;
use super::{internal, Session};
use crate::call::Reply;
use crate::context::Cancellation;
use crate::{Call, Outcome, RawResult, RequestContext};

impl Session {
    /// Takes a `tools/call` on the read loop if the handler answers calls that way; gives
    /// the request back otherwise (or when it is not well-formed: the task path answers
    /// it with the error).
    pub(super) fn call_now(&self, peer: &Peer, mut req: Request) -> Option<Request> {
        let me = self.me.upgrade()?;
        // Shared by the call and the params read from it, so that they are read once.
        let layout = req.take_params_layout();
        let text = req.params.take().map(Arc::new);
        if self.take_call(me, peer, &req.id, text.clone(), layout.as_deref()) {
            return None;
        }
        req.params = text.map(|t| Arc::try_unwrap(t).unwrap_or_else(|t| (*t).clone()));
        Some(req)
    }

    /// Builds the context of a call and hands it to the handler; whether it could (the
    /// task path answers a call whose params are malformed).
    fn take_call(
        &self,
        me: Arc<Session>,
        peer: &Peer,
        id: &RequestId,
        text: Option<Arc<Box<RawValue>>>,
        layout: Option<&ParamsLayout>,
    ) -> bool {
        // What the reader saw of the params, if they are still the text it read.
        let bound = text.as_deref().and_then(|t| layout.and_then(|l| l.bind(t)));
        let params = match (bound.and_then(|b| b.object()), text.as_deref()) {
            (Some(p), _) => p,
            (None, Some(t)) => match RawObject::from_raw(t) {
                Ok(p) => p,
                Err(_) => return false,
            },
            (None, None) => RawObject::new(),
        };
        let meta = bound
            .and_then(|b| RequestMeta::laid_out(&b))
            .unwrap_or_else(|| RequestMeta::of(Some(&params)));
        let cancelled = Arc::new(Cancellation::default());
        let Some(mut ctx) = self.call_context(peer, &params, meta, cancelled.clone()) else {
            return false;
        };
        ctx.request_id = Some(id.clone());
        self.in_flight.lock().insert(id.clone(), cancelled);
        let span = crate::span::request(method::TOOLS_CALL, id, ctx.revision);
        crate::span::tool(&span, &params);
        crate::span::join(&span, ctx.trace_context());
        let call = Call {
            ctx: Arc::new(ctx),
            params: text.clone(),
            session: me,
            reply: Some(Reply::Peer {
                peer: peer.clone(),
                id: id.clone(),
            }),
            span: span.clone(),
        };
        // What the handler opens for the call (a relay's upstream call) is the request's.
        let _in = span.enter();
        self.handler.call_tool_raw(call, params);
        true
    }

    /// A call handed to the handler from a task (a batch's, or a round after the
    /// client's answers), whose answer comes back here.
    pub(super) async fn call_handler(
        &self,
        ctx: RequestContext,
        text: Option<Arc<Box<RawValue>>>,
    ) -> Result<Outcome<RawResult>, ErrorObject> {
        let me = self
            .me
            .upgrade()
            .ok_or_else(|| internal("the session is gone"))?;
        let params = crate::call::read_params(text.as_deref().map(|t| &**t))?;
        let (to, answer) = tokio::sync::oneshot::channel();
        let call = Call {
            ctx: Arc::new(ctx),
            params: text.clone(),
            session: me,
            reply: Some(Reply::Session(to)),
            span: tracing::Span::current(),
        };
        self.handler.call_tool_raw(call, params);
        answer
            .await
            .unwrap_or_else(|_| Err(internal("the call was dropped without an answer")))
    }

    /// The context of a `tools/call`, from its params; `None` when something in them is
    /// malformed (the task path answers with the error).
    fn call_context(
        &self,
        peer: &Peer,
        params: &RawObject<'_>,
        mut meta: RequestMeta<'_>,
        cancelled: Arc<Cancellation>,
    ) -> Option<RequestContext> {
        if !self.serves_modern() {
            meta.protocol_version = None;
        }
        let asker = self.asker(method::TOOLS_CALL, &meta).ok()?;
        let mut ctx = self.context(peer, asker, &meta, cancelled);
        ctx.input_responses = decoded(params.get("inputResponses"))?.unwrap_or_default();
        ctx.request_state = decoded(params.get("requestState"))?;
        let task: Option<TaskMetadata> = decoded(params.get("task"))?;
        ctx.task = task.filter(|_| features::has_task_param(ctx.revision));
        Some(ctx)
    }

    /// The message that answers a call, to send at once; `None` when a client before
    /// 2026-07-28 must first be asked for input with real requests: the rounds go on, on
    /// a task, which sends the answer.
    pub(crate) fn call_reply(
        self: Arc<Self>,
        peer: &Peer,
        id: &RequestId,
        ctx: &RequestContext,
        params: Option<Arc<Box<RawValue>>>,
        answer: Result<Outcome<RawResult>, ErrorObject>,
    ) -> Option<Message> {
        let revision = ctx.revision;
        let accepts_task = ctx.accepts_task();
        let bridged = matches!(answer, Ok(Outcome::InputRequired(_)))
            && !features::input_required_results(revision);
        if !bridged {
            // Read again only for rounds of input: a large call's arguments are not held
            // while its answer is made.
            drop(params);
            let answer = match answer {
                Ok(Outcome::InputRequired(ir)) => {
                    super::legacy_questions::input_required_answer(ctx, ir)
                        .map(Outcome::InputRequired)
                }
                other => other,
            };
            let msg = self.call_message(id, revision, accepts_task, answer);
            self.answered(id);
            return Some(msg);
        }
        // Only the rounds of questions outlive the call: they get a context of their own.
        let (ctx, peer, id) = (ctx.clone(), peer.clone(), id.clone());
        tokio::spawn(async move {
            let Ok(first) = answer else {
                return;
            };
            let out = self
                .with_input_after(&peer, ctx, first, |ctx| {
                    self.call_handler(ctx, params.clone())
                })
                .await;
            let msg = self.call_message(&id, revision, accepts_task, out);
            self.answered(&id);
            let _ = peer.send(msg).await;
        });
        None
    }

    /// The message that answers a `tools/call`.
    fn call_message(
        &self,
        id: &RequestId,
        revision: Revision,
        accepts_task: bool,
        out: Result<Outcome<RawResult>, ErrorObject>,
    ) -> Message {
        let answer = out.and_then(|out| self.call_answer(revision, accepts_task, out));
        self.message(id.clone(), method::TOOLS_CALL, revision, answer)
    }

    /// A `tools/call` outcome, finished for the client's revision.
    pub(super) fn call_answer(
        &self,
        revision: Revision,
        accepts_task: bool,
        out: Outcome<RawResult>,
    ) -> Answer {
        if matches!(out, Outcome::Task(_)) && !accepts_task {
            return Err(internal(
                "the server answered with a task, which this client did not accept",
            ));
        }
        let result = match out {
            Outcome::Complete(r) => r,
            Outcome::InputRequired(ir) => RawResult::canonical(&ir)?,
            Outcome::Task(mut t) => {
                t.result_type = Some(ResultType::Task);
                RawResult::canonical(&t)?
            }
        };
        self.finish(method::TOOLS_CALL, revision, result)
    }

    /// The response to request `id`: its result, or its error in the code the client's
    /// revision has for it.
    pub(super) fn message(
        &self,
        id: RequestId,
        m: &str,
        revision: Revision,
        answer: Answer,
    ) -> Message {
        match answer {
            Ok(raw) => response(id, raw),
            Err(mut e) => {
                tracing::info!(method = %m, code = e.code, "request failed: {}", e.message);
                // A code the client's revision forbids (-32002 in 2026) goes as its replacement:
                // the spec's, or the policy's choice. The error was written in the union
                // model, so it comes from the newest revision, as a canonical translation's.
                if let Some(code) = mcp_revisions::errors::replacement(e.code, revision) {
                    e.code = match &self.shared.options.downgrade_policy {
                        Some(p) => p.error_code(e.code, Revision::LATEST, revision),
                        None => code,
                    };
                }
                error_response(id, e)
            }
        }
    }

    /// The request is answered: it can no longer be cancelled.
    pub(super) fn answered(&self, id: &RequestId) {
        self.in_flight.lock().remove(id);
    }
}

/// A member decoded; `None` (the outer one) when it is there but malformed.
fn decoded<T: serde::de::DeserializeOwned>(raw: Option<&RawValue>) -> Option<Option<T>> {
    match raw {
        None => Some(None),
        Some(r) => serde_json::from_str(r.get()).ok().map(Some),
    }
}
