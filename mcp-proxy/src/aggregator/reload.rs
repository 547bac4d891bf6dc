//! A new configuration for a running aggregator: the next aggregator takes over every
//! upstream whose configuration did not change, connection and process included; the
//! one before it lets its calls in flight finish, then closes the upstreams it alone had.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::pool::{close_upstreams, in_flight, Upstream};
use super::{Aggregator, AggregatorOptions, StartError, UpstreamConfig};

impl Aggregator {
    /// The aggregator `configs` and `options` describe, taking over from this one each
    /// upstream for which `unchanged` is true (and whose namespace stays the same): its
    /// connection, process, host sessions and restart count go on as they are. Every other
    /// upstream is started; the merged names are checked, and on a clash the new
    /// upstreams are closed and this aggregator goes on as it was. On success this one
    /// stops keeping its upstreams alive (the next one does, from now on); hand it to
    /// [`Aggregator::retire`] once hosts are served by the next one.
    pub async fn reconfigured(
        &self,
        configs: Vec<UpstreamConfig>,
        options: AggregatorOptions,
        unchanged: impl Fn(&UpstreamConfig) -> bool,
    ) -> Result<Aggregator, StartError> {
        let running: HashMap<&str, &Arc<Upstream>> = self
            .inner
            .pool
            .upstreams()
            .iter()
            .map(|u| (u.config.key.as_str(), u))
            .collect();
        // New keys (a rotation) seal from now on; without any, the running ones go on.
        let mut held = self.inner.held.clone();
        if let Some(s) = &options.sealer {
            held.sealer = s.clone();
        }
        let next = Aggregator::assemble(
            configs,
            options,
            |c, namespace| {
                let u = running.get(c.key.as_str())?;
                (u.namespace == namespace && unchanged(c)).then(|| Arc::clone(u))
            },
            held,
        )?;
        // What a kept upstream listed stands until it lists again (a failed relist keeps it).
        for (j, u) in next.inner.pool.upstreams().iter_ids() {
            if let Some((i, _)) = self
                .inner
                .pool
                .upstreams()
                .iter_ids()
                .find(|(_, o)| Arc::ptr_eq(o, u))
            {
                let listing = self.inner.catalog.read_listings(|l| l.clone());
                if let Some(l) = listing.get(i) {
                    next.inner.catalog.set_listing(j, l.clone());
                }
            }
        }
        // The aggregator in force serves meanwhile: the next one waits for every upstream.
        let started = match next.inner.keeper.connect_all(None).await {
            Ok(started) => started,
            Err(e) => {
                close_upstreams(next.inner.pool.only_here(&self.inner.pool).iter()).await;
                return Err(e);
            }
        };
        // One keeper per upstream: each kept one is the next aggregator's from here on
        // (this one's keepers stop at their next look), and this one keeps no other.
        next.inner.pool.keep_all();
        self.inner.pool.stop();
        next.inner.keeper.keep_alive(started);
        Ok(next)
    }

    /// After [`Aggregator::reconfigured`] gave `next`: waits, at most `drain`, for the
    /// calls in flight on the upstreams `next` did not take over, then closes those.
    /// Returns the keys of the upstreams closed.
    pub async fn retire(&self, next: &Aggregator, drain: Duration) -> Vec<String> {
        let gone = self.inner.pool.only_here(&next.inner.pool);
        let deadline = tokio::time::Instant::now() + drain;
        loop {
            let busy: usize = gone.iter().map(|u| in_flight(u)).sum();
            if busy == 0 {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!(calls = busy, "closing upstreams removed by a reload with calls still in flight after {drain:?}");
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        close_upstreams(gone.iter()).await;
        gone.iter().map(|u| u.config.key.clone()).collect()
    }

    /// The keys of the upstreams this aggregator and `other` do not share.
    pub(crate) fn differing_upstreams(&self, other: &Aggregator) -> Vec<String> {
        self.inner
            .pool
            .only_here(&other.inner.pool)
            .iter()
            .chain(other.inner.pool.only_here(&self.inner.pool).iter())
            .map(|u| u.config.key.clone())
            .collect()
    }

    /// What hosts are shown, as text to compare: tools, prompts, resources and templates.
    pub(crate) fn shown(&self) -> [String; 3] {
        self.inner.catalog.shown()
    }

    /// The views hosts are shown the upstreams through, if any.
    pub(crate) fn views(&self) -> Option<Arc<dyn crate::views::Views>> {
        self.inner.options.views.clone()
    }

    /// The audit log its calls are recorded in, if any ([`crate::AggregatorOptions::audit`]).
    pub fn audit_log(&self) -> Option<&crate::audit::AuditLog> {
        self.inner.options.audit.as_ref()
    }

    /// What it seals with and tells the other replicas through: a reload keeps them (the
    /// cluster's configuration is read at start).
    #[cfg(feature = "cli")]
    pub(crate) fn cluster(
        &self,
    ) -> (
        Option<Arc<mcp_server::seal::Sealer>>,
        Option<mcp_server::http::ReplicaLink>,
    ) {
        let o = &self.inner.options;
        (o.sealer.clone(), o.replicas.clone())
    }
}
