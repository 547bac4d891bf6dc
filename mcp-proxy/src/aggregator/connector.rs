//! Upstreams reached by a transport of the embedder's own ([`UpstreamTransport::Custom`]):
//! a Unix socket, a tunnel, a message bus, anything that carries MCP frames.
//!
//! [`UpstreamTransport::Custom`]: super::UpstreamTransport::Custom

use async_trait::async_trait;
use mcp_types::transport::Transport;

use crate::upstream_error::UpstreamError;

/// Opens connections to one upstream. Called once at start, again at every restart after
/// the connection ended, and once per host for a legacy upstream served
/// [`crate::SessionMode::PerHost`]; each connection is the aggregator's to close.
#[async_trait]
pub trait UpstreamConnector: Send + Sync + 'static {
    /// A fresh connection, or why there is none (the upstream is then unavailable and
    /// retried with backoff, as a stdio server that does not start is; the error's kind
    /// is what status and metrics report).
    async fn connect(&self) -> Result<Box<dyn Transport>, UpstreamError>;

    /// What it connects to, for logs and status (default: `custom`).
    fn describe(&self) -> String {
        "custom".into()
    }
}
