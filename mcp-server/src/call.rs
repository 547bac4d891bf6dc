//! A `tools/call` taken on the connection's read loop ([`ServerHandler::call_tool_now`]).
//!
//! [`ServerHandler::call_tool_now`]: crate::ServerHandler::call_tool_now

use std::sync::Arc;

use mcp_types::raw::RawObject;
use mcp_types::rpc::Peer;
use mcp_types::{ErrorObject, RequestId};
use serde_json::value::RawValue;

use crate::session::Session;
use crate::{Outcome, RawResult, RequestContext};

/// A `tools/call` a handler took without a task of its own: its context, its params as
/// the client wrote them, and the way to answer it ([`Call::respond`], once, from
/// anywhere: a callback, a task). Dropped unanswered, the client gets an internal error.
pub struct Call {
    // Boxed: a call is handed on several times before it is answered, and the context is
    // most of its size.
    pub(crate) ctx: Box<RequestContext>,
    pub(crate) params: Option<Arc<Box<RawValue>>>,
    pub(crate) reply: Option<Reply>,
    /// The request's span (see `crate::span`), closed with the answer.
    pub(crate) span: tracing::Span,
}

/// Where a call's answer goes.
pub(crate) struct Reply {
    pub(crate) session: Arc<Session>,
    pub(crate) peer: Peer,
    pub(crate) id: RequestId,
}

impl Call {
    /// What the session knows of the request (revision, client capabilities, …).
    pub fn context(&self) -> &RequestContext {
        &self.ctx
    }

    /// The params, read one level deep; every member as the client wrote it. (The
    /// handler is given them read already, when it takes the call.)
    pub fn params(&self) -> Result<RawObject<'_>, serde_json::Error> {
        match &self.params {
            Some(p) => RawObject::from_raw(p),
            None => Ok(RawObject::new()),
        }
    }

    /// Runs `hook` if the client cancels the call (at once if it already has). The call
    /// itself stays to be answered; the hook is where a relay stops its upstream request.
    pub fn on_cancel(&self, hook: impl FnOnce() + Send + 'static) {
        self.ctx.cancelled.on_cancel(Box::new(hook));
    }

    /// Answers the call: a result in any revision (translated to the client's), a request
    /// for input (for a client before 2026-07-28 the session asks it with real requests
    /// and calls [`crate::ServerHandler::call_tool_raw`] again with the answers), a task,
    /// or an error.
    pub fn respond(mut self, answer: Result<Outcome<RawResult>, ErrorObject>) {
        let Some(reply) = self.reply.take() else {
            return;
        };
        crate::span::outcome(&self.span, &answer);
        let params = self.params.take();
        reply
            .session
            .clone()
            .answer_call(reply, &self.ctx, params, answer);
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if let Some(reply) = self.reply.take() {
            let _in = self.span.enter();
            tracing::warn!(id = %reply.id, "a tools/call was dropped unanswered");
            let e = ErrorObject::new(
                mcp_types::codes::INTERNAL_ERROR,
                "Internal error: the call was dropped without an answer",
            );
            reply
                .session
                .clone()
                .answer_call(reply, &self.ctx, None, Err(e));
        }
    }
}
