//! [`SessionManager`]: which legacy sessions exist, whose each is, and the bounds and
//! policy that admit, evict and expire them, behind a trait, so that a store shared by
//! several processes can stand where the in-memory [`super::SessionTable`] stands.
//!
//! A manager deals in records ([`SessionRecord`]) and ids. What a session is in this
//! process (its channels, the requests it runs, the server's session object) stays with
//! the endpoint, which holds one live session per record it created. How that session is
//! used, which only this process can know, reaches the manager through a
//! [`SessionActivity`] handed over with the record: whether a request runs or a stream is
//! open, how long it has been idle, and the claim that makes it idle for good so that it
//! may be ended.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;

/// Whose a session is, for the per-client quota.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SessionClient {
    /// An authenticated principal ([`crate::auth::Principal::identity`]): with
    /// authorization, only it may use the session.
    Principal(String),
    /// The client's address, without authorization.
    Address(IpAddr),
}

/// What a manager keeps of one legacy session.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionRecord {
    /// Its `Mcp-Session-Id`: a sealed token of the endpoint's (82 characters of base64url
    /// naming the replica that holds it; see [`crate::seal`]), unique among its sessions.
    pub id: String,
    /// Whose it is; `None` when the endpoint could tell neither a principal nor an
    /// address (no quota applies).
    pub client: Option<SessionClient>,
    /// When the endpoint made it (wall-clock time, comparable across processes).
    pub created_at: SystemTime,
}

impl SessionRecord {
    /// The record of session `id` of `client`, made now.
    pub fn new(id: impl Into<String>, client: Option<SessionClient>) -> Self {
        SessionRecord {
            id: id.into(),
            client,
            created_at: SystemTime::now(),
        }
    }
}

/// How one session is used in the process that serves it: a session is in use while a
/// POST awaits its answers or an SSE stream of it is open, and idle otherwise.
///
/// Made by the endpoint, handed to [`SessionManager::create`] with the session's record.
/// Both methods are cheap (atomic operations and a short lock) and never block.
pub trait SessionActivity: Send + Sync + 'static {
    /// How long the session has been idle, since its last use ended (or since it was
    /// made); `None` while it is in use, and once it was claimed.
    fn idle_for(&self) -> Option<Duration>;

    /// Claims the session for ending, if it is idle now: `true` when it was, and from
    /// then on no use can begin on it (a request that found it just before is answered
    /// `404`, as a lookup after would be); `false` when it is in use or claimed already.
    /// The manager then takes the session's record out and reports its id (from
    /// [`SessionManager::create`] or [`SessionManager::expire`]), and the endpoint ends
    /// the session.
    fn claim_idle(&self) -> bool;
}

/// Why a session was taken out to make room for a new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EvictionReason {
    /// It had expired (idle for the idle timeout or longer): taken out as expiry takes it,
    /// not counted as an eviction.
    Expired,
    /// Every session was taken: it was the idle session idle longest (counted in
    /// [`crate::SessionCounts::evicted_table_full`]).
    TableFull,
    /// Its client held its quota: it was that client's idle session idle longest
    /// (counted in [`crate::SessionCounts::evicted_client_quota`]).
    ClientQuota,
}

/// One session a manager took out to make room for a new one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Eviction {
    /// The session's id.
    pub id: String,
    /// Why it went.
    pub reason: EvictionReason,
}

impl Eviction {
    /// Session `id`, taken out because of `reason`.
    pub fn new(id: impl Into<String>, reason: EvictionReason) -> Self {
        Eviction {
            id: id.into(),
            reason,
        }
    }
}

/// A session admitted by [`SessionManager::create`], and what went to make room for it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Admitted {
    /// Sessions taken out for it, each claimed first where this process holds it; the
    /// endpoint ends those it holds before it answers the `initialize`.
    pub evicted: Vec<Eviction>,
}

impl Admitted {
    /// Admitted after taking out `evicted`.
    pub fn new(evicted: Vec<Eviction>) -> Self {
        Admitted { evicted }
    }
}

/// A session store that could not do what it was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionStoreError {
    /// The store is out of reach or did not answer in time. The text is logged, never
    /// sent to a client.
    #[error("session store unavailable: {0}")]
    Unavailable(String),
}

/// Why [`SessionManager::create`] did not admit a session. The endpoint answers the
/// `initialize` with a JSON-RPC error (`-32000`) and the status each variant names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionRefused {
    /// Every session is in use and there are `max` (`503`: the server is full for now).
    #[error("all {max} sessions are in use")]
    Full {
        /// The bound.
        max: usize,
    },
    /// The client holds `quota` sessions, all in use (`429`: its own doing).
    #[error("the client holds {quota} sessions, its quota, all in use")]
    ClientQuota {
        /// The per-client bound.
        quota: usize,
        /// The client.
        client: SessionClient,
    },
    /// The store could not be asked (`503`).
    #[error(transparent)]
    Store(#[from] SessionStoreError),
}

/// Which legacy Streamable HTTP sessions exist, whose each is, and the bounds they are
/// held to: the endpoint asks it to admit a session for each `initialize`, tells it when
/// a session is used and closed, and has it expire idle sessions on a timer.
///
/// The endpoint holds the live session (what serves its requests) beside each record it
/// created, and serves a session it holds without asking [`SessionManager::find`]: the
/// manager decides which sessions exist and for how long, the endpoint how they are
/// served. Every id a manager reports gone (evicted, expired) whose session the endpoint
/// holds is ended there as a `DELETE` would end it: its requests cancelled, its streams
/// closed, the handler's [`crate::HostSession`] ended, its id `404` from then on. Memory
/// is bounded by the manager: the endpoint holds a live session for each session it
/// admitted and has not been told is gone.
///
/// [`super::SessionTable`], the default, keeps records in this process's memory. A
/// store shared by several processes implements the same contract over records that
/// outlive one of them; such a store is asked with `.await` where it must wait, and the
/// two methods on the request path, [`SessionManager::touch`] and
/// [`SessionManager::idle_timeout`], do not wait.
#[async_trait]
pub trait SessionManager: Send + Sync + 'static {
    /// How long a session may stay idle before it expires. The endpoint reads it once, when
    /// made: a request naming a session it holds that has been idle this long ends that
    /// session and is answered `404` (the sweeper may not have come by yet), and
    /// [`SessionManager::expire`] runs every quarter of it (between 10 ms and 30 s).
    fn idle_timeout(&self) -> Duration;

    /// Admits the session `record` names (made by the endpoint, for an `initialize`), its
    /// use told by `activity`, or says why not.
    ///
    /// At a bound it makes room before it refuses: it takes out sessions that are idle
    /// ([`SessionActivity::claim_idle`] for each before it goes), and refuses only when
    /// none can go; a session in use is never taken out for room. A client's quota is
    /// made room for among that client's own sessions only. What went is in
    /// [`Admitted::evicted`], for the endpoint to end.
    async fn create(
        &self,
        record: SessionRecord,
        activity: Arc<dyn SessionActivity>,
    ) -> Result<Admitted, SessionRefused>;

    /// The record of session `id`, or `None` when there is none (never made, closed,
    /// evicted, expired). The endpoint asks it for an id it holds no live session for
    /// (answered `404` either way: a session lives in the process that made it; `503` on
    /// an error).
    async fn find(&self, id: &str) -> Result<Option<SessionRecord>, SessionStoreError>;

    /// Session `id`, which this process holds, is being used now (a POST, a GET stream).
    /// On the request path: it must not block (a store elsewhere queues or batches it).
    /// A manager that reads idleness from [`SessionActivity`] needs nothing more.
    fn touch(&self, id: &str);

    /// Takes out every session idle for [`SessionManager::idle_timeout`] or longer,
    /// claiming each first, and returns their ids for the endpoint to end.
    async fn expire(&self) -> Result<Vec<String>, SessionStoreError>;

    /// Takes session `id` out (a `DELETE`, or the endpoint found it expired and claimed
    /// it); whether it was there.
    async fn close(&self, id: &str) -> Result<bool, SessionStoreError>;

    /// How many sessions exist.
    async fn count(&self) -> Result<usize, SessionStoreError>;

    /// The records of up to `limit` sessions, in no particular order.
    async fn list(&self, limit: usize) -> Result<Vec<SessionRecord>, SessionStoreError>;
}
