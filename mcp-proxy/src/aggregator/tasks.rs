//! Upstream tasks shown to hosts that take tasks (TOOL-21): a 2025-11-25 host that asked
//! for one, or a 2026-07-28 host that declared the tasks extension.
//!
//! An upstream's task is relayed under a gateway task id (unguessable, naming nothing of
//! the upstream), so hosts cannot reach tasks of other upstreams or of other hosts by
//! guessing, and two upstreams' equal ids never meet. Each era's shape is bridged:
//! the extension's `tasks/get` carries a finished task's outcome inline, which a
//! 2025-11-25 upstream gives only through `tasks/result`; a 2025-11-25 host's blocking
//! `tasks/result` is served from a 2026 upstream by polling its `tasks/get`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mcp_client::{CallOptions, Client};
use mcp_server::{Outcome, RequestContext};
use mcp_types::protocol::*;
use mcp_types::{codes, ErrorObject, Revision};
use serde_json::{json, Map, Value};

use super::{decode, input_required, strip_hop_meta, upstream_error, Aggregator};
use crate::bridge::new_state;

/// How long a task without a retention of its own stays routable.
const DEFAULT_RETENTION: Duration = Duration::from_secs(3600);
/// The longest any task stays routable (an upstream's `ttl: null` means unlimited).
const MAX_RETENTION: Duration = Duration::from_secs(24 * 3600);
/// Most tasks kept routable at once; past it the one expiring first is forgotten.
const MAX_TASKS: usize = 10_000;

/// Where a gateway task id leads.
#[derive(Clone)]
struct Route {
    upstream: usize,
    upstream_id: String,
    expires: Instant,
}

/// Gateway task id → the upstream task behind it.
#[derive(Default)]
pub(super) struct TaskTable {
    routes: Mutex<HashMap<String, Route>>,
}

impl TaskTable {
    /// A fresh gateway id for upstream `upstream`'s task `upstream_id`.
    fn register(&self, upstream: usize, upstream_id: String, retention: Duration) -> String {
        let id = new_state();
        let now = Instant::now();
        if let Ok(mut routes) = self.routes.lock() {
            routes.retain(|_, r| r.expires > now);
            if routes.len() >= MAX_TASKS {
                let first = routes
                    .iter()
                    .min_by_key(|(_, r)| r.expires)
                    .map(|(k, _)| k.clone());
                if let Some(k) = first {
                    routes.remove(&k);
                }
            }
            routes.insert(
                id.clone(),
                Route {
                    upstream,
                    upstream_id,
                    expires: now + retention.min(MAX_RETENTION),
                },
            );
        }
        id
    }

    fn get(&self, id: &str) -> Option<Route> {
        let routes = self.routes.lock().ok()?;
        routes
            .get(id)
            .filter(|r| r.expires > Instant::now())
            .cloned()
    }
}

fn unknown_task(id: &str) -> ErrorObject {
    ErrorObject::new(
        codes::INVALID_PARAMS,
        format!("Unknown task: {id:?} (never created here, or expired)"),
    )
}

/// The task in an upstream's answer to a task-augmented request, either era's shape.
fn created_task(upstream: &str, v: Value) -> Result<Task, ErrorObject> {
    let v = match v {
        Value::Object(mut o) if o.contains_key("task") => o.remove("task").unwrap_or_default(),
        other => other,
    };
    decode(upstream, v)
}

/// How long the upstream keeps the task, by either era's field.
fn retention(t: &Task) -> Duration {
    let ttl = t.ttl_ms.as_ref().or(t.ttl.as_ref());
    match ttl {
        Some(Value::Null) => MAX_RETENTION,
        Some(v) => v.as_u64().map_or(DEFAULT_RETENTION, Duration::from_millis),
        None => DEFAULT_RETENTION,
    }
}

impl Aggregator {
    /// The client of upstream `i`, or the error a host gets when it is down.
    fn task_client(&self, i: usize) -> Result<Client, ErrorObject> {
        let u = &self.inner.upstreams[i];
        u.client()
            .ok_or_else(|| ErrorObject::new(codes::INTERNAL_ERROR, u.unavailable()))
    }

    fn route_task(&self, id: &str) -> Result<Route, ErrorObject> {
        self.inner.tasks.get(id).ok_or_else(|| unknown_task(id))
    }

    /// One plain request about a task to its upstream.
    async fn task_request(
        &self,
        i: usize,
        method_name: &str,
        params: Value,
    ) -> Result<Value, ErrorObject> {
        let client = self.task_client(i)?;
        let opts = CallOptions {
            timeout: Some(self.inner.options.call_timeout),
            ..Default::default()
        };
        client
            .request(method_name, params, &opts)
            .await
            .map_err(|e| upstream_error(&self.inner.upstreams[i].config.key, e))
    }

    /// Shows an upstream's new task to the host under a gateway id.
    pub(super) fn relay_created(
        &self,
        i: usize,
        value: Value,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        let key = &self.inner.upstreams[i].config.key;
        let mut task = created_task(key, value)?;
        let id = self
            .inner
            .tasks
            .register(i, std::mem::take(&mut task.task_id), retention(&task));
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
        let route = self.route_task(gateway_id)?;
        let i = route.upstream;
        let key = self.inner.upstreams[i].config.key.clone();
        let v = self
            .task_request(i, method::TASKS_GET, json!({"taskId": route.upstream_id}))
            .await?;
        let mut task: Task = decode(&key, v)?;
        let upstream_rev = self.task_client(i)?.revision();
        if ctx.revision() == Revision::V2026_07_28 && upstream_rev != Revision::V2026_07_28 {
            match task.status {
                TaskStatus::Completed | TaskStatus::Failed => {
                    let outcome = self
                        .task_request(
                            i,
                            method::TASKS_RESULT,
                            json!({"taskId": route.upstream_id}),
                        )
                        .await;
                    inline_outcome(&mut task, outcome);
                }
                TaskStatus::InputRequired => {
                    // The questions reach a 2025-11-25 client only on a `tasks/result` call,
                    // which this gateway does not hold open for a polling host.
                    task.status = TaskStatus::Working;
                    task.status_message = Some(format!(
                        "upstream `{key}` is waiting for input; call the tool without a task \
                         to answer it through this gateway"
                    ));
                }
                _ => {}
            }
        }
        task.task_id = gateway_id.to_owned();
        strip_hop_meta(&mut task.meta);
        Ok(task)
    }

    /// `tasks/result` (a 2025-11-25 host): what the task's request returns, once it ends.
    /// From a 2025-11-25 upstream the blocking call is relayed (its questions reach the host
    /// as for any call); from a 2026 upstream its `tasks/get` is polled.
    pub(super) async fn relay_task_result(
        &self,
        ctx: &RequestContext,
        gateway_id: &str,
    ) -> Result<Outcome<Value>, ErrorObject> {
        let route = self.route_task(gateway_id)?;
        let i = route.upstream;
        let key = self.inner.upstreams[i].config.key.clone();
        if self.task_client(i)?.revision() != Revision::V2026_07_28 {
            let v = self
                .upstream_call(
                    i,
                    method::TASKS_RESULT,
                    json!({"taskId": route.upstream_id}),
                    ctx,
                )
                .await
                .map_err(|e| upstream_error(&key, e))?;
            if let Some(ir) = input_required(&key, &v)? {
                return Ok(Outcome::InputRequired(ir));
            }
            return Ok(Outcome::Complete(without_hop_meta(v)));
        }
        let deadline = Instant::now() + self.inner.options.call_timeout;
        loop {
            let v = self
                .task_request(i, method::TASKS_GET, json!({"taskId": route.upstream_id}))
                .await?;
            let task: Task = decode(&key, v)?;
            match task.status {
                TaskStatus::Completed => {
                    let result = task.result.unwrap_or_default();
                    return Ok(Outcome::Complete(without_hop_meta(Value::Object(result))));
                }
                TaskStatus::Failed => {
                    return Err(task
                        .error
                        .and_then(|e| serde_json::from_value(e).ok())
                        .unwrap_or_else(|| {
                            ErrorObject::new(
                                codes::INTERNAL_ERROR,
                                format!("upstream `{key}`'s task failed without saying why"),
                            )
                        }))
                }
                TaskStatus::Cancelled => {
                    return Err(ErrorObject::new(
                        codes::INTERNAL_ERROR,
                        format!("upstream `{key}`'s task was cancelled"),
                    ))
                }
                _ if Instant::now() >= deadline || ctx.is_cancelled() => {
                    return Err(ErrorObject::new(
                        codes::INTERNAL_ERROR,
                        format!(
                            "upstream `{key}`'s task did not end within {:?}",
                            self.inner.options.call_timeout
                        ),
                    ))
                }
                _ => {
                    let wait = task
                        .poll_interval_ms
                        .and_then(|n| n.as_u64())
                        .unwrap_or(500)
                        .clamp(50, 5000);
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(wait)) => {}
                        () = ctx.cancelled() => {}
                    }
                }
            }
        }
    }

    /// `tasks/cancel`: relayed; the task's state after it (a 2026 upstream only
    /// acknowledges, so its state is fetched).
    pub(super) async fn relay_cancel_task(
        &self,
        ctx: &RequestContext,
        gateway_id: &str,
    ) -> Result<Task, ErrorObject> {
        let route = self.route_task(gateway_id)?;
        let i = route.upstream;
        let key = self.inner.upstreams[i].config.key.clone();
        let v = self
            .task_request(
                i,
                method::TASKS_CANCEL,
                json!({"taskId": route.upstream_id}),
            )
            .await?;
        if v.get("taskId").is_none() {
            return self.relay_get_task(ctx, gateway_id).await;
        }
        let mut task: Task = decode(&key, v)?;
        task.task_id = gateway_id.to_owned();
        strip_hop_meta(&mut task.meta);
        Ok(task)
    }

    /// `tasks/update` (a 2026 host): the answers go to a 2026 upstream; a 2025-11-25
    /// upstream's task never shows `inputRequests` here, so there is nothing to answer.
    pub(super) async fn relay_update_task(
        &self,
        gateway_id: &str,
        responses: Option<Map<String, Value>>,
    ) -> Result<(), ErrorObject> {
        let route = self.route_task(gateway_id)?;
        let i = route.upstream;
        if self.task_client(i)?.revision() != Revision::V2026_07_28 {
            return Ok(());
        }
        let mut params = json!({"taskId": route.upstream_id});
        if let Some(r) = responses {
            params["inputResponses"] = Value::Object(r);
        }
        self.task_request(i, method::TASKS_UPDATE, params)
            .await
            .map(|_| ())
    }
}

/// A finished 2025-11-25 task's outcome, inline as the extension carries it. A result
/// (a tool's own `isError` included) makes the task `completed`; a JSON-RPC error, `failed`.
fn inline_outcome(task: &mut Task, outcome: Result<Value, ErrorObject>) {
    match outcome {
        Ok(Value::Object(mut result)) => {
            let mut meta = result
                .remove("_meta")
                .and_then(|m| serde_json::from_value(m).ok());
            strip_hop_meta(&mut meta);
            if let Some(m) = meta {
                result.insert("_meta".into(), Value::Object(m));
            }
            task.status = TaskStatus::Completed;
            task.result = Some(result);
            task.error = None;
        }
        Ok(other) => {
            task.status = TaskStatus::Failed;
            task.error = Some(json!(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!("the upstream's task result is not an object: {other}"),
            )));
        }
        Err(e) => {
            task.status = TaskStatus::Failed;
            task.error = Some(json!(e));
            task.result = None;
        }
    }
}

fn without_hop_meta(v: Value) -> Value {
    match v {
        Value::Object(mut o) => {
            let mut meta = o
                .remove("_meta")
                .and_then(|m| serde_json::from_value(m).ok());
            strip_hop_meta(&mut meta);
            if let Some(m) = meta {
                o.insert("_meta".into(), Value::Object(m));
            }
            Value::Object(o)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateway_task_ids_route_to_their_upstream_task_until_they_expire() {
        let table = TaskTable::default();
        let a = table.register(0, "1".into(), Duration::from_secs(60));
        let b = table.register(1, "1".into(), Duration::from_secs(60));
        assert_ne!(a, b);
        assert_ne!(a, "1");
        let (ra, rb) = (table.get(&a).expect("a"), table.get(&b).expect("b"));
        assert_eq!((ra.upstream, ra.upstream_id.as_str()), (0, "1"));
        assert_eq!((rb.upstream, rb.upstream_id.as_str()), (1, "1"));
        assert!(table.get("1").is_none());
        let gone = table.register(0, "2".into(), Duration::ZERO);
        assert!(table.get(&gone).is_none());
    }

    #[test]
    fn a_finished_legacy_task_carries_its_outcome_inline() {
        let mut t = Task {
            status: TaskStatus::Failed,
            ..Default::default()
        };
        inline_outcome(
            &mut t,
            Ok(json!({"content": [], "isError": true,
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "u"}, "k": 1}})),
        );
        assert_eq!(t.status, TaskStatus::Completed);
        let r = t.result.expect("result");
        assert_eq!(r["isError"], true);
        assert_eq!(r["_meta"], json!({"k": 1}));
        let mut t = Task::default();
        inline_outcome(&mut t, Err(ErrorObject::new(-32001, "boom")));
        assert_eq!(t.status, TaskStatus::Failed);
        assert_eq!(t.error.expect("error")["message"], "boom");
    }
}
