//! An MCP server with a few tools: text, image, structured output, an error result,
//! progress, and elicitation. Serves 2024-11-05 … 2026-07-28 clients, on stdio or, with
//! `--http ADDR`, on Streamable HTTP at `/mcp`.
//!
//! ```text
//! cargo run --example echo-server
//! cargo run --example echo-server -- --http 127.0.0.1:8765
//! ```

use mcp_server::http::{bind, HttpOptions};
use mcp_server::{Server, ServerOptions};
use mcp_types::protocol::Implementation;

#[tokio::main]
async fn main() {
    mcp_examples::init_logging();
    let options = ServerOptions::default()
        .info(Implementation {
            name: "echo-server".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            ..Default::default()
        })
        .instructions("Tools for trying MCP clients: echo, pixel, weather, fail, count, greet.");
    let server = Server::with_options(mcp_examples::echo_tools(), options);
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => {
            let reason = server.serve(mcp_server::stdio()).await;
            tracing::info!("connection ended: {reason}");
        }
        [flag, addr] if flag == "--http" => {
            let addr = match addr.parse() {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("echo-server: bad address {addr:?}: {e}");
                    std::process::exit(2);
                }
            };
            match bind(addr, server, HttpOptions::default()).await {
                Ok((local, task)) => {
                    // The one line on stdout: where to connect (tests read it).
                    println!("http://{local}/mcp");
                    if let Ok(Err(e)) = task.await {
                        eprintln!("echo-server: {e}");
                        std::process::exit(1);
                    }
                }
                Err(e) => {
                    eprintln!("echo-server: cannot listen on {addr}: {e}");
                    std::process::exit(1);
                }
            }
        }
        _ => {
            eprintln!("usage: echo-server [--http ADDR]");
            std::process::exit(2);
        }
    }
}
