//! What a host reads through the gateway besides calling tools: a prompt
//! (`prompts/get`) and a resource (`resources/read`), from the upstream that lists it,
//! each recorded in the audit log when there is one.

use mcp_server::{Outcome, RequestContext};
use mcp_types::protocol::*;
use mcp_types::{codes, ErrorObject};
use serde::Serialize;
use serde_json::json;

use super::answers::{forward_meta, resource_not_found, strip_hop_meta};
use super::audited::{self, Audited, Refusal};
use super::Aggregator;
use crate::audit::AuditOutcome;

impl Aggregator {
    /// `prompts/get` of the prompt hosts know as `p.name`.
    pub(super) async fn prompt(
        &self,
        ctx: &RequestContext,
        p: GetPromptRequestParams,
    ) -> Result<Outcome<GetPromptResult>, ErrorObject> {
        let audit = self.inner.options.audit.as_ref();
        let mut audit = audited::begin(audit, ctx, method::PROMPTS_GET, &p.name);
        let found = self
            .inner
            .own
            .prompt_entries_for(ctx)
            .into_iter()
            .find(|(e, i, _)| *e == p.name && self.inner.visibility.seen(ctx).reaches(*i));
        let Some((_, i, prompt)) = found else {
            let e = ErrorObject::new(codes::INVALID_PARAMS, format!("Unknown prompt: {}", p.name));
            return Err(unknown(audit, e));
        };
        if let Some(a) = &mut audit {
            a.routed(self.inner.pool.key(i), &prompt.name);
            let arguments = p
                .arguments
                .as_ref()
                .and_then(|a| serde_json::value::to_raw_value(a).ok());
            a.arguments(arguments.as_deref());
        }
        let params = GetPromptRequestParams {
            name: prompt.name.clone(),
            arguments: p.arguments,
            meta: forward_meta(p.meta),
            ..Default::default()
        };
        let out = self
            .inner
            .relay
            .flights()
            .relay_typed(
                ctx,
                i,
                method::PROMPTS_GET,
                json!(params),
                |r: &mut GetPromptResult| {
                    strip_hop_meta(&mut r.meta);
                    r.result_type = None;
                },
            )
            .await;
        finish(audit, &out);
        out
    }

    /// `resources/read` of `p.uri`, from the upstream whose resource (or template) it is.
    pub(super) async fn resource(
        &self,
        ctx: &RequestContext,
        p: ResourceRequestParams,
    ) -> Result<Outcome<ReadResourceResult>, ErrorObject> {
        let audit = self.inner.options.audit.as_ref();
        let mut audit = audited::begin(audit, ctx, method::RESOURCES_READ, &p.uri);
        let owner = self.inner.own.owner_of_resource(ctx, &p.uri).and_then(|i| {
            match self.inner.visibility.seen(ctx).reaches(i) {
                true => Ok(i),
                false => Err(resource_not_found(&p.uri)),
            }
        });
        let i = owner.map_err(|e| unknown(audit.take(), e))?;
        if let Some(a) = &mut audit {
            a.routed(self.inner.pool.key(i), &p.uri);
        }
        let params = ResourceRequestParams {
            uri: p.uri.clone(),
            meta: forward_meta(p.meta),
            ..Default::default()
        };
        let out = self
            .inner
            .relay
            .flights()
            .relay_typed(
                ctx,
                i,
                method::RESOURCES_READ,
                json!(params),
                |r: &mut ReadResourceResult| {
                    strip_hop_meta(&mut r.meta);
                    // The gateway sets its own caching hints for its hosts.
                    r.ttl_ms = None;
                    r.cache_scope = None;
                    r.result_type = None;
                },
            )
            .await;
        finish(audit, &out);
        out
    }
}

/// `e`, the answer to a request for what the host does not see, recorded in `audit`.
fn unknown(audit: Option<Audited>, e: ErrorObject) -> ErrorObject {
    if let Some(a) = audit {
        a.refused(Refusal::Unknown, &e);
    }
    e
}

/// Finishes `audit` with the answer `out`.
fn finish<T: Serialize>(audit: Option<Audited>, out: &Result<Outcome<T>, ErrorObject>) {
    let Some(a) = audit else {
        return;
    };
    match out {
        Ok(Outcome::Complete(r)) => {
            let bytes = serde_json::to_string(r).map_or(0, |s| s.len());
            a.finish(AuditOutcome::Ok, None, None, bytes);
        }
        Ok(Outcome::InputRequired(_)) => a.finish(AuditOutcome::InputRequired, None, None, 0),
        Ok(Outcome::Task(_)) => a.finish(AuditOutcome::Task, None, None, 0),
        Err(e) => match audited::refusal_of(e) {
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
