//! The pins of what the upstreams list now, for an operator to approve (`gateway --pin`).

use super::Aggregator;
use crate::pins::Pins;

impl Aggregator {
    /// Pins of every tool the upstreams list now, as they list it (before filters and
    /// overrides), with the configured actions for tools that later differ.
    pub fn pins_now(&self) -> Pins {
        let mut pins = match &self.inner.options.pins {
            Some(p) => {
                let mut fresh = Pins::new();
                fresh.on_change = p.on_change;
                fresh.unpinned = p.unpinned;
                fresh
            }
            None => Pins::new(),
        };
        let listings = self.inner.catalog.read_listings(|l| l.tools.clone());
        for (i, tools) in listings.into_iter_ids() {
            let key = self.inner.pool.key(i);
            for t in &tools {
                pins.approve(key, t);
            }
        }
        pins
    }
}
