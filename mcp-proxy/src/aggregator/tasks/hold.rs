//! A 2025-11-25 task's questions for a 2026 host: the `tasks/result` held open upstream
//! (its questions shown as `inputRequests`, answered by `tasks/update`), and a finished
//! task's outcome carried inline.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_client::ClientError;
use mcp_types::protocol::*;
use mcp_types::{codes, ErrorObject};
use serde_json::{json, Map, Value};

use super::table::{Answers, TaskInput};
use crate::aggregator::answers::strip_hop_meta_raw;
use crate::upstream_questions::{Flight, Step};

/// How long a `tasks/get` waits for a task's questions to reach the gateway.
pub(crate) const QUESTIONS_WAIT: Duration = Duration::from_secs(2);

/// Drives a held `tasks/result`: its questions out to the host, the answers back, and its
/// outcome kept for `tasks/get`. Questions unanswered after `wait` fail upstream.
pub(crate) async fn hold(
    mut f: Flight,
    input: Arc<TaskInput>,
    mut answers: Answers,
    asked: Arc<AtomicUsize>,
    wait: Duration,
) {
    // Keys go on from the task's earlier holds.
    f.asked = asked.load(Ordering::SeqCst);
    let mut deadline = None;
    // Every question open now: a new round adds to it, an answer takes from it.
    let mut open = Map::new();
    let outcome = loop {
        let expiry = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            step = f.next() => match step {
                Step::Done(r) => break r.and_then(|raw| {
                    serde_json::from_str::<Value>(raw.get()).map_err(|e| ClientError::InvalidResult {
                        method: method::TASKS_RESULT.into(),
                        reason: e.to_string(),
                    })
                }),
                // Nobody follows a held call's progress or logs: the task's status says it.
                Step::Progress(_) => {}
                Step::Events { asks, .. } if asks.is_empty() => {}
                Step::Events { asks, .. } => {
                    open.extend(f.hand_over(asks));
                    asked.store(f.asked, Ordering::SeqCst);
                    input.requests.send_replace(Some(open.clone()));
                    // Each round's questions get the whole wait.
                    deadline = Some(tokio::time::Instant::now() + wait);
                }
            },
            Some(r) = answers.recv() => {
                for key in f.answer_some(&r) {
                    open.remove(&key);
                }
                if open.is_empty() {
                    input.requests.send_replace(None);
                    deadline = None;
                } else {
                    input.requests.send_replace(Some(open.clone()));
                }
            }
            () = expiry => {
                tracing::warn!("a host never answered a task's questions; they fail upstream");
                f.pending.clear();
                open.clear();
                input.requests.send_replace(None);
                deadline = None;
            }
        }
    };
    // A transport failure is no outcome of the task: `tasks/get` asks again then.
    let kept = match outcome {
        Ok(v) => Some(Ok(v)),
        Err(mcp_client::ClientError::Server(e)) => Some(Err(e)),
        Err(e) => {
            tracing::debug!("a held tasks/result ended without the task's outcome: {e}");
            None
        }
    };
    *input.outcome.lock() = kept;
    input.requests.send_replace(None);
    input.done.store(true, Ordering::SeqCst);
}

/// A finished 2025-11-25 task's outcome, inline as the extension carries it. A result
/// (a tool's own `isError` included) makes the task `completed`; a JSON-RPC error, `failed`.
pub(crate) fn inline_outcome(task: &mut Task, outcome: Result<Value, ErrorObject>) {
    match outcome {
        Ok(Value::Object(mut result)) => {
            strip_hop_meta_raw(&mut result);
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

#[cfg(test)]
mod tests {
    use super::*;

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
