//! [`Aggregator`]: many upstream MCP servers behind one [`ServerHandler`].
//!
//! Each upstream is an `mcp-client` connection (stdio child, Streamable HTTP or HTTP+SSE,
//! or an in-process server), in whichever era it speaks. The catalog of their tools,
//! prompts, resources and templates is merged in a deterministic order (upstreams by
//! key, then each upstream's own order); calls are routed by table lookup to the owning
//! upstream under the tool's real name. What an upstream says is kept as it said it
//! (the typed model is lossless); the server session translates each answer to the host's
//! revision. An upstream that fails is reported in the results of calls to it, restarted
//! with backoff, and never disturbs the others.

use std::collections::HashMap;
use std::sync::Arc;

use mcp_server::ListChanged;
use mcp_types::protocol::*;

use crate::policy::Surface;
use crate::upstream_questions::Flight;
pub use crate::upstream_status::UpstreamStatus;
use announcer::{Announcer, Heard};
use downgrade::Downgrade;
use flights::Flights;
use keeper::Keeper;
use links::Links;
use own_lists::OwnSessions;
use relay::Relay;
use tasks::Tasks;
use visibility::Visibility;

mod announcer;
mod answers;
pub(crate) mod audited;
mod catalog;
mod connector;
mod consent;
mod definitions;
mod dispatching;
mod downgrade;
mod flights;
mod handler;
mod health;
mod id;
mod keeper;
mod links;
mod listing;
mod metered;
mod options;
mod own_lists;
mod pages;
mod parked;
mod peers;
pub(crate) use peers::elicitation_notice;
mod pinning;
mod pool;
mod principal_lists;
mod reads;
mod relay;
mod reload;
pub(crate) mod request_state;
mod route;
mod subscriptions;
mod tasks;
#[cfg(test)]
mod test_parts;
mod tool_search;
mod visibility;

use catalog::{Catalog, Member};
pub use connector::UpstreamConnector;
pub use options::{AggregatorOptions, StartError, UpstreamConfig, UpstreamTransport};
use pages::as_exposed;
use pool::{Pool, Upstream};

/// The parts of an aggregator, each with its own state: its upstreams (the pool) and
/// their keeper, what they offer merged (the catalog) and what each host sees of it, who
/// hears of its changes, and the relay of calls (with the tasks and flights under it).
struct Inner {
    options: AggregatorOptions,
    pool: Arc<Pool>,
    catalog: Arc<Catalog>,
    announcer: Arc<Announcer>,
    keeper: Keeper,
    own: Arc<OwnSessions>,
    relay: Arc<Relay>,
    /// Who sees what.
    visibility: Arc<Visibility>,
    /// The dispatcher surface's `search_tools`.
    finder: tool_search::ToolFinder,
    /// What hosts hold across reloads.
    held: Held,
}

/// What an aggregator holds for hosts across reloads: each one a reload makes takes it
/// over from the one before.
#[derive(Clone)]
struct Held {
    /// What the upstreams were asked and how they answered.
    metrics: Arc<crate::metrics::Metrics>,
    /// Which host subscriber subscribed to which resource on which upstream connection.
    subscriptions: Arc<subscriptions::Subscriptions>,
    /// Upstream calls waiting for a host's answers, by the `requestState` given to it.
    parked: Arc<parked::Parked<Flight>>,
    /// Upstream tasks shown to hosts, by gateway task id.
    tasks: Arc<tasks::TaskTable>,
    /// What seals the ids hosts hold (`requestState`s): a state sealed before a reload
    /// opens after it.
    sealer: Arc<mcp_server::seal::Sealer>,
}

impl Inner {
    /// The parts over `pool`, `catalog` and `visibility`, each given the parts below it.
    fn wire(
        options: AggregatorOptions,
        pool: Arc<Pool>,
        catalog: Arc<Catalog>,
        visibility: Visibility,
        held: Held,
    ) -> Inner {
        let visibility = Arc::new(visibility);
        let announcer = Arc::new(match options.replicas.clone() {
            Some(link) => {
                let keys = pool.clone();
                Announcer::with_peers(Box::new(move |i, changed| {
                    link.tell(peers::notice(keys.key(i), changed));
                }))
            }
            None => Announcer::default(),
        });
        let keeper = Keeper::new(pool.clone(), catalog.clone(), announcer.clone());
        let own = Arc::new(OwnSessions::new(
            pool.clone(),
            catalog.clone(),
            announcer.clone(),
        ));
        let downgrade = Downgrade::new(options.downgrade_policy.clone());
        let links = Links::new(pool.clone(), own.clone());
        // A deployment that seals with keys of its own may have replicas: upstreams'
        // states are sealed in, so that a retry finds the replica whose upstream issued it.
        let wraps = options.sealer.is_some();
        let flights = Flights::new(
            links,
            held.parked.clone(),
            held.sealer.clone(),
            wraps,
            downgrade.clone(),
        );
        let tasks = Tasks::new(flights, held.tasks.clone(), visibility.clone());
        let relay = Arc::new(Relay::new(
            tasks,
            own.clone(),
            catalog.clone(),
            visibility.clone(),
            held.metrics.clone(),
            relay::Watch {
                confirm: options.confirm.clone(),
                audit: options.audit.clone(),
                limits: options.rate_limits.clone(),
            },
            downgrade,
        ));
        Inner {
            finder: tool_search::ToolFinder::new(options.tool_search.clone()),
            options,
            pool,
            catalog,
            announcer,
            keeper,
            own,
            relay,
            visibility,
            held,
        }
    }
}

/// Upstream MCP servers composed into one server. Cheap to clone.
#[derive(Clone)]
pub struct Aggregator {
    inner: Arc<Inner>,
}

/// Each upstream's namespace (its own, else one made from its key), in order; two that
/// come out the same are a start-up error.
fn namespaces(
    configs: &[UpstreamConfig],
    options: &AggregatorOptions,
) -> Result<Vec<String>, StartError> {
    let mut by_namespace: HashMap<String, String> = HashMap::new();
    let mut out = Vec::with_capacity(configs.len());
    for c in configs {
        let namespace = c
            .namespace
            .clone()
            .unwrap_or_else(|| options.namespacing.namespace_for_key(&c.key));
        let ns_key = crate::naming::sanitize_namespace(&namespace);
        if !namespace.is_empty() {
            if let Some(first) = by_namespace.insert(ns_key.clone(), c.key.clone()) {
                return Err(StartError::NamespaceCollision {
                    namespace: ns_key,
                    first,
                    second: c.key.clone(),
                });
            }
        }
        out.push(namespace);
    }
    Ok(out)
}

impl Aggregator {
    /// Starts every upstream concurrently and builds the catalog. An upstream that fails
    /// to start does not fail the aggregator (it is retried in the background); clashing
    /// namespaces or exposed names do.
    pub async fn start(
        configs: Vec<UpstreamConfig>,
        options: AggregatorOptions,
    ) -> Result<Aggregator, StartError> {
        let sealer = match &options.sealer {
            Some(s) => s.clone(),
            None => Arc::new(mcp_server::seal::Sealer::random().map_err(StartError::Sealing)?),
        };
        let held = Held {
            metrics: Arc::default(),
            subscriptions: Arc::new(subscriptions::Subscriptions::new(options.max_subscriptions)),
            parked: Arc::default(),
            tasks: Arc::default(),
            sealer,
        };
        let agg = Aggregator::assemble(configs, options, |_, _| None, held)?;
        // Every upstream at once, waited for at most `startup_wait`; the merged names of
        // those that came checked; one still starting goes on, announced when it comes.
        let keeper = &agg.inner.keeper;
        let late = keeper.connect_all(agg.inner.options.startup_wait).await?;
        keeper.keep_alive(late);
        Ok(agg)
    }

    /// An aggregator not started yet: its upstreams sorted by key, each a new one unless
    /// `reuse` gives one (a running upstream handed over by a reload), its catalog empty.
    fn assemble(
        configs: Vec<UpstreamConfig>,
        options: AggregatorOptions,
        reuse: impl Fn(&UpstreamConfig, &str) -> Option<Arc<Upstream>>,
        held: Held,
    ) -> Result<Aggregator, StartError> {
        static GENERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let generation = GENERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut sorted = configs;
        sorted.sort_by(|a, b| a.key.cmp(&b.key));
        let namespaces = namespaces(&sorted, &options)?;
        let members = sorted
            .iter()
            .zip(&namespaces)
            .map(|(c, ns)| Member {
                key: c.key.clone(),
                namespace: ns.clone(),
                tools: c.tools.clone(),
                overrides: c.overrides.clone(),
                trusted: c.trusted,
                withhold_hints: c.withhold_hints && !c.trusted,
            })
            .collect();
        let visibility = Visibility::new(
            options.views.clone(),
            options.surface,
            sorted.iter().map(|c| c.key.clone()).collect(),
        );
        let catalog = Arc::new(Catalog::new(
            members,
            options.namespacing.clone(),
            options.page_size,
            options.pins.clone(),
        ));
        let upstreams = sorted
            .into_iter()
            .zip(namespaces)
            .map(|(c, ns)| {
                reuse(&c, &ns).unwrap_or_else(|| {
                    let u = Upstream::new(c, ns);
                    u.keeper
                        .store(generation, std::sync::atomic::Ordering::SeqCst);
                    Arc::new(u)
                })
            })
            .collect();
        let pool = Arc::new(Pool::new(
            upstreams,
            pool::Settings::of(&options),
            held.metrics.clone(),
            generation,
        ));
        let inner = Inner::wire(options, pool, catalog, visibility, held);
        Ok(Aggregator {
            inner: Arc::new(inner),
        })
    }

    /// Longest [`Aggregator::shutdown`] waits for the upstream connections to close:
    /// enough for a stdio server that ignores both its stdin closing and `SIGTERM` (twice
    /// [`mcp_client::ChildTransport::CLOSE_GRACE`]), and a second more for reaping it.
    pub const SHUTDOWN_LIMIT: std::time::Duration = Pool::SHUTDOWN_LIMIT;

    /// Stops restarting upstreams and closes every upstream connection, the one opened at
    /// start and each host's own session alike, all at once, returning when they are
    /// closed or after [`Aggregator::SHUTDOWN_LIMIT`]. A stdio upstream is closed as
    /// [`mcp_client::ChildTransport`] closes: its stdin, then `SIGTERM` to its process
    /// group, then `SIGKILL`, [`mcp_client::ChildTransport::CLOSE_GRACE`] apart; one still
    /// closing at the limit is dropped, which sends its group `SIGKILL`. Calls still in
    /// flight fail; call [`Aggregator::drain`] first to let them finish. Connections
    /// opened after this are closed at once.
    pub async fn shutdown(&self) {
        self.inner.pool.close_all().await;
    }

    /// Waits until no host call is in flight on any upstream connection, at most `limit`;
    /// whether none is. What a graceful stop calls once it takes no new requests, before
    /// [`Aggregator::shutdown`].
    pub async fn drain(&self, limit: std::time::Duration) -> bool {
        self.inner.pool.drain(limit).await
    }

    /// How each upstream is doing, in catalog order.
    pub fn status(&self) -> Vec<UpstreamStatus> {
        self.inner.pool.status()
    }

    /// Calls `f` whenever a merged list changes (for everyone: see
    /// [`Aggregator::announce_through`] to tell each host only of what it sees).
    pub fn on_list_changed(&self, f: impl Fn(ListChanged) + Send + Sync + 'static) {
        // A change only one host's own session made is not the catalog's.
        let announce = move |what, heard| {
            if let Heard::Upstream(_) = heard {
                f(what)
            }
        };
        self.inner.announcer.listen(Arc::new(announce));
    }

    /// A server in front of this aggregator, with `options`, already announcing list
    /// changes to its hosts ([`Aggregator::announce_through`]): what an embedder serves
    /// over stdio, [`mcp_server::http::StreamableHttp`] or in process. Options without a
    /// downgrade policy of their own get the aggregator's
    /// ([`AggregatorOptions::downgrade_policy`]).
    pub fn server(&self, options: mcp_server::ServerOptions) -> mcp_server::Server {
        let options = self.server_options(options);
        let server = mcp_server::Server::with_options(self.clone(), options);
        self.announce_through(server.clone());
        server
    }

    /// `options` with [`AggregatorOptions::downgrade_policy`] where they have no policy of
    /// their own: what upstreams answer reaches hosts by the policy the gateway's own
    /// translations use, unless the embedder gave the server another.
    pub(crate) fn server_options(
        &self,
        mut options: mcp_server::ServerOptions,
    ) -> mcp_server::ServerOptions {
        if options.downgrade_policy.is_none() {
            options.downgrade_policy = self.inner.options.downgrade_policy.clone();
        }
        options
    }

    /// Announces every merged list change through `server`, to the hosts that may hear of
    /// it: with views configured, an upstream's change reaches only the hosts whose view
    /// reaches that upstream, so one principal does not learn of another's catalog
    /// changing. Replaces [`Aggregator::on_list_changed`]. Its hosts are counted in
    /// [`Aggregator::metrics`].
    pub fn announce_through(&self, server: mcp_server::Server) {
        self.inner.held.metrics.count_hosts_of(server.stats());
        let me = Arc::downgrade(&self.inner);
        let announce = move |what: ListChanged, heard: Heard| {
            let i = match heard {
                Heard::Host(host) => {
                    return server.notify_list_changed_among(what, move |_, h| h == Some(host))
                }
                Heard::Upstream(i) => i,
            };
            let views = me.upgrade().and_then(|inner| {
                let views = inner.options.views.clone()?;
                let key = inner.pool.upstreams().get(i)?.config.key.clone();
                Some((views, key))
            });
            let me = me.clone();
            // Not a host that sees its own session's lists of this upstream instead.
            let own = move |h| me.upgrade().is_some_and(|inner| inner.own.has(h, i));
            match views {
                None => server.notify_list_changed_among(what, move |_, h| !own(h)),
                Some((views, key)) => server.notify_list_changed_among(what, move |p, h| {
                    crate::views::Scope::of(Some(&views), p).sees_upstream(&key) && !own(h)
                }),
            }
        };
        self.inner.announcer.listen(Arc::new(announce));
    }

    /// The merged tools as hosts see them (exposed names), in catalog order.
    pub fn tools(&self) -> Vec<Tool> {
        self.inner
            .catalog
            .tool_entries()
            .into_iter()
            .map(|(exposed, _, t)| as_exposed(exposed, t).into_value())
            .collect()
    }

    /// The names hosts call the merged tools by, in catalog order: [`Aggregator::tools`]'s
    /// names, without decoding a copy of each tool.
    pub fn tool_names(&self) -> Vec<String> {
        let shown = self.inner.catalog.shown_tools();
        shown.iter().map(|s| s.exposed.clone()).collect()
    }

    /// Whether hosts can reach a task now: a 2025-11-25 host, through a listed tool that
    /// may run as a task; a 2026 host, through such a tool or an upstream that declares
    /// the tasks extension (it decides per call). A capability nothing can reach is not
    /// declared.
    fn task_reach(&self) -> (bool, bool) {
        let task_tools = self.inner.catalog.has_task_tools();
        let extension = self.inner.pool.upstreams().iter().any(|u| {
            u.client().is_some_and(|c| {
                mcp_revisions::features::has_tasks_extension(c.revision())
                    && c.server()
                        .capabilities
                        .extensions
                        .as_ref()
                        .is_some_and(|e| e.contains_key(TASKS_EXTENSION))
            })
        });
        // The dispatcher's own tools declare no task support.
        let direct = self.inner.options.surface == Surface::Direct;
        (task_tools && direct, task_tools || extension)
    }
}
