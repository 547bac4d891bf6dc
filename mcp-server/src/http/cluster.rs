//! Replicas of one endpoint: where each is ([`Peers`]), and which of them holds the state a
//! request names ([`Placement`]), so that a request landing on another replica is taken
//! to the one that holds its state (`forward.rs`) instead of failing there.
//!
//! A legacy session's owner is in its sealed id, which the endpoint reads itself; state
//! the handler keeps (a call parked for a retry, a task) is named inside the body, in the
//! handler's own terms, which a [`Placement`] reads.

use std::collections::HashMap;
use std::sync::Arc;

use mcp_types::Message;

use super::forward::Forwarder;
use crate::seal::{ReplicaId, Sealer};

/// The method of what one replica tells the others ([`ReplicaLink::tell`]), carried over
/// the signed hop as a JSON-RPC notification; no client may send it.
pub const PEER_NOTICE: &str = "notifications/mcp-gateway/peer";

/// Where each replica of the deployment serves (its base URL, `http://host:port`), as an
/// operator's list or a registry of live replicas says. Cheap: asked on the request path.
pub trait Peers: Send + Sync + 'static {
    /// The base URL of `replica`, if it is known (and, for a registry, alive).
    fn address(&self, replica: ReplicaId) -> Option<http::Uri>;

    /// Every replica known (this one may be among them).
    fn replicas(&self) -> Vec<ReplicaId>;

    /// The base URL `replica` was last known at, alive or not (default: its
    /// [`Peers::address`]): a last try for a request whose state nobody else can take
    /// (a registry that lost its entries may not list a replica that still serves).
    fn last_known(&self, replica: ReplicaId) -> Option<http::Uri> {
        self.address(replica)
    }
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

    fn replicas(&self) -> Vec<ReplicaId> {
        let mut all: Vec<ReplicaId> = self.0.keys().copied().collect();
        all.sort();
        all
    }
}

/// What a replica does with what another tells it ([`ReplicaLink::tell`]): given by
/// [`super::HttpOptions::peer_notices`], called with the sender and the notice's params.
pub trait PeerNotices: Send + Sync + 'static {
    /// Replica `from` says `notice`. Must not block.
    fn received(&self, from: ReplicaId, notice: &serde_json::value::RawValue);
}

/// How one replica tells all the others something (a list of an upstream changed), over
/// the signed hop, without waiting for them. Cheap to clone.
#[derive(Clone)]
pub struct ReplicaLink {
    forwarder: Arc<Forwarder>,
    path: String,
}

impl std::fmt::Debug for ReplicaLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicaLink")
            .field("replica", &self.forwarder.replica())
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl ReplicaLink {
    /// A link from `sealer`'s replica to `peers`, whose endpoints serve at `path` (what
    /// [`super::HttpOptions::path`] says, `/mcp` by default).
    pub fn new(peers: Arc<dyn Peers>, sealer: Arc<Sealer>, path: impl Into<String>) -> Self {
        ReplicaLink {
            forwarder: Arc::new(Forwarder::new(peers, sealer)),
            path: path.into(),
        }
    }

    /// Tells every other replica `notice` (the params of a [`PEER_NOTICE`]), each on a
    /// task of its own; one that cannot be reached misses it (logged).
    pub fn tell(&self, notice: serde_json::Value) {
        let body = serde_json::json!({"jsonrpc": "2.0", "method": PEER_NOTICE, "params": notice});
        let body = bytes::Bytes::from(body.to_string());
        self.forwarder.tell_all(&self.path, body);
    }
}

/// Which replica holds the state a message names, in a handler's own terms (the
/// aggregator: a parked call's `requestState`, a task id). Cheap, never blocking: asked of
/// each POSTed message that is a request, on the request path.
pub trait Placement: Send + Sync + 'static {
    /// The replica holding what `message` names, if it names anything a replica holds.
    fn owner(&self, message: &Message) -> Option<ReplicaId>;
}
