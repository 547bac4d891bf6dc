//! A `tracing` span per host request (`mcp.request`: method, id, the host's revision,
//! for a `tools/call` the tool, and at the end the outcome), so what a handler logs and
//! the spans it opens (a relay's upstream call) sit under the request they serve. A
//! subscriber that does not want INFO spans makes them cost a check of its level.

use std::sync::OnceLock;

use mcp_types::raw::RawObject;
use mcp_types::{ErrorObject, RequestId, Revision};
use tracing::field::Empty;
use tracing::Span;

use crate::TraceContext;

/// Makes a request's span part of the trace the request carries: what an OpenTelemetry
/// layer installs (`tracing_opentelemetry`'s `set_parent`), so the span exported is a
/// child of the host's. See [`on_request_span`].
pub type SpanParent = fn(&Span, &TraceContext);

static PARENT: OnceLock<SpanParent> = OnceLock::new();

/// Installs `hook`, called with each `mcp.request` span and the trace context of its
/// request (`_meta`'s `traceparent`/`tracestate`, or a 2026-07-28 request's headers)
/// before the request is handled. Once per process; `false` if one was installed before.
/// Without one, a request with a trace context costs nothing more.
pub fn on_request_span(hook: SpanParent) -> bool {
    PARENT.set(hook).is_ok()
}

/// Whether a hook is installed (so the trace context is worth reading for it).
pub(crate) fn joins_traces() -> bool {
    PARENT.get().is_some()
}

/// Hands `span` and `trace` to the installed hook, if any.
pub(crate) fn join(span: &Span, trace: Option<&TraceContext>) {
    if let (Some(hook), Some(trace)) = (PARENT.get(), trace) {
        if !span.is_disabled() {
            hook(span, trace);
        }
    }
}

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
