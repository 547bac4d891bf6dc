//! The tools of the `echo-server` example, kept in the library so tests can serve them
//! in-process too.

use std::time::Duration;

use mcp_server::{NoArgs, Outcome, RequestContext, ToolError, ToolRegistry};
use mcp_types::protocol::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// Arguments of `echo`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EchoArgs {
    /// The text to send back.
    pub text: String,
}

/// Arguments of `weather`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WeatherArgs {
    /// City name.
    pub city: String,
}

/// The structured result of `weather`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Weather {
    /// Degrees Celsius.
    pub temperature: f64,
    /// Sky, in words.
    pub conditions: String,
}

/// Arguments of `count`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CountArgs {
    /// How far to count (1 to 20).
    #[schemars(range(min = 1, max = 20))]
    pub to: u32,
}

/// A one-pixel PNG.
pub const PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

fn read_only() -> ToolAnnotations {
    ToolAnnotations {
        read_only_hint: Some(true),
        open_world_hint: Some(false),
        ..Default::default()
    }
}

/// `greet`'s question: an elicitation of the user's name under input key `name`, with
/// `state` to come back with the answer.
pub fn name_question(state: &str) -> InputRequiredResult {
    let mut requests = Map::new();
    requests.insert(
        "name".into(),
        json!({"method": "elicitation/create", "params": {
            "mode": "form",
            "message": "What is your name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        }}),
    );
    InputRequiredResult {
        input_requests: Some(requests),
        request_state: Some(state.into()),
        ..Default::default()
    }
}

/// The echo server's tools: text, image, structured output, an error result, progress,
/// and a tool that asks the user for input (elicitation).
pub fn echo_tools() -> ToolRegistry {
    let mut r = ToolRegistry::new();
    r.tool(
        "echo",
        "Sends the text back.",
        |a: EchoArgs, _ctx| async move {
            Ok(Outcome::Complete(CallToolResult {
                content: vec![ContentBlock::text(a.text)],
                ..Default::default()
            }))
        },
    )
    .title("Echo")
    .annotations(read_only());
    r.tool(
        "pixel",
        "Returns a one-pixel PNG image.",
        |_: NoArgs, _ctx| async move {
            Ok(Outcome::Complete(CallToolResult {
                content: vec![ContentBlock::Image(BinaryContent {
                    data: PIXEL_PNG.into(),
                    mime_type: "image/png".into(),
                    ..Default::default()
                })],
                ..Default::default()
            }))
        },
    )
    .title("Pixel")
    .annotations(read_only());
    r.structured_tool(
        "weather",
        "Current weather for a city (made up).",
        |a: WeatherArgs, _ctx| async move {
            Ok::<_, ToolError>(Weather {
                temperature: 20.0 + (a.city.len() % 10) as f64 / 2.0,
                conditions: "Partly cloudy".into(),
            })
        },
    )
    .title("Weather")
    .annotations(read_only());
    r.tool(
        "fail",
        "Always fails, as a tool error the model can see.",
        |_: NoArgs, _ctx| async move {
            Err::<Outcome<CallToolResult>, _>(ToolError::Failed(
                "boom: this tool always fails".into(),
            ))
        },
    )
    .title("Fail")
    .annotations(read_only());
    r.tool(
        "count",
        "Counts to `to`, reporting progress at each step.",
        |a: CountArgs, ctx: RequestContext| async move {
            for i in 1..=a.to {
                ctx.progress(
                    f64::from(i),
                    Some(f64::from(a.to)),
                    Some(&format!("step {i}")),
                )
                .await;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Ok(Outcome::Complete(CallToolResult {
                content: vec![ContentBlock::text(format!("counted to {}", a.to))],
                ..Default::default()
            }))
        },
    )
    .title("Count")
    .annotations(read_only());
    r.tool(
        "greet",
        "Asks the user for their name, then greets them.",
        |_: NoArgs, ctx: RequestContext| async move {
            let Some(answer) = ctx.input_response("name") else {
                return Ok(Outcome::InputRequired(name_question("greet:1")));
            };
            let text = match (
                answer.get("action").and_then(Value::as_str),
                answer.pointer("/content/name").and_then(Value::as_str),
            ) {
                (Some("accept"), Some(name)) => format!("Hello, {name}!"),
                (Some(action), _) => format!("No name given ({action})."),
                _ => {
                    return Err(ToolError::Failed(
                        "the elicitation answer was malformed".into(),
                    ))
                }
            };
            Ok(Outcome::Complete(CallToolResult {
                content: vec![ContentBlock::text(text)],
                ..Default::default()
            }))
        },
    )
    .title("Greet")
    .annotations(ToolAnnotations {
        read_only_hint: Some(true),
        open_world_hint: Some(false),
        ..Default::default()
    });
    r
}
