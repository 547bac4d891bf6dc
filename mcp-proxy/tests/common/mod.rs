//! What the Aggregator tests share: a host connected in memory, and reading results.

#![allow(dead_code)]

use mcp_client::{Client, ClientHandler, ClientOptions};
use mcp_proxy::Aggregator;
use mcp_server::Server;
use mcp_types::protocol::*;

/// A host (our client, with `handler` and `options`) connected to `agg` in memory.
pub async fn host<H: ClientHandler>(
    agg: &Aggregator,
    handler: H,
    options: ClientOptions,
) -> Client {
    let (a, b) = mcp_types::transport::memory_pair(16);
    let server = Server::new(agg.clone());
    tokio::spawn(async move { server.serve(b).await });
    Client::connect(a, handler, options)
        .await
        .expect("host connects")
}

/// The text blocks of a result, joined.
pub fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

/// A server that offers tools and nothing else.
pub fn tools_only() -> ServerCapabilities {
    ServerCapabilities {
        tools: Some(Default::default()),
        ..Default::default()
    }
}

/// How many processes have `marker` on their command line.
pub fn processes_marked(marker: &str) -> usize {
    let out = std::process::Command::new("pgrep")
        .args(["-f", marker])
        .output()
        .expect("pgrep");
    String::from_utf8_lossy(&out.stdout).lines().count()
}
