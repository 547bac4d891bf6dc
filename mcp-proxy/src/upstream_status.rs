//! [`UpstreamStatus`]: how one upstream is doing, as the aggregator reports it (to
//! `/readyz`, to metrics, to an embedder).

/// How one upstream is doing ([`crate::Aggregator::status`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UpstreamStatus {
    /// Its configuration key.
    pub key: String,
    /// Whether its shared connection is up.
    pub connected: bool,
    /// Why it last failed, until it connects again.
    pub last_error: Option<crate::upstream_error::UpstreamError>,
    /// Upstream sessions open (or opening) for hosts of their own ([`crate::sessions::SessionMode::PerHost`],
    /// or hosts that keep state upstream under [`crate::sessions::SessionMode::Pooled`]).
    pub host_sessions: usize,
    /// Connections open (or opening) for principals, for an upstream that acts as each
    /// user ([`crate::credentials::PerUser`]).
    pub principal_connections: usize,
    /// Pooled upstream sessions open (or opening) ([`crate::sessions::SessionMode::Pooled`]).
    pub pooled_sessions: usize,
    /// Calls waiting for a pooled session, every one being lent out.
    pub pooled_waiting: usize,
    /// The revision its shared connection speaks, while connected.
    pub revision: Option<mcp_types::Revision>,
    /// How often its connection ended and it was started again.
    pub restarts: u64,
    /// How often it ended a session of the gateway's (HTTP `404`) and the gateway started
    /// a new one, the shared connection's and hosts' own sessions alike.
    pub session_renewals: u64,
    /// Whether readiness waits for it ([`crate::UpstreamConfig::required`]).
    pub required: bool,
}
