//! The gateway on its built-in default: `mcp_proxy::cli` (the `mcp-gateway` program) with
//! two in-process demo upstreams (`echo` and `notes`) served when no `--config` is given.
//!
//! ```text
//! cargo run --release --example gateway -- [--config FILE] [--http ADDR] [--check-config] [--pin] …
//! ```
//! `--help` says the rest. It runs on one thread unless `--threads N` asks for more: a
//! relay spends its time moving small messages between sockets and pipes, where handing
//! work between threads costs more CPU than it saves (measured side by side; see
//! `benches/RESULTS.md` and its history in git).

use mcp_proxy::{AggregatorOptions, UpstreamConfig, UpstreamTransport};
use mcp_server::Server;

fn demo() -> (Vec<UpstreamConfig>, AggregatorOptions) {
    let upstream = |key: &str, server: Server| {
        UpstreamConfig::new(key, UpstreamTransport::InProcess(server)).trusted(true)
    };
    (
        vec![
            upstream("echo", Server::new(mcp_examples::echo_tools())),
            upstream("notes", Server::new(mcp_examples::notes_tools())),
        ],
        AggregatorOptions::default(),
    )
}

fn main() -> std::process::ExitCode {
    mcp_proxy::cli::main(Some(demo))
}
