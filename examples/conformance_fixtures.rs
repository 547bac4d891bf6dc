//! The fixtures the official conformance suite's server scenarios call: tools, resources,
//! prompts and completions with the names, arguments and contents the scenarios check.
//!
//! Tools that need the client (sampling, elicitation, roots) are written once in the
//! multi-round-trip style: a 2026 client gets the `InputRequiredResult`, a legacy client
//! gets real server→client requests (the server bridges them). The tasks extension's
//! fixtures are in `conformance_tasks`.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_server::{ListChanged, Outcome, RequestContext, ServerHandler, ToolError, ToolRegistry};
use mcp_types::protocol::*;
use mcp_types::{codes, ErrorObject};
use serde_json::{json, Map, Value};

/// A one-pixel PNG.
const PNG: &str = crate::PIXEL_PNG;
/// A tiny WAV header.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA=";

/// A resource that changes ten times a second: each subscriber gets an update every
/// 100 ms from its subscription until it unsubscribes or goes away (at most ten minutes), for
/// tests of subscriptions.
const TICKING: &str = "test://ticking-resource";

/// Tells `s` of updates of [`TICKING`], 100 ms apart, until it goes away or ten minutes
/// have passed (the task is aborted when `s` unsubscribes).
async fn tick(s: mcp_server::Subscriber) {
    for _ in 0..6000 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let update = json!({"uri": TICKING});
        if s.notify(method::RESOURCES_UPDATED, update).await.is_err() {
            return;
        }
    }
}

fn text(t: impl Into<String>) -> ContentBlock {
    ContentBlock::text(t)
}

fn done(content: Vec<ContentBlock>) -> Result<Outcome<CallToolResult>, ToolError> {
    Ok(Outcome::Complete(CallToolResult {
        content,
        ..Default::default()
    }))
}

fn ask(requests: Value, state: Option<String>) -> Result<Outcome<CallToolResult>, ToolError> {
    Ok(Outcome::InputRequired(InputRequiredResult {
        input_requests: requests.as_object().cloned(),
        request_state: state,
        ..Default::default()
    }))
}

pub(crate) fn elicit(message: &str, schema: Value) -> Value {
    json!({"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": schema}})
}

fn sample(prompt: &str) -> Value {
    json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}], "maxTokens": 100}})
}

fn roots() -> Value {
    json!({"method": "roots/list", "params": {}})
}

/// An accepted elicitation answer's content, or `None` for anything else.
fn accepted(v: Option<&Value>) -> Option<&Map<String, Value>> {
    let v = v?;
    (v.get("action")? == "accept")
        .then(|| v.get("content").and_then(Value::as_object))
        .flatten()
}

fn sampled_text(v: Option<&Value>) -> Option<String> {
    let c = v?.get("content")?;
    let block = if c.is_array() { c.get(0)? } else { c };
    block.get("text").and_then(Value::as_str).map(str::to_owned)
}

fn tool(name: &str, description: &str, schema: Value) -> Tool {
    let mut t = Tool::new(name, schema);
    t.description = Some(description.to_owned());
    t
}

fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}

/// Signs and checks `requestState` so a changed one is refused.
#[derive(Clone)]
struct StateSigner {
    key: Arc<RandomState>,
}

impl StateSigner {
    fn sign(&self, payload: &str) -> String {
        format!("{payload}.{:016x}", self.key.hash_one(payload))
    }

    fn verify<'a>(&self, state: &'a str) -> Option<&'a str> {
        let (payload, mac) = state.rsplit_once('.')?;
        (format!("{:016x}", self.key.hash_one(payload)) == mac).then_some(payload)
    }
}

fn tampered() -> ToolError {
    ToolError::Protocol(ErrorObject::new(
        codes::INVALID_PARAMS,
        "requestState was altered or is not ours",
    ))
}

fn tools() -> ToolRegistry {
    let signer = StateSigner {
        key: Arc::new(RandomState::new()),
    };
    let mut r = ToolRegistry::new();
    r.raw_tool(
        tool(
            "test_simple_text",
            "Returns a simple text response.",
            no_args(),
        ),
        |_, _| async { done(vec![text("This is a simple text response for testing.")]) },
    );
    r.raw_tool(
        tool("test_image_content", "Returns an image.", no_args()),
        |_, _| async {
            done(vec![ContentBlock::Image(BinaryContent {
                data: PNG.into(),
                mime_type: "image/png".into(),
                ..Default::default()
            })])
        },
    );
    r.raw_tool(
        tool("test_audio_content", "Returns audio.", no_args()),
        |_, _| async {
            done(vec![ContentBlock::Audio(BinaryContent {
                data: WAV.into(),
                mime_type: "audio/wav".into(),
                ..Default::default()
            })])
        },
    );
    r.raw_tool(
        tool(
            "test_embedded_resource",
            "Returns an embedded resource.",
            no_args(),
        ),
        |_, _| async {
            done(vec![embedded(
                "test://embedded-resource",
                "text/plain",
                "This is an embedded resource content.",
            )])
        },
    );
    r.raw_tool(
        tool(
            "test_multiple_content_types",
            "Returns text, an image and a resource.",
            no_args(),
        ),
        |_, _| async {
            done(vec![
                text("Multiple content types test:"),
                ContentBlock::Image(BinaryContent {
                    data: PNG.into(),
                    mime_type: "image/png".into(),
                    ..Default::default()
                }),
                embedded(
                    "test://mixed-content-resource",
                    "application/json",
                    r#"{"test":"data","value":123}"#,
                ),
            ])
        },
    );
    r.raw_tool(
        tool(
            "test_error_handling",
            "Always returns an error result.",
            no_args(),
        ),
        |_, _| async {
            Err::<Outcome<CallToolResult>, _>(ToolError::Failed(
                "This tool intentionally returns an error for testing".into(),
            ))
        },
    );
    r.raw_tool(
        tool(
            "test_tool_with_progress",
            "Reports progress three times.",
            no_args(),
        ),
        |_, ctx: RequestContext| async move {
            for p in [0.0, 50.0, 100.0] {
                ctx.progress(p, Some(100.0), None).await;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            done(vec![text("Progress test completed.")])
        },
    );
    r.raw_tool(
        tool("test_tool_with_logging", "Logs three messages.", no_args()),
        |_, ctx: RequestContext| async move {
            for m in [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ] {
                ctx.log(LoggingLevel::Info, Some("conformance"), json!(m))
                    .await;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            done(vec![text("Logging test completed.")])
        },
    );
    r.raw_tool(
        tool(
            "test_logging_tool",
            "Logs, but only to clients that asked for a level.",
            no_args(),
        ),
        |_, ctx: RequestContext| async move {
            ctx.log(
                LoggingLevel::Info,
                Some("conformance"),
                json!("should not be sent without a logLevel"),
            )
            .await;
            done(vec![text("Logged.")])
        },
    );
    r.raw_tool(
        tool("test_sampling", "Asks the client's model.", json!({"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]})),
        |args, ctx: RequestContext| async move {
            match sampled_text(ctx.input_response("sample")) {
                Some(t) => done(vec![text(format!("LLM response: {t}"))]),
                None => {
                    let prompt = args.get("prompt").and_then(Value::as_str).unwrap_or("Hello").to_owned();
                    ask(json!({"sample": sample(&prompt)}), None)
                }
            }
        },
    );
    r.raw_tool(
        tool("test_elicitation", "Asks the user.", json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]})),
        |args, ctx: RequestContext| async move {
            if let Some(answer) = ctx.input_response("info") {
                return done(vec![text(format!("User response: {answer}"))]);
            }
            let message = args.get("message").and_then(Value::as_str).unwrap_or("Please provide your information").to_owned();
            let schema = json!({"type": "object", "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"}}, "required": ["username", "email"]});
            ask(json!({"info": elicit(&message, schema)}), None)
        },
    );
    r.raw_tool(tool("test_elicitation_sep1034_defaults", "Elicitation with defaults.", no_args()), |_, ctx: RequestContext| async move {
        if let Some(answer) = ctx.input_response("defaults") {
            return done(vec![text(format!("Elicitation completed: {answer}"))]);
        }
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": true}}});
        ask(json!({"defaults": elicit("Please review and update the form fields with defaults", schema)}), None)
    });
    r.raw_tool(tool("test_elicitation_sep1330_enums", "Elicitation with every enum form.", no_args()), |_, ctx: RequestContext| async move {
        if let Some(answer) = ctx.input_response("enums") {
            return done(vec![text(format!("Elicitation completed: {answer}"))]);
        }
        let schema = json!({"type": "object", "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"}, {"const": "value3", "title": "Third Option"}]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"}, {"const": "value3", "title": "Third Choice"}]}}}});
        ask(json!({"enums": elicit("Please select options", schema)}), None)
    });
    r.raw_tool(
        tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]}, "phone": {"type": "string"}, "email": {"type": "string"}},
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]}, "else": {"required": ["email"]},
            "additionalProperties": false})),
        |args, _| async move { done(vec![text(format!("Received: {}", Value::Object(args)))]) },
    );
    r.raw_tool(
        tool(
            "test_missing_capability",
            "Needs sampling; refused to clients without it.",
            no_args(),
        ),
        |_, ctx: RequestContext| async move {
            match sampled_text(ctx.input_response("sample")) {
                Some(t) => done(vec![text(t)]),
                None => ask(json!({"sample": sample("Say hello")}), None),
            }
        },
    );
    r.raw_tool(tool("test_streaming_elicitation", "Asks for input the 2026 way, never by a request.", no_args()), |_, ctx: RequestContext| async move {
        match accepted(ctx.input_response("name")) {
            Some(c) => done(vec![text(format!("Hello, {}!", c.get("name").and_then(Value::as_str).unwrap_or("?")))]),
            None => ask(json!({"name": elicit("What is your name?", json!({"type": "object", "properties": {"name": {"type": "string"}}}))}), None),
        }
    });
    r.raw_tool(
        tool(
            "test_trigger_tool_change",
            "Announces a change to the tool list.",
            no_args(),
        ),
        |_, ctx: RequestContext| async move {
            ctx.list_changed(ListChanged::Tools);
            done(vec![text("Tool list change announced.")])
        },
    );
    r.raw_tool(
        tool(
            "test_trigger_prompt_change",
            "Announces a change to the prompt list.",
            no_args(),
        ),
        |_, ctx: RequestContext| async move {
            ctx.list_changed(ListChanged::Prompts);
            done(vec![text("Prompt list change announced.")])
        },
    );
    r.raw_tool(tool("test_input_required_result_elicitation", "Asks for the user's name.", no_args()), |_, ctx: RequestContext| async move {
        match accepted(ctx.input_response("user_name")) {
            Some(c) => done(vec![text(format!("Hello, {}!", c.get("name").and_then(Value::as_str).unwrap_or("?")))]),
            None => ask(json!({"user_name": elicit("What is your name?", json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}))}), None),
        }
    });
    r.raw_tool(
        tool(
            "test_input_required_result_sampling",
            "Asks the client's model.",
            no_args(),
        ),
        |_, ctx: RequestContext| async move {
            match sampled_text(ctx.input_response("capital_question")) {
                Some(t) => done(vec![text(format!("The model said: {t}"))]),
                None => ask(
                    json!({"capital_question": sample("What is the capital of France?")}),
                    None,
                ),
            }
        },
    );
    r.raw_tool(
        tool(
            "test_input_required_result_list_roots",
            "Asks for the client's roots.",
            no_args(),
        ),
        |_, ctx: RequestContext| async move {
            match ctx
                .input_response("client_roots")
                .and_then(|v| v.get("roots"))
                .and_then(Value::as_array)
            {
                Some(rs) => done(vec![text(format!("{} root(s)", rs.len()))]),
                None => ask(json!({"client_roots": roots()}), None),
            }
        },
    );
    let s = signer.clone();
    r.raw_tool(tool("test_input_required_result_request_state", "Round trip with requestState.", no_args()), move |_, ctx: RequestContext| {
        let s = s.clone();
        async move {
            if let Some(state) = ctx.request_state() {
                if s.verify(state) != Some("confirm") {
                    return Err(tampered());
                }
                if accepted(ctx.input_response("confirm")).is_some() {
                    return done(vec![text("state-ok")]);
                }
            }
            ask(json!({"confirm": elicit("Confirm?", json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}))}), Some(s.sign("confirm")))
        }
    });
    let s = signer.clone();
    r.raw_tool(tool("test_input_required_result_multiple_inputs", "Asks three things at once.", no_args()), move |_, ctx: RequestContext| {
        let s = s.clone();
        async move {
            let all = ["user_name", "greeting", "client_roots"].iter().all(|k| ctx.input_response(k).is_some());
            if all && ctx.request_state().and_then(|st| s.verify(st)) == Some("multi") {
                return done(vec![text("All three answers received.")]);
            }
            ask(
                json!({"user_name": elicit("What is your name?", json!({"type": "object", "properties": {"name": {"type": "string"}}})),
                       "greeting": sample("Say hello"), "client_roots": roots()}),
                Some(s.sign("multi")),
            )
        }
    });
    let s = signer.clone();
    r.raw_tool(tool("test_input_required_result_multi_round", "Asks twice, one after the other.", no_args()), move |_, ctx: RequestContext| {
        let s = s.clone();
        async move {
            match ctx.request_state().map(|st| s.verify(st)) {
                None => ask(json!({"name": elicit("Name?", json!({"type": "object", "properties": {"name": {"type": "string"}}}))}), Some(s.sign("round1"))),
                Some(Some("round1")) if accepted(ctx.input_response("name")).is_some() => {
                    ask(json!({"color": elicit("Favourite colour?", json!({"type": "object", "properties": {"color": {"type": "string"}}}))}), Some(s.sign("round2")))
                }
                Some(Some("round2")) if accepted(ctx.input_response("color")).is_some() => done(vec![text("Both rounds answered.")]),
                Some(None) => Err(tampered()),
                Some(Some(_)) => Err(ToolError::Protocol(ErrorObject::new(codes::INVALID_PARAMS, "the expected answer is missing"))),
            }
        }
    });
    let s = signer.clone();
    r.raw_tool(tool("test_input_required_result_tampered_state", "Refuses an altered requestState.", no_args()), move |_, ctx: RequestContext| {
        let s = s.clone();
        async move {
            match ctx.request_state() {
                Some(st) if s.verify(st) == Some("tamper-check") => done(vec![text("state-ok")]),
                Some(_) => Err(tampered()),
                None => ask(json!({"confirm": elicit("Confirm?", json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}))}), Some(s.sign("tamper-check"))),
            }
        }
    });
    r.raw_tool(tool("test_input_required_result_capabilities", "Asks only for what the client declared.", no_args()), |_, ctx: RequestContext| async move {
        if ctx.input_response("ask").is_some() {
            return done(vec![text("Answered.")]);
        }
        let caps = ctx.client_capabilities();
        if caps.elicitation.is_some() {
            ask(json!({"ask": elicit("Anything?", json!({"type": "object", "properties": {}}))}), None)
        } else if caps.sampling.is_some() {
            ask(json!({"ask": sample("Anything?")}), None)
        } else if caps.roots.is_some() {
            ask(json!({"ask": roots()}), None)
        } else {
            done(vec![text("The client can be asked nothing.")])
        }
    });
    // SEP-2243: an argument mirrored into `Mcp-Param-Region`, checked by the HTTP endpoint.
    let region = json!({"type": "object", "properties": {
        "region": {"type": "string", "description": "Where to run.", "x-mcp-header": "Region"},
        "query": {"type": "string"}}, "required": ["region"]});
    r.raw_tool(
        tool(
            "test_mirrored_region",
            "Echoes the region its header carried.",
            region,
        ),
        |args, _| async move {
            let region = args
                .get("region")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            done(vec![text(format!("region {region}"))])
        },
    );
    r
}

fn embedded(uri: &str, mime: &str, body: &str) -> ContentBlock {
    ContentBlock::Resource(EmbeddedResource {
        resource: ResourceContents {
            uri: uri.into(),
            mime_type: Some(mime.into()),
            text: Some(body.into()),
            ..Default::default()
        },
        ..Default::default()
    })
}

/// The conformance fixtures as a [`ServerHandler`].
pub struct Conformance {
    tools: ToolRegistry,
    tasks: crate::conformance_tasks::TaskFixtures,
    /// The updates of [`TICKING`] sent to each subscriber, stopped when it unsubscribes.
    tickers: std::sync::Mutex<HashMap<mcp_server::SubscriberId, tokio::task::AbortHandle>>,
}

impl Default for Conformance {
    fn default() -> Self {
        Conformance {
            tools: tools(),
            tasks: Default::default(),
            tickers: Default::default(),
        }
    }
}

fn prompt(name: &str, description: &str, args: &[&str]) -> Prompt {
    Prompt {
        name: name.into(),
        description: Some(description.into()),
        arguments: (!args.is_empty()).then(|| {
            args.iter()
                .map(|a| PromptArgument {
                    name: (*a).into(),
                    required: Some(true),
                    ..Default::default()
                })
                .collect()
        }),
        ..Default::default()
    }
}

fn message(role: Role, content: ContentBlock) -> PromptMessage {
    PromptMessage {
        role,
        content,
        ..Default::default()
    }
}

#[async_trait]
impl ServerHandler for Conformance {
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities {
            tools: Some(ListChangedCapability {
                list_changed: Some(true),
                ..Default::default()
            }),
            prompts: Some(ListChangedCapability {
                list_changed: Some(true),
                ..Default::default()
            }),
            resources: Some(ResourcesCapability {
                subscribe: Some(true),
                list_changed: Some(true),
                ..Default::default()
            }),
            logging: Some(Map::new()),
            completions: Some(Map::new()),
            // 2025-11-25 tasks and the 2026-07-28 extension (each client sees its own).
            tasks: json!({"cancel": {}, "requests": {"tools": {"call": {}}}})
                .as_object()
                .cloned(),
            extensions: json!({TASKS_EXTENSION: {}}).as_object().cloned(),
            ..Default::default()
        }
    }

    fn header_params(
        &self,
        name: &str,
        principal: Option<&mcp_server::auth::Principal>,
    ) -> Vec<mcp_types::headers::HeaderParam> {
        self.tools.header_params(name, principal)
    }

    async fn list_tools(
        &self,
        ctx: &RequestContext,
        params: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        let mut list = self.tools.list_tools(ctx, params).await?;
        list.tools
            .extend(crate::conformance_tasks::TaskFixtures::tools());
        Ok(list)
    }

    async fn call_tool(
        &self,
        ctx: &RequestContext,
        params: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        match self.tasks.call(ctx, &params).await {
            Some(out) => out,
            None => self.tools.call(ctx, params).await,
        }
    }

    async fn get_task(
        &self,
        _ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<Task, ErrorObject> {
        self.tasks.get(&p.task_id)
    }

    async fn task_result(
        &self,
        ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<Outcome<Value>, ErrorObject> {
        self.tasks.result(ctx, &p.task_id).await
    }

    async fn cancel_task(
        &self,
        _ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<Task, ErrorObject> {
        self.tasks.cancel(&p.task_id)
    }

    async fn update_task(
        &self,
        _ctx: &RequestContext,
        p: TaskRequestParams,
    ) -> Result<(), ErrorObject> {
        self.tasks
            .update(&p.task_id, p.input_responses.unwrap_or_default())
    }

    async fn list_prompts(
        &self,
        _ctx: &RequestContext,
        _p: PaginatedRequestParams,
    ) -> Result<ListPromptsResult, ErrorObject> {
        Ok(ListPromptsResult {
            prompts: vec![
                prompt(
                    "test_simple_prompt",
                    "A simple prompt without arguments.",
                    &[],
                ),
                prompt(
                    "test_prompt_with_arguments",
                    "A prompt with two arguments.",
                    &["arg1", "arg2"],
                ),
                prompt(
                    "test_prompt_with_embedded_resource",
                    "A prompt with an embedded resource.",
                    &["resourceUri"],
                ),
                prompt("test_prompt_with_image", "A prompt with an image.", &[]),
                prompt(
                    "test_input_required_result_prompt",
                    "A prompt that first asks the user for context.",
                    &[],
                ),
            ],
            ..Default::default()
        })
    }

    async fn get_prompt(
        &self,
        ctx: &RequestContext,
        p: GetPromptRequestParams,
    ) -> Result<Outcome<GetPromptResult>, ErrorObject> {
        let arg = |k: &str| {
            p.arguments
                .as_ref()
                .and_then(|a| a.get(k))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let messages = match p.name.as_str() {
            "test_simple_prompt" => vec![message(
                Role::User,
                text("This is a simple prompt for testing."),
            )],
            "test_prompt_with_arguments" => vec![message(
                Role::User,
                text(format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    arg("arg1"),
                    arg("arg2")
                )),
            )],
            "test_prompt_with_embedded_resource" => vec![
                message(
                    Role::User,
                    embedded(
                        &arg("resourceUri"),
                        "text/plain",
                        "Embedded resource content for testing.",
                    ),
                ),
                message(
                    Role::User,
                    text("Please process the embedded resource above."),
                ),
            ],
            "test_prompt_with_image" => vec![
                message(
                    Role::User,
                    ContentBlock::Image(BinaryContent {
                        data: PNG.into(),
                        mime_type: "image/png".into(),
                        ..Default::default()
                    }),
                ),
                message(Role::User, text("Please analyze the image above.")),
            ],
            "test_input_required_result_prompt" => {
                match accepted(ctx.input_response("user_context")) {
                    Some(c) => vec![message(
                        Role::User,
                        text(format!(
                            "Context: {}",
                            c.get("context").and_then(Value::as_str).unwrap_or_default()
                        )),
                    )],
                    None => {
                        let requests = json!({"user_context": elicit("Some context, please", json!({"type": "object", "properties": {"context": {"type": "string"}}}))});
                        return Ok(Outcome::InputRequired(InputRequiredResult {
                            input_requests: requests.as_object().cloned(),
                            ..Default::default()
                        }));
                    }
                }
            }
            other => {
                return Err(ErrorObject::new(
                    codes::INVALID_PARAMS,
                    format!("Unknown prompt: {other}"),
                ))
            }
        };
        Ok(Outcome::Complete(GetPromptResult {
            messages,
            ..Default::default()
        }))
    }

    async fn list_resources(
        &self,
        _ctx: &RequestContext,
        _p: PaginatedRequestParams,
    ) -> Result<ListResourcesResult, ErrorObject> {
        let r = |uri: &str, name: &str, mime: &str| Resource {
            uri: uri.into(),
            name: name.into(),
            mime_type: Some(mime.into()),
            description: Some(format!("The {name} resource.")),
            ..Default::default()
        };
        Ok(ListResourcesResult {
            resources: vec![
                r("test://static-text", "static-text", "text/plain"),
                r("test://static-binary", "static-binary", "image/png"),
                r("test://watched-resource", "watched-resource", "text/plain"),
                r(TICKING, "ticking-resource", "text/plain"),
                r(
                    "test://embedded-resource",
                    "embedded-resource",
                    "text/plain",
                ),
            ],
            ..Default::default()
        })
    }

    async fn list_resource_templates(
        &self,
        _ctx: &RequestContext,
        _p: PaginatedRequestParams,
    ) -> Result<ListResourceTemplatesResult, ErrorObject> {
        Ok(ListResourceTemplatesResult {
            resource_templates: vec![ResourceTemplate {
                uri_template: "test://template/{id}/data".into(),
                name: "template".into(),
                mime_type: Some("application/json".into()),
                description: Some("Data by id.".into()),
                ..Default::default()
            }],
            ..Default::default()
        })
    }

    async fn read_resource(
        &self,
        _ctx: &RequestContext,
        p: ResourceRequestParams,
    ) -> Result<Outcome<ReadResourceResult>, ErrorObject> {
        let contents =
            |mime: &str, text_body: Option<String>, blob: Option<&str>| ResourceContents {
                uri: p.uri.clone(),
                mime_type: Some(mime.into()),
                text: text_body,
                blob: blob.map(str::to_owned),
                ..Default::default()
            };
        let c = match p.uri.as_str() {
            "test://static-text" => contents("text/plain", Some("This is the content of the static text resource.".into()), None),
            "test://static-binary" => contents("image/png", None, Some(PNG)),
            "test://watched-resource" => contents("text/plain", Some("Watched resource content.".into()), None),
            TICKING => contents("text/plain", Some("A resource that changes ten times a second.".into()), None),
            "test://embedded-resource" => contents("text/plain", Some("This is an embedded resource content.".into()), None),
            uri => match uri.strip_prefix("test://template/").and_then(|r| r.strip_suffix("/data")) {
                Some(id) => contents("application/json", Some(json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string()), None),
                None => {
                    return Err(ErrorObject::new(codes::RESOURCE_NOT_FOUND, format!("Resource not found: {uri}")).with_data(json!({"uri": uri})))
                }
            },
        };
        Ok(Outcome::Complete(ReadResourceResult {
            contents: vec![c],
            ..Default::default()
        }))
    }

    async fn subscribe(
        &self,
        ctx: &RequestContext,
        p: ResourceRequestParams,
        subscribe: bool,
    ) -> Result<(), ErrorObject> {
        let (Some(s), TICKING) = (ctx.subscriber(), p.uri.as_str()) else {
            return Ok(());
        };
        let mut tickers = self.tickers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(running) = tickers.remove(&s.id()) {
            running.abort();
        }
        if subscribe {
            tickers.insert(s.id(), tokio::spawn(tick(s)).abort_handle());
        }
        Ok(())
    }

    async fn complete(
        &self,
        _ctx: &RequestContext,
        p: CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorObject> {
        let values: Vec<String> = ["test1", "test2", "testValue1", "other"]
            .iter()
            .filter(|v| v.starts_with(p.argument.value.as_str()))
            .map(|v| (*v).to_owned())
            .collect();
        Ok(CompleteResult {
            completion: Completion {
                total: Some(values.len().into()),
                values,
                has_more: Some(false),
                ..Default::default()
            },
            ..Default::default()
        })
    }
}
