//! An MCP server on stdio with a few tools: text, image, structured output, an error
//! result, progress, and elicitation. Serves 2024-11-05 … 2026-07-28 clients.
//!
//! ```text
//! cargo run --example echo-server
//! ```

use mcp_server::{Server, ServerOptions};
use mcp_types::protocol::Implementation;

#[tokio::main]
async fn main() {
    mcp_examples::init_logging();
    let options = ServerOptions {
        info: Implementation {
            name: "echo-server".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            ..Default::default()
        },
        instructions: Some(
            "Tools for trying MCP clients: echo, pixel, weather, fail, count, greet.".into(),
        ),
        ..Default::default()
    };
    let reason = Server::with_options(mcp_examples::echo_tools(), options)
        .serve(mcp_server::stdio())
        .await;
    tracing::info!("connection ended: {reason}");
}
