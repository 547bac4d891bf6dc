//! Upstream tasks shown to hosts that take tasks (TOOL-21): a 2025-11-25 host that asked
//! for one, or a 2026-07-28 host that declared the tasks extension.
//!
//! An upstream's task is relayed under a gateway task id, sealed (`task_id.rs`: the
//! upstream's key and task id, the principal, the retention, readable by no host), so
//! hosts cannot reach tasks of other upstreams or of other hosts by guessing or altering,
//! two upstreams' equal ids never meet, and any replica with the keys routes it. Each era's shape is bridged:
//! the extension's `tasks/get` carries a finished task's outcome inline, which a
//! 2025-11-25 upstream gives only through `tasks/result`, and its questions, which it asks
//! only on a `tasks/result` held open, are shown as `inputRequests` and answered with
//! `tasks/update`. A 2026 upstream's task reaches a 2026 host as it is.

use super::id::UpstreamId;
use super::links::Need;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_client::{CallOptions, Client, ClientError};
use mcp_revisions::features;
use mcp_server::{Outcome, RequestContext};
use mcp_types::protocol::*;
use mcp_types::raw::RawObject;
use mcp_types::{codes, ErrorObject};
use serde_json::{json, Map, Value};

use super::answers::{decode, input_required, strip_hop_meta, strip_hop_meta_raw, upstream_error};
use super::flights::Flights;
use super::pool::Pool;
use super::request_state::RequestBinding;
use super::visibility::Visibility;
use std::sync::Arc;

mod hold;
mod table;
mod task_id;

use hold::{hold, inline_outcome, QUESTIONS_WAIT};
pub(super) use table::TaskTable;
use table::{created_task, retention, unknown_task, Route};

/// Whether an upstream's error says a call needs the tasks extension (`-32021` naming it).
pub(super) fn needs_tasks_extension(e: &ErrorObject) -> bool {
    e.code == codes::MISSING_REQUIRED_CLIENT_CAPABILITY
        && e.data
            .as_ref()
            .and_then(|d| d.pointer("/requiredCapabilities/extensions"))
            .and_then(Value::as_object)
            .is_some_and(|x| x.contains_key(TASKS_EXTENSION))
}

/// The host's capabilities and the tasks extension, which the gateway serves itself.
pub(super) fn with_tasks_extension(ctx: &RequestContext) -> Value {
    let mut caps = json!(ctx.client_capabilities());
    if let Value::Object(c) = &mut caps {
        if let Value::Object(x) = c.entry("extensions").or_insert_with(|| json!({})) {
            x.insert(TASKS_EXTENSION.into(), json!({}));
        }
    }
    caps
}

/// The upstream tasks hosts follow through the gateway (see the module's docs). Cheap
/// to clone.
#[derive(Clone)]
pub(super) struct Tasks {
    flights: Flights,
    /// Upstream tasks shown to hosts, by gateway task id.
    table: Arc<TaskTable>,
    visibility: Arc<Visibility>,
}

impl Tasks {
    /// Tasks relayed over `flights`, kept in `table`, reached by whom `visibility` says.
    pub(super) fn new(
        flights: Flights,
        table: Arc<TaskTable>,
        visibility: Arc<Visibility>,
    ) -> Tasks {
        Tasks {
            flights,
            table,
            visibility,
        }
    }

    /// The flights the tasks' requests go on.
    pub(super) fn flights(&self) -> &Flights {
        &self.flights
    }

    fn pool(&self) -> &Pool {
        self.flights.links().pool()
    }

    /// The client of upstream `i`, or the error a host gets when it is down.
    fn task_client(&self, i: UpstreamId) -> Result<Client, ErrorObject> {
        let u = &self.pool().get(i);
        u.client()
            .ok_or_else(|| ErrorObject::new(codes::INTERNAL_ERROR, u.unavailable()))
    }

    /// Where task `id` leads, for the host of `ctx`: a task another principal started, or
    /// one of an upstream outside the view, is unknown to it.
    /// The upstream is found by key: a task made before a reload leads to the upstream of
    /// that key now (one that went away takes its tasks with it).
    fn route_task(
        &self,
        ctx: &RequestContext,
        id: &str,
    ) -> Result<(Route, UpstreamId), ErrorObject> {
        let claims = task_id::open(self.flights.sealer(), id, ctx.principal()).map_err(|e| {
            tracing::debug!("task id refused: {e}");
            unknown_task(id)
        })?;
        let route = self
            .table
            .get(id)
            .unwrap_or_else(|| Route::said(claims.upstream.into(), claims.upstream_id));
        let i = self
            .pool()
            .id_of(&route.upstream)
            .ok_or_else(|| unknown_task(id))?;
        match self.visibility.seen(ctx).reaches(i) {
            true => Ok((route, i)),
            false => Err(unknown_task(id)),
        }
    }

    /// One plain request about a task to its upstream, for the host of `ctx`.
    async fn task_call(
        &self,
        ctx: &RequestContext,
        i: UpstreamId,
        method_name: &str,
        mut params: Value,
    ) -> Result<Value, ClientError> {
        // A task lives in the upstream session that created it: the host's own, if it has one.
        let client = self.flights.links().link(i, ctx, Need::State).await?.client;
        if features::per_request_meta(client.revision()) {
            // The host's capabilities; the extension too, which the gateway serves itself
            // (a host that reaches tasks/* declared it already).
            params["_meta"] =
                json!({mcp_types::meta::CLIENT_CAPABILITIES: with_tasks_extension(ctx)});
        }
        let opts = CallOptions::default().timeout(self.pool().call_timeout(i));
        client.request(method_name, params, &opts).await
    }

    /// [`Self::task_call`], failing as the host's error.
    async fn task_request(
        &self,
        ctx: &RequestContext,
        i: UpstreamId,
        method_name: &str,
        params: Value,
    ) -> Result<Value, ErrorObject> {
        self.task_call(ctx, i, method_name, params)
            .await
            .map_err(|e| upstream_error(self.pool().key(i), e))
    }

    /// Polls upstream `i`'s task with `tasks/get` at the task's interval until it leaves
    /// `working` (within the call timeout, and while the host of `ctx` waits), passing each
    /// new status message to that host as progress. `None`: a state that does not read as
    /// a task.
    async fn poll_task(
        &self,
        i: UpstreamId,
        task_id: &str,
        ctx: &RequestContext,
    ) -> Result<Option<Task>, ClientError> {
        let limit = self.pool().call_timeout(i);
        let deadline = tokio::time::Instant::now() + limit;
        let mut said: Option<String> = None;
        loop {
            let v = self
                .task_call(ctx, i, method::TASKS_GET, json!({"taskId": task_id}))
                .await?;
            let Ok(task) = serde_json::from_value::<Task>(v) else {
                return Ok(None);
            };
            if task.status != TaskStatus::Working {
                return Ok(Some(task));
            }
            if task.status_message.is_some() && task.status_message != said {
                // Above whatever the upstream's own progress reached.
                let next = ctx.last_progress().map_or(1.0, |p| p.floor() + 1.0);
                ctx.progress(next, None, task.status_message.as_deref())
                    .await;
                said = task.status_message;
            }
            let wait = task
                .poll_interval
                .or(task.poll_interval_ms)
                .and_then(|n| n.as_u64())
                .unwrap_or(500)
                .clamp(50, 5000);
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(wait)) => {}
                () = ctx.cancelled() => return Err(ClientError::Cancelled),
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ClientError::Timeout(limit));
            }
        }
    }

    /// Follows a 2025-11-25 upstream task to its end for a host that called plainly:
    /// [`Self::poll_task`], then `tasks/result`: at once for a task that ended, held open
    /// for one that waits for input, whose questions reach the host as in any call.
    /// `host`: the host's call, which a retry must be to resume the task's questions.
    pub(super) async fn await_task(
        &self,
        i: UpstreamId,
        task_id: &str,
        ctx: &RequestContext,
        host: RequestBinding,
    ) -> Result<Value, ClientError> {
        // An unreadable state: `tasks/result` will say what happened.
        self.poll_task(i, task_id, ctx).await?;
        let params = json!({"taskId": task_id});
        self.flights
            .upstream_call_for(i, method::TASKS_RESULT, params, ctx, Some(host))
            .await
    }

    /// Follows a 2026 upstream's task that the gateway took for a legacy host:
    /// [`Self::poll_task`], then the task's inline result. A task that asks for input
    /// cannot be answered through such a host (it has no `tasks/update`), nor one the host
    /// gave up on: it is cancelled.
    pub(super) async fn follow_extension_task(
        &self,
        i: UpstreamId,
        task_id: &str,
        ctx: &RequestContext,
    ) -> Result<Value, ClientError> {
        let polled = self.poll_task(i, task_id, ctx).await;
        let cancel = || self.task_call(ctx, i, method::TASKS_CANCEL, json!({"taskId": task_id}));
        let task = match polled {
            Ok(Some(t)) => t,
            Ok(None) => {
                return Err(ClientError::InvalidResult {
                    method: method::TASKS_GET.into(),
                    reason: "not a task".into(),
                })
            }
            Err(e) => {
                let _ = cancel().await;
                return Err(e);
            }
        };
        match task.status {
            TaskStatus::Completed => Ok(Value::Object(task.result.unwrap_or_default())),
            TaskStatus::Failed => Err(ClientError::Server(
                task.error
                    .and_then(|e| serde_json::from_value(e).ok())
                    .unwrap_or_else(|| {
                        ErrorObject::new(codes::INTERNAL_ERROR, "the upstream task failed")
                    }),
            )),
            TaskStatus::InputRequired => {
                let _ = cancel().await;
                Err(ClientError::Server(ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    "the upstream task asks for input, which only a host that declares the \
                     tasks extension can give (tasks/update)",
                )))
            }
            _ => Err(ClientError::Server(ErrorObject::new(
                codes::INTERNAL_ERROR,
                "the upstream cancelled the task",
            ))),
        }
    }

    /// Shows an upstream's new task to the host under a gateway id.
    pub(super) fn relay_created(
        &self,
        ctx: &RequestContext,
        i: UpstreamId,
        value: Value,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        let key = self.pool().key(i);
        let mut task = created_task(key, value)?;
        let upstream_id = std::mem::take(&mut task.task_id);
        let kept = retention(&task);
        let id = task_id::seal(
            self.flights.sealer(),
            key,
            &upstream_id,
            ctx.principal(),
            kept,
        )
        .map_err(|e| {
            ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!("upstream `{key}` made a task the gateway cannot relay: {e}"),
            )
        })?;
        self.table.register(&id, key.into(), upstream_id, kept);
        tracing::debug!(upstream = %key, task = %id, "relaying an upstream task");
        task.task_id = id;
        task.result_type = None;
        strip_hop_meta(&mut task.meta);
        Ok(Outcome::Task(Box::new(task)))
    }

    /// `tasks/get`: the upstream task's state; for a 2026 host, a finished 2025-11-25
    /// task's outcome is fetched with `tasks/result` and carried inline.
    pub(super) async fn relay_get_task(
        &self,
        ctx: &RequestContext,
        gateway_id: &str,
    ) -> Result<Task, ErrorObject> {
        let (route, i) = self.route_task(ctx, gateway_id)?;
        let key = self.pool().key(i);
        let v = self
            .task_request(
                ctx,
                i,
                method::TASKS_GET,
                json!({"taskId": route.upstream_id}),
            )
            .await?;
        let mut task: Task = decode(key, v)?;
        let upstream_rev = self.task_client(i)?.revision();
        if features::has_tasks_extension(ctx.revision())
            && !features::has_tasks_extension(upstream_rev)
        {
            match task.status {
                TaskStatus::Completed | TaskStatus::Failed => {
                    let held = route.input.as_ref().and_then(|i| i.outcome.lock().clone());
                    let outcome = match held {
                        Some(o) => o,
                        None => {
                            let params = json!({"taskId": route.upstream_id});
                            match self.task_call(ctx, i, method::TASKS_RESULT, params).await {
                                Ok(v) => Ok(v),
                                Err(ClientError::Server(e)) => Err(e),
                                // Not the task's outcome: the host asks again later.
                                Err(e) => return Err(upstream_error(key, e)),
                            }
                        }
                    };
                    inline_outcome(&mut task, outcome);
                }
                TaskStatus::InputRequired => match self.questions(ctx, gateway_id, &route, i).await
                {
                    Some(requests) => task.input_requests = Some(requests),
                    None => {
                        // Asked, but its questions have not reached the gateway yet.
                        task.status = TaskStatus::Working;
                        task.status_message =
                            Some(format!("upstream `{key}` is about to ask for input"));
                    }
                },
                _ => {}
            }
        }
        task.task_id = gateway_id.to_owned();
        strip_hop_meta(&mut task.meta);
        Ok(task)
    }

    /// `tasks/result` (a 2025-11-25 host): what the task's request returns, once it ends.
    /// The blocking call is relayed, and the task's questions reach the host as for any
    /// call. (Only a 2025-11-25 upstream makes tasks for a 2025-11-25 host: a 2026 tool
    /// declares no `taskSupport`, so such a host cannot ask one for a task.)
    pub(super) async fn relay_task_result(
        &self,
        ctx: &RequestContext,
        gateway_id: &str,
    ) -> Result<Outcome<Value>, ErrorObject> {
        let (route, i) = self.route_task(ctx, gateway_id)?;
        let key = self.pool().key(i);
        if features::has_tasks_extension(self.task_client(i)?.revision()) {
            return Err(ErrorObject::new(
                codes::INVALID_PARAMS,
                format!("Task {gateway_id:?} is a 2026-07-28 task of upstream `{key}`: follow it with tasks/get"),
            ));
        }
        let mut v = self
            .flights
            .upstream_call(
                i,
                method::TASKS_RESULT,
                json!({"taskId": route.upstream_id}),
                ctx,
            )
            .await
            .map_err(|e| upstream_error(key, e))?;
        if let Some(ir) = input_required(key, &v)? {
            return Ok(Outcome::InputRequired(ir));
        }
        if let Value::Object(o) = &mut v {
            strip_hop_meta_raw(o);
        }
        Ok(Outcome::Complete(v))
    }

    /// `tasks/cancel`: relayed; the task's state after it (a 2026 upstream only
    /// acknowledges, so its state is fetched).
    pub(super) async fn relay_cancel_task(
        &self,
        ctx: &RequestContext,
        gateway_id: &str,
    ) -> Result<Task, ErrorObject> {
        let (route, i) = self.route_task(ctx, gateway_id)?;
        let key = self.pool().key(i);
        let params = json!({"taskId": route.upstream_id});
        let v = match self.task_call(ctx, i, method::TASKS_CANCEL, params).await {
            Ok(v) => v,
            // 2025-11-25 refuses to cancel a task that has ended; the extension acknowledges
            // any cancel (cancellation is cooperative), so a 2026 host hears the state.
            Err(ClientError::Server(e))
                if e.code == codes::INVALID_PARAMS
                    && features::has_tasks_extension(ctx.revision()) =>
            {
                return self.relay_get_task(ctx, gateway_id).await;
            }
            Err(e) => return Err(upstream_error(key, e)),
        };
        if v.get("taskId").is_none() {
            return self.relay_get_task(ctx, gateway_id).await;
        }
        let mut task: Task = decode(key, v)?;
        task.task_id = gateway_id.to_owned();
        strip_hop_meta(&mut task.meta);
        Ok(task)
    }

    /// The open questions of a 2025-11-25 task waiting for input: holds its `tasks/result`
    /// (once) and waits briefly for the questions to arrive on it.
    async fn questions(
        &self,
        ctx: &RequestContext,
        gateway_id: &str,
        route: &Route,
        i: UpstreamId,
    ) -> Option<Map<String, Value>> {
        let (input, fresh) = self.table.input(gateway_id)?;
        let mut open = input.requests.subscribe();
        if let Some(answers) = fresh {
            let params = json!({"taskId": route.upstream_id});
            let link = self.flights.links().link(i, ctx, Need::State).await;
            let launched = self
                .flights
                .hop_value_params(i, method::TASKS_RESULT, params, ctx)
                .and_then(|p| {
                    let p = RawObject::from_raw(&p).map_err(|e| ClientError::InvalidResult {
                        method: method::TASKS_RESULT.into(),
                        reason: e.to_string(),
                    })?;
                    Ok(self.flights.launch(i, link?, method::TASKS_RESULT, p, ctx))
                });
            match launched {
                Ok(flight) => {
                    let wait = self.pool().input_timeout();
                    let asked = route.asked.clone();
                    tokio::spawn(hold(flight, input.clone(), answers, asked, wait));
                }
                Err(e) => {
                    input.done.store(true, Ordering::SeqCst);
                    tracing::warn!(task = %gateway_id, "cannot hold the task's tasks/result: {e}");
                    return None;
                }
            }
        }
        let arrived = tokio::time::timeout(QUESTIONS_WAIT, open.wait_for(Option::is_some)).await;
        if let Ok(Ok(open)) = arrived {
            return open.clone();
        }
        None
    }

    /// `tasks/update` (a 2026 host): the answers go to a 2026 upstream, or to the questions
    /// of a 2025-11-25 upstream's task that the gateway holds.
    pub(super) async fn relay_update_task(
        &self,
        ctx: &RequestContext,
        gateway_id: &str,
        responses: Option<Map<String, Value>>,
    ) -> Result<(), ErrorObject> {
        let (route, i) = self.route_task(ctx, gateway_id)?;
        if !features::has_tasks_extension(self.task_client(i)?.revision()) {
            // Answers to questions not open are ignored, as the extension says.
            if let (Some(input), Some(r)) = (&route.input, responses) {
                let _ = input.answers.send(r);
            }
            return Ok(());
        }
        let mut params = json!({"taskId": route.upstream_id});
        if let Some(r) = responses {
            params["inputResponses"] = Value::Object(r);
        }
        self.task_request(ctx, i, method::TASKS_UPDATE, params)
            .await
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::test_parts::{connect, flights, ids, in_process, parts, request};
    use super::*;
    use crate::policy::Surface;

    /// Tasks relayed to upstream `fs`, connected, none yet.
    async fn tasks() -> (Tasks, UpstreamId) {
        let (pool, catalog) = parts(vec![in_process("fs", vec!["slow"])]);
        let i = ids(1)[0];
        connect(&pool, i).await;
        let flights = flights(pool, catalog);
        let keys = ["fs".to_string()].into_iter().collect();
        let visibility = Arc::new(Visibility::new(None, Surface::Direct, keys));
        (Tasks::new(flights, Arc::default(), visibility), i)
    }

    fn created(id: &str) -> Value {
        json!({"task": {
            "taskId": id,
            "status": "working",
            "createdAt": "2026-12-05T10:00:00Z",
            "lastUpdatedAt": "2026-12-05T10:00:00Z",
            "ttl": 60000,
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": id}}
        }})
    }

    #[tokio::test]
    async fn an_upstream_task_reaches_the_host_under_an_id_of_the_gateways() {
        let (tasks, i) = tasks().await;
        let held = request().await;
        let shown = match tasks.relay_created(&held.ctx, i, created("up-1")) {
            Ok(Outcome::Task(t)) => t,
            _ => panic!("not a task"),
        };
        assert_ne!(
            shown.task_id, "up-1",
            "the upstream's id never reaches the host"
        );
        assert!(shown.task_id.len() >= 16, "unguessable: {}", shown.task_id);
        assert_eq!(shown.status, TaskStatus::Working);
        let route = tasks.table.get(&shown.task_id).expect("registered");
        assert_eq!(
            (&*route.upstream, route.upstream_id.as_str()),
            ("fs", "up-1")
        );
        let (again, j) = tasks.route_task(&held.ctx, &shown.task_id).expect("routed");
        assert_eq!((again.upstream_id.as_str(), j), ("up-1", i));
        // Two upstream tasks of one id are two gateway tasks.
        let other = match tasks.relay_created(&held.ctx, i, created("up-1")) {
            Ok(Outcome::Task(t)) => t.task_id,
            _ => panic!("not a task"),
        };
        assert_ne!(other, shown.task_id);
    }

    #[tokio::test]
    async fn a_task_never_made_here_is_unknown() {
        let (tasks, _) = tasks().await;
        let held = request().await;
        for id in ["up-1", "", "gw-0000000000000000"] {
            let e = tasks
                .relay_get_task(&held.ctx, id)
                .await
                .expect_err("unknown");
            assert_eq!(e.code, codes::INVALID_PARAMS, "{id:?}");
            assert!(
                e.message.starts_with("Unknown task"),
                "{id:?}: {}",
                e.message
            );
        }
    }

    #[tokio::test]
    async fn what_is_not_a_task_is_the_upstreams_protocol_error() {
        let (tasks, i) = tasks().await;
        let held = request().await;
        let e = tasks
            .relay_created(&held.ctx, i, json!({"content": []}))
            .expect_err("not a task");
        assert!(
            e.message.contains("fs"),
            "names the upstream: {}",
            e.message
        );
    }
}
