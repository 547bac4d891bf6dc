//! The metrics of the calls the aggregator relays (see [`crate::metrics`]): each route's
//! meters, how an upstream's answer is counted, and `/metrics` for the HTTP endpoint.

use std::sync::{Arc, LazyLock};

use mcp_client::ClientError;
use mcp_types::raw::{KeyFinder, RawObject};
use serde_json::value::RawValue;

use super::route::Route;
use super::Aggregator;
use crate::metrics::{CallMeter, CallOutcome, Metrics, CONTENT_TYPE};

static IS_ERROR: LazyLock<KeyFinder> = LazyLock::new(|| KeyFinder::new("isError"));

impl Aggregator {
    /// The gateway's metrics: what each upstream was asked and how it answered.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.inner.metrics
    }

    /// A call of `route`'s tool, of `params_bytes`, going upstream now.
    pub(super) fn meter_call(&self, route: &Route, params_bytes: usize) -> CallMeter {
        route
            .meter
            .get_or_init(|| {
                let key = &self.inner.upstreams[route.upstream].config.key;
                Arc::new(self.inner.metrics.tool_meter(key, &route.tool.name))
            })
            .start(params_bytes)
    }
}

/// How an upstream's answer to a tool call is counted, and its size.
pub(super) fn outcome(answer: &Result<Box<RawValue>, ClientError>) -> (CallOutcome, usize) {
    match answer {
        Ok(raw) => {
            let text = raw.get();
            let is_error = IS_ERROR.may_be_in(text)
                && RawObject::from_raw(raw)
                    .is_ok_and(|o| o.get("isError").map(RawValue::get) == Some("true"));
            let outcome = match is_error {
                true => CallOutcome::IsError,
                false => CallOutcome::Ok,
            };
            (outcome, text.len())
        }
        Err(e) => (failure(e), 0),
    }
}

/// How a call that got no result is counted.
pub(super) fn failure(e: &ClientError) -> CallOutcome {
    match e {
        ClientError::Server(_) => CallOutcome::Error,
        ClientError::Timeout(_) => CallOutcome::Timeout,
        ClientError::Cancelled => CallOutcome::Cancelled,
        _ => CallOutcome::Failed,
    }
}

/// `/metrics` on the gateway's HTTP endpoint.
impl mcp_server::http::Metrics for Aggregator {
    fn render(&self) -> String {
        self.inner.metrics.render(&self.status())
    }

    fn content_type(&self) -> &'static str {
        CONTENT_TYPE
    }
}
