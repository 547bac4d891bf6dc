//! The fixture server the official conformance suite's server scenarios call, on
//! Streamable HTTP at `/mcp` (both eras on one endpoint).
//!
//! ```text
//! cargo run --example conformance-server -- [ADDR]     # default 127.0.0.1:0; prints the URL
//! cargo run --example conformance-server -- --stdio    # on stdio (as a gateway upstream)
//! ```

use mcp_server::http::{bind, HttpOptions};
use mcp_server::{Server, ServerOptions};
use mcp_types::protocol::Implementation;

#[tokio::main]
async fn main() {
    mcp_examples::init_logging();
    let arg = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    let options = ServerOptions::default().info(Implementation {
        name: "mcp-proxy-conformance-server".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        ..Default::default()
    });
    let server = Server::with_options(mcp_examples::Conformance::default(), options);
    if arg == "--stdio" {
        server.serve(mcp_server::stdio()).await;
        return;
    }
    let Ok(addr) = arg.parse::<std::net::SocketAddr>() else {
        eprintln!("conformance-server: bad address {arg:?}");
        std::process::exit(2);
    };
    match bind(addr, server, HttpOptions::default()).await {
        Ok((local, task)) => {
            println!("http://{local}/mcp");
            if let Ok(Err(e)) = task.await {
                eprintln!("conformance-server: {e}");
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("conformance-server: cannot listen on {addr}: {e}");
            std::process::exit(1);
        }
    }
}
