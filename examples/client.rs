//! Connects to an MCP server, lists its tools, and calls one.
//!
//! ```text
//! cargo run --example client -- [--era detect|legacy|modern] (COMMAND [ARGS...] | URL) [--call TOOL [JSON]]
//! cargo run --example client -- cargo run -q --example echo-server --call weather '{"city":"Oslo"}'
//! ```
//! Prints the tool list, then the call's result, as JSON on stdout.

use mcp_client::http::HttpConfig;
use mcp_client::{ChildTransport, Client, ClientHandler, ClientOptions, EraChoice, StdioCommand};
use mcp_types::protocol::{ElicitAction, ElicitRequestParams, ElicitResult};
use mcp_types::{ErrorObject, Revision};
use serde_json::{json, Map, Value};

/// Answers elicitation by declining: a script cannot ask a person.
#[derive(Clone)]
struct Decline;

#[async_trait::async_trait]
impl ClientHandler for Decline {
    async fn elicit(&self, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        Ok(ElicitResult {
            action: ElicitAction::Decline,
            ..Default::default()
        })
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: client [--era detect|legacy|modern] (COMMAND [ARGS...] | URL) [--call TOOL [JSON]]"
    );
    std::process::exit(2)
}

#[tokio::main]
async fn main() {
    mcp_examples::init_logging();
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut era = EraChoice::Detect;
    if args.first().map(String::as_str) == Some("--era") {
        era = match args.get(1).map(String::as_str) {
            Some("detect") => EraChoice::Detect,
            Some("legacy") => EraChoice::Legacy(Revision::LATEST_LEGACY),
            Some("modern") => EraChoice::Modern,
            _ => usage(),
        };
        args.drain(..2);
    }
    let call = args.iter().position(|a| a == "--call").map(|i| {
        let rest: Vec<String> = args.drain(i..).skip(1).collect();
        (
            rest.first().cloned().unwrap_or_else(|| usage()),
            rest.get(1).cloned(),
        )
    });
    let Some((command, rest)) = args.split_first() else {
        usage()
    };
    let options = ClientOptions::default().with_elicitation().era(era);
    let connected = if command.starts_with("http://") || command.starts_with("https://") {
        // Streamable HTTP, else the 2024-11-05 HTTP+SSE transport.
        mcp_client::connect_http(HttpConfig::new(command.clone()), Decline, options).await
    } else {
        match ChildTransport::spawn(&StdioCommand::new(command.clone(), rest.to_vec())) {
            Ok(t) => Client::connect(t, Decline, options).await,
            Err(e) => {
                eprintln!("client: cannot start {command}: {e}");
                std::process::exit(1);
            }
        }
    };
    let client = match connected {
        Ok(c) => c,
        Err(e) => {
            eprintln!("client: {e}");
            std::process::exit(1);
        }
    };
    let tools = match client.list_tools().await {
        Ok(t) => t,
        Err(e) => {
            eprintln!("client: tools/list failed: {e}");
            std::process::exit(1);
        }
    };
    let mut out = json!({"revision": client.revision().as_str(), "tools": tools});
    if let Some((tool, arguments)) = call {
        let arguments: Map<String, Value> =
            match arguments.as_deref().map(serde_json::from_str).transpose() {
                Ok(a) => a.unwrap_or_default(),
                Err(e) => {
                    eprintln!("client: the arguments are not a JSON object: {e}");
                    std::process::exit(2);
                }
            };
        match client.call_tool(&tool, arguments).await {
            Ok(call) => {
                out["result"] = serde_json::to_value(&call.result).unwrap_or_default();
                out["outputCheck"] = json!(format!("{:?}", call.output));
            }
            Err(e) => {
                eprintln!("client: tools/call failed: {e}");
                std::process::exit(1);
            }
        }
    }
    println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    client.close().await;
}
