//! A handler's questions asked of the client it serves: an `InputRequiredResult` goes to
//! a 2026-07-28 client as it is; a legacy client (2024-11-05 … 2025-11-25) is asked with
//! real server→client requests (sampling, elicitation, roots), and the handler runs again
//! with its answers. (A legacy *upstream's* questions, relayed to a host by the gateway,
//! are `mcp-proxy/src/upstream_questions.rs`.)

use std::future::Future;

use mcp_revisions::{features, Translator};
use mcp_types::protocol::*;
use mcp_types::rpc::{Peer, RpcError};
use mcp_types::{codes, meta, ErrorObject};
use serde_json::{json, Map, Value};

use super::{internal, Session};
use crate::{Outcome, RequestContext};

/// The client capability an input request needs.
fn capability_for(method_name: &str) -> Option<&'static str> {
    match method_name {
        method::SAMPLING_CREATE_MESSAGE => Some("sampling"),
        method::ELICITATION_CREATE => Some("elicitation"),
        method::ROOTS_LIST => Some("roots"),
        _ => None,
    }
}

fn has_capability(caps: &ClientCapabilities, key: &str) -> bool {
    match key {
        "sampling" => caps.sampling.is_some(),
        "elicitation" => caps.elicitation.is_some(),
        "roots" => caps.roots.is_some(),
        _ => false,
    }
}

impl Session {
    /// Runs a handler that may ask for input. A 2026-07-28 client gets the
    /// `InputRequiredResult`; for a legacy client the input requests are sent as real
    /// server→client requests and the handler runs again with the answers.
    pub(super) async fn with_input<T, F, Fut>(
        &self,
        peer: &Peer,
        ctx: RequestContext,
        run: F,
    ) -> Result<Outcome<T>, ErrorObject>
    where
        F: Fn(RequestContext) -> Fut,
        Fut: Future<Output = Result<Outcome<T>, ErrorObject>>,
    {
        let first = run(ctx.clone()).await?;
        self.with_input_after(peer, ctx, first, run).await
    }

    /// [`Self::with_input`] once the first round has answered `first`.
    pub(super) async fn with_input_after<T, F, Fut>(
        &self,
        peer: &Peer,
        mut ctx: RequestContext,
        first: Outcome<T>,
        run: F,
    ) -> Result<Outcome<T>, ErrorObject>
    where
        F: Fn(RequestContext) -> Fut,
        Fut: Future<Output = Result<Outcome<T>, ErrorObject>>,
    {
        let mut rounds = 0;
        let mut out = first;
        loop {
            let Outcome::InputRequired(mut ir) = out else {
                return Ok(out);
            };
            let requests = ir.requests().map_err(internal)?;
            check_capabilities(&ctx, &requests)?;
            if features::input_required_results(ctx.revision) {
                ir.result_type = Some(ResultType::InputRequired);
                return Ok(Outcome::InputRequired(ir));
            }
            check_kinds(&ctx, &requests)?;
            rounds += 1;
            if rounds > self.shared.options.max_input_rounds {
                return Err(internal(format!(
                    "gave up after {} rounds of input requests",
                    self.shared.options.max_input_rounds
                )));
            }
            // Rare next to a plain call: boxed, so every call's future stays small.
            let answers = Box::pin(self.ask_legacy_client(peer, &ctx, requests)).await?;
            ctx.input_responses = answers.into();
            ctx.request_state = ir.request_state.take();
            out = run(ctx.clone()).await?;
        }
    }

    /// One round of input requests sent to a legacy client as real requests; its answers
    /// by input key.
    async fn ask_legacy_client(
        &self,
        peer: &Peer,
        ctx: &RequestContext,
        requests: Vec<(String, InputRequest)>,
    ) -> Result<Map<String, Value>, ErrorObject> {
        let mut answers = Map::new();
        for (key, r) in requests {
            let mut params = r.params.clone().unwrap_or_else(|| json!({}));
            if let (Some(task), Value::Object(p)) = (&ctx.related_task, &mut params) {
                // 2025-11-25: a request made for a task names it.
                if let Value::Object(m) = p.entry("_meta").or_insert_with(|| json!({})) {
                    m.insert(meta::RELATED_TASK.into(), json!({"taskId": task}));
                }
            }
            let policy = self.shared.options.downgrade_policy.as_ref();
            let params = crate::with_policy(Translator::canonical_to(ctx.revision), policy)
                .params(&r.method, params)
                .map_err(|e| {
                    self.shared.stats.refused();
                    internal(format!(
                        "cannot ask a {} client for {}: {e}",
                        ctx.revision, r.method
                    ))
                })?;
            let raw = serde_json::value::to_raw_value(&params).map_err(internal)?;
            let answer = peer
                .request(
                    &r.method,
                    Some(raw),
                    Some(self.shared.options.client_request_timeout),
                )
                .await
                .map_err(|e| match e {
                    RpcError::Error(e) => e,
                    other => internal(format!("client did not answer {}: {other}", r.method)),
                })?;
            answers.insert(key, serde_json::from_str(answer.get()).map_err(internal)?);
        }
        Ok(answers)
    }
}

/// Refuses input requests the client cannot answer: it did not declare the capability
/// their method needs.
fn check_capabilities(
    ctx: &RequestContext,
    requests: &[(String, InputRequest)],
) -> Result<(), ErrorObject> {
    for (_, r) in requests {
        if let Some(cap) = capability_for(&r.method) {
            if !has_capability(&ctx.client_capabilities, cap) {
                return Err(ErrorObject::new(
                    codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    format!("Missing required client capability: {cap}"),
                )
                .with_data(json!({"requiredCapabilities": {cap: {}}})));
            }
        }
    }
    Ok(())
}

/// Refuses, for a legacy client, an input request of none of the three kinds the protocol
/// defines (`InputRequest` is sampling, elicitation or roots): no request of its revision
/// asks it, and a client that declared none of their capabilities is never asked anything
/// (see [`ClientCapabilities::answers_input_requests`]).
fn check_kinds(
    ctx: &RequestContext,
    requests: &[(String, InputRequest)],
) -> Result<(), ErrorObject> {
    match requests
        .iter()
        .find(|(_, r)| capability_for(&r.method).is_none())
    {
        Some((_, r)) => Err(internal(format!(
            "cannot ask a {} client for {}: not a kind of input request",
            ctx.revision, r.method
        ))),
        None => Ok(()),
    }
}

/// A request for input as a 2026-07-28 client receives it: checked against what it
/// declared, and marked as such.
pub(super) fn input_required_answer(
    ctx: &RequestContext,
    mut ir: InputRequiredResult,
) -> Result<InputRequiredResult, ErrorObject> {
    check_capabilities(ctx, &ir.requests().map_err(internal)?)?;
    ir.result_type = Some(ResultType::InputRequired);
    Ok(ir)
}
