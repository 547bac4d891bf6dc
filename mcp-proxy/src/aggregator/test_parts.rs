//! What the parts' unit tests share: upstreams served in process, a pool and catalog of
//! them made as [`super::Aggregator`] makes them (but no part wired to another), and the
//! context of a host's request, held open while a test uses it.

use std::sync::Arc;
use std::time::Duration;

use mcp_client::{Client, ClientOptions, NoHandler, StdioCommand};
use mcp_server::{Outcome, RequestContext, Server, ServerHandler};
use mcp_types::protocol::*;
use mcp_types::ErrorObject;
use serde_json::json;

use super::catalog::{Catalog, Member};
use super::downgrade::Downgrade;
use super::flights::Flights;
use super::id::UpstreamId;
use super::links::Links;
use super::options::{AggregatorOptions, UpstreamConfig, UpstreamTransport};
use super::own_lists::OwnSessions;
use super::pool::{Pool, Settings, Upstream};
use crate::sessions::SessionMode;

/// The generation the test pools keep their upstreams for.
pub(super) const GENERATION: u64 = 7;

/// An upstream that lists `tools` (by name) and answers a call to any tool with the text
/// `ran <name>`.
pub(super) struct Lists(pub(super) Vec<&'static str>);

#[async_trait::async_trait]
impl ServerHandler for Lists {
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities {
            tools: Some(Default::default()),
            ..Default::default()
        }
    }

    async fn list_tools(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        Ok(ListToolsResult {
            tools: self
                .0
                .iter()
                .map(|n| Tool::new(*n, json!({"type": "object"})))
                .collect(),
            ..Default::default()
        })
    }

    async fn call_tool(
        &self,
        _: &RequestContext,
        p: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        Ok(Outcome::Complete(CallToolResult {
            content: vec![ContentBlock::text(format!("ran {}", p.name))],
            ..Default::default()
        }))
    }
}

/// Upstream `key` served in process, listing `tools`, shared by every host.
pub(super) fn in_process(key: &str, tools: Vec<&'static str>) -> UpstreamConfig {
    let mut c = UpstreamConfig::new(key, UpstreamTransport::InProcess(Server::new(Lists(tools))));
    c.session = SessionMode::Shared;
    c
}

/// Upstream `key` on stdio, whose program does not exist: it never starts.
pub(super) fn missing(key: &str) -> UpstreamConfig {
    let cmd = StdioCommand::new("/nonexistent/mcp-proxy-unit-test-upstream", [""; 0]);
    let mut c = UpstreamConfig::new(key, UpstreamTransport::Stdio(cmd));
    c.session = SessionMode::Shared;
    c
}

/// Settings quick enough for a test: restarts come at once, a hang is noticed soon.
pub(super) fn settings() -> Settings {
    Settings {
        connect_timeout: Duration::from_secs(5),
        call_timeout: Duration::from_secs(5),
        input_timeout: Duration::from_secs(5),
        restart_backoff: (Duration::from_millis(10), Duration::from_millis(50)),
    }
}

/// A new upstream of `config`, kept by the [`GENERATION`] pool, named by its key.
pub(super) fn upstream(config: UpstreamConfig) -> Arc<Upstream> {
    let ns = config.key.clone();
    let u = Upstream::new(config, ns);
    u.keeper
        .store(GENERATION, std::sync::atomic::Ordering::SeqCst);
    Arc::new(u)
}

/// A pool of `upstreams` (in the order given) of the [`GENERATION`] aggregator.
pub(super) fn pool_of(upstreams: Vec<Arc<Upstream>>) -> Arc<Pool> {
    Arc::new(Pool::new(
        upstreams.into_iter().collect(),
        settings(),
        Arc::default(),
        GENERATION,
    ))
}

/// A pool of new upstreams of `configs` (in the order given) and their empty catalog.
pub(super) fn parts(configs: Vec<UpstreamConfig>) -> (Arc<Pool>, Arc<Catalog>) {
    let options = AggregatorOptions::default();
    let members = configs
        .iter()
        .map(|c| Member {
            key: c.key.clone(),
            namespace: c.key.clone(),
            tools: c.tools.clone(),
            overrides: c.overrides.clone(),
            trusted: c.trusted,
            withhold_hints: false,
        })
        .collect();
    let catalog = Arc::new(Catalog::new(
        members,
        options.namespacing.clone(),
        options.page_size,
        None,
    ));
    (
        pool_of(configs.into_iter().map(upstream).collect()),
        catalog,
    )
}

/// Links to `pool`'s upstreams; a host's own sessions are followed against `catalog`.
pub(super) fn links(pool: Arc<Pool>, catalog: Arc<Catalog>) -> Links {
    let own = Arc::new(OwnSessions::new(pool.clone(), catalog, Arc::default()));
    Links::new(pool, own)
}

/// Flights over [`links`], nothing parked, translated by the spec's policy.
pub(super) fn flights(pool: Arc<Pool>, catalog: Arc<Catalog>) -> Flights {
    Flights::new(
        links(pool, catalog),
        Arc::default(),
        sealer(),
        false,
        Downgrade::default(),
    )
}

/// A sealer of a random key.
pub(super) fn sealer() -> Arc<mcp_server::seal::Sealer> {
    Arc::new(mcp_server::seal::Sealer::random().expect("a random key"))
}

/// Upstream ids `0..n`.
pub(super) fn ids(n: usize) -> Vec<UpstreamId> {
    (0..n)
        .map(|_| ())
        .collect::<super::id::PerUpstream<()>>()
        .ids()
        .collect()
}

/// Opens upstream `i`'s shared connection and stores it, as the keeper does.
pub(super) async fn connect(pool: &Pool, i: UpstreamId) -> Client {
    let u = pool.get(i);
    let client = pool
        .open_shared(u)
        .await
        .expect("the in-process upstream opens");
    *u.client.write() = Some(client.clone());
    client
}

/// A host's request in flight: its context, usable until this is dropped (the request is
/// answered then).
pub(super) struct Request {
    pub(super) ctx: RequestContext,
    _done: tokio::sync::oneshot::Sender<()>,
    _host: Client,
}

/// Hands the context of each tool call it gets to the test and answers once the test is
/// done with it.
struct Probe(
    tokio::sync::mpsc::UnboundedSender<(RequestContext, tokio::sync::oneshot::Sender<()>)>,
);

#[async_trait::async_trait]
impl ServerHandler for Probe {
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities {
            tools: Some(Default::default()),
            ..Default::default()
        }
    }

    async fn call_tool(
        &self,
        ctx: &RequestContext,
        _: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        let (done, wait) = tokio::sync::oneshot::channel();
        let _ = self.0.send((ctx.clone(), done));
        let _ = wait.await;
        Ok(Outcome::Complete(CallToolResult::default()))
    }
}

/// A request of a host connected in memory (a host session of its own), held open.
pub(super) async fn request() -> Request {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let (a, b) = mcp_types::transport::memory_pair(16);
    let server = Server::new(Probe(tx));
    tokio::spawn(async move { server.serve(b).await });
    let host = Client::connect(a, NoHandler, ClientOptions::default())
        .await
        .expect("the host connects");
    let caller = host.clone();
    tokio::spawn(async move { caller.call_tool("probe", Default::default()).await });
    let (ctx, done) = rx.recv().await.expect("the request arrives");
    Request {
        ctx,
        _done: done,
        _host: host,
    }
}
