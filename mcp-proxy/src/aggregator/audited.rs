//! The audit records of what hosts ask of upstreams (see [`crate::audit`]): who asked,
//! for what, how it ended, and the arguments as they came (the audit log's writer
//! redacts them, off the request's path).
//!
//! A record is begun where the request is known (its principal, session, request id and
//! trace) and finished where its answer is: a call going upstream carries its record in
//! its [`crate::metrics::CallMeter`], so that every way a call ends (an answer, a
//! failure, a timeout, the host going) finishes it once; a refusal before any upstream
//! is recorded where it is made.

use std::time::Instant;

use mcp_server::RequestContext;
use mcp_types::{codes, ErrorObject};
use serde_json::value::RawValue;

use crate::audit::{AuditLog, AuditOutcome, AuditPrincipal, AuditRecord};
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

/// One request on its way, with its record: finished once, by [`Audited::finish`].
#[derive(Debug)]
pub(crate) struct Audited {
    log: AuditLog,
    record: AuditRecord,
    start: Instant,
}

/// A record of `method` for `name` as the host of `ctx` asked it: who, when, which
/// request. `None` when nothing is audited.
pub(crate) fn begin(
    log: Option<&AuditLog>,
    ctx: &RequestContext,
    method: &str,
    name: &str,
) -> Option<Audited> {
    let log = log?;
    let mut record = AuditRecord::new(method);
    record.principal = ctx.principal().map(|p| AuditPrincipal {
        subject: Some(p.subject.clone()),
        credential: p.credential.clone(),
        issuer: p.issuer().map(str::to_owned),
    });
    record.session = ctx.host_session().map(|h| h.id().get().to_string());
    record.request = ctx.request_id().map(ToString::to_string);
    record.trace = ctx.trace_context().map(|t| t.trace_id().to_owned());
    record.name = Some(name.to_owned());
    Some(Audited {
        log: log.clone(),
        record,
        start: Instant::now(),
    })
}

impl Audited {
    /// It goes to `upstream`, which knows it as `upstream_name`.
    pub(crate) fn routed(&mut self, upstream: &str, upstream_name: &str) {
        self.record.upstream = Some(upstream.to_owned());
        self.record.upstream_name = Some(upstream_name.to_owned());
    }

    /// Its arguments, as the host wrote them (their size is the request's).
    pub(crate) fn arguments(&mut self, arguments: Option<&RawValue>) {
        self.record.request_bytes = arguments.map_or(0, |a| a.get().len() as u64);
        self.record.arguments = arguments.map(|a| a.to_owned());
    }

    /// It ended as `outcome` (for the reason `kind`, if it failed), with an answer of
    /// `response_bytes`: the record goes to the log.
    pub(crate) fn finish(
        mut self,
        outcome: AuditOutcome,
        kind: Option<&str>,
        message: Option<&str>,
        response_bytes: usize,
    ) {
        self.record.outcome = outcome;
        self.record.error_kind = kind.map(str::to_owned);
        self.record.error_message = message.map(str::to_owned);
        self.record.duration = self.start.elapsed();
        self.record.response_bytes = response_bytes as u64;
        self.log.record(self.record);
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
