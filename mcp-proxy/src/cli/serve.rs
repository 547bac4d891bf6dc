//! Serving: the server in front of the aggregator, on stdio or Streamable HTTP, until a
//! stop signal or the end of stdin; and `--pin`.

use std::sync::Arc;
use std::time::Duration;

use mcp_server::auth::{Authorization, Principal};
use mcp_server::http::{
    bind_admin, bind_with_shutdown, AdminOptions, Health, HttpOptions, Metrics,
};
use mcp_server::{Server, ServerOptions};
use mcp_types::protocol::Implementation;
use mcp_types::transport::Transport;

use super::signals::StopSignals;
use crate::abort::AbortOnDrop;
use crate::live::Live;
use crate::Aggregator;

/// `--pin`: the pins of what the upstreams list now, written to `file`.
pub(super) fn write_pins(aggregator: &Aggregator, file: Option<&std::path::Path>) -> u8 {
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

/// Who may use the gateway: over HTTP, as `gateway.auth` says, within `gateway.http`'s
/// bounds; on stdio, as whom.
#[derive(Default)]
pub(super) struct Access {
    pub(super) authorization: Option<Authorization>,
    pub(super) local_principal: Option<Principal>,
    pub(super) http: HttpOptions,
    /// The replicas' registry, to start and leave (`gateway.cluster.redis`).
    pub(super) registry: Option<Arc<crate::store::StorePeers>>,
    /// What hands legacy sessions over (`gateway.cluster.redis`), for its counts.
    pub(super) handover: Option<Arc<crate::store::StoreHandover>>,
}

/// The configuration file at `path`, and the text it was read from.
pub(super) fn load(path: &str) -> Result<(crate::config::Gateway, String), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let g = crate::config::parse(&text, path).map_err(|e| e.to_string())?;
    Ok((g, text))
}

/// The server in front of `aggregator`, its upstreams reported on stderr.
pub(super) fn gateway_server(live: &Live, local_principal: Option<Principal>) -> Server {
    let aggregator = live.current();
    let mut options = ServerOptions::default().info(Implementation {
        name: "mcp-proxy-gateway".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        ..Default::default()
    });
    options.local_principal = local_principal;
    let server = live.server(options);
    for s in aggregator.status() {
        match s.connected {
            true => eprintln!("gateway: upstream `{}` connected", s.key),
            false => eprintln!(
                "gateway: upstream `{}` unavailable: {}",
                s.key,
                s.last_error.map(|e| e.to_string()).unwrap_or_default()
            ),
        }
    }
    let names = aggregator.tool_names();
    eprintln!(
        "gateway: serving {} tools: {}",
        names.len(),
        names.join(", ")
    );
    server
}

/// Serves on stdio until stdin closes or a stop signal comes; on a signal, the calls in
/// flight get up to `drain` to be answered before stdio is closed.
pub(super) async fn serve_stdio(
    server: Server,
    live: &Live,
    mut signals: StopSignals,
    drain: Duration,
) -> u8 {
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
    let aggregator = live.current();
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
pub(super) async fn serve_http(
    addr: std::net::SocketAddr,
    server: Server,
    mut signals: StopSignals,
    drain: Duration,
    authorization: Option<Authorization>,
    mut options: HttpOptions,
) -> u8 {
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

/// `--admin ADDR`: health and metrics on a listener of their own, until the returned guard
/// drops; `Err` with the exit status when ADDR cannot be served.
pub(super) async fn serve_admin(
    addr: &str,
    live: &super::early::Started,
) -> Result<AbortOnDrop<std::io::Result<()>>, u8> {
    let Ok(addr) = addr.parse::<std::net::SocketAddr>() else {
        eprintln!("gateway: --admin `{addr}` is not an address (like 127.0.0.1:9090)");
        return Err(2);
    };
    let health: Arc<dyn Health> = Arc::new(live.clone());
    let metrics: Arc<dyn Metrics> = Arc::new(live.clone());
    let options = AdminOptions::default().health(health).metrics(metrics);
    match bind_admin(addr, options, std::future::pending()).await {
        Ok((local, task)) => {
            eprintln!("gateway: serving /healthz, /readyz and /metrics on http://{local}");
            Ok(AbortOnDrop(task))
        }
        Err(e) => {
            eprintln!("gateway: cannot listen on {addr} (--admin): {e}");
            Err(1)
        }
    }
}

/// The host name of a resource URI (`https://gw.example.com:8443/mcp` → `gw.example.com`).
fn resource_host(uri: &str) -> Option<String> {
    let uri: http::Uri = uri.parse().ok()?;
    uri.host().map(|h| h.to_ascii_lowercase())
}
