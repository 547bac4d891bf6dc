//! TOOL-14's failure cases, both sides: our server never sends `structuredContent` that
//! breaks its tool's `outputSchema` (a missing or nonconforming one becomes an `isError`
//! result that says why), and our client reports a server that does as `Missing` or
//! `Invalid`, in both eras.

use async_trait::async_trait;
use mcp_client::{Client, ClientOptions, EraChoice, NoHandler, OutputCheck};
use mcp_server::{Outcome, RequestContext, Server, ServerHandler, ToolRegistry};
use mcp_types::protocol::*;
use mcp_types::transport::memory_pair;
use mcp_types::ErrorObject;
use serde_json::{json, Map, Value};

/// `{"n": <number>}`, required.
fn output_schema() -> Value {
    json!({"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]})
}

/// `none` returns no `structuredContent`, `wrong` returns `{"n": "seven"}`, `right`
/// returns `{"n": 7}`; each declares [`output_schema`].
fn with_output(tool: &str) -> Tool {
    let mut t = Tool::new(tool, json!({"type": "object"}));
    t.output_schema = Some(output_schema().into());
    t
}

fn answer(tool: &str) -> CallToolResult {
    let structured = match tool {
        "none" => None,
        "wrong" => Some(json!({"n": "seven"})),
        _ => Some(json!({"n": 7})),
    };
    CallToolResult {
        content: vec![ContentBlock::text(tool)],
        structured_content: structured,
        ..Default::default()
    }
}

/// A careless server: lists the three tools and answers each as [`answer`] says, whatever
/// its schema.
struct Careless;

#[async_trait]
impl ServerHandler for Careless {
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
        Ok(ListToolsResult {
            tools: ["none", "wrong", "right"].map(with_output).to_vec(),
            ..Default::default()
        })
    }

    async fn call_tool(
        &self,
        _: &RequestContext,
        p: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        Ok(Outcome::Complete(answer(&p.name)))
    }
}

/// Our registry with the same three tools, run as they are written.
fn registry() -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    for name in ["none", "wrong", "right"] {
        tools.raw_tool(
            with_output(name),
            move |_: Map<String, Value>, _| async move { Ok(Outcome::Complete(answer(name))) },
        );
    }
    tools
}

async fn connect(server: Server, era: EraChoice) -> Client {
    let (a, b) = memory_pair(16);
    tokio::spawn(async move { server.serve(b).await });
    let client = Client::connect(a, NoHandler, ClientOptions::default().era(era))
        .await
        .expect("connect");
    // The client learns the output schemas from the listing.
    client.list_tools().await.expect("tools/list");
    client
}

const ERAS: [EraChoice; 2] = [
    EraChoice::Legacy(mcp_types::Revision::V2025_06_18),
    EraChoice::Modern,
];

#[tokio::test]
async fn our_server_refuses_to_send_missing_or_nonconforming_structured_content() {
    for era in ERAS {
        let client = connect(Server::new(registry()), era).await;
        for (tool, why) in [
            ("none", "returned no structuredContent"),
            ("wrong", "does not match its outputSchema"),
        ] {
            let call = client.call_tool(tool, Map::new()).await.expect("answered");
            assert!(call.result.is_error(), "{era:?} {tool}: {:?}", call.result);
            assert_eq!(call.result.structured_content, None, "{era:?} {tool}");
            let text = format!("{:?}", call.result.content);
            assert!(text.contains(why), "{era:?} {tool}: {text}");
            assert_eq!(call.output, OutputCheck::ErrorResult);
        }
        let right = client
            .call_tool("right", Map::new())
            .await
            .expect("answered");
        assert!(!right.result.is_error());
        assert_eq!(right.output, OutputCheck::Valid, "{era:?}");
        client.close().await;
    }
}

#[tokio::test]
async fn our_client_reports_a_server_that_sends_missing_or_nonconforming_output() {
    for era in ERAS {
        let client = connect(Server::new(Careless), era).await;
        let none = client
            .call_tool("none", Map::new())
            .await
            .expect("answered");
        assert_eq!(none.output, OutputCheck::Missing, "{era:?}");
        let wrong = client
            .call_tool("wrong", Map::new())
            .await
            .expect("answered");
        assert!(
            matches!(&wrong.output, OutputCheck::Invalid(why) if !why.is_empty()),
            "{era:?}: {:?}",
            wrong.output
        );
        // Reported, never dropped: the result is as the server sent it.
        assert_eq!(wrong.result.structured_content, Some(json!({"n": "seven"})));
        let right = client
            .call_tool("right", Map::new())
            .await
            .expect("answered");
        assert_eq!(right.output, OutputCheck::Valid, "{era:?}");
        client.close().await;
    }
}
