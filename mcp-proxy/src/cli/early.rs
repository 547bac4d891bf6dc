//! What `--admin` answers before the gateway has started: alive from the first moment,
//! not ready (and no metrics) until the upstreams' start is over, then the gateway's own.

use std::sync::{Arc, OnceLock};

use mcp_server::http::{Health, Metrics, Readiness};
use serde_json::json;

use crate::live::Live;
use crate::Aggregator;
use mcp_server::Switch;

/// The gateway once it has started; until then, a gateway that is starting.
#[derive(Clone, Default)]
pub(super) struct Started(Arc<OnceLock<Switch<Aggregator>>>);

impl Started {
    /// The gateway has started: from now on its own health and metrics are answered.
    pub(super) fn set(&self, live: &Live) {
        let _ = self.0.set(live.handler());
    }
}

impl Health for Started {
    fn readiness(&self) -> Readiness {
        match self.0.get() {
            Some(handler) => handler.readiness(),
            None => Readiness::new(false, json!({"starting": true})),
        }
    }
}

impl Metrics for Started {
    fn render(&self) -> String {
        self.0.get().map(Metrics::render).unwrap_or_default()
    }

    fn content_type(&self) -> &'static str {
        crate::metrics::CONTENT_TYPE
    }
}
