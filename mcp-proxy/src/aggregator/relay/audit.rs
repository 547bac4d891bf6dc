//! The call relay's audit records (see [`crate::aggregator::audited`]): one per host
//! `tools/call` that names a tool. A call relayed without a task carries its record in
//! its meter; one driven on a task is recorded with its final answer, so that a question
//! asked on the way or a retry is not a record of its own; a refusal is recorded where a
//! gate makes it.

use mcp_server::{Outcome, RawResult, RequestContext};
use mcp_types::protocol::method;
use mcp_types::raw::RawObject;
use mcp_types::{codes, ErrorObject};

use super::Relay;
use crate::aggregator::audited::{self, Audited, Refusal};
use crate::aggregator::metered;
use crate::aggregator::route::Route;
use crate::aggregator::visibility::Seen;
use crate::audit::AuditOutcome;
use mcp_revisions::features;

impl Relay {
    /// The record of a call to the tool hosts know as `name`, going to `route`, with
    /// the arguments of `params`; `None` when calls are not audited.
    pub(super) fn audit_call(
        &self,
        ctx: &RequestContext,
        route: &Route,
        name: &str,
        params: &RawObject<'_>,
    ) -> Option<Audited> {
        let mut a = audited::begin(self.audit.as_ref(), ctx, method::TOOLS_CALL, name)?;
        a.routed(self.pool().key(route.upstream), &route.tool.name);
        a.arguments(params.get("arguments"));
        Some(a)
    }

    /// Records a call to `name` the gates refused with `error`, for a principal that
    /// sees `seen`: a tool its view hides is recorded as such, though the host was told
    /// it does not exist.
    pub(super) fn audit_refusal(
        &self,
        ctx: &RequestContext,
        seen: &Seen<'_>,
        name: &str,
        params: &RawObject<'_>,
        error: &ErrorObject,
    ) {
        let Some(mut a) = audited::begin(self.audit.as_ref(), ctx, method::TOOLS_CALL, name) else {
            return;
        };
        a.arguments(params.get("arguments"));
        let route = self.own.host_route(ctx, name);
        // Of the gates, only the route answers invalid params: the tool is unknown to
        // this principal, and the catalog says why.
        let why = match error.code {
            codes::INVALID_PARAMS if self.catalog.denied_upstream(name).is_some() => {
                Refusal::Policy
            }
            codes::INVALID_PARAMS
                if route
                    .as_ref()
                    .is_some_and(|r| !seen.sees_tool(r.upstream, name)) =>
            {
                Refusal::View
            }
            codes::INVALID_PARAMS => Refusal::Unknown,
            _ => audited::refusal_of(error),
        };
        if let Some(r) = &route {
            a.routed(self.pool().key(r.upstream), &r.tool.name);
        }
        a.refused(why, error);
    }
}

/// Finishes `a`, the record of a call driven on a task, with its final `answer`, for a
/// host of revision `host`; `why`: the gate that answered instead of the upstream, if one
/// did. A question to a legacy host is no answer: its session asks the host and runs the
/// call again with the answers, in the same request, whose last round is recorded.
pub(super) fn finish_driven(
    a: Audited,
    answer: &Result<Outcome<RawResult>, ErrorObject>,
    why: Option<Refusal>,
    host: mcp_types::Revision,
) {
    match (answer, why) {
        (Ok(Outcome::InputRequired(_)), _) if !features::input_required_results(host) => {
            a.discard();
        }
        (Ok(Outcome::InputRequired(_)), _) => a.finish(AuditOutcome::InputRequired, None, None, 0),
        (Ok(Outcome::Task(_)), _) => a.finish(AuditOutcome::Task, None, None, 0),
        (Ok(Outcome::Complete(r)), Some(why)) => a.finish(
            AuditOutcome::Refused,
            Some(why.as_str()),
            None,
            r.body.get().len(),
        ),
        (Ok(Outcome::Complete(r)), None) => {
            let escapes = mcp_types::raw::has_key_escapes(r.body.get());
            let outcome = match metered::is_error(&r.body, escapes) {
                true => AuditOutcome::IsError,
                false => AuditOutcome::Ok,
            };
            a.finish(outcome, None, None, r.body.get().len());
        }
        (Err(e), Some(why)) => a.refused(why, e),
        (Err(e), None) => match audited::refusal_of(e) {
            Refusal::ConsentRequired => a.refused(Refusal::ConsentRequired, e),
            _ => a.finish(
                AuditOutcome::Error,
                Some("upstream_error"),
                Some(&e.message),
                0,
            ),
        },
    }
}
