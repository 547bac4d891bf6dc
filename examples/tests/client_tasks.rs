//! TOOL-21 in our client: a tool run as a task, in 2025-11-25 (the `task` parameter,
//! `tasks/result`) and 2026-07-28 (the tasks extension, the outcome inline in `tasks/get`):
//! `Client::call_tool` runs a task-required tool as a task and returns what it returned;
//! a task can be started, followed and cancelled by hand.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use async_trait::async_trait;
use mcp_client::{CallOptions, Client, ClientError, ClientOptions, EraChoice, NoHandler, Started};
use mcp_server::{Outcome, RequestContext, Server, ServerHandler};
use mcp_types::protocol::*;
use mcp_types::transport::memory_pair;
use mcp_types::{codes, ErrorObject, Revision};
use serde_json::{json, Map, Value};

/// A job the server runs: done once it has been asked about twice (or its result is
/// asked for), unless cancelled first.
#[derive(Default)]
struct Job {
    arg: String,
    polls: u32,
    cancelled: bool,
}

/// Runs every call of `job` as a task; `job` requires it (2025-11-25 `taskSupport`).
#[derive(Default)]
struct Jobs {
    next: AtomicU64,
    jobs: Mutex<HashMap<String, Job>>,
}

fn state(id: &str, status: TaskStatus) -> Task {
    Task {
        task_id: id.into(),
        status,
        created_at: "2026-12-05T00:00:00Z".into(),
        last_updated_at: "2026-12-05T00:00:01Z".into(),
        poll_interval_ms: Some(20.into()),
        ..Default::default()
    }
}

fn outcome(arg: &str) -> Map<String, Value> {
    let v = json!({"content": [{"type": "text", "text": format!("done {arg}")}]});
    v.as_object().cloned().unwrap_or_default()
}

fn unknown(id: &str) -> ErrorObject {
    ErrorObject::new(codes::INVALID_PARAMS, format!("Unknown task {id}"))
}

#[async_trait]
impl ServerHandler for Jobs {
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities {
            tools: Some(Default::default()),
            ..Default::default()
        }
    }

    async fn list_tools(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        let job = json!({"name": "job", "inputSchema": {"type": "object"},
            "execution": {"taskSupport": "required"}});
        Ok(ListToolsResult {
            tools: vec![serde_json::from_value(job)
                .map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()))?],
            ..Default::default()
        })
    }

    async fn call_tool(
        &self,
        _: &RequestContext,
        p: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        let arg = p
            .arguments
            .as_ref()
            .and_then(|a| a.get("arg"))
            .and_then(Value::as_str)
            .unwrap_or("?");
        let id = format!("job-{}", self.next.fetch_add(1, Ordering::SeqCst));
        if let Ok(mut jobs) = self.jobs.lock() {
            jobs.insert(
                id.clone(),
                Job {
                    arg: arg.into(),
                    ..Default::default()
                },
            );
        }
        Ok(Outcome::Task(Box::new(state(&id, TaskStatus::Working))))
    }

    async fn get_task(
        &self,
        _: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<Task, ErrorObject> {
        let mut jobs = self.jobs.lock().map_err(|_| unknown(&p.task_id))?;
        let job = jobs
            .get_mut(&p.task_id)
            .ok_or_else(|| unknown(&p.task_id))?;
        job.polls += 1;
        Ok(match (job.cancelled, job.polls >= 2) {
            (true, _) => state(&p.task_id, TaskStatus::Cancelled),
            (false, true) => {
                let mut t = state(&p.task_id, TaskStatus::Completed);
                t.result = Some(outcome(&job.arg));
                t
            }
            (false, false) => state(&p.task_id, TaskStatus::Working),
        })
    }

    async fn task_result(
        &self,
        _: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<Outcome<Value>, ErrorObject> {
        let jobs = self.jobs.lock().map_err(|_| unknown(&p.task_id))?;
        let job = jobs.get(&p.task_id).ok_or_else(|| unknown(&p.task_id))?;
        Ok(Outcome::Complete(Value::Object(outcome(&job.arg))))
    }

    async fn cancel_task(
        &self,
        _: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<Task, ErrorObject> {
        let mut jobs = self.jobs.lock().map_err(|_| unknown(&p.task_id))?;
        let job = jobs
            .get_mut(&p.task_id)
            .ok_or_else(|| unknown(&p.task_id))?;
        job.cancelled = true;
        Ok(state(&p.task_id, TaskStatus::Cancelled))
    }
}

async fn connect(era: EraChoice) -> Client {
    let (a, b) = memory_pair(16);
    let server = Server::new(Jobs::default());
    tokio::spawn(async move { server.serve(b).await });
    Client::connect(a, NoHandler, ClientOptions::default().era(era))
        .await
        .expect("connect")
}

fn arg(v: &str) -> Map<String, Value> {
    json!({"arg": v}).as_object().cloned().unwrap_or_default()
}

fn text(r: &CallToolResult) -> String {
    serde_json::to_value(&r.content).expect("content")[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Starts `job` as a task and cancels it: the server's state says cancelled after.
async fn started_and_cancelled(client: &Client) {
    let opts = CallOptions::default();
    let started = client
        .call_tool_as_task("job", arg("b"), Some(60_000), &opts)
        .await
        .expect("started");
    let Started::Task(task) = started else {
        panic!("a task was asked for: {started:?}");
    };
    assert_eq!(task.status, TaskStatus::Working);
    let cancelled = client.cancel_task(&task.task_id).await.expect("cancel");
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    let after = client.get_task(&task.task_id).await.expect("tasks/get");
    assert_eq!(after.status, TaskStatus::Cancelled);
}

#[tokio::test]
async fn a_2025_11_25_client_runs_a_task_required_tool_as_a_task_and_cancels_another() {
    let client = connect(EraChoice::Legacy(Revision::V2025_11_25)).await;
    client.list_tools().await.expect("tools/list");
    // Called plainly, the task-required tool runs as a task: no -32601 from the server.
    let call = client.call_tool("job", arg("a")).await.expect("call");
    assert!(!call.result.is_error(), "{:?}", call.result);
    assert_eq!(text(&call.result), "done a");
    started_and_cancelled(&client).await;
    client.close().await;
}

#[tokio::test]
async fn a_2026_client_runs_a_tool_as_a_task_through_the_extension_and_cancels_another() {
    let client = connect(EraChoice::Modern).await;
    let opts = CallOptions::default();
    let done = client
        .run_tool_as_task("job", arg("c"), &opts)
        .await
        .expect("run as a task");
    assert_eq!(text(&done), "done c", "the outcome inline in tasks/get");
    started_and_cancelled(&client).await;
    // A cancelled task has no result to give.
    let Started::Task(task) = client
        .call_tool_as_task("job", arg("d"), None, &opts)
        .await
        .expect("started")
    else {
        panic!("a task was asked for");
    };
    client.cancel_task(&task.task_id).await.expect("cancel");
    let gone = client.task_result(&task.task_id, &opts).await;
    assert!(matches!(gone, Err(ClientError::Cancelled)), "{gone:?}");
    client.close().await;
}
