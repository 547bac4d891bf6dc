//! The call relay: one `tools/call` from a host to the upstream that owns the tool, and
//! its answer back.
//!
//! The host's params arrive read one level deep; the relay changes `name` (the tool's
//! real name), the hop's `_meta` keys and the gateway's own members (`task`, its
//! confirmation answer), and translates only where the two revisions differ: `arguments`
//! and everything else reach the upstream as the host wrote them. The upstream's answer
//! comes back raw and goes to the host as it came, in the upstream's revision for the
//! session to translate, unless it is a task or a question (decoded then, and relayed
//! by the task and bridging code) or needs the gateway's edits: its per-hop `_meta` keys
//! dropped, a text copy of `structuredContent` added (TOOL-28).

use std::borrow::Cow;

use mcp_client::{Client, ClientError};
use mcp_revisions::{features, Translator};
use mcp_server::{Outcome, RawResult, RequestContext};
use mcp_types::protocol::*;
use mcp_types::raw::{self, RawObject};
use mcp_types::{codes, meta, ErrorObject, Revision};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::gates::{self, Admitted, OWN_KEYS};
use super::Relay;
use crate::aggregator::answers::{call_failure, created_task_id, input_required};
use crate::aggregator::audited::Refusal;
use crate::aggregator::consent;
use crate::aggregator::metered;
use crate::aggregator::request_state::RequestBinding;
use crate::aggregator::route::Route;
use crate::aggregator::tasks;
use crate::metrics::CallMeter;
use std::sync::Arc;

/// How a call runs with respect to tasks (TOOL-21).
#[derive(Clone)]
pub(super) struct TaskPlan {
    /// The upstream is asked to run it as a task.
    pub(super) as_task: bool,
    /// The host takes a task as the answer.
    pub(super) host_takes_task: bool,
    /// The retention asked for the task.
    pub(super) ttl: Option<serde_json::Number>,
}

impl Relay {
    /// A call of `route`'s tool, of `params_bytes`, going upstream now for a host speaking
    /// `host`.
    pub(super) fn meter_call(
        &self,
        route: &Route,
        params_bytes: usize,
        host: mcp_types::Revision,
    ) -> CallMeter {
        route
            .meter
            .get_or_init(|| {
                let key = self.pool().key(route.upstream);
                Arc::new(self.metrics.tool_meter(key, &route.tool.name))
            })
            .start(params_bytes, host)
    }

    /// A host's `tools/call`, params raw: the gates first, then the owning upstream.
    pub(crate) async fn relay_call(
        &self,
        ctx: &RequestContext,
        params: &RawObject<'_>,
    ) -> Result<Outcome<RawResult>, ErrorObject> {
        let name = gates::tool_name(params)?;
        let seen = self.visibility.seen(ctx);
        let admitted = self
            .admit(ctx, &seen, &name)
            .inspect_err(|e| self.audit_refusal(ctx, &seen, &name, params, e))?;
        self.relay_admitted(ctx, params, &name, admitted).await
    }

    /// A call the gates let through, driven on a task (see [`Relay::relay_gated`]); one
    /// that needs the user's consent first is answered the way the host can be asked.
    pub(super) async fn relay_admitted(
        &self,
        ctx: &RequestContext,
        params: &RawObject<'_>,
        name: &str,
        admitted: Admitted,
    ) -> Result<Outcome<RawResult>, ErrorObject> {
        let i = admitted.route.upstream;
        let binding = RequestBinding::of(
            self.pool().key(i),
            method::TOOLS_CALL,
            &admitted.route.tool.name,
        );
        let audit = self.audit_call(ctx, &admitted.route, name, params);
        let mut why = None;
        let answer = match self
            .relay_gated(ctx, params, name, admitted, &mut why)
            .await
        {
            Err(e) if consent::needs_consent(&e) => {
                why = Some(Refusal::ConsentRequired);
                match self.flights().ask_consent(i, ctx, e, binding) {
                    consent::Asked::Error(e) => Err(e),
                    consent::Asked::InputRequired(ir) => Ok(Outcome::InputRequired(ir)),
                    consent::Asked::Told(text) => canonical(Outcome::Complete(
                        crate::aggregator::answers::tool_error(text),
                    )),
                }
            }
            other => other,
        };
        if let Some(a) = audit {
            super::audit::finish_driven(a, &answer, why, ctx.revision());
        }
        answer
    }

    /// A call the gates let through, driven on a task: the questions they ask first, then
    /// the owning upstream.
    /// A gate that answers instead of the upstream says so in `answered`.
    async fn relay_gated(
        &self,
        ctx: &RequestContext,
        params: &RawObject<'_>,
        name: &str,
        admitted: Admitted,
        answered: &mut Option<Refusal>,
    ) -> Result<Outcome<RawResult>, ErrorObject> {
        let Admitted {
            route,
            plan,
            may_retry,
            unapproved,
            confirm,
            limit,
        } = admitted;
        let (i, tool) = (route.upstream, &route.tool);
        let key = self.pool().key(i).to_owned();
        if limit == super::limited::Limit::Ask {
            if let Err(e) = self.limit(ctx, &key, name).await {
                *answered = Some(Refusal::RateLimited);
                return Err(e);
            }
        }
        let arguments = || {
            params
                .get("arguments")
                .and_then(|a| serde_json::from_str::<Map<String, Value>>(a.get()).ok())
        };
        if let Some(why) = &unapproved {
            if let Some(refusal) = self.approval(ctx, name, &key, why) {
                *answered = Some(Refusal::Pin);
                return canonical(refusal);
            }
        }
        if confirm {
            let gate = self.confirmation(ctx, name, &key, tool, route.hints_trusted, arguments);
            if let Some(refusal) = Box::pin(gate).await {
                *answered = Some(Refusal::ConfirmationDeclined);
                return canonical(refusal);
            }
        }
        let (route, plan) = (&*route, &plan);
        let send = |extension: bool| async move {
            let up = match self.hop_params(ctx, route, params.clone(), plan, extension, None) {
                Ok(up) => up,
                Err(e) => {
                    let meter = self.meter_call(route, 0, ctx.revision());
                    meter.finish(metered::failure(&e), 0);
                    return Err(e);
                }
            };
            let meter = self.meter_call(route, up.to_cow().get().len(), ctx.revision());
            let answer = self
                .flights()
                .upstream_call_raw(i, method::TOOLS_CALL, up, ctx)
                .await;
            let (outcome, bytes) = metered::outcome(&answer);
            meter.finish(outcome, bytes);
            answer
        };
        let answer = match send(false).await {
            Ok(v) => v,
            Err(ClientError::Closed(reason))
                if may_retry
                    && !ctx.is_cancelled()
                    && Box::pin(self.pool().reconnected(i)).await =>
            {
                tracing::info!(upstream = %key, %reason, "retrying an idempotent call after the upstream restarted");
                match Box::pin(send(false)).await {
                    Ok(v) => v,
                    Err(e) => return raw_failure(&key, e),
                }
            }
            // A 2026 upstream that runs this tool only as a task, called by a legacy host
            // (which has no way to take a 2026 task): the gateway takes the task and follows
            // it. A 2026 host hears the upstream's -32021 as it is: it can declare the
            // extension, and across one era the gateway stays transparent.
            Err(ClientError::Server(e))
                if !plan.host_takes_task
                    && !features::per_request_meta(ctx.revision())
                    && tasks::needs_tasks_extension(&e) =>
            {
                match Box::pin(send(true)).await {
                    Ok(v) => v,
                    Err(e) => return raw_failure(&key, e),
                }
            }
            Err(e) => return raw_failure(&key, e),
        };
        self.call_answer(route, ctx, answer, plan, None).await
    }

    /// The params the upstream gets: the host's, with the tool's real name, this hop's
    /// `_meta`, the gateway's `task` choice, in the upstream's revision. `extension`: the
    /// gateway declares the tasks extension itself (it follows the task for the host).
    /// `on`: the connection the call goes on, when it is chosen already (else the
    /// upstream's shared one speaks for it: a host's own session speaks its revision).
    pub(super) fn hop_params<'a>(
        &self,
        ctx: &RequestContext,
        route: &'a Route,
        mut p: RawObject<'a>,
        plan: &TaskPlan,
        extension: bool,
        on: Option<&Client>,
    ) -> Result<RawObject<'a>, ClientError> {
        let i = route.upstream;
        let shared;
        let client = match on {
            Some(c) => c,
            None => {
                shared = self.pool().shared(i)?;
                &shared
            }
        };
        let up = client.revision();
        if p.get("name").map(RawValue::get) != Some(route.name.get()) {
            p.insert("name", &*route.name);
        }
        // A retry's answers and state: a 2026 host's own members, or what the session
        // gathered from a legacy host. The gateway's own question was the gateway's to read.
        let own_answers = p.contains_key("inputResponses");
        if OWN_KEYS.iter().any(|k| ctx.input_response(k).is_some())
            || (!own_answers && !ctx.input_responses().is_empty())
        {
            let mut responses = ctx.input_responses().clone();
            for k in OWN_KEYS {
                responses.remove(k);
            }
            p.remove("inputResponses");
            if !responses.is_empty() {
                p.insert("inputResponses", raw::encode(&responses));
            }
        }
        if let (false, Some(state)) = (p.contains_key("requestState"), ctx.request_state()) {
            p.insert_str("requestState", state);
        }
        if p.contains_key("task") || plan.as_task {
            p.remove("task");
            if plan.as_task {
                let task = TaskMetadata {
                    ttl: plan.ttl.clone(),
                    ..Default::default()
                };
                p.insert("task", raw::encode(&task));
            }
        }
        self.downgrade
            .translator(Translator::new(ctx.revision(), up))
            .without_request_meta()
            .params_in_place(method::TOOLS_CALL, &mut p)?;
        super::hop_meta::hop_meta(ctx, client, up, &mut p, extension);
        Ok(p)
    }

    /// What the host gets for the upstream's answer, written in `on` (the revision of the
    /// connection it came on; `None`: the upstream's shared connection). A plain result
    /// goes as it came (with the gateway's edits); a task or a question is relayed by its
    /// own code. `route`: the tool called.
    pub(super) async fn call_answer(
        &self,
        route: &Route,
        ctx: &RequestContext,
        answer: Box<RawValue>,
        plan: &TaskPlan,
        on: Option<Revision>,
    ) -> Result<Outcome<RawResult>, ErrorObject> {
        let i = route.upstream;
        let up = match on {
            Some(r) => r,
            None => self
                .pool()
                .revision(i)
                .map_err(|e| crate::aggregator::answers::upstream_error(self.pool().key(i), e))?,
        };
        let escapes = raw::has_key_escapes(answer.get());
        if answer_kind(&answer, plan, escapes) != AnswerKind::Plain {
            let text = answer.get();
            let value: Value = serde_json::from_str(text).map_err(|e| {
                crate::aggregator::answers::upstream_error(
                    self.pool().key(i),
                    ClientError::InvalidResult {
                        method: method::TOOLS_CALL.into(),
                        reason: e.to_string(),
                    },
                )
            })?;
            if let Some(out) = Box::pin(self.call_answer_value(route, ctx, value, plan)).await? {
                return Ok(out);
            }
        }
        let key = self.pool().key(i);
        let body = tidy_result(key, answer, escapes)?;
        Ok(Outcome::Complete(RawResult::in_revision(up, body)))
    }

    /// The answers that are not plain results: a task (relayed, or followed for a host that
    /// called plainly) or an `InputRequiredResult`. `None`: a plain result after all.
    async fn call_answer_value(
        &self,
        route: &Route,
        ctx: &RequestContext,
        mut value: Value,
        plan: &TaskPlan,
    ) -> Result<Option<Outcome<RawResult>>, ErrorObject> {
        let i = route.upstream;
        let key = self.pool().key(i).to_owned();
        if plan.host_takes_task && created_task_id(&value).is_some() {
            return self
                .tasks
                .relay_created(ctx, i, value)
                .and_then(canonical)
                .map(Some);
        }
        let mut followed = false;
        if value.get("resultType").and_then(Value::as_str) == Some("task") {
            if let Some(task_id) = created_task_id(&value) {
                value = match self.tasks.follow_extension_task(i, &task_id, ctx).await {
                    Ok(v) => v,
                    Err(e) => return raw_failure(&key, e).map(Some),
                };
                followed = true;
            }
        }
        if let Some(task_id) = plan.as_task.then(|| created_task_id(&value)).flatten() {
            // Its questions are the host's call's: a retry of that call resumes it.
            let host = RequestBinding::of(&key, method::TOOLS_CALL, &route.tool.name);
            value = match self.tasks.await_task(i, &task_id, ctx, host).await {
                Ok(v) => v,
                Err(e) => {
                    // The host gave up, or the gateway did: the task should not run on.
                    if ctx.is_cancelled() || matches!(e, ClientError::Timeout(_)) {
                        let _ = self
                            .flights()
                            .upstream_call(i, method::TASKS_CANCEL, json!({"taskId": task_id}), ctx)
                            .await;
                    }
                    return raw_failure(&key, e).map(Some);
                }
            };
            followed = true;
        }
        if let Some(mut ir) = input_required(&key, &value)? {
            let binding = RequestBinding::of(&key, method::TOOLS_CALL, &route.tool.name);
            self.flights().seal_upstream_state(&mut ir, binding, ctx);
            return Ok(Some(Outcome::InputRequired(ir)));
        }
        if !followed {
            return Ok(None);
        }
        // A task's result, fetched by the gateway: in the upstream's revision like any other.
        let up = self
            .pool()
            .revision(i)
            .map_err(|e| crate::aggregator::answers::upstream_error(&key, e))?;
        let body = serde_json::value::to_raw_value(&value)
            .map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, format!("Internal error: {e}")))?;
        let escapes = raw::has_key_escapes(body.get());
        let body = tidy_result(&key, body, escapes)?;
        Ok(Some(Outcome::Complete(RawResult::in_revision(up, body))))
    }
}

/// What an upstream answered, as far as the relay must know.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum AnswerKind {
    /// A result to pass on.
    Plain,
    /// A task, or a question: decoded and relayed by their own code.
    Special,
}

/// Tells a plain result from a task or a question without decoding it: a byte search
/// first, then, where a `resultType` could be there, a look at its value (one that says
/// `complete` is plain), and only when that is not clear a read of the top level.
/// `escapes`: [`raw::has_key_escapes`] of the answer, asked once for every look at it.
pub(super) fn answer_kind(answer: &RawValue, plan: &TaskPlan, escapes: bool) -> AnswerKind {
    let text = answer.get();
    let wants_task = plan.as_task || plan.host_takes_task;
    let may_task = wants_task && (escapes || finders::TASK.may_be_in(text));
    if !escapes && !may_task {
        match only_result_type(text) {
            ResultTypeSeen::None => return AnswerKind::Plain,
            ResultTypeSeen::Complete => return AnswerKind::Plain,
            ResultTypeSeen::Unclear => {}
        }
    }
    #[derive(serde::Deserialize)]
    struct Top<'a> {
        #[serde(rename = "resultType", borrow, default)]
        result_type: Option<Cow<'a, str>>,
        #[serde(default)]
        task: Option<serde::de::IgnoredAny>,
    }
    match serde_json::from_str::<Top<'_>>(text) {
        Ok(top) => {
            let typed = top.result_type.is_some_and(|t| t != "complete");
            if typed || (wants_task && top.task.is_some()) {
                AnswerKind::Special
            } else {
                AnswerKind::Plain
            }
        }
        // Not what a result should be: the decoding path says why.
        Err(_) => AnswerKind::Special,
    }
}

/// What a text says of `resultType`, by its bytes.
enum ResultTypeSeen {
    /// Nowhere.
    None,
    /// Once, as `"complete"`: whether at the top or nested, the top level is complete.
    Complete,
    /// Otherwise: read the top level to know.
    Unclear,
}

fn only_result_type(text: &str) -> ResultTypeSeen {
    let bytes = text.as_bytes();
    let mut found = finders::RESULT_TYPE.find_iter(bytes);
    let Some(at) = found.next() else {
        return ResultTypeSeen::None;
    };
    if found.next().is_some() {
        return ResultTypeSeen::Unclear;
    }
    let rest = bytes[at + finders::RESULT_TYPE_KEY.len()..].trim_ascii_start();
    let Some(rest) = rest.strip_prefix(b":") else {
        return ResultTypeSeen::Unclear;
    };
    if rest.trim_ascii_start().starts_with(b"\"complete\"") {
        ResultTypeSeen::Complete
    } else {
        ResultTypeSeen::Unclear
    }
}

/// A typed outcome as a raw one (the gateway's own answers, and relayed tasks).
fn canonical(out: Outcome<CallToolResult>) -> Result<Outcome<RawResult>, ErrorObject> {
    Ok(match out {
        Outcome::Complete(r) => Outcome::Complete(RawResult::canonical(&r)?),
        Outcome::InputRequired(ir) => Outcome::InputRequired(ir),
        Outcome::Task(t) => Outcome::Task(t),
    })
}

/// [`call_failure`] as a raw outcome.
pub(super) fn raw_failure(
    upstream: &str,
    e: ClientError,
) -> Result<Outcome<RawResult>, ErrorObject> {
    call_failure(upstream, e).and_then(canonical)
}

/// The gateway's edits of a plain result, each made only when needed: the upstream's task
/// id dropped from `_meta` (hosts know tasks by the gateway's ids), and a text copy of
/// `structuredContent` added for hosts that read only `content` (TOOL-28), with the
/// structured value's exact text. The upstream's `serverInfo` is the session's to replace
/// (a 2026 host hears the gateway's; older revisions drop it). `escapes`:
/// [`raw::has_key_escapes`] of `body`, asked once for every look at it.
pub(super) fn tidy_result(
    upstream: &str,
    body: Box<RawValue>,
    escapes: bool,
) -> Result<Box<RawValue>, ErrorObject> {
    let text = body.get();
    let hop_meta = escapes || finders::RELATED_TASK.may_be_in(text);
    let structured = escapes || finders::STRUCTURED.may_be_in(text);
    if !hop_meta && !structured {
        return Ok(body);
    }
    let invalid = |e: serde_json::Error| {
        ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("upstream `{upstream}` sent an invalid result: {e}"),
        )
    };
    let mut o = RawObject::from_raw(&body).map_err(invalid)?;
    if hop_meta {
        meta::edit_raw(&mut o, |m| m.remove(meta::RELATED_TASK).is_some());
    }
    if structured {
        add_text_copy(&mut o);
    }
    if !o.is_modified() {
        drop(o);
        return Ok(body);
    }
    Ok(o.to_raw())
}

/// TOOL-28: a result with `structuredContent` and no text block holding the same value
/// gets one, holding the structured value's exact text. Error results are left alone.
fn add_text_copy(o: &mut RawObject<'_>) {
    let Some(structured) = o.get("structuredContent") else {
        return;
    };
    if o.get("isError").map(RawValue::get) == Some("true") {
        return;
    }
    let content = o.get("content").map_or("[]", RawValue::get);
    let Ok(blocks) = serde_json::from_str::<Vec<&RawValue>>(content) else {
        return;
    };
    // Read only when a block's text could be the same object written differently.
    let mut value: Option<Option<Value>> = None;
    let duplicate = blocks.iter().any(|b| {
        #[derive(serde::Deserialize)]
        struct Block<'a> {
            #[serde(rename = "type", borrow)]
            kind: Cow<'a, str>,
            #[serde(borrow)]
            text: Option<Cow<'a, str>>,
        }
        let Ok(Block {
            kind,
            text: Some(t),
        }) = serde_json::from_str::<Block<'_>>(b.get())
        else {
            return false;
        };
        if kind != "text" || !t.trim_start().starts_with(['{', '[']) {
            return false;
        }
        if *t == *structured.get() {
            return true;
        }
        let value = value.get_or_insert_with(|| serde_json::from_str(structured.get()).ok());
        value.is_some() && serde_json::from_str::<Value>(&t).ok() == *value
    });
    if duplicate {
        return;
    }
    let mut block = RawObject::new();
    block.insert_str("type", "text");
    block.insert_str("text", structured.get());
    let block = block.to_raw();
    let mut items = blocks;
    items.push(&block);
    let content = raw::to_array(&items);
    drop(items);
    o.insert("content", content);
}

/// The searchers for the names every answer is looked at for, built once: building one
/// costs more than searching a short answer.
mod finders {
    use std::sync::LazyLock;

    use mcp_types::meta;
    use mcp_types::raw::KeyFinder;

    pub(super) static TASK: LazyLock<KeyFinder> = LazyLock::new(|| KeyFinder::new("task"));
    pub(super) static RELATED_TASK: LazyLock<KeyFinder> =
        LazyLock::new(|| KeyFinder::new(meta::RELATED_TASK));
    pub(super) static STRUCTURED: LazyLock<KeyFinder> =
        LazyLock::new(|| KeyFinder::new("structuredContent"));
    pub(super) const RESULT_TYPE_KEY: &[u8] = b"\"resultType\"";
    pub(super) static RESULT_TYPE: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new(RESULT_TYPE_KEY));
}

#[cfg(test)]
mod tests;
