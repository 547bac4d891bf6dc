//! The upstream pool: connecting each upstream, keeping it alive (following its list
//! changes, `listing.rs`; restarting it with backoff when its connection ends), closing
//! it, and saying how it is doing.

use super::id::UpstreamId;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use mcp_client::{ChildTransport, Client, ClientOptions, EraChoice};
use mcp_types::protocol::*;
use mcp_types::transport::memory_pair;
use parking_lot::{Mutex, RwLock};

use super::catalog::Listing;
use super::{Aggregator, UpstreamConfig, UpstreamStatus, UpstreamTransport};
use crate::abort::AbortOnDrop;
use crate::sessions::host::HostLinks;
use crate::sessions::pool::SessionPool;
use crate::sessions::{start_capabilities, SessionMode};
use crate::upstream_questions::{Bridge, Calls};
use crate::UpstreamError;

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
    /// How often its connection ended (and it was started again).
    pub(super) restarts: std::sync::atomic::AtomicU64,
    /// How often an HTTP upstream ended one of our sessions and a new one was started.
    pub(super) session_renewals: Arc<std::sync::atomic::AtomicU64>,
    /// The generation of the aggregator that keeps it alive (connects, restarts it): one
    /// at a time, handed over by a reload ([`Aggregator::reconfigured`]).
    pub(super) keeper: std::sync::atomic::AtomicU64,
}

impl Upstream {
    /// An upstream not connected yet.
    pub(super) fn new(config: UpstreamConfig, namespace: String) -> Self {
        let (links, pool) = match &config.session {
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
            config,
            namespace,
            client: RwLock::new(None),
            legacy: RwLock::new(None),
            last_error: Mutex::new(None),
            calls: Arc::new(Calls::default()),
            restarts: Default::default(),
            session_renewals: Default::default(),
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

impl Aggregator {
    /// Longest [`Aggregator::shutdown`] waits for the upstream connections to close:
    /// enough for a stdio server that ignores both its stdin closing and `SIGTERM` (twice
    /// [`ChildTransport::CLOSE_GRACE`]), and a second more for reaping it.
    pub const SHUTDOWN_LIMIT: Duration = Duration::from_secs(5);

    /// Stops restarting upstreams and closes every upstream connection, the one opened at
    /// start and each host's own session alike, all at once, returning when they are
    /// closed or after [`Aggregator::SHUTDOWN_LIMIT`]. A stdio upstream is closed as
    /// [`ChildTransport`] closes: its stdin, then `SIGTERM` to its process group, then
    /// `SIGKILL`, [`ChildTransport::CLOSE_GRACE`] apart; one still closing at the limit is
    /// dropped, which sends its group `SIGKILL`. Calls still in flight fail; call
    /// [`Aggregator::drain`] first to let them finish. Connections opened after this
    /// are closed at once.
    pub async fn shutdown(&self) {
        self.inner.stopped.store(true, Ordering::SeqCst);
        close_upstreams(self.inner.upstreams.iter()).await;
    }

    /// Waits until no host call is in flight on any upstream connection, at most `limit`;
    /// whether none is. What a graceful stop calls once it takes no new requests, before
    /// [`Aggregator::shutdown`].
    pub async fn drain(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let busy: usize = self.inner.upstreams.iter().map(|u| in_flight(u)).sum();
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
    pub fn status(&self) -> Vec<UpstreamStatus> {
        self.inner
            .upstreams
            .iter()
            .map(|u| {
                let client = u.client();
                UpstreamStatus {
                    key: u.config.key.clone(),
                    connected: client.is_some(),
                    last_error: u.last_error.lock().clone(),
                    host_sessions: u.links.as_ref().map_or(0, |l| l.len()),
                    pooled_sessions: u.pool.as_ref().map_or(0, |p| p.len()),
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
        let own = self.inner.upstreams[i].config.call_timeout;
        own.unwrap_or(self.inner.options.call_timeout)
    }

    /// A connection to `u` declaring `capabilities`, its requests routed among `calls`.
    pub(super) async fn open(
        &self,
        u: &Upstream,
        calls: Arc<Calls>,
        capabilities: ClientCapabilities,
        era: EraChoice,
    ) -> Result<Client, UpstreamError> {
        let config = &u.config;
        let bridge = || Bridge {
            calls: calls.clone(),
            wait: self.inner.options.input_timeout,
            upstream: config.key.as_str().into(),
        };
        let options = ClientOptions::default()
            .era(era)
            .capabilities(capabilities)
            .request_timeout(Some(
                config
                    .call_timeout
                    .unwrap_or(self.inner.options.call_timeout),
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
        match tokio::time::timeout(self.inner.options.connect_timeout, connect).await {
            Ok(r) => r,
            Err(_) => Err(UpstreamError::Timeout(self.inner.options.connect_timeout)),
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
        let metrics = self.inner.metrics.clone();
        let key = u.config.key.clone();
        h.on_session_renewed(Arc::new(move |renewal| {
            count.fetch_add(1, Ordering::Relaxed);
            metrics.session_renewed(&key);
            if let Some(before) = &before {
                before(renewal);
            }
        }))
    }

    /// Lists what upstream `i` offers over its connection if it has one (an upstream a
    /// reload takes over), else connects it if this aggregator keeps it (one being handed
    /// over is connected again by its new keeper, once it keeps it).
    pub(super) async fn connect_or_list(&self, i: UpstreamId) -> bool {
        let u = &self.inner.upstreams[i];
        let live = u.client().filter(|c| c.close_reason().is_none());
        match live {
            Some(client) => {
                self.relist(i, &client).await;
                true
            }
            None if self.keeps(u) => self.connect(i).await,
            None => false,
        }
    }

    /// Whether this aggregator keeps `u` alive now: it is not shut down and no reload
    /// handed `u` to another.
    pub(super) fn keeps(&self, u: &Upstream) -> bool {
        !self.inner.stopped.load(Ordering::SeqCst)
            && u.keeper.load(Ordering::SeqCst) == self.inner.generation
    }

    /// Connects upstream `i` and lists what it offers; false when it failed.
    pub(super) async fn connect(&self, i: UpstreamId) -> bool {
        let u = self.inner.upstreams[i].clone();
        let opened = match self.open_shared(&u).await {
            Ok(client) => match self.first_listing(&client).await {
                Ok(listing) => Ok((client, listing)),
                Err(e) => {
                    // Not listable is not usable: it fails, and is retried, like a failed start.
                    client.close().await;
                    Err(e)
                }
            },
            Err(e) => Err(e),
        };
        match opened {
            Ok((client, _)) if !self.keeps(&u) => {
                // Shut down, or handed to another keeper, while it connected: it must not
                // outlive the gateway, nor stand beside that keeper's connection.
                client.close().await;
                false
            }
            Ok((client, listing)) => {
                tracing::info!(upstream = %u.config.key, revision = %client.revision(), tools = listing.tools.len(), "upstream connected");
                *u.client.write() = Some(client);
                *u.last_error.lock() = None;
                let changed = self.inner.catalog.set_listing(i, listing);
                self.announce(i, changed);
                true
            }
            Err(e) => {
                tracing::warn!(upstream = %u.config.key, kind = e.kind(), "upstream failed: {e}");
                self.failed(&u, e);
                false
            }
        }
    }

    /// Notes why `u` could not be used: in its status until it is used again, and in the
    /// metrics by kind.
    pub(super) fn failed(&self, u: &Upstream, e: UpstreamError) {
        self.inner.metrics.upstream_failed(&u.config.key, &e);
        *u.last_error.lock() = Some(e);
    }

    /// Keeps upstream `i` alive: relists on its list-changed notifications, and restarts it
    /// with backoff when its connection ends.
    pub(super) async fn supervise(&self, i: UpstreamId) {
        let u = self.inner.upstreams[i].clone();
        let (min, max) = self.inner.options.restart_backoff;
        let mut backoff = min;
        while self.keeps(&u) {
            let Some(client) = u.client() else {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(max);
                if !self.keeps(&u) {
                    return;
                }
                // Every start after the first is a restart, whether the last one ended or
                // never came up (an upstream that exits at start).
                u.restarts.fetch_add(1, Ordering::Relaxed);
                if self.connect(i).await {
                    backoff = min;
                } else {
                    // Not back: its tools go until it is (they were kept while it restarted).
                    let gone = self.inner.catalog.set_listing(i, Listing::default());
                    self.announce(i, gone);
                }
                continue;
            };
            let notes = client.notifications();
            let mut _listen = None;
            if client.revision().era() == mcp_types::Era::Modern {
                // A 2026 upstream tells of list changes only on a subscription stream,
                // this keeper's: it ends with the keeping (a reload hands the connection on).
                _listen = Some(AbortOnDrop(client.listen(SubscriptionFilter {
                    tools_list_changed: Some(true),
                    prompts_list_changed: Some(true),
                    resources_list_changed: Some(true),
                    ..Default::default()
                })));
            }
            self.follow_list_changes(i, &u, &client, notes).await;
            if !self.keeps(&u) {
                return;
            }
            let reason = client
                .close_reason()
                .map(|r| r.to_string())
                .unwrap_or_default();
            tracing::warn!(upstream = %u.config.key, "upstream connection ended ({reason}); restarting");
            {
                let mut c = u.client.write();
                // Only the connection that ended: one a keeper after this one opened stays.
                if c.as_ref().is_some_and(|c| c.same_connection(&client)) {
                    *c = None;
                }
            }
            // Its listing stays while it restarts: a call to one of its tools is told the
            // upstream is restarting (never `Unknown tool`), and hosts hear of no change
            // unless the restart fails or brings other lists.
            let ended = format!("restarting: its connection ended ({reason})");
            self.failed(&u, UpstreamError::Transport(ended));
        }
    }

    /// Waits (up to the connect timeout plus the longest backoff) for upstream `i` to be
    /// connected again after its connection dropped.
    pub(super) async fn reconnected(&self, i: UpstreamId) -> bool {
        let u = &self.inner.upstreams[i];
        let limit = self.inner.options.connect_timeout + self.inner.options.restart_backoff.1;
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
/// bounded by [`Aggregator::SHUTDOWN_LIMIT`].
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
    }
    let all = async { while closing.join_next().await.is_some() {} };
    if tokio::time::timeout(Aggregator::SHUTDOWN_LIMIT, all)
        .await
        .is_err()
    {
        tracing::warn!(
            "upstreams still closing after {:?}; dropping them",
            Aggregator::SHUTDOWN_LIMIT
        );
    }
    closing.shutdown().await;
}

/// Host calls in flight on `u`'s connections.
pub(super) fn in_flight(u: &Upstream) -> usize {
    u.calls.in_flight()
        + u.links.as_ref().map_or(0, |l| l.in_flight())
        + u.pool.as_ref().map_or(0, |p| p.in_flight())
}
