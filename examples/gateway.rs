//! The gateway: upstream MCP servers from a Claude Desktop / Cursor style config, served
//! as one MCP server on stdio (default) or Streamable HTTP at `/mcp`.
//!
//! ```text
//! cargo run --release --example gateway -- [--config FILE] [--http ADDR] [--threads N]
//! ```
//! Without `--config` it serves two in-process demo upstreams (`echo` and `notes`).
//! It runs on one thread unless `--threads N` asks for more: a relay spends its time
//! moving small messages between sockets and pipes, where handing work between threads
//! costs more CPU than it saves (measured in README.md).

use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig, UpstreamTransport};
use mcp_server::http::{bind, HttpOptions};
use mcp_server::{Server, ServerOptions};
use mcp_types::protocol::Implementation;

fn usage() -> ! {
    eprintln!("usage: gateway [--config FILE] [--http ADDR] [--threads N]");
    std::process::exit(2)
}

fn demo() -> (Vec<UpstreamConfig>, AggregatorOptions) {
    let upstream = |key: &str, server: Server| UpstreamConfig {
        trusted: true,
        ..UpstreamConfig::new(key, UpstreamTransport::InProcess(server))
    };
    (
        vec![
            upstream("echo", Server::new(mcp_examples::echo_tools())),
            upstream("notes", Server::new(mcp_examples::notes_tools())),
        ],
        AggregatorOptions::default(),
    )
}

/// The command line.
struct Args {
    config: Option<String>,
    http: Option<String>,
    threads: usize,
}

fn args() -> Args {
    let mut args = std::env::args().skip(1);
    let mut out = Args {
        config: None,
        http: None,
        threads: 1,
    };
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--config" => out.config = Some(value()),
            "--http" => out.http = Some(value()),
            "--threads" => out.threads = value().parse().unwrap_or_else(|_| usage()),
            _ => usage(),
        }
    }
    out
}

fn main() {
    mcp_examples::init_logging();
    let args = args();
    let runtime = match args.threads {
        0 | 1 => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        n => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_all()
            .build(),
    };
    match runtime {
        Ok(rt) => rt.block_on(run(args)),
        Err(e) => {
            eprintln!("gateway: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    }
}

async fn run(args: Args) {
    let Args { config, http, .. } = args;
    let (upstreams, options) = match &config {
        None => demo(),
        Some(path) => {
            let text = match std::fs::read_to_string(path) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("gateway: cannot read {path}: {e}");
                    std::process::exit(2);
                }
            };
            match mcp_proxy::config::parse(&text, path) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("gateway: {e}");
                    std::process::exit(2);
                }
            }
        }
    };
    let aggregator = match Aggregator::start(upstreams, options).await {
        Ok(a) => a,
        Err(e) => {
            eprintln!("gateway: {e}");
            std::process::exit(2);
        }
    };
    let server = Server::with_options(
        aggregator.clone(),
        ServerOptions {
            info: Implementation {
                name: "mcp-proxy-gateway".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    let notifier = server.clone();
    aggregator.on_list_changed(move |what| notifier.notify_list_changed(what));
    for s in aggregator.status() {
        match s.connected {
            true => eprintln!("gateway: upstream `{}` connected", s.key),
            false => eprintln!(
                "gateway: upstream `{}` unavailable: {}",
                s.key,
                s.last_error.unwrap_or_default()
            ),
        }
    }
    let names: Vec<String> = aggregator.tools().into_iter().map(|t| t.name).collect();
    eprintln!(
        "gateway: serving {} tools: {}",
        names.len(),
        names.join(", ")
    );
    match http {
        None => {
            eprintln!("gateway: serving MCP on stdio (all revisions 2024-11-05 … 2026-07-28)");
            let reason = server.serve(mcp_server::stdio()).await;
            eprintln!("gateway: stdio closed: {reason}");
        }
        Some(addr) => {
            let Ok(addr) = addr.parse() else { usage() };
            match bind(addr, server, HttpOptions::default()).await {
                Ok((local, task)) => {
                    eprintln!("gateway: serving MCP on http://{local}/mcp");
                    println!("http://{local}/mcp");
                    if let Ok(Err(e)) = task.await {
                        eprintln!("gateway: {e}");
                    }
                }
                Err(e) => {
                    eprintln!("gateway: cannot listen on {addr}: {e}");
                    std::process::exit(1);
                }
            }
        }
    }
    aggregator.shutdown().await;
}
