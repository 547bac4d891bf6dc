//! A handler that answers with a task: each client era gets the task in its own shape (the
//! 2025-11-25 `CreateTaskResult`, the 2026-07-28 extension's flat `resultType: "task"`),
//! a client that did not ask for tasks never gets one, and `tasks/*` are served.

use std::sync::Mutex;

use async_trait::async_trait;
use mcp_server::{Outcome, RequestContext, Server, ServerHandler};
use mcp_types::protocol::*;
use mcp_types::{codes, ErrorObject};
use serde_json::{json, Map, Value};

/// Answers every call with a task, which is finished by the time anyone asks.
#[derive(Default)]
struct Tasks {
    cancelled: Mutex<bool>,
}

fn state(status: TaskStatus) -> Task {
    Task {
        task_id: "task-1".into(),
        status,
        created_at: "2026-11-30T00:00:00Z".into(),
        last_updated_at: "2026-11-30T00:00:01Z".into(),
        ttl_ms: Some(json!(60000)),
        poll_interval_ms: Some(250.into()),
        ..Default::default()
    }
}

fn payload() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("content".into(), json!([{"type": "text", "text": "done"}]));
    m
}

#[async_trait]
impl ServerHandler for Tasks {
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities {
            tools: Some(Default::default()),
            ..Default::default()
        }
    }

    async fn call_tool(
        &self,
        _ctx: &RequestContext,
        _p: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        // Even to a client that cannot take a task: the session must not send it one.
        Ok(Outcome::Task(Box::new(state(TaskStatus::Working))))
    }

    async fn get_task(
        &self,
        _ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<Task, ErrorObject> {
        if p.task_id != "task-1" {
            return Err(ErrorObject::new(codes::INVALID_PARAMS, "Unknown task"));
        }
        let mut t = state(TaskStatus::Completed);
        t.result = Some(payload());
        Ok(t)
    }

    async fn task_result(
        &self,
        _ctx: &RequestContext,
        _p: TaskRequestParams,
    ) -> Result<Outcome<Value>, ErrorObject> {
        Ok(Outcome::Complete(Value::Object(payload())))
    }

    async fn cancel_task(
        &self,
        _ctx: &RequestContext,
        _p: TaskRequestParams,
    ) -> Result<Task, ErrorObject> {
        if let Ok(mut c) = self.cancelled.lock() {
            *c = true;
        }
        Ok(state(TaskStatus::Cancelled))
    }
}

mod common;

/// Sends each message and reads the answers to its requests.
async fn converse(lines: &[Value]) -> Vec<Value> {
    let lines: Vec<String> = lines.iter().map(Value::to_string).collect();
    common::converse(Server::new(Tasks::default()), &lines, 1 << 20).await
}

fn modern(id: u64, m: &str, mut params: Value, extension: bool) -> Value {
    let caps = if extension {
        json!({"extensions": {TASKS_EXTENSION: {}}})
    } else {
        json!({})
    };
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
    });
    json!({"jsonrpc": "2.0", "id": id, "method": m, "params": params})
}

fn legacy(revision: &str) -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": revision, "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
}

#[tokio::test]
async fn a_2026_client_with_the_extension_sees_the_task_and_its_inline_outcome() {
    let a = converse(&[
        modern(1, "tools/call", json!({"name": "x"}), true),
        modern(2, "tasks/get", json!({"taskId": "task-1"}), true),
        modern(3, "tasks/cancel", json!({"taskId": "task-1"}), true),
        modern(4, "tasks/get", json!({"taskId": "nope"}), true),
    ])
    .await;
    let created = &a[0]["result"];
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["taskId"], "task-1");
    assert_eq!(created["ttlMs"], 60000);
    assert_eq!(created["pollIntervalMs"], 250);
    assert!(created.get("cacheScope").is_none(), "{created}");
    let got = &a[1]["result"];
    assert_eq!(got["status"], "completed", "{got}");
    assert_eq!(got["result"]["content"][0]["text"], "done");
    assert_eq!(a[2]["result"]["resultType"], "complete", "{}", a[2]);
    assert!(a[2]["result"].get("status").is_none(), "{}", a[2]);
    assert_eq!(a[3]["error"]["code"], codes::INVALID_PARAMS);
}

#[tokio::test]
async fn a_client_that_did_not_ask_for_tasks_never_gets_one() {
    let a = converse(&[
        modern(1, "tools/call", json!({"name": "x"}), false),
        modern(2, "tasks/get", json!({"taskId": "task-1"}), false),
        modern(3, "tasks/cancel", json!({"taskId": "task-1"}), false),
        modern(
            4,
            "tasks/update",
            json!({"taskId": "task-1", "inputResponses": {}}),
            false,
        ),
    ])
    .await;
    assert_eq!(a[0]["error"]["code"], codes::INTERNAL_ERROR, "{}", a[0]);
    // The extension's methods need the extension.
    for answer in &a[1..] {
        assert_eq!(
            answer["error"]["code"],
            codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
            "{answer}"
        );
        assert!(
            answer["error"]["data"]["requiredCapabilities"]["extensions"][TASKS_EXTENSION]
                .is_object(),
            "{answer}"
        );
    }
    let mut lines = legacy("2025-11-25");
    lines.push(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}));
    let a = converse(&lines).await;
    assert_eq!(a[1]["error"]["code"], codes::INTERNAL_ERROR, "{}", a[1]);
}

#[tokio::test]
async fn a_2025_11_25_client_that_asks_gets_a_create_task_result_and_the_task_methods() {
    let mut lines = legacy("2025-11-25");
    lines.extend([
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "x", "task": {"ttl": 60000}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"taskId": "task-1"}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": {"taskId": "task-1"}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/cancel", "params": {"taskId": "task-1"}}),
    ]);
    let a = converse(&lines).await;
    let created = &a[1]["result"];
    assert_eq!(created["task"]["taskId"], "task-1", "{created}");
    assert_eq!(created["task"]["ttl"], 60000);
    assert_eq!(created["task"]["pollInterval"], 250);
    assert!(created.get("resultType").is_none(), "{created}");
    let got = &a[2]["result"];
    assert_eq!(got["status"], "completed", "{got}");
    assert!(got.get("result").is_none(), "{got}");
    assert_eq!(a[3]["result"]["content"][0]["text"], "done", "{}", a[3]);
    assert_eq!(
        a[3]["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], "task-1",
        "{}",
        a[3]
    );
    assert_eq!(a[4]["result"]["status"], "cancelled", "{}", a[4]);
}
