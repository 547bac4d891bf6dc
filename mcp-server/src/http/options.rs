//! [`HttpOptions`]: what the endpoint accepts and every bound it keeps, in one place.

use std::time::Duration;

/// How the HTTP endpoint behaves, and the bounds that keep one client (or many) from
/// holding memory, file descriptors or tasks without end.
///
/// Built from [`HttpOptions::default`] with the setters, each named after its field:
///
/// ```
/// # use std::time::Duration;
/// let o = mcp_server::http::HttpOptions::default()
///     .max_sessions(100)
///     .session_idle_timeout(Duration::from_secs(60));
/// assert_eq!(o.max_sessions, 100);
/// ```
///
/// Sessions, requests and replay:
///
/// | field | default | past it |
/// | --- | --- | --- |
/// | `max_body_bytes` | 4 MiB | `413` |
/// | `body_read_timeout` | 30 s | `408` (the body came too slowly) |
/// | `session_idle_timeout` | 10 min | the session ends; its id gets `404`, so the client initialises again |
/// | `max_sessions` | 1024 | the idle session idle longest ends for a new `initialize`; with none idle, `503` with a JSON-RPC error |
/// | `max_sessions_per_client` | 256 | that client's own idle session idle longest ends for its new `initialize`; with none idle, `429` with a JSON-RPC error |
/// | `max_in_flight_per_session` | 64 | `429` with a JSON-RPC error to the POST |
/// | `replay_events` / `replay_bytes` | 256 / 256 KiB per session | the oldest events are forgotten |
///
/// Connections (used by [`super::serve`]):
///
/// | field | default | past it |
/// | --- | --- | --- |
/// | `header_read_timeout` | 10 s | the connection is closed |
/// | `idle_timeout` | 60 s | the connection is closed |
/// | `max_connections` | 512 | new connections wait (the listen backlog) while an idle keep-alive connection is closed to make room |
/// | `listen_backlog` | 4096 | the kernel drops new handshakes, so clients retry them (used by [`super::bind`]) |
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The endpoint path (default `/mcp`).
    pub path: String,
    /// Host names accepted in `Host` (any port). Default: loopback names only.
    pub allowed_hosts: Vec<String>,
    /// Host names accepted in `Origin` (any scheme and port), when the header is present.
    /// Default: loopback names only.
    pub allowed_origins: Vec<String>,
    /// Largest request body (default 4 MiB); larger is `413`.
    pub max_body_bytes: usize,
    /// How long a request body may take to arrive once its headers have (default 30 s);
    /// slower is `408`. Bounds a client that trickles a body to hold a request open.
    pub body_read_timeout: Duration,
    /// How often an idle SSE stream gets a keep-alive comment (default 15 s).
    pub keep_alive: Duration,
    /// SSE events a legacy session keeps for `Last-Event-ID` replay, across all its
    /// streams, newest kept (default 256).
    pub replay_events: usize,
    /// The most bytes of SSE events a legacy session keeps for replay (default 256 KiB;
    /// with `max_sessions` at its default, 256 MiB at most for all sessions); the oldest
    /// go first.
    pub replay_bytes: usize,
    /// A legacy session with no request running and no stream open for this long ends
    /// (default 10 minutes): the handler sees it end as it would a `DELETE`, and its id
    /// gets `404`, which tells the client to initialise again (spec, Session Management).
    pub session_idle_timeout: Duration,
    /// The most legacy sessions open at once (default 1024). An `initialize` past it
    /// ends the idle session (no request running, no stream open) idle longest, as
    /// expiry would (its handler's [`crate::HostSession`] ends, its id gets `404`, so a
    /// host still holding it initialises again): sessions abandoned by crashed hosts or
    /// an abuser do not lock a new host out until they expire. A session in use is never
    /// ended for it; when every session is in use, the `initialize` is refused with `503
    /// Service Unavailable` and a JSON-RPC error: the server is full for now, not the
    /// client wrong (a `4xx` would say so).
    pub max_sessions: usize,
    /// The most legacy sessions one client holds at once (default 256, a quarter of
    /// `max_sessions`'s default; at or above `max_sessions` it does nothing). A client
    /// is the principal with [`HttpOptions::authorization`], else the client's IP
    /// address (known to [`super::serve`], else from a `SocketAddr` request extension;
    /// with neither, no quota applies). A client at its quota makes room among its own
    /// sessions only, never another client's: its idle session idle longest ends for
    /// the new one (a host that crashed and came back is not locked out by the session
    /// it left), and with all of them in use its `initialize` is refused with `429 Too
    /// Many Requests` and a JSON-RPC error (its own doing: it may hold no more). Behind a
    /// reverse proxy every client has the proxy's address: raise it there, or use
    /// authorization.
    pub max_sessions_per_client: usize,
    /// The most requests one legacy session may have unanswered at once (default 64). A
    /// POST that would go past it is refused whole with `429 Too Many Requests` and a
    /// JSON-RPC error for each of its requests; nothing is queued.
    pub max_in_flight_per_session: usize,
    /// The whole request head must arrive within this long of the connection being
    /// ready for it: opened, or done with the previous response (default 10 s).
    /// Closes a client that sends its headers slowly (slowloris) and, since hyper starts
    /// counting when a keep-alive connection waits for its next request, one that keeps
    /// an idle connection open. A connection that had no answer yet, or had part of a
    /// request head in, is told `408 Request Timeout` as it is closed, so that a client
    /// that sends its request late reads why rather than finding the connection gone.
    pub header_read_timeout: Duration,
    /// A connection on which no byte moves for this long is closed (default 60 s) when
    /// no request is being served on it, or when its response is waiting for the client
    /// to read. A request the server is still working on (a long tool call) keeps it.
    pub idle_timeout: Duration,
    /// The most connections served at once (default 512). Past it, [`super::serve`]
    /// holds the next connection unread and the rest wait in the kernel's listen backlog
    /// (see `listen_backlog`) while room is made: the keep-alive connection idle longest
    /// (answered, nothing of a next request read) is closed, else the next to become
    /// idle, else the first to end makes room. A waiting client is served, never closed
    /// unanswered. Keep it below the process's file descriptor limit, with room for what
    /// else the process opens (out of descriptors, idle connections are closed the same
    /// way).
    pub max_connections: usize,
    /// How many connections the kernel queues for [`super::bind`]'s listener before they
    /// are accepted (default 4096, which Linux caps at `net.core.somaxconn`, 4096 since
    /// 5.4). Past it the kernel drops new handshakes, and those clients wait for their
    /// SYN retransmits (1 s, 3 s, 7 s, ...): a burst of clients should fit. With
    /// [`super::serve`], the listener given brings its own backlog (std's and tokio's
    /// `bind` ask for 128).
    pub listen_backlog: u32,
    /// Who may call (default: anyone who passes the Host and Origin checks). With it,
    /// every request needs credentials its authenticator accepts: `401` without, `403`
    /// short of its scopes; its metadata is served at the well-known paths, and each
    /// legacy session stays with the subject that opened it.
    pub authorization: Option<crate::auth::Authorization>,
    /// Answers `/healthz` and `/readyz` (default: neither is served).
    pub health: Option<HealthCheck>,
    /// Answers `/metrics` (default: not served) to requests whose `Host` and `Origin`
    /// pass the checks; never with [`HttpOptions::authorization`] (metrics name what no
    /// single caller's view may include).
    pub metrics: Option<super::MetricsSource>,
    /// Keeps the records of legacy sessions and their bounds (default: a
    /// [`super::SessionTable`] of each endpoint's own, made from `max_sessions`,
    /// `max_sessions_per_client` and `session_idle_timeout`). With one given, those three
    /// are its business: the endpoint reads the idle timeout from it. Every endpoint made
    /// from these options (they share it when cloned) uses the same manager.
    pub session_manager: Option<SessionManagerHandle>,
    /// What seals the legacy session ids the endpoint issues (see [`crate::seal`]). Default
    /// `None`: a key of the endpoint's own, made at random, so that its ids open nowhere
    /// else. Replicas of one deployment share one sealer's keys.
    pub sealer: Option<std::sync::Arc<crate::seal::Sealer>>,
    /// Where the other replicas of the deployment serve (see [`super::Peers`]). With it
    /// and a [`HttpOptions::sealer`], a request naming state another replica holds (a
    /// legacy session, what [`HttpOptions::placement`] names) is forwarded there; without
    /// it (the default), such a request is served here, where that state is not.
    pub peers: Option<PeersHandle>,
    /// Which replica holds the state a request's message names, in the handler's terms
    /// (see [`super::Placement`]); `None`: only legacy sessions are placed.
    pub placement: Option<PlacementHandle>,
    /// What this replica does with what the others tell it (see [`super::PeerNotices`]);
    /// `None`: such notices are acknowledged and dropped.
    pub peer_notices: Option<PeerNoticesHandle>,
    /// Where legacy sessions' snapshots are kept so that another replica can take a
    /// session over when its holder is gone (see [`super::SessionHandover`]); used only
    /// with [`HttpOptions::peers`]. `None` (the default): a session lives and dies with
    /// the replica that opened it.
    pub session_handover: Option<SessionHandoverHandle>,
    /// Browser pages served beside the endpoint (see [`super::Pages`]); `None` (the
    /// default): none.
    pub pages: Option<super::PagesHandle>,
}

/// The [`super::SessionHandover`] an endpoint's replicas share.
#[derive(Clone)]
pub struct SessionHandoverHandle(pub std::sync::Arc<dyn super::SessionHandover>);

impl std::fmt::Debug for SessionHandoverHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionHandoverHandle(..)")
    }
}

/// The [`super::SessionManager`] an endpoint keeps its legacy sessions with.
#[derive(Clone)]
pub struct SessionManagerHandle(pub std::sync::Arc<dyn super::SessionManager>);

impl std::fmt::Debug for SessionManagerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionManagerHandle(..)")
    }
}

/// The [`super::Peers`] an endpoint forwards to.
#[derive(Clone)]
pub struct PeersHandle(pub std::sync::Arc<dyn super::Peers>);

impl std::fmt::Debug for PeersHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PeersHandle(..)")
    }
}

/// The [`super::Placement`] an endpoint places requests with.
#[derive(Clone)]
pub struct PlacementHandle(pub std::sync::Arc<dyn super::Placement>);

impl std::fmt::Debug for PlacementHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PlacementHandle(..)")
    }
}

/// The [`super::PeerNotices`] an endpoint hands other replicas' notices to.
#[derive(Clone)]
pub struct PeerNoticesHandle(pub std::sync::Arc<dyn super::PeerNotices>);

impl std::fmt::Debug for PeerNoticesHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PeerNoticesHandle(..)")
    }
}

/// The [`super::Health`] an endpoint answers probes with.
#[derive(Clone)]
pub struct HealthCheck(pub std::sync::Arc<dyn super::Health>);

impl std::fmt::Debug for HealthCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HealthCheck(..)")
    }
}

fn loopback() -> Vec<String> {
    ["localhost", "127.0.0.1", "[::1]", "::1"]
        .map(String::from)
        .to_vec()
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            path: "/mcp".into(),
            allowed_hosts: loopback(),
            allowed_origins: loopback(),
            max_body_bytes: 4 * 1024 * 1024,
            body_read_timeout: Duration::from_secs(30),
            keep_alive: Duration::from_secs(15),
            replay_events: 256,
            replay_bytes: 256 * 1024,
            session_idle_timeout: Duration::from_secs(600),
            max_sessions: 1024,
            max_sessions_per_client: 256,
            max_in_flight_per_session: 64,
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 512,
            listen_backlog: 4096,
            authorization: None,
            health: None,
            metrics: None,
            session_manager: None,
            sealer: None,
            peers: None,
            placement: None,
            peer_notices: None,
            session_handover: None,
            pages: None,
        }
    }
}

impl HttpOptions {
    /// Sets [`HttpOptions::path`].
    #[must_use]
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Serves `pages` beside the endpoint (see [`HttpOptions::pages`]).
    #[must_use]
    pub fn with_pages(mut self, pages: std::sync::Arc<dyn super::Pages>) -> Self {
        self.pages = Some(super::PagesHandle(pages));
        self
    }

    /// Serves `/healthz` and `/readyz` with `health` (see [`super::Health`]).
    #[must_use]
    pub fn health(mut self, health: std::sync::Arc<dyn super::Health>) -> Self {
        self.health = Some(HealthCheck(health));
        self
    }

    /// Serves `/metrics` with `metrics` (see [`super::Metrics`]).
    #[must_use]
    pub fn metrics(mut self, metrics: std::sync::Arc<dyn super::Metrics>) -> Self {
        self.metrics = Some(super::MetricsSource(metrics));
        self
    }

    /// Keeps legacy sessions with `manager` (see [`HttpOptions::session_manager`]).
    #[must_use]
    pub fn session_manager(mut self, manager: std::sync::Arc<dyn super::SessionManager>) -> Self {
        self.session_manager = Some(SessionManagerHandle(manager));
        self
    }

    /// Seals session ids with `sealer` (see [`HttpOptions::sealer`]).
    #[must_use]
    pub fn sealer(mut self, sealer: std::sync::Arc<crate::seal::Sealer>) -> Self {
        self.sealer = Some(sealer);
        self
    }

    /// Forwards requests for state held elsewhere to `peers` (see [`HttpOptions::peers`]).
    #[must_use]
    pub fn peers(mut self, peers: std::sync::Arc<dyn super::Peers>) -> Self {
        self.peers = Some(PeersHandle(peers));
        self
    }

    /// Places requests with `placement` (see [`HttpOptions::placement`]).
    #[must_use]
    pub fn placement(mut self, placement: std::sync::Arc<dyn super::Placement>) -> Self {
        self.placement = Some(PlacementHandle(placement));
        self
    }

    /// Hands what other replicas tell to `notices` (see [`HttpOptions::peer_notices`]).
    #[must_use]
    pub fn peer_notices(mut self, notices: std::sync::Arc<dyn super::PeerNotices>) -> Self {
        self.peer_notices = Some(PeerNoticesHandle(notices));
        self
    }

    /// Hands legacy sessions over with `handover` (see [`HttpOptions::session_handover`]).
    #[must_use]
    pub fn session_handover(
        mut self,
        handover: std::sync::Arc<dyn super::SessionHandover>,
    ) -> Self {
        self.session_handover = Some(SessionHandoverHandle(handover));
        self
    }

    /// Sets [`HttpOptions::authorization`].
    #[must_use]
    pub fn authorization(mut self, authorization: crate::auth::Authorization) -> Self {
        self.authorization = Some(authorization);
        self
    }
}

mcp_types::setters! {
    HttpOptions {
    /// Sets [`HttpOptions::allowed_hosts`].
    allowed_hosts: Vec<String>;
    /// Sets [`HttpOptions::allowed_origins`].
    allowed_origins: Vec<String>;
    /// Sets [`HttpOptions::max_body_bytes`].
    max_body_bytes: usize;
    /// Sets [`HttpOptions::body_read_timeout`].
    body_read_timeout: Duration;
    /// Sets [`HttpOptions::keep_alive`].
    keep_alive: Duration;
    /// Sets [`HttpOptions::replay_events`].
    replay_events: usize;
    /// Sets [`HttpOptions::replay_bytes`].
    replay_bytes: usize;
    /// Sets [`HttpOptions::session_idle_timeout`].
    session_idle_timeout: Duration;
    /// Sets [`HttpOptions::max_sessions`].
    max_sessions: usize;
    /// Sets [`HttpOptions::max_sessions_per_client`].
    max_sessions_per_client: usize;
    /// Sets [`HttpOptions::max_in_flight_per_session`].
    max_in_flight_per_session: usize;
    /// Sets [`HttpOptions::header_read_timeout`].
    header_read_timeout: Duration;
    /// Sets [`HttpOptions::idle_timeout`].
    idle_timeout: Duration;
    /// Sets [`HttpOptions::max_connections`].
    max_connections: usize;
    /// Sets [`HttpOptions::listen_backlog`].
    listen_backlog: u32;
    }
}
