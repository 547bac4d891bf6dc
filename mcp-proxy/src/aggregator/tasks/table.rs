//! The gateway's task ids (sealed, `task_id.rs`) and what this process keeps beside one:
//! the questions of a 2025-11-25 upstream task held for a 2026 host, kept for the task's
//! retention. A task id that opens and is not here routes by what it says.

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

/// How long a task without a retention of its own stays routable.
pub(crate) const DEFAULT_RETENTION: Duration = Duration::from_secs(3600);
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

/// Gateway task id → the upstream task behind it.
#[derive(Default)]
pub(crate) struct TaskTable {
    routes: Mutex<HashMap<String, Route>>,
}

impl Route {
    /// The route a task id says, where this process keeps nothing beside it.
    pub(crate) fn said(upstream: Arc<str>, upstream_id: String) -> Route {
        Route {
            upstream,
            upstream_id,
            expires: Instant::now() + MAX_RETENTION,
            input: None,
            asked: Arc::default(),
        }
    }
}

impl TaskTable {
    /// Keeps gateway id `id` of upstream `upstream`'s task `upstream_id` for `retention`.
    pub(crate) fn register(
        &self,
        id: &str,
        upstream: Arc<str>,
        upstream_id: String,
        retention: Duration,
    ) {
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
                id.to_owned(),
                Route {
                    upstream,
                    upstream_id,
                    expires: now + retention.min(MAX_RETENTION),
                    input: None,
                    asked: Arc::default(),
                },
            );
        }
    }

    /// The held input of task `id`: the live one, or a fresh one with the receiver of its
    /// answers (the caller starts holding the call).
    pub(crate) fn input(&self, id: &str) -> Option<(Arc<TaskInput>, Option<Answers>)> {
        let mut routes = self.routes.lock();
        let route = routes.get_mut(id).filter(|r| r.expires > Instant::now())?;
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
    fn what_is_kept_beside_a_task_id_is_kept_until_it_expires() {
        let table = TaskTable::default();
        let (u0, u1): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        table.register("id-a", u0.clone(), "1".into(), Duration::from_secs(60));
        table.register("id-b", u1.clone(), "1".into(), Duration::from_secs(60));
        let (ra, rb) = (table.get("id-a").expect("a"), table.get("id-b").expect("b"));
        assert_eq!((&ra.upstream, ra.upstream_id.as_str()), (&u0, "1"));
        assert_eq!((&rb.upstream, rb.upstream_id.as_str()), (&u1, "1"));
        assert!(table.get("1").is_none());
        table.register("gone", u0, "2".into(), Duration::ZERO);
        assert!(table.get("gone").is_none());
        assert!(
            table.input("gone").is_none(),
            "nothing is held for an expired task"
        );
    }
}
