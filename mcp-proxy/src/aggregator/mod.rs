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
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use mcp_server::ListChanged;
use mcp_types::protocol::*;
use parking_lot::Mutex;

use crate::policy::Surface;
use crate::upstream_questions::Flight;
pub use crate::upstream_status::UpstreamStatus;
use id::{PerUpstream, UpstreamId};

mod answers;
mod call;
mod catalog;
mod confirm;
mod connector;
mod definitions;
mod dispatching;
mod fast;
mod flights;
mod gates;
mod handler;
mod health;
mod hop_meta;
mod id;
mod links;
mod listing;
mod metered;
mod options;
mod own_lists;
mod pages;
mod parked;
mod pinning;
mod pool;
mod reload;
mod route;
mod subscriptions;
mod tasks;
mod visibility;

use catalog::{Catalog, Member};
pub use connector::UpstreamConnector;
pub use options::{AggregatorOptions, StartError, UpstreamConfig, UpstreamTransport};
use pages::as_exposed;
use pool::Upstream;

/// Called when a merged list changes, with who may hear of it.
type ChangeListener = Arc<dyn Fn(ListChanged, Heard) + Send + Sync>;

/// Who hears of a list change.
#[derive(Clone, Copy, Debug)]
enum Heard {
    /// The hosts that see this upstream's listing in the catalog (not those that see one of
    /// their own upstream session's in its place).
    Upstream(UpstreamId),
    /// Only this host: its own session of an upstream changed.
    Host(mcp_server::HostSessionId),
}

/// The parts of an aggregator: its upstreams (the pool), what they offer merged (the
/// catalog), and what is in flight between hosts and upstreams (parked calls, tasks).
struct Inner {
    upstreams: PerUpstream<Arc<Upstream>>,
    options: AggregatorOptions,
    catalog: Catalog,
    on_change: Mutex<Option<ChangeListener>>,
    stopped: AtomicBool,
    /// Upstream calls waiting for a host's answers, by the `requestState` given to it
    /// (shared with the aggregators a reload makes).
    parked: Arc<parked::Parked<Flight>>,
    /// Upstream tasks shown to hosts, by gateway task id (shared likewise).
    tasks: Arc<tasks::TaskTable>,
    /// Which host subscriber subscribed to which resource on which upstream connection.
    subscriptions: Arc<subscriptions::Subscriptions>,
    /// The listings hosts see of their own upstream sessions.
    own_lists: own_lists::OwnLists,
    /// What the upstreams were asked and how they answered.
    metrics: Arc<crate::metrics::Metrics>,
    /// Who sees what.
    visibility: visibility::Visibility,
    /// This aggregator among those a reload makes (see `Upstream::keeper`).
    generation: u64,
}

/// What an aggregator holds for hosts across reloads: each one a reload makes takes it
/// over from the one before.
struct Held {
    metrics: Arc<crate::metrics::Metrics>,
    subscriptions: Arc<subscriptions::Subscriptions>,
    parked: Arc<parked::Parked<Flight>>,
    tasks: Arc<tasks::TaskTable>,
}

/// When each upstream's first start (or listing) is over.
struct Starting(Vec<(UpstreamId, tokio::sync::oneshot::Receiver<()>)>);

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
        let held = Held {
            metrics: Arc::default(),
            subscriptions: Arc::new(subscriptions::Subscriptions::new(options.max_subscriptions)),
            parked: Arc::default(),
            tasks: Arc::default(),
        };
        let agg = Aggregator::assemble(configs, options, |_, _| None, held)?;
        agg.start_upstreams().await?;
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
        let visibility = visibility::Visibility::new(
            options.views.clone(),
            options.surface,
            sorted.iter().map(|c| c.key.clone()).collect(),
        );
        let catalog = Catalog::new(
            members,
            options.namespacing.clone(),
            options.page_size,
            options.pins.clone(),
        );
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
        let inner = Arc::new(Inner {
            upstreams,
            options,
            catalog,
            on_change: Mutex::new(None),
            stopped: AtomicBool::new(false),
            parked: held.parked,
            tasks: held.tasks,
            subscriptions: held.subscriptions,
            own_lists: Default::default(),
            metrics: held.metrics,
            visibility,
            generation,
        });
        Ok(Aggregator { inner })
    }

    /// Connects every upstream at once (one already connected is only listed), waiting
    /// at most [`AggregatorOptions::startup_wait`] for them, checks the merged names of
    /// those that came, and keeps each upstream alive from then on: one still starting
    /// goes on, and its lists are announced when it comes.
    async fn start_upstreams(&self) -> Result<(), StartError> {
        let late = self.connect_all(self.inner.options.startup_wait).await?;
        self.keep_alive(late);
        Ok(())
    }

    /// Connects (or lists) every upstream at once and checks the merged names of those
    /// done within `wait` (`None`: all of them). Gives when each start is over.
    async fn connect_all(&self, wait: Option<std::time::Duration>) -> Result<Starting, StartError> {
        let mut starts = tokio::task::JoinSet::new();
        let mut over = Vec::new();
        for i in self.inner.upstreams.ids() {
            let agg = self.clone();
            let (done, is_done) = tokio::sync::oneshot::channel::<()>();
            starts.spawn(async move {
                agg.connect_or_list(i).await;
                let _ = done.send(());
            });
            over.push((i, is_done));
        }
        let deadline = wait.map(|w| tokio::time::Instant::now() + w);
        loop {
            let next = match deadline {
                Some(d) => tokio::time::timeout_at(d, starts.join_next()).await.ok(),
                None => Some(starts.join_next().await),
            };
            // All done (`Some(None)`), or the wait is over (`None`).
            if !matches!(next, Some(Some(_))) {
                break;
            }
        }
        self.inner.catalog.check_collisions()?;
        if !starts.is_empty() {
            tracing::info!(
                upstreams = starts.len(),
                "serving without the upstreams still starting; their lists come when they do"
            );
        }
        starts.detach_all();
        Ok(Starting(over))
    }

    /// Keeps each upstream alive from now on (see `pool.rs`, `supervise`), once its first
    /// start is over.
    fn keep_alive(&self, starting: Starting) {
        for (i, over) in starting.0 {
            let agg = self.clone();
            tokio::spawn(async move {
                let _ = over.await;
                agg.supervise(i).await;
            });
        }
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
        *self.inner.on_change.lock() = Some(Arc::new(announce));
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

    /// `t` with [`AggregatorOptions::downgrade_policy`] when one is set; as it is (the
    /// spec's policy, the translator's shortcut untouched) otherwise.
    pub(super) fn translator(
        &self,
        t: mcp_revisions::Translator<'static>,
    ) -> mcp_revisions::Translator<'_> {
        match &self.inner.options.downgrade_policy {
            Some(p) => t.with_policy(&**p),
            None => t,
        }
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
        self.inner.metrics.count_hosts_of(server.stats());
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
                let key = inner.upstreams.get(i)?.config.key.clone();
                Some((views, key))
            });
            let me = me.clone();
            // Not a host that sees its own session's lists of this upstream instead.
            let own = move |h| me.upgrade().is_some_and(|inner| inner.own_lists.has(h, i));
            match views {
                None => server.notify_list_changed_among(what, move |_, h| !own(h)),
                Some((views, key)) => server.notify_list_changed_among(what, move |p, h| {
                    crate::views::Scope::of(Some(&views), p).sees_upstream(&key) && !own(h)
                }),
            }
        };
        *self.inner.on_change.lock() = Some(Arc::new(announce));
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

    /// The upstream whose configuration key is `key`.
    pub(super) fn upstream_id(&self, key: &str) -> Option<UpstreamId> {
        self.inner
            .upstreams
            .iter_ids()
            .find(|(_, u)| &*u.config.key == key)
            .map(|(i, _)| i)
    }

    /// The configuration key of upstream `i`, which names it in errors and logs.
    pub(super) fn upstream_key(&self, i: UpstreamId) -> &str {
        &self.inner.upstreams[i].config.key
    }

    fn changed(&self, what: ListChanged, heard: Heard) {
        let f = self.inner.on_change.lock().clone();
        if let Some(f) = f {
            f(what, heard);
        }
    }

    /// Tells hosts which lists of upstream `i` changed, and only those.
    fn announce(&self, i: UpstreamId, changed: catalog::ListsChanged) {
        self.announce_as(changed, Heard::Upstream(i));
    }

    /// Tells `host` alone which lists of its own session of an upstream changed.
    fn announce_to(&self, host: mcp_server::HostSessionId, changed: catalog::ListsChanged) {
        self.announce_as(changed, Heard::Host(host));
    }

    fn announce_as(&self, changed: catalog::ListsChanged, heard: Heard) {
        let lists = [
            (changed.tools, ListChanged::Tools),
            (changed.prompts, ListChanged::Prompts),
            (changed.resources, ListChanged::Resources),
        ];
        for (_, c) in lists.into_iter().filter(|(did, _)| *did) {
            self.changed(c, heard);
        }
    }

    /// Whether hosts can reach a task now: a 2025-11-25 host, through a listed tool that
    /// may run as a task; a 2026 host, through such a tool or an upstream that declares
    /// the tasks extension (it decides per call). A capability nothing can reach is not
    /// declared.
    fn task_reach(&self) -> (bool, bool) {
        let task_tools = self.inner.catalog.has_task_tools();
        let extension = self.inner.upstreams.iter().any(|u| {
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
