//! The audit records of what hosts ask of upstreams (see [`crate::audit`]): who asked,
//! for what, how it ended, and the arguments as they came (the audit log's writer
//! redacts them, off the request's path).
//!
//! A record is begun where the request is known (its principal, session, request id and
//! trace) and finished where its answer is: a call going upstream carries its record in
//! its [`crate::metrics::CallMeter`], so that every way a call ends (an answer, a
//! failure, a timeout, the host going) finishes it once; a refusal before any upstream
//! is recorded where it is made.

use mcp_server::RequestContext;
use mcp_types::{codes, ErrorObject};
use serde_json::value::RawValue;

use crate::audit::{AuditLog, AuditOutcome, Field, Pending};
use crate::metrics::CallOutcome;

/// Why the gateway refused a request, as an audit record says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No such tool, prompt or resource.
    Unknown,
    /// There is one, but the principal's view hides it.
    View,
    /// The gateway's policy denies it.
    Policy,
    /// Its pinned definition changed, and the user did not allow the call.
    Pin,
    /// The user declined to confirm it (or could not be asked).
    ConfirmationDeclined,
    /// A rate limit was reached.
    RateLimited,
    /// The user must consent first.
    ConsentRequired,
    /// The request was malformed, or asked what the tool forbids (a task).
    Invalid,
}

impl Refusal {
    /// The `errorKind` written.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Refusal::Unknown => "unknown",
            Refusal::View => "view",
            Refusal::Policy => "policy",
            Refusal::Pin => "pin",
            Refusal::ConfirmationDeclined => "confirmation_declined",
            Refusal::RateLimited => "rate_limited",
            Refusal::ConsentRequired => "consent_required",
            Refusal::Invalid => "invalid",
        }
    }
}

/// One request on its way, with what its record will say: finished once, by
/// [`Audited::finish`]. Small (its texts are in storage the log lends), so a call's meter
/// carries it without a box of its own.
#[derive(Debug)]
pub(crate) struct Audited(Pending);

/// A record of `method` for `name` as the host of `ctx` asked it: who, when, which
/// request. `None` when nothing is audited.
pub(crate) fn begin(
    log: Option<&AuditLog>,
    ctx: &RequestContext,
    method: &'static str,
    name: &str,
) -> Option<Audited> {
    use std::fmt::Write;
    let mut p = log?.pending(method);
    if let Some(principal) = ctx.principal() {
        p.principal();
        p.set(Field::Subject, &principal.subject);
        if let Some(credential) = &principal.credential {
            p.set(Field::Credential, credential);
        }
        if let Some(issuer) = principal.issuer() {
            p.set(Field::Issuer, issuer);
        }
    }
    if let Some(h) = ctx.host_session() {
        let id = h.id().get();
        p.set_with(Field::Session, |t| {
            let _ = write!(t, "{id}");
        });
    }
    if let Some(id) = ctx.request_id() {
        p.set_with(Field::Request, |t| {
            let _ = write!(t, "{id}");
        });
    }
    if let Some(trace) = ctx.trace_context() {
        p.set(Field::Trace, trace.trace_id());
    }
    p.set(Field::Name, name);
    Some(Audited(p))
}

impl Audited {
    /// It goes to `upstream`, which knows it as `upstream_name`.
    pub(crate) fn routed(&mut self, upstream: &str, upstream_name: &str) {
        self.0.set(Field::Upstream, upstream);
        self.0.set(Field::UpstreamName, upstream_name);
    }

    /// Its arguments, as the host wrote them (their size is the request's).
    pub(crate) fn arguments(&mut self, arguments: Option<&RawValue>) {
        self.0
            .request_bytes(arguments.map_or(0, |a| a.get().len() as u64));
        if let Some(a) = arguments {
            self.0.set(Field::Arguments, a.get());
        }
    }

    /// It ended as `outcome` (for the reason `kind`, if it failed), with an answer of
    /// `response_bytes`: the record goes to the log.
    pub(crate) fn finish(
        self,
        outcome: AuditOutcome,
        kind: Option<&str>,
        message: Option<&str>,
        response_bytes: usize,
    ) {
        self.0.finish(outcome, kind, message, response_bytes as u64);
    }

    /// Not recorded: another round of the same request will be.
    pub(crate) fn discard(self) {}

    /// The gateway refused it, for `why`, answering `error`.
    pub(crate) fn refused(self, why: Refusal, error: &ErrorObject) {
        self.finish(
            AuditOutcome::Refused,
            Some(why.as_str()),
            Some(&error.message),
            0,
        );
    }

    /// It went upstream and ended as the metrics count `outcome`, the upstream (or
    /// the connection) saying `said` if it failed.
    pub(crate) fn counted(self, outcome: CallOutcome, response_bytes: usize, said: Option<&str>) {
        let (audit, kind) = match outcome {
            CallOutcome::Ok => (AuditOutcome::Ok, None),
            CallOutcome::IsError => (AuditOutcome::IsError, None),
            CallOutcome::Error => (AuditOutcome::Error, Some("upstream_error")),
            CallOutcome::Timeout => (AuditOutcome::Error, Some("timeout")),
            CallOutcome::Cancelled => (AuditOutcome::Error, Some("cancelled")),
            _ => (AuditOutcome::Error, Some("upstream_unavailable")),
        };
        let said = said.filter(|_| audit == AuditOutcome::Error);
        self.finish(audit, kind, said, response_bytes);
    }
}

/// Why an error answered instead of a result was a refusal, by its code: a rate limit,
/// a consent to give first, else a request the gateway could not take. (What a tool's
/// route refuses, unknown, hidden or denied, the gates tell from the catalog.)
pub(crate) fn refusal_of(error: &ErrorObject) -> Refusal {
    match error.code {
        codes::RATE_LIMITED => Refusal::RateLimited,
        codes::URL_ELICITATION_REQUIRED => Refusal::ConsentRequired,
        _ => Refusal::Invalid,
    }
}
