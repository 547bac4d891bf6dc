//! A gateway whose configuration changes while it serves: [`Live`] keeps the
//! [`Aggregator`] of the configuration in force behind a [`Switch`], the server's handler,
//! which hands every request to it.
//! [`Live::reload`] makes the next one from a new configuration (the upstreams whose
//! configuration did not change are taken over as they run, process and connection
//! included), switches to it, tells each host of a list change it can see, and retires
//! the one before: calls in flight on the upstreams it alone had finish, up to a limit,
//! before those close. Host connections and sessions are the server's and go on.
//!
//! What an aggregator holds for hosts is taken over by the next: a task made before the
//! reload is still found (on the upstream of its key), a call parked for a host's
//! answers resumes, and resource subscriptions go on (those on a kept upstream; those on
//! a closed one end with its connection).

use std::sync::Arc;
use std::time::Duration;

use mcp_server::{ListChanged, Server, Switch};
use parking_lot::Mutex;

use crate::aggregator::{Aggregator, AggregatorOptions, StartError, UpstreamConfig};
use crate::views::{Scope, Views};

/// The gateway's handler and how a reload replaces it (see the module). Cheap to clone.
#[derive(Clone)]
pub struct Live {
    switch: Switch<Aggregator>,
    server: Arc<Mutex<Option<Server>>>,
    /// One reload at a time: two from the same aggregator would both take its upstreams.
    reloading: Arc<tokio::sync::Mutex<()>>,
}

/// What a reload changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reloaded {
    /// Upstreams started (new, or changed and so started again).
    pub started: Vec<String>,
    /// Upstreams closed (removed, or changed), after their calls finished.
    pub closed: Vec<String>,
    /// The lists whose `list_changed` went to the hosts that see them.
    pub announced: Vec<ListChanged>,
}

impl Live {
    /// Serves `aggregator` until a reload replaces it.
    pub fn new(aggregator: Aggregator) -> Live {
        Live {
            switch: Switch::new(aggregator),
            server: Arc::default(),
            reloading: Arc::default(),
        }
    }

    /// The aggregator in force.
    pub fn current(&self) -> Aggregator {
        Aggregator::clone(&self.switch.current())
    }

    /// The server's handler: the aggregator in force, whichever it is when a request
    /// comes. Its health and metrics are the aggregator in force's (metrics are kept
    /// across reloads).
    pub fn handler(&self) -> Switch<Aggregator> {
        self.switch.clone()
    }

    /// A server in front of it, announcing list changes to its hosts, the aggregator in
    /// force's and a reload's alike. Options without a downgrade policy of their own get
    /// the aggregator in force's ([`AggregatorOptions::downgrade_policy`]).
    pub fn server(&self, options: mcp_server::ServerOptions) -> Server {
        let current = self.current();
        let options = current.server_options(options);
        let server = Server::with_options(self.handler(), options);
        current.announce_through(server.clone());
        *self.server.lock() = Some(server.clone());
        server
    }

    /// Applies a new configuration (see the module): `unchanged` says which upstreams'
    /// configuration is as before; `drain` bounds how long calls in flight on a closing
    /// upstream get. An error (clashing names, say) leaves everything as it was.
    pub async fn reload(
        &self,
        configs: Vec<UpstreamConfig>,
        options: AggregatorOptions,
        unchanged: impl Fn(&UpstreamConfig) -> bool,
        drain: Duration,
    ) -> Result<Reloaded, StartError> {
        let _one = self.reloading.lock().await;
        let before = self.current();
        let next = before.reconfigured(configs, options, unchanged).await?;
        let server = self.server.lock().clone();
        if let Some(server) = &server {
            next.announce_through(server.clone());
        }
        self.switch.replace(next.clone());
        let mut differing = before.differing_upstreams(&next);
        if views_differ(&before, &next) {
            // Who sees what changed for some principals: each host hears of it.
            differing.clear();
        }
        let mut report = Reloaded::default();
        if let Some(server) = &server {
            report.announced = announce(server, &before, &next, &differing);
        }
        let closed = before.retire(&next, drain).await;
        report.started = differing
            .into_iter()
            .filter(|k| next.status().iter().any(|s| &s.key == k))
            .collect();
        report.closed = closed;
        Ok(report)
    }
}

/// Whether the views may differ: they are not the same object (pass the views in force
/// in the next options when they are unchanged, as the gateway program does, and only
/// hosts whose view reaches an upstream that came or went hear of a change).
fn views_differ(before: &Aggregator, next: &Aggregator) -> bool {
    match (before.views(), next.views()) {
        (None, None) => false,
        (Some(a), Some(b)) => !Arc::ptr_eq(&a, &b),
        _ => true,
    }
}

/// `list_changed` for each list that differs between `before` and `next`, to the hosts
/// whose view reaches one of the `differing` upstreams (to every host without views, or
/// with `differing` empty: the views themselves changed).
fn announce(
    server: &Server,
    before: &Aggregator,
    next: &Aggregator,
    differing: &[String],
) -> Vec<ListChanged> {
    let kinds = [
        ListChanged::Tools,
        ListChanged::Prompts,
        ListChanged::Resources,
    ];
    let (was, is) = (before.shown(), next.shown());
    let changed: Vec<ListChanged> = kinds
        .into_iter()
        .zip(was.iter().zip(&is))
        .filter(|(_, (a, b))| a != b)
        .map(|(k, _)| k)
        .collect();
    let views: Vec<Arc<dyn Views>> = [before.views(), next.views()]
        .into_iter()
        .flatten()
        .collect();
    for what in &changed {
        if views.is_empty() || differing.is_empty() {
            server.notify_list_changed(*what);
            continue;
        }
        let (views, keys) = (views.clone(), differing.to_vec());
        server.notify_list_changed_to(*what, move |p| {
            views.iter().any(|v| {
                let scope = Scope::of(Some(v), p);
                keys.iter().any(|k| scope.sees_upstream(k))
            })
        });
    }
    changed
}

/// What another replica tells goes to the aggregator in force.
impl mcp_server::http::PeerNotices for Live {
    fn received(&self, from: mcp_server::seal::ReplicaId, notice: &serde_json::value::RawValue) {
        self.current().received(from, notice);
    }
}
