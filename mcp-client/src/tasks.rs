//! Tools run as tasks (TOOL-21): a call the server runs in the background, followed and
//! fetched when it ends. A 2025-11-25 client asks with the `task` parameter and gets a
//! `CreateTaskResult`, then `tasks/get`, `tasks/result` (held until the task ends) and
//! `tasks/cancel`. A 2026-07-28 client declares the tasks extension on the request and gets
//! the flat `resultType: "task"`; a finished task's `tasks/get` carries its outcome inline.
//! A tool whose `execution.taskSupport` is `"required"` is run this way by
//! [`Client::call_tool`] itself.

use std::time::Duration;

use mcp_revisions::features;
use mcp_types::meta;
use mcp_types::protocol::*;
use mcp_types::ErrorObject;
use serde_json::{json, Map, Value};

use crate::{decode, CallOptions, Client, ClientError};

/// How a call asked to run as a task began.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Started {
    /// The server runs it as this task.
    Task(Box<Task>),
    /// The server answered at once.
    Done(CallToolResult),
}

/// Polling a task: at least this long between two `tasks/get`, whatever the server says.
const MIN_POLL: Duration = Duration::from_millis(20);
/// And at most this long.
const MAX_POLL: Duration = Duration::from_secs(5);
/// When the server suggests no interval.
const DEFAULT_POLL: Duration = Duration::from_millis(250);

impl Client {
    /// Calls tool `name` asking the server to run it as a task (kept `ttl_ms` after it
    /// ends, when given and the revision has a place for it). The server may answer at
    /// once anyway ([`Started::Done`]). A revision before 2025-11-25 has no tasks.
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        ttl_ms: Option<u64>,
        opts: &CallOptions,
    ) -> Result<Started, ClientError> {
        let mut params = json!({"name": name, "arguments": arguments});
        if features::has_task_param(self.revision()) {
            params["task"] = match ttl_ms {
                Some(ttl) => json!({"ttl": ttl}),
                None => json!({}),
            };
        } else if !features::has_tasks_extension(self.revision()) {
            return Err(ClientError::Unavailable(format!(
                "tasks came with 2025-11-25; this connection speaks {}",
                self.revision()
            )));
        }
        self.with_tasks_meta(&mut params);
        let v = self.request(method::TOOLS_CALL, params, opts).await?;
        started(v)
    }

    /// `tasks/get`: where task `task_id` is now.
    pub async fn get_task(&self, task_id: &str) -> Result<Task, ClientError> {
        self.task_request(method::TASKS_GET, task_id, &CallOptions::default())
            .await
            .and_then(|v| decode(method::TASKS_GET, v))
    }

    /// `tasks/cancel`: stops task `task_id`; its state after (a 2026-07-28 server only
    /// acknowledges the cancellation, so the state is then asked for).
    pub async fn cancel_task(&self, task_id: &str) -> Result<Task, ClientError> {
        let v = self
            .task_request(method::TASKS_CANCEL, task_id, &CallOptions::default())
            .await?;
        match v.get("taskId") {
            Some(_) => decode(method::TASKS_CANCEL, v),
            None => self.get_task(task_id).await,
        }
    }

    /// What task `task_id`'s tool call returned, once the task ends (within `opts`'
    /// timeout, else the client's request timeout): 2025-11-25 `tasks/result`, which the
    /// server holds until then; 2026-07-28 `tasks/get` at the task's poll interval, and
    /// its inline outcome. A failed task is its error; a cancelled one
    /// [`ClientError::Cancelled`].
    pub async fn task_result(
        &self,
        task_id: &str,
        opts: &CallOptions,
    ) -> Result<CallToolResult, ClientError> {
        if features::has_task_param(self.revision()) {
            let v = self
                .task_request(method::TASKS_RESULT, task_id, opts)
                .await?;
            return decode(method::TASKS_RESULT, v);
        }
        let limit = opts.timeout.or(self.options.request_timeout);
        let deadline = limit.map(|l| tokio::time::Instant::now() + l);
        loop {
            let task = self.get_task(task_id).await?;
            match task.status {
                TaskStatus::Working => {}
                TaskStatus::Completed => {
                    let outcome = Value::Object(task.result.unwrap_or_default());
                    return decode(method::TASKS_GET, outcome);
                }
                TaskStatus::Failed => return Err(ClientError::Server(task_error(task.error))),
                TaskStatus::Cancelled => return Err(ClientError::Cancelled),
                other => {
                    return Err(ClientError::Unavailable(format!(
                        "task {task_id} is {other:?}: it waits for what this client cannot give"
                    )))
                }
            }
            let wait = poll_interval(&task);
            if let (Some(deadline), Some(limit)) = (deadline, limit) {
                if tokio::time::Instant::now() + wait > deadline {
                    return Err(ClientError::Timeout(limit));
                }
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// Runs tool `name` as a task to its end and gives what it returned.
    pub async fn run_tool_as_task(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        opts: &CallOptions,
    ) -> Result<CallToolResult, ClientError> {
        match self.call_tool_as_task(name, arguments, None, opts).await? {
            Started::Done(result) => Ok(result),
            Started::Task(task) => self.task_result(&task.task_id, opts).await,
        }
    }

    /// One `tasks/*` request about `task_id`.
    async fn task_request(
        &self,
        method_name: &str,
        task_id: &str,
        opts: &CallOptions,
    ) -> Result<Value, ClientError> {
        let mut params = json!({"taskId": task_id});
        self.with_tasks_meta(&mut params);
        self.request(method_name, params, opts).await
    }

    /// In 2026-07-28, the tasks extension among the capabilities `params` declares.
    fn with_tasks_meta(&self, params: &mut Value) {
        if !features::has_tasks_extension(self.revision()) {
            return;
        }
        let mut caps = self.options.capabilities.clone();
        caps.extensions
            .get_or_insert_with(Map::new)
            .entry(TASKS_EXTENSION)
            .or_insert_with(|| json!({}));
        params["_meta"] = json!({ meta::CLIENT_CAPABILITIES: caps });
    }
}

/// A `tools/call` result asked to run as a task: the task (2025-11-25 `CreateTaskResult`,
/// or the 2026 extension's flat task), or the result itself.
fn started(v: Value) -> Result<Started, ClientError> {
    let task = match v.get("resultType").and_then(Value::as_str) {
        Some("task") => Some(v.clone()),
        _ => v.get("task").filter(|t| t.get("taskId").is_some()).cloned(),
    };
    match task {
        Some(t) => decode(method::TOOLS_CALL, t).map(|t| Started::Task(Box::new(t))),
        None => decode(method::TOOLS_CALL, v).map(Started::Done),
    }
}

/// The wait before polling `task` again: its `pollIntervalMs` (2026) or `pollInterval`
/// (2025-11-25), within bounds.
fn poll_interval(task: &Task) -> Duration {
    let ms = task
        .poll_interval_ms
        .as_ref()
        .or(task.poll_interval.as_ref())
        .and_then(serde_json::Number::as_u64);
    ms.map_or(DEFAULT_POLL, Duration::from_millis)
        .clamp(MIN_POLL, MAX_POLL)
}

/// A failed task's error, as the server gave it.
fn task_error(error: Option<Value>) -> ErrorObject {
    error
        .and_then(|e| serde_json::from_value(e).ok())
        .unwrap_or_else(|| ErrorObject::new(mcp_types::codes::INTERNAL_ERROR, "the task failed"))
}
