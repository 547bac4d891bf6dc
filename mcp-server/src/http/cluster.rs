//! Replicas of one endpoint: where each is ([`Peers`]), and which of them holds the state a
//! request names ([`Placement`]), so that a request landing on another replica is taken
//! to the one that holds its state (`forward.rs`) instead of failing there.
//!
//! A legacy session's owner is in its sealed id, which the endpoint reads itself; state
//! the handler keeps (a call parked for a retry, a task) is named inside the body, in the
//! handler's own terms, which a [`Placement`] reads.

use std::collections::HashMap;

use mcp_types::Message;

use crate::seal::ReplicaId;

/// Where each replica of the deployment serves (its base URL, `http://host:port`), as an
/// operator's list or a registry of live replicas says. Cheap: asked on the request path.
pub trait Peers: Send + Sync + 'static {
    /// The base URL of `replica`, if it is known (and, for a registry, alive).
    fn address(&self, replica: ReplicaId) -> Option<http::Uri>;
}

/// Replicas at fixed addresses.
#[derive(Debug, Clone, Default)]
pub struct StaticPeers(HashMap<ReplicaId, http::Uri>);

impl StaticPeers {
    /// No replica known.
    pub fn new() -> Self {
        StaticPeers::default()
    }

    /// With `replica` at `address` (`http://host:port`).
    #[must_use]
    pub fn with(mut self, replica: ReplicaId, address: http::Uri) -> Self {
        self.0.insert(replica, address);
        self
    }
}

impl Peers for StaticPeers {
    fn address(&self, replica: ReplicaId) -> Option<http::Uri> {
        self.0.get(&replica).cloned()
    }
}

/// Which replica holds the state a message names, in a handler's own terms (the
/// aggregator: a parked call's `requestState`, a task id). Cheap, never blocking: asked of
/// each POSTed message that is a request, on the request path.
pub trait Placement: Send + Sync + 'static {
    /// The replica holding what `message` names, if it names anything a replica holds.
    fn owner(&self, message: &Message) -> Option<ReplicaId>;
}
