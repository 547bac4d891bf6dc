//! What the aggregator is built from: each upstream's configuration and the aggregator's
//! options, and what it reports (status, start-up errors).

use std::sync::Arc;
use std::time::Duration;

use mcp_client::http::HttpConfig;
use mcp_client::StdioCommand;
use mcp_revisions::DowngradePolicy;

use crate::naming::{Namespacing, Prefixed};
use crate::policy::{Confirm, GlobFilter, Surface, ToolFilter};
use crate::sessions::SessionMode;

/// How to reach an upstream.
#[derive(Clone)]
#[non_exhaustive]
pub enum UpstreamTransport {
    /// A child process on stdio.
    Stdio(StdioCommand),
    /// An HTTP endpoint (Streamable HTTP, else HTTP+SSE).
    Http(HttpConfig),
    /// A server in this process (demos, tests): a fresh connection at each start.
    InProcess(mcp_server::Server),
    /// A transport of the embedder's own, opened by its connector at each start.
    Custom(std::sync::Arc<dyn super::connector::UpstreamConnector>),
}

impl std::fmt::Debug for UpstreamTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpstreamTransport::Stdio(c) => write!(f, "stdio {:?}", c.command),
            UpstreamTransport::Http(h) => write!(f, "http {}", h.url),
            UpstreamTransport::InProcess(_) => f.write_str("in-process"),
            UpstreamTransport::Custom(c) => write!(f, "custom {}", c.describe()),
        }
    }
}

/// One upstream server.
///
/// `#[non_exhaustive]`: built with [`UpstreamConfig::new`] and the setters, each named after
/// its field:
///
/// ```
/// # use std::time::Duration;
/// use mcp_client::http::HttpConfig;
/// use mcp_proxy::{UpstreamConfig, UpstreamTransport};
/// let http = UpstreamTransport::Http(HttpConfig::new("http://127.0.0.1:8080/mcp"));
/// let u = UpstreamConfig::new("files", http)
///     .namespace("fs")
///     .call_timeout(Duration::from_secs(30));
/// assert_eq!(u.namespace.as_deref(), Some("fs"));
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct UpstreamConfig {
    /// The configuration key (names the upstream in errors and logs).
    pub key: String,
    /// The namespace of its names; default: the key, sanitised. `Some("")` exposes names
    /// unprefixed.
    pub namespace: Option<String>,
    /// Whether its tool annotations are trusted (TOOL-15); untrusted ones are kept raw
    /// but a policy must not rely on them.
    pub trusted: bool,
    /// For an untrusted upstream: hosts are shown none of its tools' behaviour hints
    /// (`readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`), so a host
    /// that auto-approves "read-only" tools does not take a lying upstream's word; an
    /// override's annotations are still shown. Default: off, because a host is told by the
    /// spec to treat an untrusted server's hints as untrusted already, and what a peer
    /// sends reaches the other side unchanged unless a policy says otherwise.
    pub withhold_hints: bool,
    /// How to reach it.
    pub transport: UpstreamTransport,
    /// Pins the revision to speak with it; default: detect its era and negotiate.
    pub revision: Option<mcp_types::Revision>,
    /// Which of its tools are exposed and may be called (default: a [`GlobFilter`] that
    /// permits all; the configuration file's `allowTools`/`denyTools` make one that does
    /// not). Set it with [`UpstreamConfig::tools`], or assign a filter already shared.
    pub tools: Arc<dyn ToolFilter>,
    /// How hosts share it, if it speaks a legacy revision (default: a session per host).
    pub session: SessionMode,
    /// Longest it may take to answer one call; default: [`AggregatorOptions::call_timeout`].
    pub call_timeout: Option<Duration>,
    /// Longest message exchanged with it over stdio, each way (default: the stdio
    /// transport's 16 MiB). A call whose request would be longer fails at once, naming
    /// the limit, instead of being refused by the upstream with an error that names no
    /// request.
    pub max_message_bytes: Option<usize>,
    /// What hosts see of its tools instead of what it lists, by the tool's real name.
    pub overrides: Arc<std::collections::BTreeMap<String, crate::overrides::ToolOverride>>,
    /// The gateway is ready ([`super::Aggregator`]'s `/readyz`) only while it is connected.
    pub required: bool,
    /// For an upstream that serves both eras on one connection: it is opened with
    /// `initialize` and then speaks 2026-07-28 too ([`mcp_client::Client::open_modern`]),
    /// and legacy hosts' calls that need no task go in that legacy session, in their own
    /// era, without the 2026 envelope or a translation across eras; 2026 hosts and
    /// everything else go in 2026-07-28. Legacy hosts share that one session, as with
    /// [`SessionMode::Shared`]. An upstream that refuses either era is opened as usual.
    /// Not with a pinned [`UpstreamConfig::revision`], nor for an HTTP upstream (a legacy
    /// session there is a session of its own). Default: off: a server that answers both
    /// but cannot serve them at once must not get one.
    pub legacy_session: bool,
    /// For an HTTP upstream that acts as each user: every host request goes on a
    /// connection of the host's principal, with that principal's token (see
    /// [`crate::credentials::PerUser`]); its [`UpstreamConfig::session`] does not apply.
    /// Default: none, every host's requests go as the gateway.
    pub per_user: Option<crate::credentials::PerUser>,
}

impl UpstreamConfig {
    /// An upstream named `key`, with the defaults: namespace from the key, untrusted,
    /// era detected, every tool exposed.
    pub fn new(key: impl Into<String>, transport: UpstreamTransport) -> Self {
        UpstreamConfig {
            key: key.into(),
            namespace: None,
            trusted: false,
            withhold_hints: false,
            transport,
            revision: None,
            tools: Arc::new(GlobFilter::default()),
            session: SessionMode::default(),
            call_timeout: None,
            max_message_bytes: None,
            overrides: Default::default(),
            required: false,
            legacy_session: false,
            per_user: None,
        }
    }
}

/// How the aggregator behaves.
///
/// `#[non_exhaustive]`: built from [`AggregatorOptions::default`] with the setters, each
/// named after its field:
///
/// ```
/// # use std::time::Duration;
/// let o = mcp_proxy::AggregatorOptions::default()
///     .call_timeout(Duration::from_secs(10))
///     .page_size(50);
/// assert_eq!(o.page_size, 50);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct AggregatorOptions {
    /// Exposed names.
    pub namespacing: Arc<dyn Namespacing>,
    /// Longest an upstream may take to answer one call (a timeout cancels it upstream).
    pub call_timeout: Duration,
    /// Longest an upstream may take to start and answer its handshake.
    pub connect_timeout: Duration,
    /// First and longest wait between restarts of a failed upstream.
    pub restart_backoff: (Duration, Duration),
    /// Longest [`crate::Aggregator::start`] waits for the upstreams before it serves with
    /// those that are ready (default `None`: until each has started or failed, bounded by
    /// [`AggregatorOptions::connect_timeout`]; the gateway's configuration file sets
    /// 500 ms). One still starting (a slow process, a handshake that never comes) goes on
    /// starting, and its lists are announced with `list_changed` when it comes. Its names
    /// are checked against the others' then: a clash hides its tool (logged), where one
    /// among the upstreams ready at start stops the start.
    pub startup_wait: Option<Duration>,
    /// Items per page of a merged list (default [`AggregatorOptions::DEFAULT_PAGE_SIZE`];
    /// 0: everything in one page, however large). Pages come in catalog order, each item
    /// once. Cursors name a version of the catalog; one issued before a list change is
    /// refused with `-32602`.
    pub page_size: usize,
    /// Decides calls to tools that may be destructive (TOOL-17); `None`: no gate.
    pub confirm: Option<Arc<dyn Confirm>>,
    /// What hosts see in `tools/list` (TOOL-24).
    pub surface: Surface,
    /// Longest a legacy upstream's request (sampling, elicitation) handed to a host waits
    /// for the host's answer; after it the upstream gets an error and the call is cancelled.
    pub input_timeout: Duration,
    /// Most resource subscriptions one host session (or 2026-07-28 listen stream) may hold
    /// through the gateway; one more is refused with `-32600` saying so.
    pub max_subscriptions: usize,
    /// What each principal may see ([`crate::views`]); `None`: everyone sees everything.
    pub views: Option<Arc<dyn crate::views::Views>>,
    /// The approved tool definitions and what to do with the others ([`crate::pins`]);
    /// `None`: no pinning.
    pub pins: Option<Arc<crate::pins::Pins>>,
    /// How meaning is kept where a message goes to an older revision than it is written
    /// in; `None` (the default): the spec's ([`mcp_revisions::SpecPolicy`]). The aggregator
    /// uses it where it translates itself (a host's call and the requests it relays, toward
    /// the upstream's revision), and [`crate::Aggregator::server`] and
    /// [`crate::live::Live::server`] give it to the server they make when the server's
    /// options have no [`mcp_server::ServerOptions::downgrade_policy`] of their own, so
    /// that what upstreams answer reaches older hosts by it too; a policy the server's
    /// options set wins there. The server's is taken when it is made: a reload's new
    /// options change the aggregator's own translations, not the server's.
    pub downgrade_policy: Option<Arc<dyn DowngradePolicy>>,
    /// What seals the `requestState`s the gateway hands hosts (see
    /// [`mcp_server::seal`]); `None` (the default): a random key of the aggregator's own,
    /// kept across reloads. Replicas of one gateway share one sealer's keys, as they give
    /// [`mcp_server::http::HttpOptions::sealer`].
    pub sealer: Option<Arc<mcp_server::seal::Sealer>>,
    /// The other replicas of the deployment, told of each change of an upstream's lists
    /// heard here, so that their hosts hear of it too (their own connection to that
    /// upstream, a process of their own for a stdio one, may not); `None` (the default):
    /// no replicas. What a replica tells, [`crate::Aggregator`] and [`crate::live::Live`]
    /// take as [`mcp_server::http::PeerNotices`].
    pub replicas: Option<mcp_server::http::ReplicaLink>,
    /// Where a record of each host request that reaches a tool goes ([`crate::audit`]);
    /// `None` (the default): nothing is recorded. A reload's options give the log the
    /// aggregator records to from then on: give the same log to keep one chain.
    pub audit: Option<crate::audit::AuditLog>,
    /// The rate limits calls are held to ([`crate::limits`]); `None` (the default): none.
    pub rate_limits: Option<crate::limits::RateLimits>,
    /// How the dispatcher surface's `search_tools` ranks tools; `None` (the default):
    /// [`crate::search::Bm25`].
    pub tool_search: Option<Arc<dyn crate::search::ToolSearch>>,
}

impl std::fmt::Debug for AggregatorOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AggregatorOptions")
            .field("call_timeout", &self.call_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("restart_backoff", &self.restart_backoff)
            .field("startup_wait", &self.startup_wait)
            .field("page_size", &self.page_size)
            .field("confirm", &self.confirm.is_some())
            .field("surface", &self.surface)
            .field("input_timeout", &self.input_timeout)
            .field("max_subscriptions", &self.max_subscriptions)
            .field("views", &self.views.is_some())
            .field("pins", &self.pins.as_ref().map(|p| p.len()))
            .field("downgrade_policy", &self.downgrade_policy.is_some())
            .field("sealer", &self.sealer)
            .field("replicas", &self.replicas)
            .field("audit", &self.audit.is_some())
            .field("rate_limits", &self.rate_limits)
            .field("tool_search", &self.tool_search.is_some())
            .finish_non_exhaustive()
    }
}

impl AggregatorOptions {
    /// Items per page of a merged list unless set otherwise: a catalog of thousands of
    /// tools reaches a host in pages of a few hundred KiB, not in one line of megabytes
    /// that a host's line limit may refuse.
    pub const DEFAULT_PAGE_SIZE: usize = 500;
}

impl Default for AggregatorOptions {
    fn default() -> Self {
        AggregatorOptions {
            namespacing: Arc::new(Prefixed::default()),
            call_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(30),
            restart_backoff: (Duration::from_millis(500), Duration::from_secs(30)),
            startup_wait: None,
            page_size: AggregatorOptions::DEFAULT_PAGE_SIZE,
            confirm: None,
            surface: Surface::Direct,
            input_timeout: Duration::from_secs(300),
            max_subscriptions: 256,
            views: None,
            pins: None,
            downgrade_policy: None,
            sealer: None,
            replicas: None,
            audit: None,
            rate_limits: None,
            tool_search: None,
        }
    }
}

impl UpstreamConfig {
    /// Sets [`UpstreamConfig::key`], the configuration key.
    #[must_use]
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = key.into();
        self
    }

    /// Prefixes its names with `namespace` instead of the sanitised key; `""` exposes them
    /// unprefixed.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Speaks `revision` with it instead of detecting its era and negotiating.
    #[must_use]
    pub fn revision(mut self, revision: mcp_types::Revision) -> Self {
        self.revision = Some(revision);
        self
    }

    /// Gives it `timeout` to answer one call instead of [`AggregatorOptions::call_timeout`].
    #[must_use]
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = Some(timeout);
        self
    }

    /// Sets [`UpstreamConfig::max_message_bytes`], the longest message exchanged with it
    /// over stdio.
    #[must_use]
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = Some(bytes);
        self
    }

    /// Exposes only the tools `filter` permits ([`UpstreamConfig::tools`]): a
    /// [`GlobFilter`], or a [`ToolFilter`] of the embedder's own.
    #[must_use]
    pub fn tools(mut self, filter: impl ToolFilter) -> Self {
        self.tools = Arc::new(filter);
        self
    }

    /// Sets [`UpstreamConfig::overrides`], by the tool's real name (a map, or one already
    /// shared in an `Arc`).
    #[must_use]
    pub fn overrides(
        mut self,
        overrides: impl Into<Arc<std::collections::BTreeMap<String, crate::overrides::ToolOverride>>>,
    ) -> Self {
        self.overrides = overrides.into();
        self
    }
}

mcp_types::setters! {
    UpstreamConfig {
        /// Sets [`UpstreamConfig::trusted`].
        trusted: bool;
        /// Sets [`UpstreamConfig::withhold_hints`].
        withhold_hints: bool;
        /// Sets [`UpstreamConfig::transport`].
        transport: UpstreamTransport;
        /// Sets [`UpstreamConfig::session`].
        session: SessionMode;
        /// Sets [`UpstreamConfig::required`].
        required: bool;
        /// Sets [`UpstreamConfig::legacy_session`].
        legacy_session: bool;
        /// Sets [`UpstreamConfig::per_user`].
        per_user: Option<crate::credentials::PerUser>;
    }
}

impl AggregatorOptions {
    /// Gates calls to tools that may be destructive with `confirm` (TOOL-17).
    #[must_use]
    pub fn confirm(mut self, confirm: Arc<dyn Confirm>) -> Self {
        self.confirm = Some(confirm);
        self
    }

    /// Shows each principal what `views` allows ([`crate::views`]).
    #[must_use]
    pub fn views(mut self, views: Arc<dyn crate::views::Views>) -> Self {
        self.views = Some(views);
        self
    }

    /// Checks tool definitions against `pins` ([`crate::pins`]; the pins, or ones already
    /// shared in an `Arc`).
    #[must_use]
    pub fn pins(mut self, pins: impl Into<Arc<crate::pins::Pins>>) -> Self {
        self.pins = Some(pins.into());
        self
    }

    /// Seals the ids the gateway hands hosts with `sealer` ([`AggregatorOptions::sealer`]).
    #[must_use]
    pub fn sealer(mut self, sealer: Arc<mcp_server::seal::Sealer>) -> Self {
        self.sealer = Some(sealer);
        self
    }

    /// Tells `replicas` of upstream list changes ([`AggregatorOptions::replicas`]).
    #[must_use]
    pub fn replicas(mut self, replicas: mcp_server::http::ReplicaLink) -> Self {
        self.replicas = Some(replicas);
        self
    }

    /// Records each host request that reaches a tool in `log` ([`AggregatorOptions::audit`]).
    #[must_use]
    pub fn audit(mut self, log: crate::audit::AuditLog) -> Self {
        self.audit = Some(log);
        self
    }

    /// Holds calls to `limits` ([`AggregatorOptions::rate_limits`]).
    #[must_use]
    pub fn rate_limits(mut self, limits: crate::limits::RateLimits) -> Self {
        self.rate_limits = Some(limits);
        self
    }

    /// Ranks `search_tools` results with `ranking` ([`AggregatorOptions::tool_search`]).
    #[must_use]
    pub fn tool_search(mut self, ranking: Arc<dyn crate::search::ToolSearch>) -> Self {
        self.tool_search = Some(ranking);
        self
    }

    /// Sets [`AggregatorOptions::downgrade_policy`]: `policy` keeps meaning where the
    /// gateway translates toward an older revision, instead of the spec's.
    #[must_use]
    pub fn downgrade_policy(mut self, policy: Arc<dyn DowngradePolicy>) -> Self {
        self.downgrade_policy = Some(policy);
        self
    }
}

mcp_types::setters! {
    AggregatorOptions {
        /// Sets [`AggregatorOptions::namespacing`].
        namespacing: Arc<dyn Namespacing>;
        /// Sets [`AggregatorOptions::call_timeout`].
        call_timeout: Duration;
        /// Sets [`AggregatorOptions::connect_timeout`].
        connect_timeout: Duration;
        /// Sets [`AggregatorOptions::restart_backoff`]: `(first, longest)` wait.
        restart_backoff: (Duration, Duration);
        /// Sets [`AggregatorOptions::startup_wait`].
        startup_wait: Option<Duration>;
        /// Sets [`AggregatorOptions::page_size`] (0: everything in one page).
        page_size: usize;
        /// Sets [`AggregatorOptions::surface`].
        surface: Surface;
        /// Sets [`AggregatorOptions::input_timeout`].
        input_timeout: Duration;
        /// Sets [`AggregatorOptions::max_subscriptions`].
        max_subscriptions: usize;
    }
}

/// Why the aggregator could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// Two upstreams end up with the same namespace.
    #[error("upstreams `{first}` and `{second}` both use the namespace `{namespace}`")]
    NamespaceCollision {
        /// The namespace.
        namespace: String,
        /// One key.
        first: String,
        /// The other.
        second: String,
    },
    /// Two names end up exposed the same.
    #[error("`{first}` and `{second}` are both exposed as `{exposed}`")]
    NameCollision {
        /// The exposed name.
        exposed: String,
        /// `key/name` of one.
        first: String,
        /// `key/name` of the other.
        second: String,
    },
    /// No key could be made to seal the ids the gateway hands hosts.
    #[error("no key to seal ids with: {0}")]
    Sealing(mcp_server::seal::KeyError),
}
