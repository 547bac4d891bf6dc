//! Upstream tasks (TOOL-21) through the Aggregator: a 2025-11-25 upstream whose tools run
//! as tasks, reached by a 2026 host that declared the tasks extension (it sees the task,
//! and the finished task's result inline), by a 2025-11-25 host that asks for a task (it
//! gets `CreateTaskResult`, `tasks/get` and the blocking `tasks/result`), and by hosts that
//! take no tasks (they get the result as from an ordinary tool). And the same server
//! spoken in 2026-07-28 with the tasks extension: its task reaches a 2026 host as it is.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mcp_client::{CallOptions, Client, ClientError, ClientOptions, EraChoice, NoHandler};
use mcp_proxy::{Aggregator, AggregatorOptions};
use mcp_server::{Outcome, RequestContext, ServerHandler};
use mcp_types::protocol::*;
use mcp_types::{codes, ErrorObject, Revision};
use serde_json::{json, Map, Value};
use tokio::sync::watch;

mod common;
use common::*;

/// How long an upstream task works before it completes.
const WORK: Duration = Duration::from_millis(300);

/// One upstream task: when it started, whether it was cancelled, and for `ask`, the
/// name it asked for (`None` until answered).
#[derive(Clone)]
struct Job {
    started: Instant,
    cancelled: bool,
    /// How many questions it asks (`ask`: one, `ask_twice`: two, in two rounds).
    asks: usize,
    /// Who `ask` asks (its `who` argument), so each question is told apart.
    who: String,
    /// The answers so far.
    answers: Vec<String>,
    /// The retention its client asked for (default: an hour).
    ttl: Option<serde_json::Number>,
}

/// A 2025-11-25 upstream: `build` must run as a task, `quick` may, `plain` may not; `ask`
/// must, and asks its client for a name (on `tasks/result`, as 2025-11-25 tasks do). Its
/// task ids are small integers, as a real server's often are.
struct Jobs {
    tasks: Mutex<HashMap<String, Job>>,
    /// Told of every cancel, so that a blocking `tasks/result` ends at once.
    cancels: watch::Sender<()>,
    /// `Some`: each task's first question waits (five seconds at most) until two tasks are
    /// at theirs, so that questions of tasks held at once are in flight together.
    together: Option<watch::Sender<HashSet<String>>>,
}

impl Default for Jobs {
    fn default() -> Self {
        Jobs {
            tasks: Mutex::default(),
            cancels: watch::Sender::new(()),
            together: None,
        }
    }
}

impl Jobs {
    fn job(&self, id: &str) -> Result<Job, ErrorObject> {
        let tasks = self.tasks.lock().expect("lock");
        tasks
            .get(id)
            .cloned()
            .ok_or_else(|| ErrorObject::new(codes::INVALID_PARAMS, "Unknown task"))
    }

    fn state(&self, id: &str) -> Result<Task, ErrorObject> {
        let job = self.job(id)?;
        let status = if job.cancelled {
            TaskStatus::Cancelled
        } else if job.answers.len() < job.asks {
            TaskStatus::InputRequired
        } else if job.started.elapsed() >= WORK {
            TaskStatus::Completed
        } else {
            TaskStatus::Working
        };
        // The extension carries a finished task's result inline (2025-11-25 clients never
        // see it: their shape has no such member).
        let result = (status == TaskStatus::Completed && job.asks == 0)
            .then(|| json!(built()).as_object().cloned())
            .flatten();
        let status_message = (status == TaskStatus::Working).then(|| "building".to_owned());
        Ok(Task {
            task_id: id.to_owned(),
            status,
            status_message,
            result,
            created_at: "2026-11-30T00:00:00Z".into(),
            last_updated_at: "2026-11-30T00:00:00Z".into(),
            ttl_ms: Some(json!(job.ttl.unwrap_or_else(|| 3_600_000.into()))),
            poll_interval_ms: Some(50.into()),
            ..Default::default()
        })
    }
}

fn tool(name: &str, support: Option<TaskSupport>) -> Tool {
    Tool {
        name: name.into(),
        input_schema: Some(json!({"type": "object"}).into()),
        execution: support.map(|s| ToolExecution {
            task_support: Some(s),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn built() -> CallToolResult {
    CallToolResult {
        content: vec![ContentBlock::text("built")],
        ..Default::default()
    }
}

#[async_trait]
impl ServerHandler for Jobs {
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities {
            tasks: json!({"cancel": {}, "requests": {"tools": {"call": {}}}})
                .as_object()
                .cloned(),
            extensions: json!({TASKS_EXTENSION: {}}).as_object().cloned(),
            ..tools_only()
        }
    }

    async fn list_tools(
        &self,
        _ctx: &RequestContext,
        _p: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        listing([
            tool("build", Some(TaskSupport::Required)),
            tool("quick", Some(TaskSupport::Optional)),
            tool("plain", None),
            tool("ask", Some(TaskSupport::Required)),
            tool("ask_twice", Some(TaskSupport::Required)),
        ])
    }

    async fn call_tool(
        &self,
        ctx: &RequestContext,
        p: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        if p.name == "plain" {
            assert!(
                ctx.task_requested().is_none(),
                "the gateway asked a task of a tool that forbids it"
            );
            return Ok(Outcome::Complete(built()));
        }
        // 2025-11-25: the client asked for a task; 2026: the client takes tasks.
        if !ctx.accepts_task() {
            // 2026 has no per-tool negotiation: a tool that runs only as a task says so.
            if p.name != "quick" && ctx.revision() == Revision::V2026_07_28 {
                return Err(ErrorObject::new(
                    codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    "this tool runs only as a task",
                )
                .with_data(
                    json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}),
                ));
            }
            return Ok(Outcome::Complete(built()));
        }
        let id = {
            let mut tasks = self.tasks.lock().expect("lock");
            let id = (tasks.len() + 1).to_string();
            let job = Job {
                started: Instant::now(),
                cancelled: false,
                asks: match p.name.as_str() {
                    "ask" => 1,
                    "ask_twice" => 2,
                    _ => 0,
                },
                who: p
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("who")?.as_str())
                    .unwrap_or("you")
                    .to_owned(),
                answers: Vec::new(),
                ttl: ctx.task_requested().and_then(|t| t.ttl.clone()),
            };
            tasks.insert(id.clone(), job);
            id
        };
        Ok(Outcome::Task(Box::new(self.state(&id)?)))
    }

    async fn get_task(
        &self,
        _ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<Task, ErrorObject> {
        self.state(&p.task_id)
    }

    async fn task_result(
        &self,
        ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<Outcome<Value>, ErrorObject> {
        let job = self.job(&p.task_id)?;
        if job.asks > 0 {
            let n = job.answers.len();
            let answered = ctx
                .input_response(&format!("q{n}"))
                .and_then(|a| a.pointer("/content/name"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let mut answers = job.answers;
            answers.extend(answered);
            if let Some(j) = self.tasks.lock().expect("lock").get_mut(&p.task_id) {
                j.answers = answers.clone();
                j.started = Instant::now() - WORK;
            }
            if answers.len() < job.asks {
                if let (true, Some(at)) = (answers.is_empty(), &self.together) {
                    at.send_modify(|ids| {
                        ids.insert(p.task_id.clone());
                    });
                    let mut both = at.subscribe();
                    let _ = tokio::time::timeout(
                        Duration::from_secs(5),
                        both.wait_for(|ids| ids.len() >= 2),
                    )
                    .await;
                }
                let message = match answers.first() {
                    None => format!("What is your name, {}?", job.who),
                    Some(name) => format!("Where are you from, {name}?"),
                };
                let mut requests = Map::new();
                requests.insert(
                    format!("q{}", answers.len()),
                    json!({"method": "elicitation/create", "params": {
                        "message": message,
                        "requestedSchema": {"type": "object",
                            "properties": {"name": {"type": "string"}}, "required": ["name"]}
                    }}),
                );
                return Ok(Outcome::InputRequired(InputRequiredResult {
                    input_requests: Some(requests),
                    ..Default::default()
                }));
            }
            let greeting = match answers.as_slice() {
                [name] => format!("Hello, {name}!"),
                [name, place] => format!("Hello, {name} from {place}!"),
                _ => "Hello!".to_owned(),
            };
            return Ok(Outcome::Complete(json!({
                "content": [{"type": "text", "text": greeting}]
            })));
        }
        let mut cancels = self.cancels.subscribe();
        loop {
            match self.state(&p.task_id)?.status {
                TaskStatus::Completed => return Ok(Outcome::Complete(json!(built()))),
                TaskStatus::Cancelled => {
                    return Err(ErrorObject::new(codes::INTERNAL_ERROR, "cancelled"))
                }
                _ => {
                    // It works for WORK on the real clock, unless cancelled first.
                    let left = WORK.saturating_sub(self.job(&p.task_id)?.started.elapsed());
                    let _ = tokio::time::timeout(left, cancels.changed()).await;
                }
            }
        }
    }

    async fn cancel_task(
        &self,
        _ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<Task, ErrorObject> {
        if self.state(&p.task_id)?.status.is_terminal() {
            return Err(ErrorObject::new(
                codes::INVALID_PARAMS,
                "Cannot cancel a task in a terminal status",
            ));
        }
        if let Some(t) = self.tasks.lock().expect("lock").get_mut(&p.task_id) {
            t.cancelled = true;
        }
        self.cancels.send_replace(());
        self.state(&p.task_id)
    }
}

async fn gateway() -> Aggregator {
    gateway_to(Revision::V2025_11_25).await
}

/// The gateway in front of `Jobs` spoken in `revision`.
async fn gateway_to(revision: Revision) -> Aggregator {
    gateway_of(Jobs::default(), revision).await
}

/// The gateway in front of `jobs` spoken in `revision`.
async fn gateway_of(jobs: Jobs, revision: Revision) -> Aggregator {
    let jobs = in_process("jobs", jobs).revision(revision);
    Aggregator::start(vec![jobs], AggregatorOptions::default())
        .await
        .expect("starts")
}

/// A 2026 host that declared the tasks extension (and elicitation, if `elicits`).
async fn task_host(agg: &Aggregator, elicits: bool) -> Client {
    let capabilities = ClientCapabilities {
        extensions: json!({TASKS_EXTENSION: {}}).as_object().cloned(),
        elicitation: elicits.then(Map::new),
        ..Default::default()
    };
    let options = ClientOptions::default()
        .era(EraChoice::Modern)
        .capabilities(capabilities);
    host(agg, NoHandler, options).await
}

/// A host of `era` that declares nothing.
async fn host_of(agg: &Aggregator, era: EraChoice) -> Client {
    let options = ClientOptions::default().era(era);
    host(agg, NoHandler, options).await
}

/// The task's state by `tasks/get`.
async fn state_of(host: &Client, id: &str) -> Value {
    request(host, method::TASKS_GET, json!({"taskId": id}))
        .await
        .expect("tasks/get")
}

/// Polls `tasks/get` (the host's only view of a task) until the task is completed, or
/// five seconds pass, and returns its state.
async fn completed(host: &Client, id: &str) -> Value {
    let five_seconds = Duration::from_secs(5);
    mcp_examples::wait_until(five_seconds, || async {
        state_of(host, id).await["status"] == "completed"
    })
    .await;
    state_of(host, id).await
}

async fn request(host: &Client, m: &str, params: Value) -> Result<Value, ClientError> {
    host.request(m, params, &CallOptions::default()).await
}

/// Starts `jobs__build` as a task and cancels it: the cancel is acknowledged, and the
/// task is then `cancelled`. Returns its id.
async fn started_and_cancelled(host: &Client) -> String {
    let created = request(host, method::TOOLS_CALL, json!({"name": "jobs__build"}))
        .await
        .expect("tools/call");
    let id = created["taskId"].as_str().expect("taskId").to_owned();
    let ack = request(host, method::TASKS_CANCEL, json!({"taskId": id}))
        .await
        .expect("tasks/cancel");
    assert_eq!(ack["resultType"], "complete", "{ack}");
    let state = request(host, method::TASKS_GET, json!({"taskId": id}))
        .await
        .expect("tasks/get");
    assert_eq!(state["status"], "cancelled", "{state}");
    id
}

/// Polls `tasks/get` until the task leaves `working` (five seconds at most).
async fn settled(host: &Client, id: &str) -> Value {
    let five_seconds = Duration::from_secs(5);
    let left = mcp_examples::wait_until(five_seconds, || async {
        state_of(host, id).await["status"] != "working"
    })
    .await;
    assert!(left, "task {id} never settled");
    state_of(host, id).await
}

#[tokio::test]
async fn a_2026_host_that_takes_tasks_sees_the_upstream_task_and_its_result_inline() {
    let agg = gateway().await;
    let host = task_host(&agg, false).await;
    let declared = host.server().capabilities.extensions.clone();
    assert!(
        declared.is_some_and(|e| e.contains_key(TASKS_EXTENSION)),
        "the gateway declares the tasks extension"
    );
    assert!(
        host.server().capabilities.tasks.is_none(),
        "2026-07-28 has no `tasks` capability slot"
    );
    for name in ["jobs__build", "jobs__quick"] {
        let created = request(&host, method::TOOLS_CALL, json!({"name": name}))
            .await
            .expect("tools/call");
        assert_eq!(created["resultType"], "task", "{created}");
        assert_eq!(created["status"], "working", "{created}");
        // The host follows the task: the gateway does not cut its retention to a call's time.
        assert_eq!(created["ttlMs"], 3_600_000, "{created}");
        let id = created["taskId"].as_str().expect("taskId").to_owned();
        assert_ne!(id, "1", "the upstream's own id is not shown");
        let done = settled(&host, &id).await;
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(done["taskId"], id.as_str());
        assert_eq!(done["result"]["content"][0]["text"], "built", "{done}");
        assert!(
            done["result"]["_meta"]
                .get(mcp_types::meta::RELATED_TASK)
                .is_none(),
            "no upstream task id inline: {done}"
        );
    }
    // A tool that forbids tasks is called plainly, even by a host that takes tasks.
    let plain = request(&host, method::TOOLS_CALL, json!({"name": "jobs__plain"}))
        .await
        .expect("tools/call");
    assert_eq!(plain["content"][0]["text"], "built", "{plain}");
    agg.shutdown().await;
}

#[tokio::test]
async fn a_2025_11_25_host_that_asks_gets_the_task_and_its_blocking_result() {
    let agg = gateway().await;
    let options = ClientOptions::default().era(EraChoice::Legacy(Revision::V2025_11_25));
    let host = host(&agg, NoHandler, options).await;
    assert!(host.server().capabilities.tasks.is_some());
    assert!(
        host.server().capabilities.extensions.is_none(),
        "2025-11-25 has no `extensions` capability"
    );
    let tools = host.list_tools().await.expect("tools");
    let build = tools
        .iter()
        .find(|t| t.name == "jobs__build")
        .expect("build");
    assert_eq!(build.task_support(), TaskSupport::Optional, "{build:?}");

    let created = request(
        &host,
        method::TOOLS_CALL,
        json!({"name": "jobs__build", "task": {"ttl": 30000}}),
    )
    .await
    .expect("tools/call");
    let id = created["task"]["taskId"]
        .as_str()
        .expect("CreateTaskResult")
        .to_owned();
    assert_ne!(id, "1");
    assert_eq!(
        created["task"]["ttl"], 30000,
        "the host's retention is asked"
    );
    let state = request(&host, method::TASKS_GET, json!({"taskId": id}))
        .await
        .expect("tasks/get");
    assert!(state.get("result").is_none(), "{state}");
    let result = request(&host, method::TASKS_RESULT, json!({"taskId": id}))
        .await
        .expect("tasks/result");
    assert_eq!(result["content"][0]["text"], "built", "{result}");
    assert_eq!(
        result["_meta"][mcp_types::meta::RELATED_TASK]["taskId"],
        id,
        "tasks/result names the host's task, not the upstream's: {result}"
    );

    let refused = request(
        &host,
        method::TOOLS_CALL,
        json!({"name": "jobs__plain", "task": {}}),
    )
    .await;
    assert!(
        matches!(&refused, Err(ClientError::Server(e)) if e.code == codes::METHOD_NOT_FOUND),
        "{refused:?}"
    );
    agg.shutdown().await;
}

#[tokio::test]
async fn a_host_that_calls_plainly_hears_the_polled_task_s_status_as_progress() {
    let agg = gateway().await;
    let host = host_of(&agg, EraChoice::Legacy(Revision::V2025_06_18)).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let opts = CallOptions::default().progress(tx);
    let r = host
        .request(method::TOOLS_CALL, json!({"name": "jobs__build"}), &opts)
        .await
        .expect("tools/call");
    assert_eq!(r["content"][0]["text"], "built", "{r}");
    let mut messages = Vec::new();
    while let Ok(p) = rx.try_recv() {
        messages.extend(p.message);
    }
    assert_eq!(messages, ["building"], "one status message, relayed once");
    agg.shutdown().await;
}

#[tokio::test]
async fn hosts_that_take_no_tasks_get_the_result_as_from_an_ordinary_tool() {
    let agg = gateway().await;
    for era in [EraChoice::Modern, EraChoice::Legacy(Revision::V2024_11_05)] {
        let host = host_of(&agg, era).await;
        let r = host
            .call_tool("jobs__build", Map::new())
            .await
            .expect("called");
        assert_eq!(text(&r.result), "built");
    }
    agg.shutdown().await;
}

#[tokio::test]
async fn a_relayed_task_can_be_cancelled_and_only_gateway_ids_route() {
    let agg = gateway().await;
    let host = task_host(&agg, false).await;
    let id = started_and_cancelled(&host).await;
    // Cancelling a task that ended is acknowledged too (the upstream refuses it).
    let again = request(&host, method::TASKS_CANCEL, json!({"taskId": id}))
        .await
        .expect("a second tasks/cancel");
    assert_eq!(again["resultType"], "complete", "{again}");

    for guess in ["1", "mcp-proxy.0000"] {
        let r = request(&host, method::TASKS_GET, json!({"taskId": guess})).await;
        assert!(
            matches!(&r, Err(ClientError::Server(e)) if e.code == codes::INVALID_PARAMS),
            "{r:?}"
        );
    }
    agg.shutdown().await;
}

#[tokio::test]
async fn a_2026_host_answers_a_legacy_task_s_question_through_tasks_update() {
    let agg = gateway().await;
    let host = task_host(&agg, true).await;
    let created = request(&host, method::TOOLS_CALL, json!({"name": "jobs__ask"}))
        .await
        .expect("tools/call");
    let id = created["taskId"].as_str().expect("taskId").to_owned();
    let question = answer(&host, &id, "Ada").await;
    assert_eq!(question, "What is your name, you?");
    let done = completed(&host, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"], "Hello, Ada!",
        "{done}"
    );
    agg.shutdown().await;
}

/// Polls until the task asks, and answers its one question with `name`.
async fn answer(host: &Client, id: &str, name: &str) -> String {
    let asking = settled(host, id).await;
    assert_eq!(asking["status"], "input_required", "{asking}");
    let requests = asking["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(requests.len(), 1, "{asking}");
    let (key, question) = requests.iter().next().expect("one");
    assert_eq!(question["method"], "elicitation/create", "{asking}");
    let mut answers = Map::new();
    answers.insert(
        key.clone(),
        json!({"action": "accept", "content": {"name": name}}),
    );
    let ack = request(
        host,
        method::TASKS_UPDATE,
        json!({"taskId": id, "inputResponses": answers}),
    )
    .await
    .expect("tasks/update");
    assert_eq!(ack["resultType"], "complete", "{ack}");
    question["params"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn each_task_s_question_reaches_the_host_of_that_task() {
    let together = Jobs {
        together: Some(watch::Sender::new(HashSet::new())),
        ..Jobs::default()
    };
    let agg = gateway_of(together, Revision::V2025_11_25).await;
    let (a, b) = (task_host(&agg, true).await, task_host(&agg, true).await);
    let mut ids = Vec::new();
    for (h, who) in [(&a, "first"), (&b, "second")] {
        let created = request(
            h,
            method::TOOLS_CALL,
            json!({"name": "jobs__ask", "arguments": {"who": who}}),
        )
        .await
        .expect("tools/call");
        ids.push(created["taskId"].as_str().expect("taskId").to_owned());
    }
    // Both hosts poll at once: the upstream asks both questions while both calls are held.
    let (qa, qb) = tokio::join!(answer(&a, &ids[0], "Ada"), answer(&b, &ids[1], "Bob"));
    assert_eq!(qa, "What is your name, first?");
    assert_eq!(qb, "What is your name, second?");
    for (h, id, greeting) in [(&a, &ids[0], "Hello, Ada!"), (&b, &ids[1], "Hello, Bob!")] {
        let done = completed(h, id).await;
        assert_eq!(done["result"]["content"][0]["text"], greeting, "{done}");
    }
    agg.shutdown().await;
}

#[tokio::test]
async fn a_2026_upstream_s_task_reaches_a_2026_host_as_it_is() {
    let agg = gateway_to(Revision::V2026_07_28).await;
    let host = task_host(&agg, false).await;
    let created = request(&host, method::TOOLS_CALL, json!({"name": "jobs__quick"}))
        .await
        .expect("tools/call");
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().expect("taskId").to_owned();
    assert_ne!(id, "1", "the upstream's own id is not shown");
    let done = completed(&host, &id).await;
    assert_eq!(done["result"]["content"][0]["text"], "built", "{done}");

    started_and_cancelled(&host).await;

    // A host without the extension is not told of it upstream: no task is made for it.
    let plain_host = host_of(&agg, EraChoice::Modern).await;
    let r = plain_host
        .call_tool("jobs__quick", Map::new())
        .await
        .expect("called");
    assert_eq!(text(&r.result), "built");
    agg.shutdown().await;
}

#[tokio::test]
async fn a_task_s_later_questions_get_new_keys_and_stray_answers_are_ignored() {
    let agg = gateway().await;
    let host = task_host(&agg, true).await;
    let created = request(
        &host,
        method::TOOLS_CALL,
        json!({"name": "jobs__ask_twice"}),
    )
    .await
    .expect("tools/call");
    let id = created["taskId"].as_str().expect("taskId").to_owned();
    let first = settled(&host, &id).await;
    let first_key = first["inputRequests"]
        .as_object()
        .and_then(|r| r.keys().next().cloned())
        .expect("a first question");
    // An answer to a key that is not open changes nothing.
    let stray = request(
        &host,
        method::TASKS_UPDATE,
        json!({"taskId": id, "inputResponses": {"not-asked": {"action": "decline"}}}),
    )
    .await
    .expect("tasks/update");
    assert_eq!(stray["resultType"], "complete", "{stray}");
    let still = request(&host, method::TASKS_GET, json!({"taskId": id}))
        .await
        .expect("tasks/get");
    assert_eq!(still["status"], "input_required", "{still}");
    assert_eq!(still["inputRequests"], first["inputRequests"], "{still}");

    assert_eq!(answer(&host, &id, "Ada").await, "What is your name, you?");
    let asked_again = |state: Value| {
        state["inputRequests"]
            .as_object()
            .is_some_and(|r| !r.contains_key(&first_key))
    };
    mcp_examples::wait_until(Duration::from_secs(5), || async {
        asked_again(state_of(&host, &id).await)
    })
    .await;
    let second = state_of(&host, &id).await;
    let keys: Vec<&String> = second["inputRequests"]
        .as_object()
        .map(|r| r.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys.len(), 1, "one new question: {second}");
    assert_ne!(keys[0], &first_key, "a key is never reused within a task");
    assert_eq!(
        answer(&host, &id, "Paris").await,
        "Where are you from, Ada?"
    );
    let done = completed(&host, &id).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "Hello, Ada from Paris!",
        "{done}"
    );
    agg.shutdown().await;
}

#[tokio::test]
async fn task_capabilities_are_declared_only_where_a_host_can_reach_a_task() {
    let echo = in_process("echo", mcp_examples::echo_tools()).revision(Revision::V2025_11_25);
    let agg = Aggregator::start(vec![echo], AggregatorOptions::default())
        .await
        .expect("starts");
    let legacy = host_of(&agg, EraChoice::Legacy(Revision::V2025_11_25)).await;
    assert!(
        legacy.server().capabilities.tasks.is_none(),
        "no tool can run as a task"
    );
    let modern = task_host(&agg, false).await;
    assert!(
        modern.server().capabilities.extensions.is_none(),
        "no upstream makes tasks"
    );
    agg.shutdown().await;
}

#[tokio::test]
async fn legacy_hosts_get_a_2026_task_only_tool_s_result_and_2026_hosts_hear_its_error() {
    let agg = gateway_to(Revision::V2026_07_28).await;
    // A 2026 host without the extension hears the upstream's answer as it is.
    let modern = host_of(&agg, EraChoice::Modern).await;
    let refused = request(&modern, method::TOOLS_CALL, json!({"name": "jobs__build"})).await;
    assert!(
        matches!(&refused, Err(ClientError::Server(e))
            if e.code == codes::MISSING_REQUIRED_CLIENT_CAPABILITY),
        "{refused:?}"
    );
    // A legacy host cannot take a 2026 task: the gateway takes it and follows it.
    for era in [
        EraChoice::Legacy(Revision::V2025_11_25),
        EraChoice::Legacy(Revision::V2024_11_05),
    ] {
        let host = host_of(&agg, era).await;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let opts = CallOptions::default().progress(tx);
        let r = host
            .request(method::TOOLS_CALL, json!({"name": "jobs__build"}), &opts)
            .await
            .expect("tools/call");
        assert_eq!(r["content"][0]["text"], "built", "{r}");
        assert!(r.get("taskId").is_none(), "{r}");
        let mut seen = Vec::new();
        while let Ok(p) = rx.try_recv() {
            seen.push(p.message);
        }
        // The task's status as progress (2024-11-05 progress carries no message).
        let said = match era {
            EraChoice::Legacy(Revision::V2024_11_05) => None,
            _ => Some("building".to_owned()),
        };
        assert_eq!(seen, [said], "{era:?}");
    }
    agg.shutdown().await;
}
