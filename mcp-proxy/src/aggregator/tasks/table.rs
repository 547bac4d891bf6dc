//! The gateway's task ids: each upstream task a host sees, under an id of the gateway's
//! (unpredictable, naming nothing of the upstream), kept for the task's retention.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_types::protocol::*;
use mcp_types::{codes, ErrorObject};
use parking_lot::Mutex;
use serde_json::{Map, Value};
use tokio::sync::{mpsc, watch};

use crate::aggregator::answers::decode;
use crate::upstream_questions::new_state;

/// How long a task without a retention of its own stays routable.
const DEFAULT_RETENTION: Duration = Duration::from_secs(3600);
/// The longest any task stays routable (an upstream's `ttl: null` means unlimited).
const MAX_RETENTION: Duration = Duration::from_secs(24 * 3600);
/// Most tasks kept routable at once; past it the one expiring first is forgotten.
const MAX_TASKS: usize = 10_000;

/// Where a gateway task id leads.
#[derive(Clone)]
pub(crate) struct Route {
    /// The key of the upstream that runs it: the aggregators a reload makes share the
    /// table, and each finds the upstream by key among its own.
    pub(crate) upstream: Arc<str>,
    /// Who started it (see [`owner_of`]): only they may reach it.
    pub(crate) owner: Option<String>,
    pub(crate) upstream_id: String,
    pub(crate) expires: Instant,
    /// A 2025-11-25 upstream task's questions, held for a 2026 host that polls.
    pub(crate) input: Option<Arc<TaskInput>>,
    /// Questions asked so far over every hold: input keys are never reused in a task.
    pub(crate) asked: Arc<AtomicUsize>,
}

/// Where a host's answers to a held task's questions arrive.
pub(crate) type Answers = mpsc::UnboundedReceiver<Map<String, Value>>;

/// A 2025-11-25 task asks its questions only on a `tasks/result` call held open; the
/// extension shows them as `inputRequests` on `tasks/get` and takes the answers on
/// `tasks/update`. The gateway holds that call for the 2026 host and carries both ways.
pub(crate) struct TaskInput {
    /// The questions open now, by input key.
    pub(crate) requests: watch::Sender<Option<Map<String, Value>>>,
    /// The host's answers.
    pub(crate) answers: mpsc::UnboundedSender<Map<String, Value>>,
    /// What the held `tasks/result` returned: the task's outcome.
    pub(crate) outcome: Mutex<Option<Result<Value, ErrorObject>>>,
    /// The held call ended (a new one is needed if the task asks again).
    pub(crate) done: AtomicBool,
}

/// Who a request is for, as a task's owner: the principal's subject, credential and
/// issuer together (a JWT's `sub` and an API key's subject may be the same text).
pub(crate) fn owner_of(principal: Option<&mcp_server::auth::Principal>) -> Option<String> {
    principal.map(mcp_server::auth::Principal::identity)
}

/// Gateway task id → the upstream task behind it.
#[derive(Default)]
pub(crate) struct TaskTable {
    routes: Mutex<HashMap<String, Route>>,
}

impl TaskTable {
    /// A fresh gateway id for upstream `upstream`'s task `upstream_id`.
    pub(crate) fn register(
        &self,
        upstream: Arc<str>,
        owner: Option<String>,
        upstream_id: String,
        retention: Duration,
    ) -> String {
        let id = new_state();
        let now = Instant::now();
        {
            let mut routes = self.routes.lock();
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
                    owner,
                    upstream_id,
                    expires: now + retention.min(MAX_RETENTION),
                    input: None,
                    asked: Arc::default(),
                },
            );
        }
        id
    }

    /// The held input of task `id`: the live one, or a fresh one with the receiver of its
    /// answers (the caller starts holding the call).
    pub(crate) fn input(&self, id: &str) -> Option<(Arc<TaskInput>, Option<Answers>)> {
        let mut routes = self.routes.lock();
        let route = routes.get_mut(id)?;
        if let Some(live) = route
            .input
            .as_ref()
            .filter(|i| !i.done.load(Ordering::SeqCst))
        {
            return Some((live.clone(), None));
        }
        let (answers, rx) = mpsc::unbounded_channel();
        let fresh = Arc::new(TaskInput {
            requests: watch::channel(None).0,
            answers,
            outcome: Mutex::new(None),
            done: AtomicBool::new(false),
        });
        route.input = Some(fresh.clone());
        Some((fresh, Some(rx)))
    }

    pub(crate) fn get(&self, id: &str) -> Option<Route> {
        let routes = self.routes.lock();
        routes
            .get(id)
            .filter(|r| r.expires > Instant::now())
            .cloned()
    }
}

pub(crate) fn unknown_task(id: &str) -> ErrorObject {
    ErrorObject::new(
        codes::INVALID_PARAMS,
        format!("Unknown task: {id:?} (never created here, or expired)"),
    )
}

/// The task in an upstream's answer to a task-augmented request, either era's shape.
pub(crate) fn created_task(upstream: &str, v: Value) -> Result<Task, ErrorObject> {
    let v = match v {
        Value::Object(mut o) if o.contains_key("task") => o.remove("task").unwrap_or_default(),
        other => other,
    };
    decode(upstream, v)
}

/// How long the upstream keeps the task, by either era's field.
pub(crate) fn retention(t: &Task) -> Duration {
    let ttl = t.ttl_ms.as_ref().or(t.ttl.as_ref());
    match ttl {
        Some(Value::Null) => MAX_RETENTION,
        Some(v) => v.as_u64().map_or(DEFAULT_RETENTION, Duration::from_millis),
        None => DEFAULT_RETENTION,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateway_task_ids_route_to_their_upstream_task_until_they_expire() {
        let table = TaskTable::default();
        let (u0, u1): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        let a = table.register(u0.clone(), None, "1".into(), Duration::from_secs(60));
        let b = table.register(u1.clone(), None, "1".into(), Duration::from_secs(60));
        assert_ne!(a, b);
        assert_ne!(a, "1");
        let (ra, rb) = (table.get(&a).expect("a"), table.get(&b).expect("b"));
        assert_eq!((&ra.upstream, ra.upstream_id.as_str()), (&u0, "1"));
        assert_eq!((&rb.upstream, rb.upstream_id.as_str()), (&u1, "1"));
        assert!(table.get("1").is_none());
        let gone = table.register(u0, None, "2".into(), Duration::ZERO);
        assert!(table.get(&gone).is_none());
    }
}
