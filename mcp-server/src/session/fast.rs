//! `tools/call` on the read loop: for a handler that answers calls from callbacks (a
//! relay), the session checks the request and builds its context without a task, hands
//! it over as a [`Call`], and sends the answer whenever the handler gives it.

use std::sync::Arc;

use mcp_revisions::features;
use mcp_types::protocol::*;
use mcp_types::raw::RawObject;
use mcp_types::rpc::{error_response, response, Peer};
use mcp_types::{ErrorObject, Message, Request, RequestId, Revision};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::meta::RequestMeta;
use super::route::Answer;
use super::{internal, Session};
use crate::call::Reply;
use crate::context::Cancellation;
use crate::{Call, Outcome, RawResult, RequestContext};

/// The members of `tools/call` params the session acts on; everything else is the
/// handler's. Read in one pass without splitting the object.
#[derive(Default, Deserialize)]
struct CallFields<'a> {
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<&'a RawValue>,
    #[serde(rename = "inputResponses", borrow, default)]
    input_responses: Option<&'a RawValue>,
    #[serde(rename = "requestState", borrow, default)]
    request_state: Option<&'a RawValue>,
    #[serde(borrow, default)]
    task: Option<&'a RawValue>,
}

impl Session {
    /// Takes a `tools/call` on the read loop if the handler answers calls that way; gives
    /// the request back otherwise (or when it is not well-formed: the task path answers
    /// it with the error).
    pub(super) fn call_now(&self, peer: &Peer, mut req: Request) -> Option<Request> {
        let me = self.me.upgrade()?;
        let cancelled = Arc::new(Cancellation::default());
        let ctx = {
            let empty = RawValue::NULL;
            let text = req.params.as_deref().unwrap_or(empty).get();
            let fields: CallFields<'_> = if req.params.is_some() {
                serde_json::from_str(text).ok()?
            } else {
                CallFields::default()
            };
            let mut meta = RequestMeta::from_raw(fields.meta);
            if !self.serves_modern() {
                meta.protocol_version = None;
            }
            let asker = self.asker(method::TOOLS_CALL, &meta).ok()?;
            let mut ctx = self.context(peer, asker, &meta, cancelled.clone());
            ctx.input_responses = decoded(fields.input_responses)?.unwrap_or_default();
            ctx.request_state = decoded(fields.request_state)?;
            let task: Option<TaskMetadata> = decoded(fields.task)?;
            ctx.task = task.filter(|_| features::has_task_param(ctx.revision));
            ctx
        };
        if let Ok(mut f) = self.in_flight.lock() {
            f.insert(req.id.clone(), cancelled);
        }
        let call = Call {
            ctx,
            params: req.params.take(),
            reply: Some(Reply {
                session: me,
                peer: peer.clone(),
                id: req.id.clone(),
            }),
        };
        match self.handler.call_tool_now(call) {
            None => None,
            Some(mut call) => {
                // Served on a task after all: that path registers it again.
                call.reply = None;
                req.params = call.params.take();
                if let Ok(mut f) = self.in_flight.lock() {
                    f.remove(&req.id);
                }
                Some(req)
            }
        }
    }

    /// Sends a call's answer: at once, or (a request for input a client before 2026-07-28
    /// must be asked with real requests) after the input rounds, on a task.
    pub(crate) fn answer_call(
        self: Arc<Self>,
        reply: Reply,
        ctx: RequestContext,
        params: Option<Box<RawValue>>,
        answer: Result<Outcome<RawResult>, ErrorObject>,
    ) {
        let revision = ctx.revision;
        let accepts_task = ctx.accepts_task();
        let bridged = matches!(answer, Ok(Outcome::InputRequired(_)))
            && !features::input_required_results(revision);
        if !bridged {
            let msg = self.call_message(&reply.id, revision, accepts_task, answer);
            self.answered(&reply.id);
            let _ = reply.peer.send_now(msg);
            return;
        }
        tokio::spawn(async move {
            let Ok(Outcome::InputRequired(ir)) = answer else {
                return;
            };
            let empty = RawObject::new();
            let parsed = params.as_deref().map(RawObject::from_raw);
            let params = match &parsed {
                Some(Ok(p)) => p,
                _ => &empty,
            };
            let h = self.handler.clone();
            let out = self
                .with_input_after(&reply.peer, ctx, Outcome::InputRequired(ir), |ctx| {
                    let h = h.clone();
                    async move { h.call_tool_raw(&ctx, params).await }
                })
                .await;
            let msg = self.call_message(&reply.id, revision, accepts_task, out);
            self.answered(&reply.id);
            let _ = reply.peer.send(msg).await;
        });
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
                // A code the client's revision forbids (-32002 in 2026) goes as its replacement.
                if let Some(code) = mcp_revisions::errors::replacement(e.code, revision) {
                    e.code = code;
                }
                error_response(id, e)
            }
        }
    }

    /// The request is answered: it can no longer be cancelled.
    pub(super) fn answered(&self, id: &RequestId) {
        if let Ok(mut f) = self.in_flight.lock() {
            f.remove(id);
        }
    }
}

/// A member decoded; `None` (the outer one) when it is there but malformed.
fn decoded<T: serde::de::DeserializeOwned>(raw: Option<&RawValue>) -> Option<Option<T>> {
    match raw {
        None => Some(None),
        Some(r) => serde_json::from_str(r.get()).ok().map(Some),
    }
}
