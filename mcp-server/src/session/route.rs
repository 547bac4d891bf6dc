//! One request to the handler method that answers it.

use std::sync::Arc;

use mcp_revisions::features;
use mcp_types::protocol::*;
use mcp_types::raw::RawObject;
use mcp_types::rpc::Peer;
use mcp_types::{codes, meta, ErrorObject, RequestId};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::{decode, internal, invalid_params, Session};
use crate::RawResult;
use crate::{Outcome, RequestContext};

impl Session {
    /// A typed answer, finished for the request's revision.
    fn done<T: Serialize>(&self, m: &str, ctx: &RequestContext, result: &T) -> Answer {
        self.finish(m, ctx.revision, RawResult::canonical(result)?)
    }

    pub(super) async fn route(
        &self,
        peer: &Peer,
        id: &RequestId,
        m: &str,
        raw: Option<&RawValue>,
        params: Option<&RawObject<'_>>,
        ctx: RequestContext,
    ) -> Answer {
        match m {
            method::TOOLS_CALL => self.call_tool(peer, raw, params, ctx).await,
            // Boxed: the hot path's future (every call's) stays as small as its own state.
            _ => Box::pin(self.route_typed(peer, id, m, raw, ctx)).await,
        }
    }

    /// Every method but `tools/call`: typed params, typed answers.
    async fn route_typed(
        &self,
        peer: &Peer,
        id: &RequestId,
        m: &str,
        raw: Option<&RawValue>,
        ctx: RequestContext,
    ) -> Answer {
        let h = &self.handler;
        let list = |p: Option<&RawValue>| decode::<PaginatedRequestParams>(m, p);
        if let Some(kind) = crate::ListKind::of_method(m) {
            let page = h.list_raw(&ctx, kind, list(raw)?).await?;
            return self.finish(m, ctx.revision, page);
        }
        match m {
            method::DISCOVER => self.done(m, &ctx, &self.discover()),
            method::PING => self.done(m, &ctx, &json!({})),
            method::SUBSCRIPTIONS_LISTEN => {
                let p: SubscriptionsListenRequestParams = decode(m, raw)?;
                let revision = ctx.revision;
                let out = self.listen(id, p.notifications, ctx).await?;
                self.finish(m, revision, RawResult::canonical(&out)?)
            }
            method::LOGGING_SET_LEVEL => {
                self.set_level(decode::<SetLevelRequestParams>(m, raw)?.level);
                self.done(m, &ctx, &json!({}))
            }
            method::RESOURCES_SUBSCRIBE | method::RESOURCES_UNSUBSCRIBE => {
                let p: ResourceRequestParams = decode(m, raw)?;
                let subscribe = m == method::RESOURCES_SUBSCRIBE;
                let uri = p.uri.clone();
                h.subscribe(&ctx, p, subscribe).await?;
                if ctx.host.is_some() {
                    self.subscription(&uri, subscribe);
                }
                self.done(m, &ctx, &json!({}))
            }
            method::COMPLETION_COMPLETE => {
                let r = h.complete(&ctx, decode(m, raw)?).await?;
                self.done(m, &ctx, &r)
            }
            method::TASKS_GET
            | method::TASKS_CANCEL
            | method::TASKS_UPDATE
            | method::TASKS_RESULT => self.task_method(peer, m, raw, ctx).await,
            method::PROMPTS_GET => {
                let p: GetPromptRequestParams = decode(m, raw)?;
                let retry = (p.input_responses.clone(), p.request_state.clone());
                let run = |h: Arc<dyn crate::ServerHandler>, ctx: RequestContext| {
                    let p = p.clone();
                    async move { h.get_prompt(&ctx, p).await }
                };
                self.with_rounds(peer, m, retry, ctx, run).await
            }
            method::RESOURCES_READ => {
                let p: ResourceRequestParams = decode(m, raw)?;
                let retry = (p.input_responses.clone(), p.request_state.clone());
                let run = |h: Arc<dyn crate::ServerHandler>, ctx: RequestContext| {
                    let p = p.clone();
                    async move { h.read_resource(&ctx, p).await }
                };
                self.with_rounds(peer, m, retry, ctx, run).await
            }
            other => Err(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("Method not found: {other}"),
            )),
        }
    }

    /// The `server/discover` result: every revision served, newest first.
    fn discover(&self) -> DiscoverResult {
        let options = &self.shared.options;
        let mut versions = options.supported.clone();
        versions.sort_unstable_by(|a, b| b.cmp(a));
        DiscoverResult {
            supported_versions: versions.iter().map(|r| r.as_str().to_owned()).collect(),
            capabilities: self.handler.capabilities(),
            instructions: options.instructions.clone(),
            ..Default::default()
        }
    }

    /// `logging/setLevel` of a legacy session: kept for the session's requests.
    fn set_level(&self, level: LoggingLevel) {
        if let Some(s) = self.legacy.lock().as_mut() {
            s.log_level = Some(level);
        }
        self.changed();
    }

    /// A request whose handler may ask for input (`prompts/get`, `resources/read`): its
    /// retry's answers and state go into the context, and the rounds run as the client's
    /// revision has them.
    async fn with_rounds<T, F, Fut>(
        &self,
        peer: &Peer,
        m: &str,
        retry: (Option<Map<String, Value>>, Option<String>),
        ctx: RequestContext,
        run: F,
    ) -> Answer
    where
        T: Serialize,
        F: Fn(Arc<dyn crate::ServerHandler>, RequestContext) -> Fut,
        Fut: std::future::Future<Output = Result<Outcome<T>, ErrorObject>>,
    {
        let ctx = with_retry_input(ctx, retry.0, retry.1);
        let revision = ctx.revision;
        let h = &self.handler;
        let out = self
            .with_input(peer, ctx, |ctx| run(h.clone(), ctx))
            .await?;
        self.finish(m, revision, typed(out)?)
    }

    /// `tools/call`: the params go to the handler raw; only the members the session acts
    /// on are read.
    async fn call_tool(
        &self,
        peer: &Peer,
        raw: Option<&RawValue>,
        params: Option<&RawObject<'_>>,
        mut ctx: RequestContext,
    ) -> Answer {
        let empty = RawObject::new();
        let params = params.unwrap_or(&empty);
        ctx.input_responses = member(params, "inputResponses")?.unwrap_or_default();
        ctx.request_state = member(params, "requestState")?;
        // `task` is a 2025-11-25 param; a 2026 client's stray one is ignored.
        let task: Option<TaskMetadata> = member(params, "task")?;
        ctx.task = task.filter(|_| features::has_task_param(ctx.revision));
        let accepts_task = ctx.accepts_task();
        let revision = ctx.revision;
        let text = raw.map(|p| Arc::new(p.to_owned()));
        let out = self
            .with_input(peer, ctx, |ctx| self.call_handler(ctx, text.clone()))
            .await?;
        self.call_answer(revision, accepts_task, out)
    }

    /// `tasks/*`.
    async fn task_method(
        &self,
        peer: &Peer,
        m: &str,
        raw: Option<&RawValue>,
        mut ctx: RequestContext,
    ) -> Answer {
        let h = &self.handler;
        // The extension's methods are only for a client that negotiated it.
        if m != method::TASKS_RESULT
            && features::has_tasks_extension(ctx.revision)
            && !ctx.accepts_task()
        {
            return Err(ErrorObject::new(
                codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format!("Missing required client capability: extension {TASKS_EXTENSION}"),
            )
            .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})));
        }
        let p: TaskRequestParams = decode(m, raw)?;
        match m {
            method::TASKS_GET => self.done(m, &ctx, &h.get_task(&ctx, p).await?),
            method::TASKS_CANCEL => self.done(m, &ctx, &h.cancel_task(&ctx, p).await?),
            method::TASKS_UPDATE => {
                h.update_task(&ctx, p).await?;
                self.done(m, &ctx, &json!({}))
            }
            _ => {
                ctx.related_task = Some(p.task_id.clone());
                let revision = ctx.revision;
                let task_id = p.task_id.clone();
                let out = self
                    .with_input(peer, ctx, |ctx| {
                        let (h, p) = (h.clone(), p.clone());
                        async move { h.task_result(&ctx, p).await }
                    })
                    .await?;
                let mut result = typed(out)?;
                // 2025-11-25: the answer to tasks/result names its task.
                let related = serde_json::value::to_raw_value(&json!({"taskId": task_id}))
                    .map_err(internal)?;
                result.body =
                    super::finish::with_meta(&result.body, meta::RELATED_TASK, related, true)?;
                self.finish(m, revision, result)
            }
        }
    }
}

/// Member `key` of `tools/call` params, decoded.
fn member<T: serde::de::DeserializeOwned>(
    params: &RawObject<'_>,
    key: &str,
) -> Result<Option<T>, ErrorObject> {
    params
        .get(key)
        .map(|raw| serde_json::from_str(raw.get()))
        .transpose()
        .map_err(|e| invalid_params(method::TOOLS_CALL, e))
}

/// What a route answers: the result, finished for the client's revision.
pub(super) type Answer = Result<Box<RawValue>, ErrorObject>;

fn with_retry_input(
    mut ctx: RequestContext,
    responses: Option<Map<String, Value>>,
    state: Option<String>,
) -> RequestContext {
    ctx.input_responses = responses.map(Into::into).unwrap_or_default();
    ctx.request_state = state;
    ctx
}

/// An outcome as a result: `complete` for a final one; the union model's encoding of an
/// `InputRequiredResult` or a task otherwise.
fn outcome_raw<T>(
    out: Outcome<T>,
    complete: impl FnOnce(T) -> Result<RawResult, ErrorObject>,
) -> Result<RawResult, ErrorObject> {
    match out {
        Outcome::Complete(t) => complete(t),
        Outcome::InputRequired(ir) => RawResult::canonical(&ir),
        Outcome::Task(mut t) => {
            t.result_type = Some(ResultType::Task);
            RawResult::canonical(&t)
        }
    }
}

/// [`outcome_raw`] of a typed handler's outcome.
fn typed<T: Serialize>(out: Outcome<T>) -> Result<RawResult, ErrorObject> {
    outcome_raw(out, |t| RawResult::canonical(&t))
}
