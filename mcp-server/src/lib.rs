//! # mcp-server
//!
//! A dual-era MCP server. One [`Server`] serves, on the same transport, hosts that open
//! with `initialize` (2024-11-05 … 2025-11-25) and 2026-07-28 hosts that send their
//! version and capabilities in every request's `_meta`. Every result and notification is
//! translated down to the revision of the request it answers before it is written, so
//! nothing newer than the host's revision leaks.
//!
//! Implement [`ServerHandler`], or use [`ToolRegistry`] for tools whose schemas come from
//! Rust types. Serve with [`Server::serve`] on any [`mcp_types::transport::Transport`],
//! e.g. [`stdio`].

pub mod auth;
mod call;
mod change;
mod context;
mod handler;
mod host;
pub mod http;
mod notify;
pub mod seal;
mod session;
mod span;
mod stats;
mod switch;
pub mod tools;
mod trace;

use std::sync::Arc;
use std::time::Duration;

pub use call::{Call, CallAnswer, CallRequest};
pub use context::RequestContext;
pub use handler::{method_not_found, ListKind, Outcome, RawResult, ServerHandler};
pub use host::{HostSession, HostSessionId};
use mcp_revisions::{DowngradePolicy, Translator};
use mcp_types::protocol::{CacheScope, Implementation};
use mcp_types::rpc::Peer;
pub use mcp_types::schema as validation;
use mcp_types::transport::{CloseReason, LineTransport, Transport};
use mcp_types::Revision;
pub use notify::{NotifyError, Subscriber, SubscriberId};
pub use span::{on_request_span, SpanParent};
pub use stats::{HostCount, ServerStats, SessionCounts};
pub use switch::Switch;
pub use tools::{NoArgs, ToolError, ToolRegistry};
pub use trace::TraceContext;

/// How a [`Server`] presents itself and what it accepts.
///
/// `#[non_exhaustive]`: built from [`ServerOptions::default`] with the setters, each named
/// after its field:
///
/// ```
/// let o = mcp_server::ServerOptions::default()
///     .instructions("Call `echo` to repeat a text.")
///     .list_ttl_ms(60_000);
/// assert_eq!(o.list_ttl_ms, 60_000);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ServerOptions {
    /// `serverInfo`.
    pub info: Implementation,
    /// Guidance for the model, sent at `initialize` / `server/discover`.
    pub instructions: Option<String>,
    /// The revisions served (default: all five).
    pub supported: Vec<Revision>,
    /// 2026-07-28 `ttlMs` of list results (default 0: re-fetch every time).
    pub list_ttl_ms: u64,
    /// 2026-07-28 `cacheScope` of list results (default private).
    pub list_cache_scope: CacheScope,
    /// How long a legacy client may take to answer a server→client request.
    pub client_request_timeout: Duration,
    /// Most input rounds bridged for a legacy client before giving up.
    pub max_input_rounds: usize,
    /// Most messages in one JSON-RPC batch, where the client's revision has batches
    /// (default [`mcp_types::rpc::DEFAULT_MAX_BATCH_MESSAGES`]); a longer one is refused.
    pub max_batch_messages: usize,
    /// Most requests of one connection (a stdio host, a legacy HTTP session) served at
    /// once (default [`mcp_types::rpc::DEFAULT_MAX_IN_FLIGHT`]). On a connection the
    /// server reads itself ([`Server::serve`]: stdio) one more is held and reading
    /// pauses until answers go out (see [`mcp_types::rpc::Inbound::max_in_flight`]);
    /// over HTTP it is refused with `-32000` (server busy).
    pub max_in_flight_requests: usize,
    /// The principal of connections that carry no credentials of their own (stdio, any
    /// transport given to [`Server::serve`]): what a handler's
    /// [`RequestContext::principal`] says for them (default none).
    pub local_principal: Option<auth::Principal>,
    /// How meaning is kept where a message goes to a client of an older revision than it
    /// is written in; `None` (the default): the spec's ([`mcp_revisions::SpecPolicy`]).
    /// The session uses it wherever it translates toward the client's revision: results
    /// (a relay's too), notifications, the requests that ask a legacy client for input,
    /// and an error code the client's revision does not have. A policy that leaves
    /// [`DowngradePolicy::adjusts_objects`] false costs an answer nothing where there is
    /// nothing to convert.
    pub downgrade_policy: Option<Arc<dyn DowngradePolicy>>,
}

impl std::fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerOptions")
            .field("info", &self.info)
            .field("instructions", &self.instructions)
            .field("supported", &self.supported)
            .field("list_ttl_ms", &self.list_ttl_ms)
            .field("list_cache_scope", &self.list_cache_scope)
            .field("client_request_timeout", &self.client_request_timeout)
            .field("max_input_rounds", &self.max_input_rounds)
            .field("max_batch_messages", &self.max_batch_messages)
            .field("max_in_flight_requests", &self.max_in_flight_requests)
            .field("local_principal", &self.local_principal)
            .field("downgrade_policy", &self.downgrade_policy.is_some())
            .finish()
    }
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            info: Implementation {
                name: env!("CARGO_PKG_NAME").into(),
                version: env!("CARGO_PKG_VERSION").into(),
                ..Default::default()
            },
            instructions: None,
            supported: Revision::ALL.to_vec(),
            list_ttl_ms: 0,
            list_cache_scope: CacheScope::Private,
            client_request_timeout: Duration::from_secs(300),
            max_input_rounds: 8,
            max_batch_messages: mcp_types::rpc::DEFAULT_MAX_BATCH_MESSAGES,
            max_in_flight_requests: mcp_types::rpc::DEFAULT_MAX_IN_FLIGHT,
            local_principal: None,
            downgrade_policy: None,
        }
    }
}

impl ServerOptions {
    /// Sets [`ServerOptions::instructions`], the guidance for the model.
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Sets [`ServerOptions::local_principal`], the principal of connections that carry no
    /// credentials of their own.
    #[must_use]
    pub fn local_principal(mut self, principal: auth::Principal) -> Self {
        self.local_principal = Some(principal);
        self
    }

    /// Sets [`ServerOptions::downgrade_policy`]: `policy` keeps meaning where a message
    /// goes to a client of an older revision, instead of the spec's.
    #[must_use]
    pub fn downgrade_policy(mut self, policy: Arc<dyn DowngradePolicy>) -> Self {
        self.downgrade_policy = Some(policy);
        self
    }
}

/// `t` with `policy` when there is one; as it is (the spec's policy) otherwise.
pub(crate) fn with_policy<'p>(
    t: Translator<'static>,
    policy: Option<&'p Arc<dyn DowngradePolicy>>,
) -> Translator<'p> {
    match policy {
        Some(p) => t.with_policy(&**p),
        None => t,
    }
}

mcp_types::setters! {
    ServerOptions {
    /// Sets [`ServerOptions::info`], the `serverInfo`.
    info: Implementation;
    /// Sets [`ServerOptions::supported`], the revisions served.
    supported: Vec<Revision>;
    /// Sets [`ServerOptions::list_ttl_ms`].
    list_ttl_ms: u64;
    /// Sets [`ServerOptions::list_cache_scope`].
    list_cache_scope: CacheScope;
    /// Sets [`ServerOptions::client_request_timeout`].
    client_request_timeout: Duration;
    /// Sets [`ServerOptions::max_input_rounds`].
    max_input_rounds: usize;
    /// Sets [`ServerOptions::max_batch_messages`].
    max_batch_messages: usize;
    /// Sets [`ServerOptions::max_in_flight_requests`].
    max_in_flight_requests: usize;
    }
}

/// A dual-era MCP server around a [`ServerHandler`].
#[derive(Clone)]
pub struct Server {
    handler: Arc<dyn ServerHandler>,
    pub(crate) shared: Arc<ServerShared>,
}

/// What every connection of a [`Server`] shares.
pub(crate) struct ServerShared {
    pub(crate) options: ServerOptions,
    pub(crate) changes: tokio::sync::broadcast::Sender<change::Change>,
    /// `options.info` encoded once: 2026-07-28 results carry it.
    pub(crate) info_raw: Box<serde_json::value::RawValue>,
    /// A `_meta` holding only that `serverInfo`, for results that have no `_meta`.
    pub(crate) info_meta: Box<serde_json::value::RawValue>,
    /// Hosts connected and translation refusals, for metrics.
    pub(crate) stats: Arc<stats::ServerStats>,
}

/// Which list changed, for [`Server::notify_list_changed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListChanged {
    /// `notifications/tools/list_changed`
    Tools,
    /// `notifications/prompts/list_changed`
    Prompts,
    /// `notifications/resources/list_changed`
    Resources,
}

impl ListChanged {
    /// The notification's method.
    pub fn method(self) -> &'static str {
        match self {
            ListChanged::Tools => mcp_types::protocol::method::TOOLS_LIST_CHANGED,
            ListChanged::Prompts => mcp_types::protocol::method::PROMPTS_LIST_CHANGED,
            ListChanged::Resources => mcp_types::protocol::method::RESOURCES_LIST_CHANGED,
        }
    }
}

impl Server {
    /// A server with default options.
    pub fn new(handler: impl ServerHandler) -> Self {
        Server::with_options(handler, ServerOptions::default())
    }

    /// A server with `options`.
    pub fn with_options(handler: impl ServerHandler, options: ServerOptions) -> Self {
        let info_raw = mcp_types::raw::encode(&options.info);
        let info_meta = mcp_types::raw::RawObject::from_iter([(
            mcp_types::meta::SERVER_INFO.into(),
            std::borrow::Cow::Borrowed(&*info_raw),
        )])
        .to_raw();
        Server {
            handler: Arc::new(handler),
            shared: Arc::new(ServerShared {
                options,
                changes: tokio::sync::broadcast::channel(64).0,
                info_raw,
                info_meta,
                stats: Arc::default(),
            }),
        }
    }

    /// A session of this server for one lone request (2026-07-28 over HTTP): no host
    /// session of its own.
    pub(crate) fn session(&self, caller: context::Caller) -> Arc<session::Session> {
        session::Session::new(self.handler.clone(), self.shared.clone(), false, caller)
    }

    /// A session of this server that is one host's (a legacy HTTP session, a connection).
    pub(crate) fn host_session(&self, caller: context::Caller) -> Arc<session::Session> {
        session::Session::new(self.handler.clone(), self.shared.clone(), true, caller)
    }

    /// The handler it serves.
    pub(crate) fn handler(&self) -> &Arc<dyn ServerHandler> {
        &self.handler
    }

    /// What its connections are doing: hosts connected by revision, translation refusals.
    pub fn stats(&self) -> Arc<ServerStats> {
        self.shared.stats.clone()
    }

    /// The options this server was made with.
    pub fn options(&self) -> &ServerOptions {
        &self.shared.options
    }

    /// Tells every connected client that a list changed: legacy sessions get the
    /// notification, 2026 clients on a `subscriptions/listen` stream that asked for it.
    pub fn notify_list_changed(&self, what: ListChanged) {
        // No receiver just means nobody listens right now.
        let _ = self.shared.changes.send(change::Change {
            what,
            audience: None,
        });
    }

    /// [`Server::notify_list_changed`], heard only by the clients whose principal
    /// `audience` accepts (a gateway tells of an upstream's change only those whose view
    /// reaches it).
    pub fn notify_list_changed_to(
        &self,
        what: ListChanged,
        audience: impl Fn(Option<&auth::Principal>) -> bool + Send + Sync + 'static,
    ) {
        self.notify_list_changed_among(what, move |principal, _| audience(principal));
    }

    /// [`Server::notify_list_changed`], heard only by the clients whose principal and host
    /// session `audience` accepts (a gateway tells a host with an upstream session of its
    /// own of that session's changes, and no one else).
    pub fn notify_list_changed_among(
        &self,
        what: ListChanged,
        audience: impl Fn(Option<&auth::Principal>, Option<HostSessionId>) -> bool
            + Send
            + Sync
            + 'static,
    ) {
        let _ = self.shared.changes.send(change::Change {
            what,
            audience: Some(Arc::new(audience)),
        });
    }

    /// Serves one connection until it closes, and says why it closed.
    pub async fn serve(&self, transport: impl Transport) -> CloseReason {
        let local = context::Caller {
            principal: self.shared.options.local_principal.clone().map(Arc::new),
            http: None,
        };
        let session = self.host_session(local);
        let (_peer, reader): (Peer, _) = Peer::start(Arc::new(transport), session);
        reader
            .await
            .unwrap_or_else(|e| CloseReason::Io(e.to_string()))
    }
}

/// The reading half of [`stdio`].
pub type StdinReader = tokio::io::BufReader<Box<dyn tokio::io::AsyncRead + Unpin + Send>>;
/// The writing half of [`stdio`].
pub type StdoutWriter = Box<dyn tokio::io::AsyncWrite + Unpin + Send>;

/// The process's own stdin and stdout as a transport (the server side of stdio).
///
/// Where a stream is a pipe (as when a host starts this process), it is reopened through
/// `/proc/self/fd` as a private non-blocking descriptor driven by the reactor, so reads
/// and writes never go through tokio's blocking thread pool. Reopening gives this process
/// its own open file description: the `O_NONBLOCK` flag never reaches the parent's end.
/// Anything else (a terminal, a file, another OS) uses tokio's standard handles.
pub fn stdio() -> LineTransport<StdinReader, StdoutWriter> {
    LineTransport::new(
        tokio::io::BufReader::with_capacity(64 * 1024, stdin_reader()),
        stdout_writer(),
    )
}

fn stdin_reader() -> Box<dyn tokio::io::AsyncRead + Unpin + Send> {
    #[cfg(target_os = "linux")]
    if let Ok(f) = std::fs::File::open("/proc/self/fd/0") {
        if let Ok(rx) = tokio::net::unix::pipe::Receiver::from_file(f) {
            return Box::new(rx);
        }
    }
    Box::new(tokio::io::stdin())
}

fn stdout_writer() -> StdoutWriter {
    #[cfg(target_os = "linux")]
    if let Ok(f) = std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/self/fd/1")
    {
        if let Ok(tx) = tokio::net::unix::pipe::Sender::from_file(f) {
            return Box::new(tx);
        }
    }
    Box::new(tokio::io::stdout())
}
