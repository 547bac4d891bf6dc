//! The state replicas of one gateway share ([`StateStore`]): which replicas are alive and
//! where ([`ReplicaEntry`], kept by heartbeats), and a record of each legacy session
//! ([`SessionState`]: what it was opened with, who holds it, its epoch), so that another
//! replica can take a session over when its owner is gone ([`StateStore::claim_session`],
//! a compare-and-set on the epoch: of two replicas racing for one session, exactly one
//! wins). Every entry expires unless renewed.
//!
//! Rate limits' token buckets are kept there too ([`StateStore::take_token`]), so that
//! replicas sharing a store enforce one bucket per key.
//!
//! [`MemoryStore`] keeps it in this process (one replica, or tests); `RedisStore` (feature
//! `redis`) in a Redis server every replica reaches. Nothing on a 2026 request's path asks
//! the store.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use mcp_server::seal::ReplicaId;
use serde::{Deserialize, Serialize};

mod handover;
mod lease;
mod memory;
mod peers;
#[cfg(feature = "redis")]
mod redis;
mod status;

pub use handover::StoreHandover;
pub use lease::Lease;
pub use memory::MemoryStore;
pub use peers::StorePeers;
#[cfg(feature = "redis")]
pub use redis::{RedisStore, RedisStoreOptions};
pub use status::WithStore;

/// One live replica, as it announces itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReplicaEntry {
    /// Its number.
    pub replica: ReplicaId,
    /// Its base URL (`http://host:port`), where the others forward to it.
    pub address: String,
    /// A digest of its configuration (upstreams, pins, views): replicas whose digests
    /// differ serve different catalogs (logged as configuration skew).
    pub config_digest: String,
    /// Whether it is stopping: it takes no new sessions, and its sessions move.
    pub draining: bool,
}

impl ReplicaEntry {
    /// Replica `replica` at `address`, configured as `config_digest` says, not draining.
    pub fn new(
        replica: ReplicaId,
        address: impl Into<String>,
        config_digest: impl Into<String>,
    ) -> Self {
        ReplicaEntry {
            replica,
            address: address.into(),
            config_digest: config_digest.into(),
            draining: false,
        }
    }
}

/// What a replica needs to serve a legacy session it did not open: the handshake's
/// outcome and what the host set since. Its record in the store is at most a few hundred
/// bytes (2 KiB with large capabilities).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionState {
    /// Its `Mcp-Session-Id`.
    pub id: String,
    /// The replica holding it now.
    pub owner: ReplicaId,
    /// Bumped each time it changes hands: a replica resumed after another took its
    /// session over finds its epoch stale and lets the session go.
    pub epoch: u64,
    /// The revision negotiated at `initialize`.
    pub revision: String,
    /// The client's capabilities as it wrote them.
    pub capabilities: String,
    /// The client's `clientInfo` as it wrote it.
    pub client_info: String,
    /// The log level it set (`logging/setLevel`), if any.
    pub log_level: Option<String>,
    /// The resources it subscribed to.
    pub subscriptions: Vec<String>,
    /// Its own sessions with HTTP upstreams, by upstream key (to attach to again).
    pub upstream_sessions: BTreeMap<String, String>,
}

impl SessionState {
    /// Session `id`, held by `owner` at epoch 0, opened at `revision` by a client with
    /// `capabilities` and `client_info` (their JSON as written); nothing set since.
    pub fn new(
        id: impl Into<String>,
        owner: ReplicaId,
        revision: impl Into<String>,
        capabilities: impl Into<String>,
        client_info: impl Into<String>,
    ) -> Self {
        SessionState {
            id: id.into(),
            owner,
            epoch: 0,
            revision: revision.into(),
            capabilities: capabilities.into(),
            client_info: client_info.into(),
            log_level: None,
            subscriptions: Vec::new(),
            upstream_sessions: BTreeMap::new(),
        }
    }
}

/// Why the store could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// It cannot be reached now, or did not answer in time.
    #[error("the state store is unavailable: {0}")]
    Unavailable(String),
    /// It refused what was asked (a command, its credentials).
    #[error("the state store refused: {0}")]
    Refused(String),
}

/// A token bucket's shape, as a store keeps it: filled at `per_second` tokens a second,
/// holding at most `burst` (see [`StateStore::take_token`]).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct TokenRate {
    /// Tokens added a second: positive and finite, or the store refuses the bucket.
    pub per_second: f64,
    /// The most tokens it holds (0 is taken as 1).
    pub burst: u32,
}

impl TokenRate {
    /// `per_second` tokens a second, at most `burst` at once.
    pub fn new(per_second: f64, burst: u32) -> TokenRate {
        TokenRate { per_second, burst }
    }

    /// As a limit's [`Rate`](crate::limits::Rate); [`StoreError::Refused`] for a rate that
    /// is not one.
    pub(crate) fn rate(self) -> Result<crate::limits::Rate, StoreError> {
        crate::limits::Rate::try_per_second(self.per_second)
            .map(|r| r.burst(self.burst))
            .map_err(|e| StoreError::Refused(e.to_string()))
    }
}

/// What [`StateStore::take_token`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TokenTaken {
    /// Whether a token was taken.
    pub taken: bool,
    /// When not, how long until one will be there; zero when it was.
    pub retry_after: Duration,
    /// The whole tokens left in the bucket.
    pub remaining: u32,
}

impl TokenTaken {
    /// A token taken, `remaining` left.
    pub fn taken(remaining: u32) -> TokenTaken {
        TokenTaken {
            taken: true,
            retry_after: Duration::ZERO,
            remaining,
        }
    }

    /// None taken: one will be there after `retry_after`.
    pub fn refused(retry_after: Duration) -> TokenTaken {
        TokenTaken {
            taken: false,
            retry_after,
            remaining: 0,
        }
    }
}

/// The state replicas share. Every method is bounded in time (an implementation's own
/// timeout); an entry not renewed within its `ttl` is gone.
#[async_trait]
pub trait StateStore: Send + Sync + 'static {
    /// Connects now and says whether the store takes this replica: `Err` with
    /// [`StoreError::Refused`] for credentials it refuses (a start-up should stop), with
    /// [`StoreError::Unavailable`] when it cannot be reached (a start-up may go on).
    /// Default: nothing to check.
    async fn check(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Announces `entry` as alive for `ttl` (a heartbeat renews it).
    async fn announce(&self, entry: &ReplicaEntry, ttl: Duration) -> Result<(), StoreError>;

    /// Takes `replica` out of the live ones at once (a replica stopping).
    async fn leave(&self, replica: ReplicaId) -> Result<(), StoreError>;

    /// The live replicas, by number.
    async fn replicas(&self) -> Result<Vec<ReplicaEntry>, StoreError>;

    /// Keeps `state` for `ttl` (the session's idle timeout), in place of the record of it,
    /// unless that record names another holder or epoch than `state` does (another replica
    /// took the session over): `Ok(false)` then, and the record stays as it is.
    async fn put_session(&self, state: &SessionState, ttl: Duration) -> Result<bool, StoreError>;

    /// The record of session `id`, if there is one that reads (a record that does not is
    /// logged and taken as none).
    async fn session(&self, id: &str) -> Result<Option<SessionState>, StoreError>;

    /// Makes `owner` the holder of session `id` if its record is still at `epoch`: the
    /// record as it is now (epoch bumped, kept for `ttl`), or `None` when it is not there
    /// or another replica claimed it first.
    async fn claim_session(
        &self,
        id: &str,
        epoch: u64,
        owner: ReplicaId,
        ttl: Duration,
    ) -> Result<Option<SessionState>, StoreError>;

    /// Forgets session `id` (it ended at `owner`), unless another replica holds it now.
    async fn remove_session(&self, id: &str, owner: ReplicaId) -> Result<(), StoreError>;

    /// Keeps `value` under `key` (a user's sealed grant, a connect flow in progress), for
    /// `ttl` if given, else until removed. Default: not kept ([`StoreError::Refused`]).
    async fn put_value(
        &self,
        key: &str,
        value: &str,
        ttl: Option<Duration>,
    ) -> Result<(), StoreError> {
        let _ = (key, value, ttl);
        Err(values_unsupported())
    }

    /// Keeps `value` under `key` for `ttl` only if nothing is kept there: whether it was
    /// (of replicas racing, exactly one is told `true`).
    async fn put_value_once(
        &self,
        key: &str,
        value: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let _ = (key, value, ttl);
        Err(values_unsupported())
    }

    /// The value kept under `key`, if any.
    async fn value(&self, key: &str) -> Result<Option<String>, StoreError> {
        let _ = key;
        Err(values_unsupported())
    }

    /// The value kept under `key`, removed as it is read (of replicas racing, one gets it).
    async fn take_value(&self, key: &str) -> Result<Option<String>, StoreError> {
        let _ = key;
        Err(values_unsupported())
    }

    /// Forgets the value under `key`; whether there was one.
    async fn remove_value(&self, key: &str) -> Result<bool, StoreError> {
        let _ = key;
        Err(values_unsupported())
    }

    /// Takes one token from the bucket under `key` (filled at `rate.per_second`, holding
    /// at most `rate.burst`, full when first used): whether it was taken, and if not, how
    /// long until one will be. Atomic across replicas: N replicas sharing one store enforce
    /// one bucket. The bucket expires once it would be full again. A bucket used before at
    /// another rate keeps what was taken from it. Default: no buckets
    /// ([`StoreError::Refused`]).
    async fn take_token(&self, key: &str, rate: TokenRate) -> Result<TokenTaken, StoreError> {
        let _ = (key, rate);
        Err(StoreError::Refused(
            "this state store keeps no rate limits".into(),
        ))
    }

    /// Puts back into the bucket under `key` one token [`StateStore::take_token`] took (a
    /// call that another bucket then refused): as if that take had not been, whatever was
    /// taken since; a bucket full or gone stays so. Default: nothing to put back.
    async fn give_token(&self, key: &str, rate: TokenRate) -> Result<(), StoreError> {
        let _ = (key, rate);
        Ok(())
    }
}

/// What a store without the value methods answers them.
fn values_unsupported() -> StoreError {
    StoreError::Refused("this state store keeps no values".into())
}
