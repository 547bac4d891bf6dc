//! The upstream pool: connecting each upstream, keeping it alive (following its list
//! changes, `listing.rs`; restarting it with backoff when its connection ends), closing
//! it, and saying how it is doing.

use super::id::UpstreamId;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_client::{ChildTransport, Client, ClientOptions, EraChoice};
use mcp_types::protocol::*;
use mcp_types::transport::memory_pair;
use mcp_types::Revision;
use parking_lot::{Mutex, RwLock};

use super::id::PerUpstream;
use super::options::{UpstreamConfig, UpstreamTransport};
use crate::metrics::Metrics;
use crate::sessions::host::HostLinks;
use crate::sessions::pool::SessionPool;
use crate::sessions::principal::PrincipalLinks;
use crate::sessions::{start_capabilities, SessionMode};
use crate::upstream_error::UpstreamError;
use crate::upstream_questions::{Bridge, Calls};
use crate::upstream_status::UpstreamStatus;

pub(super) struct Upstream {
    pub(super) config: UpstreamConfig,
    pub(super) namespace: String,
    pub(super) client: RwLock<Option<Client>>,
    /// The legacy session opened on `client`'s connection ([`UpstreamConfig::legacy_session`]).
    legacy: RwLock<Option<Client>>,
    pub(super) last_error: Mutex<Option<UpstreamError>>,
    /// Host calls in flight on the shared connection, for routing a legacy upstream's
    /// requests.
    pub(super) calls: Arc<Calls>,
    /// The sessions of hosts that have one of their own here.
    pub(super) links: Option<Arc<HostLinks>>,
    /// The sessions lent to hosts' calls one at a time ([`SessionMode::Pooled`]).
    pub(super) pool: Option<Arc<SessionPool>>,
    /// The connections of principals, for an upstream that acts as each user.
    pub(super) principals: Option<Arc<PrincipalLinks>>,
    /// How often its connection ended (and it was started again).
    pub(super) restarts: std::sync::atomic::AtomicU64,
    /// How often an HTTP upstream ended one of our sessions and a new one was started.
    pub(super) session_renewals: Arc<std::sync::atomic::AtomicU64>,
    /// A list change heard on another of its sessions (pooled, or a host's own): its
    /// keeper lists it again ([`super::links::watch_list_changes`]).
    pub(super) heard_elsewhere: Arc<tokio::sync::Notify>,
    /// The generation of the aggregator that keeps it alive (connects, restarts it): one
    /// at a time, handed over by a reload ([`crate::Aggregator::reconfigured`]).
    pub(super) keeper: std::sync::atomic::AtomicU64,
}

impl Upstream {
    /// An upstream not connected yet.
    pub(super) fn new(config: UpstreamConfig, namespace: String) -> Self {
        let principals = config
            .per_user
            .as_ref()
            .map(|p| Arc::new(PrincipalLinks::new(p)));
        let (links, pool) = match &config.session {
            _ if principals.is_some() => (None, None),
            SessionMode::PerHost(limits) => (Some(HostLinks::new(limits.clone())), None),
            SessionMode::Pooled(limits) => (
                Some(HostLinks::new(limits.hosts.clone())),
                Some(Arc::new(SessionPool::new(limits.clone()))),
            ),
            _ => (None, None),
        };
        Upstream {
            links: links.map(Arc::new),
            pool,
            principals,
            config,
            namespace,
            client: RwLock::new(None),
            legacy: RwLock::new(None),
            last_error: Mutex::new(None),
            calls: Arc::new(Calls::default()),
            restarts: Default::default(),
            session_renewals: Default::default(),
            heard_elsewhere: Default::default(),
            keeper: Default::default(),
        }
    }

    pub(super) fn client(&self) -> Option<Client> {
        self.client.read().clone()
    }

    /// The legacy session beside its 2026 connection, while that connection is open.
    pub(super) fn legacy_client(&self) -> Option<Client> {
        let view = self.legacy.read().clone()?;
        view.close_reason().is_none().then_some(view)
    }

    fn set_legacy(&self, view: Option<Client>) {
        *self.legacy.write() = view;
    }

    pub(super) fn unavailable(&self) -> String {
        let why = self
            .last_error
            .lock()
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_else(|| "not connected".into());
        format!("upstream `{}` is unavailable: {why}", self.config.key)
    }
}

/// What the pool takes from [`super::options::AggregatorOptions`].
#[derive(Clone, Copy, Debug)]
pub(super) struct Settings {
    pub(super) connect_timeout: Duration,
    pub(super) call_timeout: Duration,
    pub(super) input_timeout: Duration,
    pub(super) restart_backoff: (Duration, Duration),
}

impl Settings {
    pub(super) fn of(o: &super::options::AggregatorOptions) -> Settings {
        Settings {
            connect_timeout: o.connect_timeout,
            call_timeout: o.call_timeout,
            input_timeout: o.input_timeout,
            restart_backoff: o.restart_backoff,
        }
    }
}

/// The upstreams of one aggregator, in catalog order: their connections, opened,
/// counted, closed; which of them this aggregator keeps alive (a reload hands them on).
pub(super) struct Pool {
    upstreams: PerUpstream<Arc<Upstream>>,
    settings: Settings,
    metrics: Arc<Metrics>,
    /// Shut down, or superseded by a reload: restarts nothing.
    stopped: AtomicBool,
    /// This aggregator among those a reload makes (see [`Upstream::keeper`]).
    generation: u64,
}

impl Pool {
    /// Longest [`Pool::close_all`] waits for the upstream connections to close:
    /// enough for a stdio server that ignores both its stdin closing and `SIGTERM` (twice
    /// [`ChildTransport::CLOSE_GRACE`]), and a second more for reaping it.
    pub(super) const SHUTDOWN_LIMIT: Duration = Duration::from_secs(5);

    /// A pool of `upstreams` for the aggregator of `generation`.
    pub(super) fn new(
        upstreams: PerUpstream<Arc<Upstream>>,
        settings: Settings,
        metrics: Arc<Metrics>,
        generation: u64,
    ) -> Pool {
        Pool {
            upstreams,
            settings,
            metrics,
            stopped: AtomicBool::new(false),
            generation,
        }
    }

    /// Every upstream, in catalog order.
    pub(super) fn upstreams(&self) -> &PerUpstream<Arc<Upstream>> {
        &self.upstreams
    }

    /// Upstream `i`.
    pub(super) fn get(&self, i: UpstreamId) -> &Arc<Upstream> {
        &self.upstreams[i]
    }

    /// The upstream whose configuration key is `key`.
    pub(super) fn id_of(&self, key: &str) -> Option<UpstreamId> {
        self.upstreams
            .iter_ids()
            .find(|(_, u)| &*u.config.key == key)
            .map(|(i, _)| i)
    }

    /// The configuration key of upstream `i`, which names it in errors and logs.
    pub(super) fn key(&self, i: UpstreamId) -> &str {
        &self.upstreams[i].config.key
    }

    /// The shared connection to upstream `i`, or why there is none.
    pub(super) fn shared(&self, i: UpstreamId) -> Result<Client, mcp_client::ClientError> {
        let u = &self.upstreams[i];
        u.client()
            .ok_or_else(|| mcp_client::ClientError::Unavailable(u.unavailable()))
    }

    /// The revision upstream `i` speaks now.
    pub(super) fn revision(&self, i: UpstreamId) -> Result<Revision, mcp_client::ClientError> {
        self.shared(i).map(|c| c.revision())
    }

    /// Restarts nothing from now on (a shutdown, or a reload's successor took over).
    pub(super) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }

    /// Hands every upstream to this pool's keeper (a reload's successor takes them over).
    pub(super) fn keep_all(&self) {
        for u in self.upstreams.iter() {
            u.keeper.store(self.generation, Ordering::SeqCst);
        }
    }

    /// The upstreams of this pool that `other` does not have.
    pub(super) fn only_here(&self, other: &Pool) -> Vec<Arc<Upstream>> {
        self.upstreams
            .iter()
            .filter(|u| !other.upstreams.iter().any(|o| Arc::ptr_eq(u, o)))
            .cloned()
            .collect()
    }

    /// What a connection just opened offers, bounded like its handshake by the connect
    /// timeout (a listing that hangs must not hold a start any longer than one).
    pub(super) async fn first_listing(
        &self,
        client: &Client,
    ) -> Result<super::catalog::Listing, UpstreamError> {
        let limit = self.settings.connect_timeout;
        match tokio::time::timeout(limit, super::listing::list_all(client)).await {
            Ok(listed) => listed,
            Err(_) => Err(UpstreamError::Timeout(limit)),
        }
    }

    /// How long a host's answer to an upstream's question is waited for.
    pub(super) fn input_timeout(&self) -> Duration {
        self.settings.input_timeout
    }

    /// The shortest and longest wait between two restarts, and the connect timeout.
    pub(super) fn settings(&self) -> Settings {
        self.settings
    }

    /// Stops restarting upstreams and closes every upstream connection, the one opened at
    /// start and each host's own session alike, all at once, returning when they are
    /// closed or after [`Pool::SHUTDOWN_LIMIT`]. A stdio upstream is closed as
    /// [`ChildTransport`] closes: its stdin, then `SIGTERM` to its process group, then
    /// `SIGKILL`, [`ChildTransport::CLOSE_GRACE`] apart; one still closing at the limit is
    /// dropped, which sends its group `SIGKILL`. Calls still in flight fail; call
    /// [`crate::Aggregator::drain`] first to let them finish. Connections opened after this
    /// are closed at once.
    pub(super) async fn close_all(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        close_upstreams(self.upstreams.iter()).await;
    }

    /// Waits until no host call is in flight on any upstream connection, at most `limit`;
    /// whether none is. What a graceful stop calls once it takes no new requests, before
    /// [`crate::Aggregator::shutdown`].
    pub(super) async fn drain(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let busy: usize = self.upstreams.iter().map(|u| in_flight(u)).sum();
            if busy == 0 {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!(calls = busy, "calls still in flight after {limit:?}");
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// How each upstream is doing, in catalog order.
    pub(super) fn status(&self) -> Vec<UpstreamStatus> {
        self.upstreams
            .iter()
            .map(|u| {
                let client = u.client();
                UpstreamStatus {
                    key: u.config.key.clone(),
                    connected: client.is_some(),
                    last_error: u.last_error.lock().clone(),
                    host_sessions: u.links.as_ref().map_or(0, |l| l.len()),
                    principal_connections: u.principals.as_ref().map_or(0, |p| p.len()),
                    pooled_sessions: u.pool.as_ref().map_or(0, |p| p.len()),
                    pooled_waiting: u.pool.as_ref().map_or(0, |p| p.waiting()),
                    revision: client.map(|c| c.revision()),
                    restarts: u.restarts.load(Ordering::Relaxed)
                        + u.links.as_ref().map_or(0, |l| l.restarts())
                        + u.pool.as_ref().map_or(0, |p| p.restarts()),
                    session_renewals: u.session_renewals.load(Ordering::Relaxed),
                    required: u.config.required,
                }
            })
            .collect()
    }

    /// The shared connection to `u`.
    pub(super) async fn open_shared(&self, u: &Upstream) -> Result<Client, UpstreamError> {
        let era = match u.config.revision {
            None => EraChoice::Detect,
            Some(r) if r.era() == mcp_types::Era::Modern => EraChoice::Modern,
            Some(r) => EraChoice::Legacy(r),
        };
        u.set_legacy(None);
        let both = u.config.legacy_session
            && u.config.revision.is_none()
            && !matches!(u.config.transport, UpstreamTransport::Http(_));
        if both {
            if let Some(modern) = self.open_both(u).await {
                return Ok(modern);
            }
        }
        // A legacy upstream learns these once, at `initialize`: declare what the gateway
        // can bridge; each request is then checked against the host of the call.
        self.open(u, u.calls.clone(), start_capabilities(), era)
            .await
    }

    /// [`UpstreamConfig::legacy_session`]: a connection opened with `initialize` that
    /// speaks 2026-07-28 too. Gives its 2026 handle and keeps the legacy one for legacy
    /// hosts; `None` when the upstream does not serve both (then it is opened as usual).
    async fn open_both(&self, u: &Upstream) -> Option<Client> {
        let era = EraChoice::Legacy(mcp_types::Revision::LATEST_LEGACY);
        let legacy = match self
            .open(u, u.calls.clone(), start_capabilities(), era)
            .await
        {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(upstream = %u.config.key, "no legacy session: {e}; detecting its era");
                return None;
            }
        };
        match legacy.open_modern().await {
            Ok(modern) => {
                tracing::info!(upstream = %u.config.key, legacy = %legacy.revision(), "serves both eras on one connection");
                u.set_legacy(Some(legacy));
                Some(modern)
            }
            Err(e) => {
                tracing::warn!(upstream = %u.config.key, "serves no 2026-07-28 beside its legacy session: {e}; detecting its era");
                legacy.close().await;
                None
            }
        }
    }

    /// Longest upstream `i` may take to answer one call: its own limit, else the gateway's.
    pub(super) fn call_timeout(&self, i: UpstreamId) -> std::time::Duration {
        let own = self.upstreams[i].config.call_timeout;
        own.unwrap_or(self.settings.call_timeout)
    }

    /// A connection to `u` declaring `capabilities`, its requests routed among `calls`.
    pub(super) async fn open(
        &self,
        u: &Upstream,
        calls: Arc<Calls>,
        capabilities: ClientCapabilities,
        era: EraChoice,
    ) -> Result<Client, UpstreamError> {
        self.open_as(u, calls, capabilities, era, None).await
    }

    /// [`Pool::open`] with `auth`'s credentials instead of the gateway's own, for an HTTP
    /// upstream (one principal's connection).
    pub(super) async fn open_as(
        &self,
        u: &Upstream,
        calls: Arc<Calls>,
        capabilities: ClientCapabilities,
        era: EraChoice,
        auth: Option<Arc<dyn mcp_client::auth::AuthProvider>>,
    ) -> Result<Client, UpstreamError> {
        let config = &u.config;
        let bridge = || Bridge {
            calls: calls.clone(),
            wait: self.settings.input_timeout,
            upstream: config.key.as_str().into(),
        };
        let options = ClientOptions::default()
            .era(era)
            .capabilities(capabilities)
            .request_timeout(Some(
                config.call_timeout.unwrap_or(self.settings.call_timeout),
            ));
        let connect = async {
            match &config.transport {
                UpstreamTransport::Stdio(cmd) => {
                    let mut t = ChildTransport::spawn(cmd).map_err(|e| {
                        UpstreamError::Unavailable(format!("cannot start `{}`: {e}", cmd.command))
                    })?;
                    if let Some(limit) = config.max_message_bytes {
                        t = t.with_max_message_bytes(limit);
                    }
                    Client::connect(t, bridge(), options)
                        .await
                        .map_err(UpstreamError::from)
                }
                UpstreamTransport::Http(h) => {
                    let mut h = self.counting_renewals(u, h.clone());
                    if let Some(auth) = auth {
                        // Another's credentials: none of the gateway's own go with them.
                        h.headers
                            .retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
                        h.auth = Some(auth);
                    }
                    if let Some(limit) = config.max_message_bytes {
                        h = h.max_message_bytes(limit);
                    }
                    mcp_client::connect_http(h, bridge(), options)
                        .await
                        .map_err(UpstreamError::from)
                }
                UpstreamTransport::Custom(connector) => {
                    let t = connector.connect().await.inspect_err(
                        |e| tracing::debug!(to = %connector.describe(), "no connection: {e}"),
                    )?;
                    Client::connect(t, bridge(), options)
                        .await
                        .map_err(UpstreamError::from)
                }
                UpstreamTransport::InProcess(server) => {
                    let (a, b) = memory_pair(64);
                    let server = server.clone();
                    tokio::spawn(async move { server.serve(b).await });
                    Client::connect(a, bridge(), options)
                        .await
                        .map_err(UpstreamError::from)
                }
            }
        };
        match tokio::time::timeout(self.settings.connect_timeout, connect).await {
            Ok(r) => r,
            Err(_) => Err(UpstreamError::Timeout(self.settings.connect_timeout)),
        }
    }

    /// `h` telling `u`'s count and the metrics of each session the upstream ended and the
    /// transport started again, besides any hook `h` already had.
    fn counting_renewals(
        &self,
        u: &Upstream,
        h: mcp_client::http::HttpConfig,
    ) -> mcp_client::http::HttpConfig {
        let before = h.on_session_renewed.clone();
        let count = u.session_renewals.clone();
        let metrics = self.metrics.clone();
        let key = u.config.key.clone();
        h.on_session_renewed(Arc::new(move |renewal| {
            count.fetch_add(1, Ordering::Relaxed);
            metrics.session_renewed(&key);
            if let Some(before) = &before {
                before(renewal);
            }
        }))
    }

    /// Whether this aggregator keeps `u` alive now: it is not shut down and no reload
    /// handed `u` to another.
    pub(super) fn keeps(&self, u: &Upstream) -> bool {
        !self.stopped.load(Ordering::SeqCst) && u.keeper.load(Ordering::SeqCst) == self.generation
    }

    /// Notes why `u` could not be used: in its status until it is used again, and in the
    /// metrics by kind.
    pub(super) fn failed(&self, u: &Upstream, e: UpstreamError) {
        self.metrics.upstream_failed(&u.config.key, &e);
        *u.last_error.lock() = Some(e);
    }

    /// Waits (up to the connect timeout plus the longest backoff) for upstream `i` to be
    /// connected again after its connection dropped.
    pub(super) async fn reconnected(&self, i: UpstreamId) -> bool {
        let u = &self.upstreams[i];
        let limit = self.settings.connect_timeout + self.settings.restart_backoff.1;
        let deadline = tokio::time::Instant::now() + limit;
        while tokio::time::Instant::now() < deadline {
            if u.client().is_some_and(|c| c.close_reason().is_none()) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }
}

/// Closes `upstreams`' connections, the shared one and each host's session, all at once,
/// bounded by [`Pool::SHUTDOWN_LIMIT`].
pub(super) async fn close_upstreams<'a>(upstreams: impl Iterator<Item = &'a Arc<Upstream>>) {
    let mut closing = tokio::task::JoinSet::new();
    for u in upstreams {
        let client = u.client.write().take();
        u.set_legacy(None);
        if let Some(c) = client {
            closing.spawn(async move { c.close().await });
        }
        if let Some(links) = &u.links {
            let links = links.clone();
            closing.spawn(async move { links.close_all().await });
        }
        if let Some(pool) = &u.pool {
            let pool = pool.clone();
            closing.spawn(async move { pool.close_all().await });
        }
        if let Some(principals) = &u.principals {
            let principals = principals.clone();
            closing.spawn(async move { principals.close_all().await });
        }
    }
    let all = async { while closing.join_next().await.is_some() {} };
    if tokio::time::timeout(Pool::SHUTDOWN_LIMIT, all)
        .await
        .is_err()
    {
        tracing::warn!(
            "upstreams still closing after {:?}; dropping them",
            Pool::SHUTDOWN_LIMIT
        );
    }
    closing.shutdown().await;
}

/// Host calls in flight on `u`'s connections.
pub(super) fn in_flight(u: &Upstream) -> usize {
    u.calls.in_flight()
        + u.links.as_ref().map_or(0, |l| l.in_flight())
        + u.pool.as_ref().map_or(0, |p| p.in_flight())
        + u.principals.as_ref().map_or(0, |p| p.in_flight())
}

#[cfg(test)]
mod tests;
