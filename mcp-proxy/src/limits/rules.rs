//! [`RateLimits`]: which buckets a call takes a token from (its principal's, its
//! upstream's, its tool's) and where they are kept.

use std::collections::HashMap;
use std::sync::Arc;

use super::{LimitError, LimitKey, Limiter, LocalLimiter, Rate, SharedLimiter, StoreDown};
use crate::store::StateStore;

/// Where the buckets are kept.
#[derive(Clone)]
enum Keeper {
    /// In this process: decided where the call arrives, without waiting.
    Local(Arc<LocalLimiter>),
    /// Elsewhere (a store the replicas share, a limiter of the embedder's own): asked
    /// before the call goes upstream.
    Remote(Arc<dyn Limiter>),
}

/// The rate limits calls are held to (see [`crate::limits`]): each principal's own rate,
/// each upstream's and each tool's (all callers together), kept in this process
/// ([`RateLimits::new`]) or shared by replicas ([`RateLimits::shared`]). A call takes one
/// token from each bucket it is under, principal first; the first one empty refuses it.
///
/// ```
/// use mcp_proxy::limits::{Rate, RateLimits};
/// let limits = RateLimits::new()
///     .per_principal(Rate::per_second(10.0))
///     .upstream("github", Rate::per_second(50.0))
///     .tool("github__create_issue", Rate::per_second(1.0).burst(5));
/// assert!(!limits.is_empty());
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct RateLimits {
    principal: Option<Rate>,
    upstreams: HashMap<String, Rate>,
    tools: HashMap<String, Rate>,
    keeper: Keeper,
}

impl std::fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimits")
            .field("principal", &self.principal)
            .field("upstreams", &self.upstreams)
            .field("tools", &self.tools)
            .field("shared", &matches!(self.keeper, Keeper::Remote(_)))
            .finish()
    }
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits::new()
    }
}

impl RateLimits {
    /// No limits yet, kept in this process.
    pub fn new() -> Self {
        RateLimits::kept_by(Keeper::Local(Arc::new(LocalLimiter::new())))
    }

    /// No limits yet, kept in `store`, shared with every replica using it; while it
    /// cannot answer, calls go as `down` says.
    pub fn shared(store: Arc<dyn StateStore>, down: StoreDown) -> Self {
        RateLimits::with_limiter(Arc::new(SharedLimiter::new(store, down)))
    }

    /// No limits yet, kept by `limiter` (one of the embedder's own).
    pub fn with_limiter(limiter: Arc<dyn Limiter>) -> Self {
        RateLimits::kept_by(Keeper::Remote(limiter))
    }

    fn kept_by(keeper: Keeper) -> Self {
        RateLimits {
            principal: None,
            upstreams: HashMap::new(),
            tools: HashMap::new(),
            keeper,
        }
    }

    /// Each principal (a token's subject, an API key, the stdio user) at `rate`, across
    /// everything it calls; a host without a principal counts as one principal.
    #[must_use]
    pub fn per_principal(mut self, rate: Rate) -> Self {
        self.principal = Some(rate);
        self
    }

    /// The upstream configured as `key` at `rate`, all callers together.
    #[must_use]
    pub fn upstream(mut self, key: impl Into<String>, rate: Rate) -> Self {
        self.upstreams.insert(key.into(), rate);
        self
    }

    /// The tool hosts call `exposed` at `rate`, all callers together.
    #[must_use]
    pub fn tool(mut self, exposed: impl Into<String>, rate: Rate) -> Self {
        self.tools.insert(exposed.into(), rate);
        self
    }

    /// Whether it limits nothing.
    pub fn is_empty(&self) -> bool {
        self.principal.is_none() && self.upstreams.is_empty() && self.tools.is_empty()
    }

    /// The buckets a call of `principal` (its identity) to tool `exposed` of `upstream`
    /// takes from, principal first.
    fn buckets(
        &self,
        principal: Option<&str>,
        upstream: &str,
        exposed: &str,
    ) -> Vec<(LimitKey, Rate)> {
        let mut out = Vec::new();
        if let Some(rate) = self.principal {
            out.push((LimitKey::principal(principal.unwrap_or("anonymous")), rate));
        }
        if let Some(rate) = self.upstreams.get(upstream) {
            out.push((LimitKey::upstream(upstream), *rate));
        }
        if let Some(rate) = self.tools.get(exposed) {
            out.push((LimitKey::new(super::LimitScope::Tool, exposed), *rate));
        }
        out
    }

    /// Takes the call's tokens in this process; `None` when its buckets are kept elsewhere
    /// ([`RateLimits::take`] then).
    pub(crate) fn take_now(
        &self,
        principal: Option<&str>,
        upstream: &str,
        exposed: &str,
    ) -> Option<Result<(), LimitError>> {
        let Keeper::Local(local) = &self.keeper else {
            return None;
        };
        let buckets = self.buckets(principal, upstream, exposed);
        for (i, (key, rate)) in buckets.iter().enumerate() {
            if let Err(refused) = local.take_now(key, *rate) {
                // The call does not go: what it took from the buckets before is put back.
                for (key, _) in &buckets[..i] {
                    local.give_back_now(key);
                }
                return Some(Err(refused.into()));
            }
        }
        Some(Ok(()))
    }

    /// Takes the call's tokens wherever its buckets are kept.
    pub(crate) async fn take(
        &self,
        principal: Option<&str>,
        upstream: &str,
        exposed: &str,
    ) -> Result<(), LimitError> {
        let limiter: &dyn Limiter = match &self.keeper {
            Keeper::Local(l) => l.as_ref(),
            Keeper::Remote(r) => r.as_ref(),
        };
        let buckets = self.buckets(principal, upstream, exposed);
        for (i, (key, rate)) in buckets.iter().enumerate() {
            if let Err(refused) = limiter.take(key, *rate).await {
                for (key, rate) in &buckets[..i] {
                    limiter.give_back(key, *rate).await;
                }
                return Err(refused);
            }
        }
        Ok(())
    }

    /// Whether a call to tool `exposed` of `upstream` is under any limit.
    pub(crate) fn applies(&self, upstream: &str, exposed: &str) -> bool {
        self.principal.is_some()
            || self.upstreams.contains_key(upstream)
            || self.tools.contains_key(exposed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_takes_from_its_principals_its_upstreams_and_its_tools_bucket() {
        let limits = RateLimits::new()
            .per_principal(Rate::per_second(1.0))
            .upstream("up", Rate::per_second(2.0).burst(2))
            .tool("up__t", Rate::per_second(1.0).burst(3));
        let b = limits.buckets(Some("alice"), "up", "up__t");
        let keys: Vec<String> = b.iter().map(|(k, _)| k.to_string()).collect();
        assert_eq!(keys, ["principal alice", "upstream up", "tool up__t"]);
        assert_eq!(limits.buckets(None, "other", "x").len(), 1);
        assert!(limits
            .take_now(Some("alice"), "up", "up__t")
            .is_some_and(|r| r.is_ok()));
        // Alice's bucket (burst 1) is empty; Bob's is not, and takes the upstream's second.
        assert!(matches!(
            limits.take_now(Some("alice"), "up", "up__t"),
            Some(Err(LimitError::Limited(l))) if l.key == "alice"
        ));
        assert!(limits
            .take_now(Some("bob"), "up", "other")
            .is_some_and(|r| r.is_ok()));
        assert!(matches!(
            limits.take_now(Some("carol"), "up", "other"),
            Some(Err(LimitError::Limited(l))) if l.key == "up"
        ));
        assert!(!RateLimits::new().applies("up", "t"));
        assert!(RateLimits::new()
            .tool("t", Rate::per_second(1.0))
            .applies("up", "t"));
    }

    /// Alice may make two calls (ever, near enough), one of them to `up__t`.
    fn two_calls_one_to_t(limits: RateLimits) -> RateLimits {
        limits
            .per_principal(Rate::per_second(0.001).burst(2))
            .tool("up__t", Rate::per_second(0.001).burst(1))
    }

    fn refused_by(r: Option<Result<(), LimitError>>) -> Option<String> {
        match r {
            Some(Err(LimitError::Limited(l))) => Some(l.key),
            _ => None,
        }
    }

    #[test]
    fn a_call_a_later_bucket_refuses_puts_back_what_it_took_from_the_earlier() {
        let limits = two_calls_one_to_t(RateLimits::new());
        assert!(limits.take_now(Some("alice"), "up", "up__t") == Some(Ok(())));
        // The tool's bucket is empty: each refusal puts Alice's token back.
        for _ in 0..5 {
            let r = limits.take_now(Some("alice"), "up", "up__t");
            assert_eq!(refused_by(r).as_deref(), Some("up__t"));
        }
        assert!(limits.take_now(Some("alice"), "up", "other") == Some(Ok(())));
        let r = limits.take_now(Some("alice"), "up", "other");
        assert_eq!(refused_by(r).as_deref(), Some("alice"));
    }

    #[tokio::test]
    async fn shared_buckets_are_put_back_too() {
        let store: Arc<dyn StateStore> = Arc::new(crate::store::MemoryStore::new());
        let limits = two_calls_one_to_t(RateLimits::shared(store, StoreDown::Closed));
        let take = |tool: &'static str| limits.take(Some("alice"), "up", tool);
        assert!(take("up__t").await.is_ok());
        for _ in 0..5 {
            let r = take("up__t").await;
            assert!(
                matches!(r, Err(LimitError::Limited(ref l)) if l.key == "up__t"),
                "{r:?}"
            );
        }
        assert!(take("other").await.is_ok());
        let r = take("other").await;
        assert!(
            matches!(r, Err(LimitError::Limited(ref l)) if l.key == "alice"),
            "{r:?}"
        );
    }
}
