//! A `tracing` span per host request (`mcp.request`: method, id, the host's revision,
//! for a `tools/call` the tool, and at the end the outcome), so what a handler logs and
//! the spans it opens (a relay's upstream call) sit under the request they serve. A
//! subscriber that does not want INFO spans makes them cost a check of its level.

use mcp_types::raw::RawObject;
use mcp_types::{ErrorObject, RequestId, Revision};
use tracing::field::Empty;
use tracing::Span;

/// The span of request `id` for `method`, in `revision`.
pub(crate) fn request(method: &str, id: &RequestId, revision: Revision) -> Span {
    tracing::info_span!(
        "mcp.request",
        method = %method,
        id = %id,
        revision = %revision,
        tool = Empty,
        outcome = Empty,
    )
}

/// Names the tool a `tools/call`'s span is for (read only when the span is wanted).
pub(crate) fn tool(span: &Span, params: &RawObject<'_>) {
    if span.is_disabled() {
        return;
    }
    if let Some(name) = params.get_str("name") {
        span.record("tool", &*name);
    }
}

/// Says how the request ended: `ok`, or `error` with the JSON-RPC error's code.
pub(crate) fn outcome<T>(span: &Span, answer: &Result<T, ErrorObject>) {
    if span.is_disabled() {
        return;
    }
    match answer {
        Ok(_) => span.record("outcome", "ok"),
        Err(e) => span.record(
            "outcome",
            tracing::field::display(format_args!("error {}", e.code)),
        ),
    };
}
