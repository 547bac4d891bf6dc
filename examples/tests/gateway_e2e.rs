//! The gateway end to end with real peers. Upstreams: `server-everything` on stdio and on
//! Streamable HTTP, a Python SDK server in both eras (detected: 2026; pinned: 2025-06-18),
//! and our echo server. Hosts: the TypeScript SDK client (legacy), the Python SDK client
//! in both eras, and our client pinned to 2024-11-05, 2025-03-26 and 2025-06-18 with every
//! message the gateway writes validated against the host's schema. And era bridging: hosts
//! of one era answering upstream questions (elicitation, sampling) asked the other era's way.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::{ChildTransport, Client, ClientOptions, EraChoice, NoHandler, StdioCommand};
use mcp_types::Revision;
use serde_json::{json, Map, Value};

mod common;
use common::{
    example, http_gateway, http_transport, interop_dir, run_json, server_everything_http,
    validate_all, Recording,
};

/// A host run to the end: what it printed.
async fn run_host_json(program: &str, args: &[String]) -> Value {
    run_json(program, args, Duration::from_secs(180)).await
}

/// Our client as a host of the gateway at `url` (Streamable HTTP).
async fn http_host(
    url: &str,
    era: EraChoice,
    capabilities: mcp_types::protocol::ClientCapabilities,
) -> Client {
    let t = http_transport(url);
    let options = ClientOptions::default().era(era).capabilities(capabilities);
    Client::connect(t, NoHandler, options)
        .await
        .expect("host connects")
}

/// A raw request's result; a failure fails the test.
async fn raw(host: &Client, m: &str, params: Value) -> Value {
    host.request(m, params, &mcp_client::CallOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{m}: {e}"))
}

/// A 2026 host's capabilities with the tasks extension.
fn extension_caps() -> mcp_types::protocol::ClientCapabilities {
    mcp_types::protocol::ClientCapabilities {
        extensions: json!({mcp_types::protocol::TASKS_EXTENSION: {}})
            .as_object()
            .cloned(),
        ..Default::default()
    }
}

/// Polls a task with `tasks/get` until it leaves `working` (at most a minute).
async fn settled(host: &Client, id: &str) -> Value {
    let state = std::sync::Mutex::new(Value::Null);
    mcp_examples::wait_until(Duration::from_secs(60), || async {
        let now = raw(host, "tasks/get", json!({"taskId": id})).await;
        let left = now["status"] != "working";
        *state.lock().expect("lock") = now;
        left
    })
    .await;
    state.into_inner().expect("lock")
}

/// The peers, or a skip (a failure under `MCP_INTEROP=required`).
fn peers() -> Option<(PathBuf, PathBuf)> {
    let node =
        interop_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let py = interop_dir().join(".venv/bin/python");
    if node.exists() && py.exists() {
        return Some((node, py));
    }
    assert!(
        std::env::var("MCP_INTEROP").as_deref() != Ok("required"),
        "interop peers are not installed"
    );
    eprintln!("SKIPPED: interop peers are not installed (see README, Interop)");
    None
}

struct Fixture {
    config: PathBuf,
    _everything_http: tokio::process::Child,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.config);
    }
}

async fn fixture(tag: &str) -> Option<Fixture> {
    let (everything, py) = peers()?;
    let (everything_http, port) = server_everything_http(&everything, "streamableHttp").await;
    let server = interop_dir().join("python_server.py").display().to_string();
    let config = json!({"mcpServers": {
        "everything": {"command": "node", "args": [everything.display().to_string(), "stdio"]},
        "everything_http": {"url": format!("http://127.0.0.1:{port}/mcp")},
        "py": {"command": py.display().to_string(), "args": [server]},
        "py_legacy": {"command": py.display().to_string(), "args": [server], "protocolVersion": "2025-06-18"},
        "echo": {"command": example("echo-server")}
    }, "gateway": {"startupWaitMillis": 60000}});
    let path =
        std::env::temp_dir().join(format!("mcp-gateway-e2e-{tag}-{}.json", std::process::id()));
    std::fs::write(&path, config.to_string()).expect("config");
    Some(Fixture {
        config: path,
        _everything_http: everything_http,
    })
}

/// What every host calls, by exposed name.
fn calls() -> Value {
    json!([
        ["echo__fail", {}],
        ["py__weather", {"city": "Oslo"}],
        ["py_legacy__boom", {}],
        ["py__traced", {}],
        ["everything__get-resource-links", {"count": 2}],
        ["everything_http__echo", {"message": "through http"}]
    ])
}

/// Checks what a host saw, for the revision it speaks.
fn check(seen: &Value, revision: Revision) {
    let names: Vec<&str> = seen["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for expected in [
        "echo__echo",
        "py__weather",
        "py_legacy__weather",
        "everything__echo",
        "everything_http__echo",
    ] {
        assert!(
            names.contains(&expected),
            "{revision}: {expected} missing from {names:?}"
        );
    }
    let tool = |n: &str| {
        seen["tools"]
            .as_array()
            .and_then(|t| t.iter().find(|x| x["name"] == n))
            .cloned()
            .unwrap_or_default()
    };
    let r = &seen["results"];
    assert_eq!(
        r["echo__fail"]["isError"], true,
        "{revision}: isError survives"
    );
    assert_eq!(r["py_legacy__boom"]["isError"], true, "{revision}");
    assert_eq!(
        r["py__traced"]["_meta"]["com.example/trace"],
        json!({"id": 7}),
        "{revision}: _meta survives"
    );
    let texts = |k: &str| -> String {
        r[k]["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["text"].as_str())
            .collect()
    };
    assert!(
        texts("everything_http__echo").contains("through http"),
        "{revision}"
    );
    let links = r["everything__get-resource-links"]["content"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let structured = &r["py__weather"]["structuredContent"];
    if revision >= Revision::V2025_06_18 {
        assert_eq!(structured["conditions"], "Sunny in Oslo", "{revision}");
        assert!(
            links
                .iter()
                .filter(|b| b["type"] == "resource_link")
                .count()
                >= 2,
            "{revision}: resource_link kept"
        );
    } else {
        assert!(
            structured.is_null(),
            "{revision}: no structuredContent before 2025-06-18"
        );
        assert!(
            texts("py__weather").contains("Sunny in Oslo"),
            "{revision}: kept as text"
        );
        assert!(
            links.iter().all(|b| b["type"] != "resource_link"),
            "{revision}"
        );
        assert!(
            links.iter().any(|b| b["text"]
                .as_str()
                .is_some_and(|t| t.contains("Resource link:"))),
            "{revision}: the URI stays visible"
        );
    }
    let icons = &tool("py__weather")["icons"];
    assert_eq!(
        icons.is_array(),
        revision >= Revision::V2025_11_25,
        "{revision}: icons only where the revision has them"
    );
    let annotated = &tool("echo__echo")["annotations"]["readOnlyHint"];
    assert_eq!(
        annotated == &json!(true),
        revision >= Revision::V2025_03_26,
        "{revision}: annotations only from 2025-03-26"
    );
}

#[tokio::test]
async fn sdk_hosts_see_every_upstream_through_the_gateway() {
    let Some(f) = fixture("sdk").await else {
        return;
    };
    let (_gateway, url) = http_gateway(&f.config).await;
    let calls = calls().to_string();
    let ts = run_host_json("node", &["host.mjs".into(), url.clone(), calls.clone()]).await;
    check(&ts, Revision::V2025_11_25);
    let py = interop_dir().join(".venv/bin/python").display().to_string();
    for (mode, revision) in [
        ("legacy", Revision::V2025_11_25),
        ("2026-07-28", Revision::V2026_07_28),
    ] {
        let seen = run_host_json(
            &py,
            &["host.py".into(), mode.into(), url.clone(), calls.clone()],
        )
        .await;
        assert_eq!(seen["protocolVersion"], revision.as_str());
        check(&seen, revision);
    }
}

#[tokio::test]
async fn older_hosts_get_valid_messages_of_their_revision() {
    let Some(f) = fixture("old").await else {
        return;
    };
    for revision in [
        Revision::V2024_11_05,
        Revision::V2025_03_26,
        Revision::V2025_06_18,
    ] {
        let t = ChildTransport::spawn(&StdioCommand::new(
            example("gateway"),
            ["--config".to_owned(), f.config.display().to_string()],
        ))
        .expect("gateway on stdio");
        let (sent, received) = (
            Arc::new(Mutex::new(Vec::new())),
            Arc::new(Mutex::new(Vec::new())),
        );
        let t = Recording {
            inner: t,
            sent: sent.clone(),
            received: Some(received.clone()),
        };
        let options = ClientOptions::default()
            .era(EraChoice::Legacy(revision))
            .supported(vec![revision]);
        let client = Client::connect(t, NoHandler, options)
            .await
            .expect("connect");
        assert_eq!(client.revision(), revision);
        let tools = client.list_tools().await.expect("tools");
        let mut results = Map::new();
        for c in calls().as_array().into_iter().flatten() {
            let name = c[0].as_str().unwrap_or_default();
            let args = c[1].as_object().cloned().unwrap_or_default();
            let r = client.call_tool(name, args).await.expect(name);
            results.insert(name.into(), serde_json::to_value(&r.result).expect("json"));
        }
        client.close().await;
        check(&json!({"tools": tools, "results": results}), revision);
        let (c, s) = (
            sent.lock().expect("lock").clone(),
            received.lock().expect("lock").clone(),
        );
        validate_all(revision, &c, &s);
    }
}

/// Era bridging with real peers both ways: hosts of one era call upstream tools that ask
/// for elicitation and sampling in the other era's way — a 2026 upstream through
/// `InputRequiredResult` (our echo and conformance servers), a legacy upstream through real
/// server→client requests (`server-everything`).
#[tokio::test]
async fn hosts_answer_upstream_questions_across_eras() {
    let Some((everything, py)) = peers() else {
        return;
    };
    let config = json!({"mcpServers": {
        "everything": {"command": "node", "args": [everything.display().to_string(), "stdio"]},
        "echo": {"command": example("echo-server")},
        "conf": {"command": example("conformance-server"), "args": ["--stdio"]}
    }, "gateway": {"startupWaitMillis": 60000}});
    let path = std::env::temp_dir().join(format!(
        "mcp-gateway-e2e-bridge-{}.json",
        std::process::id()
    ));
    std::fs::write(&path, config.to_string()).expect("config");
    let (_gateway, url) = http_gateway(&path).await;
    let calls = json!([
        ["echo__greet", {}],
        ["conf__test_sampling", {"prompt": "hi"}],
        ["everything__trigger-elicitation-request", {}],
        ["everything__trigger-sampling-request", {"prompt": "hi"}],
        ["everything__simulate-research-query", {"topic": "tasks"}]
    ])
    .to_string();
    let check = |seen: &Value, who: &str, model: &str| {
        let text = |k: &str| -> String {
            seen["results"][k]["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["text"].as_str())
                .collect()
        };
        assert_eq!(text("echo__greet"), "Hello, Ada!", "{who}: {seen}");
        assert!(text("conf__test_sampling").contains(model), "{who}: {seen}");
        assert!(
            text("everything__trigger-elicitation-request").contains("- Name: Ada"),
            "{who}: {seen}"
        );
        assert!(
            text("everything__trigger-sampling-request").contains(model),
            "{who}: {seen}"
        );
        // A 2025-11-25 tool with `taskSupport: "required"`, run as a task by the gateway.
        assert!(
            text("everything__simulate-research-query").contains("# Research Report: tasks"),
            "{who}: {seen}"
        );
    };
    let ts = run_host_json("node", &["host.mjs".into(), url.clone(), calls.clone()]).await;
    check(&ts, "TypeScript SDK host (legacy)", "sampled by ts");
    let research = ts["tools"]
        .as_array()
        .and_then(|t| {
            t.iter()
                .find(|t| t["name"] == "everything__simulate-research-query")
        })
        .cloned()
        .expect("listed to the 2025-11-25 host");
    assert_eq!(
        research["execution"]["taskSupport"], "optional",
        "the gateway runs the task for a host that calls plainly: {research}"
    );
    let seen = run_host_json(
        &py.display().to_string(),
        &[
            "host.py".into(),
            "2026-07-28".into(),
            url.clone(),
            calls.clone(),
        ],
    )
    .await;
    assert_eq!(seen["protocolVersion"], "2026-07-28");
    check(&seen, "Python SDK host (2026-07-28)", "sampled by python");

    // A 2024-11-05 host (ours) on stdio sees the task-required tool as an ordinary one.
    let t = ChildTransport::spawn(&StdioCommand::new(
        example("gateway"),
        ["--config".to_owned(), path.display().to_string()],
    ))
    .expect("gateway on stdio");
    let options = ClientOptions::default().era(EraChoice::Legacy(Revision::V2024_11_05));
    let old = Client::connect(t, NoHandler, options)
        .await
        .expect("old host");
    let tools = old.list_tools().await.expect("tools");
    let research = tools
        .iter()
        .find(|t| t.name == "everything__simulate-research-query")
        .expect("listed");
    assert!(research.execution.is_none(), "{research:?}");
    let mut args = Map::new();
    args.insert("topic".into(), json!("tasks"));
    let r = old
        .call_tool("everything__simulate-research-query", args)
        .await
        .expect("called");
    let body: String = r
        .result
        .content
        .iter()
        .filter_map(|b| match b {
            mcp_types::protocol::ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    assert!(body.contains("# Research Report: tasks"), "{body}");
    old.close().await;

    // Hosts that take tasks see server-everything's task as a task, under a gateway id.
    let research_call =
        json!({"name": "everything__simulate-research-query", "arguments": {"topic": "tasks"}});
    let modern = http_host(&url, EraChoice::Modern, extension_caps()).await;
    let created = raw(&modern, "tools/call", research_call.clone()).await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().expect("taskId").to_owned();
    let state = settled(&modern, &id).await;
    assert_eq!(state["status"], "completed", "{state}");
    let inline: String = state["result"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert!(inline.contains("# Research Report: tasks"), "{state}");
    modern.close().await;

    // An ambiguous query makes the task ask (2025-11-25: on the held `tasks/result`); the
    // 2026 host sees `inputRequests` and answers with `tasks/update`.
    let mut capabilities = extension_caps();
    capabilities.elicitation = Some(Map::new());
    let asker = http_host(&url, EraChoice::Modern, capabilities).await;
    let ambiguous = json!({"name": "everything__simulate-research-query",
        "arguments": {"topic": "python", "ambiguous": true}});
    let created = raw(&asker, "tools/call", ambiguous).await;
    let id = created["taskId"].as_str().expect("taskId").to_owned();
    let asking = settled(&asker, &id).await;
    assert_eq!(asking["status"], "input_required", "{asking}");
    let (key, question) = asking["inputRequests"]
        .as_object()
        .and_then(|r| r.iter().next())
        .expect("a question");
    assert_eq!(question["method"], "elicitation/create", "{asking}");
    let mut answers = Map::new();
    answers.insert(
        key.clone(),
        json!({"action": "accept", "content": {"interpretation": "snake"}}),
    );
    raw(
        &asker,
        "tasks/update",
        json!({"taskId": id, "inputResponses": answers}),
    )
    .await;
    let done = settled(&asker, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let report: String = done["result"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert!(report.contains("**Clarification**: snake"), "{report}");
    asker.close().await;

    let legacy = http_host(
        &url,
        EraChoice::Legacy(Revision::V2025_11_25),
        Default::default(),
    )
    .await;
    let mut asked = research_call;
    asked["task"] = json!({"ttl": 60000});
    let created = raw(&legacy, "tools/call", asked).await;
    let id = created["task"]["taskId"]
        .as_str()
        .expect("CreateTaskResult")
        .to_owned();
    let result = raw(&legacy, "tasks/result", json!({"taskId": id})).await;
    let text: String = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert!(text.contains("# Research Report: tasks"), "{result}");
    legacy.close().await;
    let _ = std::fs::remove_file(&path);
}
