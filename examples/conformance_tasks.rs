//! The conformance suite's tasks-extension fixtures (SEP-2663): `greet`, `slow_compute`,
//! `failing_job`, `protocol_error_job`, `confirm_delete`, `multi_input` and
//! `test_tool_with_task`, with the task store that serves `tasks/*`.
//!
//! A client that takes tasks (a 2026 client that declared the extension, a 2025-11-25
//! client that sent `task`) gets a task for every tool but `greet`; one that does not
//! gets `slow_compute` run at once and the task-required tools refused with `-32021`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_server::{Outcome, RequestContext};
use mcp_types::protocol::*;
use mcp_types::{codes, ErrorObject};
use serde_json::{json, Map, Value};
use tokio::sync::Notify;

/// How long a task is kept (its `ttlMs`), and the longest a job waits for answers.
const TTL: Duration = Duration::from_secs(300);

/// One task: its state as `tasks/get` shows it, and what moves it.
struct Entry {
    task: Task,
    /// When it was created (it is dropped `TTL` later).
    created: std::time::Instant,
    /// Questions not yet answered (`input_required`), by key.
    open: Map<String, Value>,
    /// Answers received, by key.
    answers: Map<String, Value>,
    /// Wakes the job: an answer arrived, or the task was cancelled.
    wake: Arc<Notify>,
}

/// The task store and the fixtures that fill it.
#[derive(Default)]
pub(crate) struct TaskFixtures {
    tasks: Arc<Mutex<HashMap<String, Entry>>>,
    next: AtomicU64,
}

/// UTC now as ISO 8601 (`2026-07-28T12:00:00Z`).
fn now_iso() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

fn text_result(text: String, is_error: bool) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("content".into(), json!([{"type": "text", "text": text}]));
    if is_error {
        m.insert("isError".into(), json!(true));
    }
    m
}

/// A form elicitation for one required `field` of JSON type `kind`.
fn question(message: &str, field: &str, kind: &str) -> Value {
    crate::conformance_fixtures::elicit(
        message,
        json!({"type": "object", "properties": {field: {"type": kind}}, "required": [field]}),
    )
}

fn tool(name: &str, description: &str, schema: Value, support: Option<TaskSupport>) -> Tool {
    let mut t = Tool::new(name, schema);
    t.description = Some(description.to_owned());
    t.execution = support.map(|s| ToolExecution {
        task_support: Some(s),
        ..Default::default()
    });
    t
}

fn unknown(id: &str) -> ErrorObject {
    ErrorObject::new(codes::INVALID_PARAMS, format!("Unknown task: {id}"))
}

/// The error for a task-required tool called by a client that takes no tasks.
fn tasks_required(name: &str) -> ErrorObject {
    ErrorObject::new(
        codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!("Tool {name} runs only as a task: declare the {TASKS_EXTENSION} extension"),
    )
    .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}))
}

impl TaskFixtures {
    /// The fixtures' tools.
    pub(crate) fn tools() -> Vec<Tool> {
        let none = json!({"type": "object", "properties": {}});
        let opt = Some(TaskSupport::Optional);
        vec![
            tool(
                "greet",
                "Greets by name, at once.",
                json!({"type": "object", "properties": {"name": {"type": "string"}}}),
                None,
            ),
            tool(
                "slow_compute",
                "Works for `seconds` seconds, then reports.",
                json!({"type": "object", "properties": {
                    "seconds": {"type": "number"}, "label": {"type": "string"}}}),
                opt.clone(),
            ),
            tool(
                "failing_job",
                "Fails as a tool after about a second.",
                none.clone(),
                Some(TaskSupport::Required),
            ),
            tool(
                "protocol_error_job",
                "Fails with a protocol error.",
                none.clone(),
                opt.clone(),
            ),
            tool(
                "confirm_delete",
                "Asks for confirmation, then deletes.",
                none.clone(),
                opt.clone(),
            ),
            tool(
                "multi_input",
                "Asks two questions at once.",
                none.clone(),
                opt,
            ),
            tool(
                "test_tool_with_task",
                "Asks a name, then works on as a task.",
                none,
                Some(TaskSupport::Required),
            ),
        ]
    }

    /// A call to one of the fixtures; `None` for any other tool.
    pub(crate) async fn call(
        &self,
        ctx: &RequestContext,
        p: &CallToolRequestParams,
    ) -> Option<Result<Outcome<CallToolResult>, ErrorObject>> {
        let arg = |k: &str| p.arguments.as_ref().and_then(|a| a.get(k)).cloned();
        let name = p.name.as_str();
        let job = match name {
            "greet" => {
                let who = arg("name").and_then(|v| v.as_str().map(str::to_owned));
                let text = format!("Hello, {}!", who.as_deref().unwrap_or("World"));
                return Some(Ok(Outcome::Complete(CallToolResult {
                    content: vec![ContentBlock::text(text)],
                    ..Default::default()
                })));
            }
            "slow_compute" => {
                let seconds = arg("seconds").and_then(|v| v.as_f64()).unwrap_or(0.0);
                let label = arg("label")
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                Job::Compute(seconds.clamp(0.0, 600.0), label)
            }
            "failing_job" => Job::ToolError,
            "protocol_error_job" => Job::ProtocolError,
            "confirm_delete" => Job::Ask(vec![(
                "confirm",
                question("Delete everything?", "confirm", "boolean"),
            )]),
            "multi_input" => Job::Ask(vec![
                ("first", question("First name?", "name", "string")),
                ("second", question("Last name?", "name", "string")),
            ]),
            "test_tool_with_task" => {
                if !ctx.accepts_task() {
                    return Some(Err(tasks_required(name)));
                }
                // Input first (multi-round-trip), then the work as a task.
                let Some(answer) = ctx.input_response("user_name") else {
                    return Some(Ok(Outcome::InputRequired(InputRequiredResult {
                        input_requests:
                            json!({"user_name": question("Your name?", "name", "string")})
                                .as_object()
                                .cloned(),
                        ..Default::default()
                    })));
                };
                let user = answer
                    .pointer("/content/name")
                    .and_then(Value::as_str)
                    .unwrap_or("someone")
                    .to_owned();
                Job::Greet(user)
            }
            _ => return None,
        };
        if !ctx.accepts_task() {
            return Some(match job {
                Job::Compute(seconds, label) => {
                    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                    Ok(Outcome::Complete(CallToolResult {
                        content: vec![ContentBlock::text(format!(
                            "computed {label} in {seconds}s"
                        ))],
                        ..Default::default()
                    }))
                }
                _ => Err(tasks_required(name)),
            });
        }
        Some(Ok(Outcome::Task(Box::new(self.start(job)))))
    }

    /// Creates the task (visible to `tasks/get` before this returns) and starts its job.
    fn start(&self, job: Job) -> Task {
        let id = format!("task-{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let now = now_iso();
        let task = Task {
            task_id: id.clone(),
            status: TaskStatus::Working,
            created_at: now.clone(),
            last_updated_at: now,
            ttl_ms: Some(json!(TTL.as_millis() as u64)),
            poll_interval_ms: Some(100.into()),
            ..Default::default()
        };
        let wake = Arc::new(Notify::new());
        if let Ok(mut tasks) = self.tasks.lock() {
            tasks.retain(|_, e| e.created.elapsed() < TTL);
            tasks.insert(
                id.clone(),
                Entry {
                    task: task.clone(),
                    created: std::time::Instant::now(),
                    open: Map::new(),
                    answers: Map::new(),
                    wake: wake.clone(),
                },
            );
        }
        tokio::spawn(run(self.tasks.clone(), id, job, wake));
        task
    }

    fn with<T>(&self, id: &str, f: impl FnOnce(&mut Entry) -> T) -> Result<T, ErrorObject> {
        let mut tasks = self
            .tasks
            .lock()
            .map_err(|_| ErrorObject::new(codes::INTERNAL_ERROR, "task store poisoned"))?;
        tasks.get_mut(id).map(f).ok_or_else(|| unknown(id))
    }

    /// `tasks/get`: the state, with open questions, result or error inline.
    pub(crate) fn get(&self, id: &str) -> Result<Task, ErrorObject> {
        self.with(id, |e| {
            let mut t = e.task.clone();
            if t.status == TaskStatus::InputRequired {
                t.input_requests = Some(e.open.clone());
            }
            t
        })
    }

    /// `tasks/update`: answers to open questions (others are ignored).
    pub(crate) fn update(
        &self,
        id: &str,
        responses: Map<String, Value>,
    ) -> Result<(), ErrorObject> {
        self.with(id, |e| {
            for (k, v) in responses {
                if e.open.remove(&k).is_some() {
                    e.answers.insert(k, v);
                }
            }
            if e.open.is_empty() && e.task.status == TaskStatus::InputRequired {
                e.task.status = TaskStatus::Working;
                e.task.last_updated_at = now_iso();
            }
            e.wake.notify_one();
        })
    }

    /// `tasks/cancel`: a running task settles as `cancelled`; an ended one stays as it is.
    pub(crate) fn cancel(&self, id: &str) -> Result<Task, ErrorObject> {
        self.with(id, |e| {
            if !e.task.status.is_terminal() {
                e.task.status = TaskStatus::Cancelled;
                e.task.input_requests = None;
                e.task.last_updated_at = now_iso();
                e.wake.notify_one();
            }
        })?;
        self.get(id)
    }

    /// `tasks/result` (2025-11-25): waits for the end; open questions go to the client
    /// (as requests, by the session) and its answers come back on the next round.
    pub(crate) async fn result(
        &self,
        ctx: &RequestContext,
        id: &str,
    ) -> Result<Outcome<Value>, ErrorObject> {
        if !ctx.input_responses().is_empty() {
            self.update(id, ctx.input_responses().clone())?;
        }
        loop {
            let (task, open, wake) =
                self.with(id, |e| (e.task.clone(), e.open.clone(), e.wake.clone()))?;
            match task.status {
                TaskStatus::Completed => {
                    return Ok(Outcome::Complete(Value::Object(
                        task.result.unwrap_or_default(),
                    )))
                }
                TaskStatus::Failed => {
                    return Err(task
                        .error
                        .and_then(|e| serde_json::from_value(e).ok())
                        .unwrap_or_else(|| ErrorObject::new(codes::INTERNAL_ERROR, "failed")))
                }
                TaskStatus::Cancelled => {
                    return Err(ErrorObject::new(
                        codes::INTERNAL_ERROR,
                        "the task was cancelled",
                    ))
                }
                TaskStatus::InputRequired if !open.is_empty() => {
                    return Ok(Outcome::InputRequired(InputRequiredResult {
                        input_requests: Some(open),
                        ..Default::default()
                    }))
                }
                _ => {
                    let _ = tokio::time::timeout(Duration::from_millis(100), wake.notified()).await;
                }
            }
        }
    }
}

/// What a task does.
enum Job {
    Compute(f64, String),
    ToolError,
    ProtocolError,
    Ask(Vec<(&'static str, Value)>),
    Greet(String),
}

/// Runs a job to the end (unless the task was cancelled first) and records how it ended.
async fn run(tasks: Arc<Mutex<HashMap<String, Entry>>>, id: String, job: Job, wake: Arc<Notify>) {
    let set = |f: &dyn Fn(&mut Entry)| {
        if let Ok(mut t) = tasks.lock() {
            if let Some(e) = t.get_mut(&id) {
                if !e.task.status.is_terminal() {
                    f(e);
                    e.task.last_updated_at = now_iso();
                }
            }
        }
    };
    let cancelled = || {
        tasks
            .lock()
            .ok()
            .and_then(|t| t.get(&id).map(|e| e.task.status == TaskStatus::Cancelled))
            .unwrap_or(true)
    };
    let finish = |result: Map<String, Value>| {
        set(&|e| {
            e.task.status = TaskStatus::Completed;
            e.task.result = Some(result.clone());
        })
    };
    match job {
        Job::Compute(seconds, label) => {
            let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(seconds);
            while !cancelled() {
                if tokio::time::timeout_at(deadline, wake.notified())
                    .await
                    .is_err()
                {
                    finish(text_result(
                        format!("computed {label} in {seconds}s"),
                        false,
                    ));
                    return;
                }
            }
        }
        Job::ToolError => {
            tokio::time::sleep(Duration::from_secs(1)).await;
            finish(text_result("the job failed".into(), true));
        }
        Job::ProtocolError => {
            tokio::time::sleep(Duration::from_millis(200)).await;
            set(&|e| {
                e.task.status = TaskStatus::Failed;
                e.task.error =
                    Some(json!({"code": codes::INTERNAL_ERROR, "message": "the job crashed"}));
            });
        }
        Job::Ask(questions) => {
            set(&|e| {
                e.task.status = TaskStatus::InputRequired;
                for (k, q) in &questions {
                    e.open.insert((*k).to_owned(), q.clone());
                }
            });
            loop {
                let (done, answers) = tasks
                    .lock()
                    .ok()
                    .and_then(|t| t.get(&id).map(|e| (e.open.is_empty(), e.answers.clone())))
                    .unwrap_or((true, Map::new()));
                if cancelled() {
                    return;
                }
                if done {
                    let said: Vec<String> = questions
                        .iter()
                        .map(|(k, _)| {
                            let c = answers.get(*k).and_then(|a| a.get("content"));
                            let v = c.and_then(|c| c.get("confirm").or_else(|| c.get("name")));
                            v.map_or("nothing".to_owned(), Value::to_string)
                        })
                        .collect();
                    finish(text_result(format!("answered: {}", said.join(", ")), false));
                    return;
                }
                // Unanswered for its whole life: the job ends; the task is dropped later.
                if tokio::time::timeout(TTL, wake.notified()).await.is_err() {
                    return;
                }
            }
        }
        Job::Greet(user) => {
            tokio::time::sleep(Duration::from_millis(200)).await;
            finish(text_result(format!("Hello, {user}! (from a task)"), false));
        }
    }
}
