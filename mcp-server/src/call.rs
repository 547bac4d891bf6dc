//! A `tools/call` handed to [`ServerHandler::call_tool_raw`], the one entry for the
//! method: the handler answers it from wherever it likes ([`Call::respond`]: a callback,
//! another task), or serves it on a task of its own ([`Call::spawn`],
//! [`Call::serve_typed`]).
//!
//! [`ServerHandler::call_tool_raw`]: crate::ServerHandler::call_tool_raw

use std::future::Future;
use std::sync::Arc;

use mcp_types::protocol::{method, CallToolRequestParams};
use mcp_types::raw::RawObject;
use mcp_types::rpc::Peer;
use mcp_types::{codes, ErrorObject, Message, RequestId};
use serde_json::value::RawValue;
use tokio::sync::oneshot;
use tracing::Instrument;

use crate::session::Session;
use crate::{Outcome, RawResult, RequestContext};

/// What a `tools/call` is answered with.
pub type CallAnswer = Result<Outcome<RawResult>, ErrorObject>;

/// A `tools/call` to answer: its context, its params as the client wrote them, and where
/// the answer goes. Answer it once ([`Call::respond`], [`Call::spawn`] or
/// [`Call::serve_typed`]); dropped unanswered, the client gets an internal error.
pub struct Call {
    // Shared with a task that serves the call (`spawn`), which reads it while the call
    // waits to be answered.
    pub(crate) ctx: Arc<RequestContext>,
    pub(crate) params: Option<Arc<Box<RawValue>>>,
    pub(crate) session: Arc<Session>,
    pub(crate) reply: Option<Reply>,
    /// The request's span (see `crate::span`), closed with the answer.
    pub(crate) span: tracing::Span,
}

/// Where a call's answer goes.
pub(crate) enum Reply {
    /// To the client, as the response to request `id`.
    Peer { peer: Peer, id: RequestId },
    /// To the session, which goes on with it (a round of input answered, a batch).
    Session(oneshot::Sender<CallAnswer>),
}

/// What a task serving a call reads: its context and params ([`Call::spawn`]).
pub struct CallRequest {
    ctx: Arc<RequestContext>,
    params: Option<Arc<Box<RawValue>>>,
}

impl CallRequest {
    /// What the session knows of the request (revision, client capabilities, …).
    pub fn context(&self) -> &RequestContext {
        &self.ctx
    }

    /// The params, read one level deep; every member as the client wrote them.
    pub fn params(&self) -> Result<RawObject<'_>, ErrorObject> {
        read_params(self.params.as_deref().map(|p| &**p))
    }
}

/// The params of a `tools/call`, read one level deep (none read as an empty object).
pub(crate) fn read_params(params: Option<&RawValue>) -> Result<RawObject<'_>, ErrorObject> {
    match params {
        Some(p) => RawObject::from_raw(p).map_err(|e| invalid_params(&e)),
        None => Ok(RawObject::new()),
    }
}

/// The error for `tools/call` params that cannot be read.
fn invalid_params(e: &serde_json::Error) -> ErrorObject {
    ErrorObject::new(
        codes::INVALID_PARAMS,
        format!(
            "Invalid params for {}: {}",
            method::TOOLS_CALL,
            mcp_types::raw::read_error(e)
        ),
    )
}

impl Call {
    /// What the session knows of the request (revision, client capabilities, …).
    pub fn context(&self) -> &RequestContext {
        &self.ctx
    }

    /// The params, read one level deep; every member as the client wrote it. (The
    /// handler is given them read already, when it takes the call.)
    pub fn params(&self) -> Result<RawObject<'_>, ErrorObject> {
        read_params(self.params.as_deref().map(|p| &**p))
    }

    /// Lets go of the params' `arguments`, keeping every other member: a handler that sent
    /// them on (a relay) gives their memory back while the call waits for its answer, which
    /// matters when they are large. The session may still hand the call back to the handler
    /// for a round of input (a client before 2026-07-28 answering a request for input); the
    /// params it hands back then still name the tool and carry `_meta`, but no `arguments`.
    /// So forget them only when a round of input never needs them again (a relay resumes
    /// the upstream request it has parked, and sends nothing anew). Returns whether there
    /// were any to forget.
    pub fn forget_arguments(&mut self) -> bool {
        let Some(text) = self.params.as_deref() else {
            return false;
        };
        let Ok(mut params) = RawObject::from_raw(text) else {
            return false;
        };
        if params.remove("arguments").is_none() {
            return false;
        }
        self.params = Some(Arc::new(params.to_raw()));
        true
    }

    /// Runs `hook` if the client cancels the call (at once if it already has). The call
    /// itself stays to be answered; the hook is where a relay stops its upstream request.
    pub fn on_cancel(&self, hook: impl FnOnce() + Send + 'static) {
        self.ctx.cancelled.on_cancel(Box::new(hook));
    }

    /// Answers the call: a result in any revision (translated to the client's), a request
    /// for input (for a client before 2026-07-28 the session asks it with real requests
    /// and hands the handler the call again with the answers), a task, or an error.
    pub fn respond(mut self, answer: CallAnswer) {
        if let Some((peer, msg)) = self.reply_message(answer) {
            let _ = peer.send_now(msg);
        }
    }

    /// The message answering the call and the peer it goes to, when it goes to a peer
    /// now (not to the session, nor after rounds of input).
    fn reply_message(&mut self, answer: CallAnswer) -> Option<(Peer, Message)> {
        match self.reply.take()? {
            // The session's request records its own outcome.
            Reply::Session(to) => {
                let _ = to.send(answer);
                None
            }
            Reply::Peer { peer, id } => {
                crate::span::outcome(&self.span, &answer);
                let params = self.params.take();
                let msg = self
                    .session
                    .clone()
                    .call_reply(&peer, &id, &self.ctx, params, answer)?;
                Some((peer, msg))
            }
        }
    }

    /// Serves the call on a task of its own, in the request's span: `serve` gets its
    /// context and params, and what it returns is the answer.
    pub fn spawn<F, Fut>(self, serve: F)
    where
        F: FnOnce(CallRequest) -> Fut + Send + 'static,
        Fut: Future<Output = CallAnswer> + Send + 'static,
    {
        let request = CallRequest {
            ctx: self.ctx.clone(),
            params: self.params.clone(),
        };
        let span = self.span.clone();
        tokio::spawn(
            async move {
                let answer = serve(request).await;
                let mut call = self;
                // On a task, the answer can wait for room to be sent.
                if let Some((peer, msg)) = call.reply_message(answer) {
                    let _ = peer.send(msg).await;
                }
            }
            .instrument(span),
        );
    }

    /// Serves the call on a task with the handler's typed
    /// [`crate::ServerHandler::call_tool`]: what the default
    /// [`crate::ServerHandler::call_tool_raw`] does, and what a handler that takes some
    /// calls itself does with the others.
    pub fn serve_typed(self) {
        let handler = self.session.handler().clone();
        self.spawn(move |request| async move {
            let text = request.params.as_deref().map_or("{}", |p| p.get());
            let p: CallToolRequestParams =
                serde_json::from_str(text).map_err(|e| invalid_params(&e))?;
            Ok(match handler.call_tool(request.context(), p).await? {
                Outcome::Complete(r) => Outcome::Complete(RawResult::canonical(&r)?),
                Outcome::InputRequired(ir) => Outcome::InputRequired(ir),
                Outcome::Task(t) => Outcome::Task(t),
            })
        });
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if let Some(reply) = self.reply.take() {
            let _in = self.span.enter();
            tracing::warn!("a tools/call was dropped unanswered");
            let e = ErrorObject::new(
                codes::INTERNAL_ERROR,
                "Internal error: the call was dropped without an answer",
            );
            match reply {
                Reply::Session(to) => {
                    let _ = to.send(Err(e));
                }
                Reply::Peer { peer, id } => {
                    let reply =
                        self.session
                            .clone()
                            .call_reply(&peer, &id, &self.ctx, None, Err(e));
                    if let Some(msg) = reply {
                        let _ = peer.send_now(msg);
                    }
                }
            }
        }
    }
}
