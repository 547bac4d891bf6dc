//! The metrics of the calls the aggregator relays (see [`crate::metrics`]): each route's
//! meters, how an upstream's answer is counted, and `/metrics` for the HTTP endpoint.

use std::sync::{Arc, LazyLock};

use mcp_client::ClientError;
use mcp_types::raw::{self, RawObject};
use serde_json::value::RawValue;

use super::Aggregator;
use crate::metrics::{CallOutcome, Metrics, CONTENT_TYPE};

static IS_ERROR: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(b"\"isError\""));

impl Aggregator {
    /// The gateway's metrics: what each upstream was asked and how it answered.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.inner.held.metrics
    }
}

/// How an upstream's answer to a tool call is counted, and its size.
pub(super) fn outcome(answer: &Result<Box<RawValue>, ClientError>) -> (CallOutcome, usize) {
    let escapes = answer
        .as_ref()
        .is_ok_and(|raw| raw::has_key_escapes(raw.get()));
    outcome_of(answer, escapes)
}

/// [`outcome`], given [`raw::has_key_escapes`] of the answer (asked once for every look).
pub(super) fn outcome_of(
    answer: &Result<Box<RawValue>, ClientError>,
    escapes: bool,
) -> (CallOutcome, usize) {
    match answer {
        Ok(raw) => {
            let outcome = match is_error(raw, escapes) {
                true => CallOutcome::IsError,
                false => CallOutcome::Ok,
            };
            (outcome, raw.get().len())
        }
        Err(e) => (failure(e), 0),
    }
}

/// Whether the result `raw` says `isError: true` (`escapes`: [`raw::has_key_escapes`]).
pub(super) fn is_error(raw: &RawValue, escapes: bool) -> bool {
    // Read one level deep only when some `isError` may be `true`: most results say
    // `false` or nothing, and reading them whole would cost more than the relay.
    (escapes || any_is_error_true(raw.get()))
        && RawObject::from_raw(raw)
            .is_ok_and(|o| o.get("isError").map(RawValue::get) == Some("true"))
}

/// Whether any `"isError"` in `text` (at any depth) is followed by `: true`.
fn any_is_error_true(text: &str) -> bool {
    let bytes = text.as_bytes();
    IS_ERROR.find_iter(bytes).any(|at| {
        let rest = &bytes[at + 9..];
        let rest = rest.trim_ascii_start();
        rest.strip_prefix(b":")
            .is_some_and(|v| v.trim_ascii_start().starts_with(b"true"))
    })
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
        self.inner.held.metrics.render(&self.status())
    }

    fn content_type(&self) -> &'static str {
        CONTENT_TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(text: &str) -> CallOutcome {
        let raw = RawValue::from_string(text.to_owned()).map_err(|_| ClientError::Cancelled);
        outcome(&raw).0
    }

    #[test]
    fn only_a_top_level_is_error_true_counts_as_is_error() {
        assert_eq!(
            counted(r#"{"content":[],"isError": true}"#),
            CallOutcome::IsError
        );
        assert_eq!(
            counted(r#"{"content":[],"isError":false}"#),
            CallOutcome::Ok
        );
        assert_eq!(counted(r#"{"content":[]}"#), CallOutcome::Ok);
        let nested = r#"{"content":[],"structuredContent":{"isError":true}}"#;
        assert_eq!(counted(nested), CallOutcome::Ok);
        assert_eq!(counted(r#"{"\u0069sError":true}"#), CallOutcome::IsError);
    }
}
