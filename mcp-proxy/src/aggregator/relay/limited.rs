//! The rate-limit gate: a call takes a token from each bucket it is under
//! ([`crate::limits::RateLimits`]) before it goes upstream. Buckets kept in this process
//! are decided where the call arrives; buckets kept elsewhere (the replicas' store) make
//! the call wait for their answer, on a task.

use mcp_server::RequestContext;
use mcp_types::{codes, ErrorObject};

use super::Relay;
use crate::limits::LimitError;

/// The metric's scope for a call refused because the shared store could not say whether
/// a limit was reached (`whenStoreDown: closed`).
const STORE_UNAVAILABLE: &str = "store_unavailable";

/// What the rate-limit gate said of a call where it arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Limit {
    /// Under no limit, or its tokens are taken.
    Passed,
    /// Its buckets are kept elsewhere: asked before it goes upstream.
    Ask,
}

/// The key a principal's bucket is kept under: readable in a refusal's `data` and in
/// the store, and apart for principals of different authorities (an API key's name, a
/// token's issuer and subject).
pub(super) fn principal_key(ctx: &RequestContext) -> Option<String> {
    let p = ctx.principal()?;
    Some(match (&p.credential, p.issuer()) {
        (Some(key), _) => format!("key:{key}"),
        (None, Some(iss)) => format!("{iss}#{}", p.subject),
        (None, None) => p.subject.clone(),
    })
}

/// The refusal a host gets for `e`: `-32029` with `data` saying which limit and when
/// to retry (over HTTP, where the request is answered alone, `429` with `Retry-After`).
pub(super) fn refusal(e: &LimitError) -> ErrorObject {
    match e {
        LimitError::Limited(l) => {
            let mut err = ErrorObject::new(codes::RATE_LIMITED, format!("Rate limited: {l}"));
            err.data = Some(l.data());
            err
        }
        other => ErrorObject::new(codes::INTERNAL_ERROR, format!("Unavailable: {other}")),
    }
}

impl Relay {
    /// The gate where the call to tool `exposed` of upstream `upstream` arrives.
    pub(super) fn limit_now(
        &self,
        ctx: &RequestContext,
        upstream: &str,
        exposed: &str,
    ) -> Result<Limit, ErrorObject> {
        let Some(limits) = &self.limits else {
            return Ok(Limit::Passed);
        };
        if !limits.applies(upstream, exposed) {
            return Ok(Limit::Passed);
        }
        let who = principal_key(ctx);
        match limits.take_now(who.as_deref(), upstream, exposed) {
            None => Ok(Limit::Ask),
            Some(Ok(())) => Ok(Limit::Passed),
            Some(Err(e)) => Err(self.limited(&e)),
        }
    }

    /// The gate for a call whose buckets are kept elsewhere, before it goes upstream.
    pub(super) async fn limit(
        &self,
        ctx: &RequestContext,
        upstream: &str,
        exposed: &str,
    ) -> Result<(), ErrorObject> {
        let Some(limits) = &self.limits else {
            return Ok(());
        };
        let who = principal_key(ctx);
        limits
            .take(who.as_deref(), upstream, exposed)
            .await
            .map_err(|e| self.limited(&e))
    }

    /// `e`, counted and answered.
    fn limited(&self, e: &LimitError) -> ErrorObject {
        let scope = match e {
            LimitError::Limited(l) => l.scope.as_str(),
            LimitError::StoreUnavailable { .. } => STORE_UNAVAILABLE,
        };
        self.metrics.rate_limited(scope);
        refusal(e)
    }
}
