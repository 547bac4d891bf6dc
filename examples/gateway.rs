//! The gateway: upstream MCP servers from a Claude Desktop / Cursor style config, served
//! as one MCP server on stdio (default) or Streamable HTTP at `/mcp`.
//!
//! ```text
//! cargo run --release --example gateway -- [--config FILE] [--http ADDR] [--threads N] [--pin]
//! ```
//! `--pin` approves the tools the upstreams list now: it writes their pins to the file
//! `gateway.pins.file` names and exits (see `mcp_proxy::pins`).
//! Without `--config` it serves two in-process demo upstreams (`echo` and `notes`).
//! It runs on one thread unless `--threads N` asks for more: a relay spends its time
//! moving small messages between sockets and pipes, where handing work between threads
//! costs more CPU than it saves (measured in README.md).
//!
//! `SIGTERM` or `SIGINT` (and on stdio, stdin closing) stops it gracefully: no new
//! requests, calls in flight finished for up to `--drain SECONDS` (10 by default), then
//! every upstream closed (a stdio upstream: stdin closed, then `SIGTERM`, then `SIGKILL`
//! to its process group, two seconds apart), and exit status 0.

use std::sync::Arc;
use std::time::Duration;

use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig, UpstreamTransport};
use mcp_server::auth::{Authorization, Principal};
use mcp_server::http::{bind_with_shutdown, Health, HttpOptions};
use mcp_server::{Server, ServerOptions};
use mcp_types::protocol::Implementation;
use mcp_types::transport::Transport;
use tokio::signal::unix::{signal, Signal, SignalKind};

fn usage() -> ! {
    eprintln!(
        "usage: gateway [--config FILE] [--http ADDR] [--threads N] [--drain SECONDS] [--pin]"
    );
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
    /// How long a graceful stop lets calls in flight finish.
    drain: Duration,
    /// Write the pins of what the upstreams list now, and exit.
    pin: bool,
}

fn args() -> Args {
    let mut args = std::env::args().skip(1);
    let mut out = Args {
        config: None,
        http: None,
        threads: 1,
        pin: false,
        drain: Duration::from_secs(10),
    };
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--config" => out.config = Some(value()),
            "--http" => out.http = Some(value()),
            "--threads" => out.threads = value().parse().unwrap_or_else(|_| usage()),
            "--pin" => out.pin = true,
            "--drain" => {
                let secs: f64 = value().parse().unwrap_or_else(|_| usage());
                out.drain = Duration::try_from_secs_f64(secs).unwrap_or_else(|_| usage());
            }
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
    let code = match runtime {
        // The runtime is dropped before exiting: whatever still holds an upstream lets go
        // of it (a stdio upstream's process group is killed when its transport drops).
        Ok(rt) => rt.block_on(run(args)),
        Err(e) => {
            eprintln!("gateway: cannot start the runtime: {e}");
            1
        }
    };
    std::process::exit(code)
}

/// `SIGTERM` and `SIGINT`, listened to from the start: one arriving while upstreams
/// start is taken once they have.
struct StopSignals(Option<(Signal, Signal)>);

impl StopSignals {
    fn listen() -> StopSignals {
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(term), Ok(int)) => StopSignals(Some((term, int))),
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("gateway: cannot listen for SIGTERM/SIGINT: {e}");
                StopSignals(None)
            }
        }
    }

    /// The name of the first of them to arrive.
    async fn next(&mut self) -> &'static str {
        let Some((term, int)) = &mut self.0 else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        }
    }
}

/// The gateway, to its exit status.
async fn run(args: Args) -> i32 {
    let signals = StopSignals::listen();
    let Args {
        config,
        http,
        drain,
        pin,
        ..
    } = args;
    let (upstreams, options, access, pin_file) = match &config {
        None => {
            let (upstreams, options) = demo();
            (upstreams, options, Access::default(), None)
        }
        Some(path) => match load(path) {
            Ok(g) => (
                g.upstreams,
                g.options,
                Access {
                    authorization: g.authorization,
                    local_principal: g.local_principal,
                },
                g.pin_file,
            ),
            Err(e) => {
                eprintln!("gateway: {e}");
                return 2;
            }
        },
    };
    let aggregator = match Aggregator::start(upstreams, options).await {
        Ok(a) => a,
        Err(e) => {
            eprintln!("gateway: {e}");
            return 2;
        }
    };
    if pin {
        let code = write_pins(&aggregator, pin_file.as_deref());
        aggregator.shutdown().await;
        return code;
    }
    let server = gateway_server(&aggregator, access.local_principal);
    let code = match http {
        None => {
            if access.authorization.is_some() {
                eprintln!(
                    "gateway: gateway.auth applies to --http only; stdio is the local host's"
                );
            }
            serve_stdio(server, &aggregator, signals, drain).await
        }
        Some(addr) => match addr.parse() {
            Ok(addr) => {
                let health: Arc<dyn Health> = Arc::new(aggregator.clone());
                let options = HttpOptions::default().health(health);
                serve_http(addr, server, signals, drain, access.authorization, options).await
            }
            Err(_) => {
                eprintln!("gateway: `{addr}` is not an address (like 127.0.0.1:8080)");
                2
            }
        },
    };
    aggregator.shutdown().await;
    eprintln!("gateway: stopped");
    code
}

/// `--pin`: the pins of what the upstreams list now, written to `file`.
fn write_pins(aggregator: &Aggregator, file: Option<&std::path::Path>) -> i32 {
    let Some(file) = file else {
        eprintln!("gateway: --pin needs `gateway.pins.file` in the configuration");
        return 2;
    };
    let unavailable: Vec<String> = aggregator
        .status()
        .into_iter()
        .filter(|s| !s.connected)
        .map(|s| s.key)
        .collect();
    if !unavailable.is_empty() {
        eprintln!(
            "gateway: not pinning while upstreams are unavailable: {}",
            unavailable.join(", ")
        );
        return 1;
    }
    let pins = aggregator.pins_now();
    match std::fs::write(file, pins.to_file()) {
        Ok(()) => {
            eprintln!("gateway: pinned {} tools in {}", pins.len(), file.display());
            0
        }
        Err(e) => {
            eprintln!("gateway: cannot write {}: {e}", file.display());
            1
        }
    }
}

/// Who may use the gateway: over HTTP, as `gateway.auth` says; on stdio, as whom.
#[derive(Default)]
struct Access {
    authorization: Option<Authorization>,
    local_principal: Option<Principal>,
}

/// The configuration file at `path`.
fn load(path: &str) -> Result<mcp_proxy::config::Gateway, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    mcp_proxy::config::parse(&text, path).map_err(|e| e.to_string())
}

/// The server in front of `aggregator`, its upstreams reported on stderr.
fn gateway_server(aggregator: &Aggregator, local_principal: Option<Principal>) -> Server {
    let server = aggregator.server(ServerOptions {
        info: Implementation {
            name: "mcp-proxy-gateway".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            ..Default::default()
        },
        local_principal,
        ..Default::default()
    });
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
    server
}

/// Serves on stdio until stdin closes or a stop signal comes; on a signal, the calls in
/// flight get up to `drain` to be answered before stdio is closed.
async fn serve_stdio(
    server: Server,
    aggregator: &Aggregator,
    mut signals: StopSignals,
    drain: Duration,
) -> i32 {
    eprintln!("gateway: serving MCP on stdio (all revisions 2024-11-05 … 2026-07-28)");
    let stdio = Arc::new(mcp_server::stdio());
    let serving = server.serve(stdio.clone());
    tokio::pin!(serving);
    tokio::select! {
        reason = &mut serving => {
            eprintln!("gateway: shutting down: stdin closed ({reason})");
            return 0;
        }
        why = signals.next() => eprintln!("gateway: shutting down: {why} received"),
    }
    // Answers go out on stdout while the calls finish; then stdio closes, flushed.
    tokio::select! {
        _ = &mut serving => return 0,
        _ = aggregator.drain(drain) => {}
    }
    stdio.close().await;
    let _ = tokio::time::timeout(Duration::from_secs(1), serving).await;
    0
}

/// Serves Streamable HTTP at `addr` until a stop signal comes, then stops gracefully:
/// no new connections, requests being served finished for up to `drain`.
async fn serve_http(
    addr: std::net::SocketAddr,
    server: Server,
    mut signals: StopSignals,
    drain: Duration,
    authorization: Option<Authorization>,
    mut options: HttpOptions,
) -> i32 {
    let stop = async move {
        let why = signals.next().await;
        eprintln!("gateway: shutting down: {why} received");
    };
    if let Some(auth) = authorization {
        // The resource's own host name is what clients beyond loopback send in `Host`.
        if let Some(host) = resource_host(&auth.resource().resource) {
            options.allowed_hosts.push(host.clone());
            options.allowed_origins.push(host);
        }
        eprintln!(
            "gateway: authorization on: tokens for {}",
            auth.resource().resource
        );
        options = options.authorization(auth);
    }
    match bind_with_shutdown(addr, server, options, stop, drain).await {
        Ok((local, task)) => {
            eprintln!("gateway: serving MCP on http://{local}/mcp");
            println!("http://{local}/mcp");
            match task.await {
                Ok(Ok(())) => 0,
                Ok(Err(e)) => {
                    eprintln!("gateway: {e}");
                    1
                }
                Err(e) => {
                    eprintln!("gateway: the HTTP server failed: {e}");
                    1
                }
            }
        }
        Err(e) => {
            eprintln!("gateway: cannot listen on {addr}: {e}");
            1
        }
    }
}

/// The host name of a resource URI (`https://gw.example.com:8443/mcp` → `gw.example.com`).
fn resource_host(uri: &str) -> Option<String> {
    let uri: http::Uri = uri.parse().ok()?;
    uri.host().map(|h| h.to_ascii_lowercase())
}
