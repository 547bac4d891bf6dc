//! # mcp-proxy
//!
//! The [`Aggregator`]: any number of upstream MCP servers (stdio, Streamable HTTP,
//! HTTP+SSE or in-process; either era) composed into one dual-era server that every
//! host, 2024-11-05 to 2026-07-28, can use. Names are namespaced by configuration
//! ([`naming`]), calls are routed by table lookup, what upstreams say is kept and
//! translated to each host's revision by `mcp-server`, and a failing upstream is
//! restarted without disturbing the rest.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig, UpstreamTransport};
//! use mcp_client::StdioCommand;
//!
//! let upstreams = vec![UpstreamConfig::new(
//!     "everything",
//!     UpstreamTransport::Stdio(StdioCommand::new("npx", ["-y", "@modelcontextprotocol/server-everything"])),
//! )];
//! let aggregator = Aggregator::start(upstreams, AggregatorOptions::default()).await?;
//! let server = mcp_server::Server::new(aggregator.clone());
//! let notifier = server.clone();
//! aggregator.on_list_changed(move |what| notifier.notify_list_changed(what));
//! server.serve(mcp_server::stdio()).await;
//! # Ok(()) }
//! ```

mod abort;
mod aggregator;
pub mod audit;
#[cfg(feature = "cli")]
pub mod cli;
pub mod config;
pub mod credentials;
pub mod dispatcher;
#[doc(hidden)]
pub mod fuzzing;
pub mod jwks;
pub mod limits;
pub mod live;
pub mod metrics;
pub mod naming;
pub mod overrides;
pub mod pins;
pub mod placement;
pub mod policy;
pub mod search;
pub mod sessions;
pub mod store;
mod upstream_error;
mod upstream_questions;
mod upstream_status;
pub mod views;

pub use aggregator::{
    Aggregator, AggregatorOptions, StartError, UpstreamConfig, UpstreamConnector, UpstreamStatus,
    UpstreamTransport,
};
pub use sessions::{
    bridged_capabilities, start_capabilities, PerHostLimits, PoolLimits, SessionMode,
};
pub use upstream_error::UpstreamError;
