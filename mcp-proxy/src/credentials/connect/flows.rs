//! The connect flows in progress, by the `state` of the authorization request each is
//! waiting on: bounded, each for ten minutes, and each taken once.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mcp_client::auth::AuthorizationRequest;
use parking_lot::Mutex;

use super::ticket::Ticket;

/// Most flows in progress at once; past it the oldest is dropped.
const MAX_FLOWS: usize = 10_000;

/// How long a browser has to come back from an authorization server.
pub(crate) const FLOW_LIFE: Duration = Duration::from_secs(600);

/// Where a flow is.
pub(crate) enum Step {
    /// Sent to log in at the gateway's own issuer.
    Login,
    /// Identity checked; sent to the upstream's authorization server.
    Consent,
}

/// One connect flow, waiting for its browser to come back.
pub(crate) struct Flow {
    pub(crate) step: Step,
    pub(crate) ticket: Ticket,
    pub(crate) request: AuthorizationRequest,
    /// The cookie the browser that started it holds.
    pub(crate) browser: String,
    until: Instant,
}

impl Flow {
    pub(crate) fn new(
        step: Step,
        ticket: Ticket,
        request: AuthorizationRequest,
        browser: String,
    ) -> Self {
        Flow {
            step,
            ticket,
            request,
            browser,
            until: Instant::now() + FLOW_LIFE,
        }
    }
}

/// Flows by state.
#[derive(Default)]
pub(crate) struct Flows(Mutex<HashMap<String, Flow>>);

impl Flows {
    pub(crate) fn put(&self, flow: Flow) {
        let mut flows = self.0.lock();
        let now = Instant::now();
        if flows.len() >= MAX_FLOWS {
            flows.retain(|_, f| f.until > now);
        }
        if flows.len() >= MAX_FLOWS {
            let oldest = flows
                .iter()
                .min_by_key(|(_, f)| f.until)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                flows.remove(&k);
            }
        }
        flows.insert(flow.request.state().to_owned(), flow);
    }

    /// The flow waiting on `state`, taken (a second return finds nothing).
    pub(crate) fn take(&self, state: &str) -> Option<Flow> {
        self.0
            .lock()
            .remove(state)
            .filter(|f| f.until > Instant::now())
    }
}
