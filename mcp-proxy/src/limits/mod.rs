//! Rate limits: token buckets per principal, upstream and tool.
//!
//! A [`Rate`] is a bucket's shape: filled at `per_second`, holding at most `burst` tokens,
//! full when first used; each call takes one token or is refused ([`RateLimited`], saying
//! how long until a token will be there). Buckets are kept by a [`Limiter`]:
//!
//! - [`LocalLimiter`]: in this process, synchronously ([`LocalLimiter::take_now`]), for one
//!   replica (or limits each replica enforces on its own);
//! - [`SharedLimiter`]: in the [`StateStore`](crate::store::StateStore) the replicas share
//!   ([`take_token`](crate::store::StateStore::take_token)), so that N replicas enforce one
//!   bucket; what happens while the store cannot answer is its [`StoreDown`].
//!
//! Both use GCRA (the generic cell rate algorithm, a token bucket kept as one number: the
//! time at which it will be full again) — see [`TokenBucket`].

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::store::StoreError;

pub(crate) mod bucket;
mod local;
// The gateway's rules over these (written by whoever wires limits into the call gates).
mod rules;
mod shared;

pub use bucket::TokenBucket;
pub use local::LocalLimiter;
pub use rules::RateLimits;
pub use shared::{SharedLimiter, StoreDown};

/// A bucket's shape: refilled at `per_second` tokens a second, holding at most `burst`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Rate {
    /// Tokens added a second: positive and finite.
    pub per_second: f64,
    /// The most tokens the bucket holds (calls that may come at once): at least 1.
    pub burst: u32,
}

/// A rate that is not one (see [`Rate::try_per_second`]).
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("a rate limit must be a positive, finite number of calls per second, not {0}")]
pub struct InvalidRate(pub f64);

impl Rate {
    /// `per_second` tokens a second, a burst of `ceil(per_second)` (at least 1): a second's
    /// worth may come at once.
    ///
    /// # Panics
    ///
    /// When `per_second` is not positive and finite, as [`Duration::from_secs_f64`] does:
    /// for rates written in code. A rate read from configuration goes through
    /// [`Rate::try_per_second`].
    pub fn per_second(per_second: f64) -> Rate {
        match Rate::try_per_second(per_second) {
            Ok(rate) => rate,
            Err(e) => panic!("{e}"),
        }
    }

    /// `per_second` tokens a second (a burst as [`Rate::per_second`] says), or why it is
    /// not a rate.
    pub fn try_per_second(per_second: f64) -> Result<Rate, InvalidRate> {
        if !(per_second > 0.0 && per_second.is_finite()) {
            return Err(InvalidRate(per_second));
        }
        // `as` saturates: a rate past u32::MAX a second gets the largest burst.
        let burst = (per_second.ceil() as u32).max(1);
        Ok(Rate { per_second, burst })
    }

    /// With a burst of `burst` (0 is taken as 1: a bucket that holds nothing would refuse
    /// every call, which is no rate).
    #[must_use]
    pub fn burst(mut self, burst: u32) -> Rate {
        self.burst = burst.max(1);
        self
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let calls = if self.per_second == 1.0 {
            "call"
        } else {
            "calls"
        };
        write!(f, "{} {calls} per second", self.per_second)
    }
}

/// What a limit is kept per.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LimitScope {
    /// A principal (the caller, by its identity), across everything it calls.
    Principal,
    /// An upstream, across every caller.
    Upstream,
    /// One tool of one upstream, across every caller.
    Tool,
}

impl LimitScope {
    /// Its name in messages, metrics and the JSON-RPC error's `data`.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitScope::Principal => "principal",
            LimitScope::Upstream => "upstream",
            LimitScope::Tool => "tool",
        }
    }
}

impl fmt::Display for LimitScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whose bucket: a scope, and who in it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct LimitKey {
    /// What the limit is kept per.
    pub scope: LimitScope,
    /// Who: the principal's identity, the upstream's key, or `upstream/tool`.
    pub key: String,
}

impl LimitKey {
    /// `key` in `scope`.
    pub fn new(scope: LimitScope, key: impl Into<String>) -> LimitKey {
        LimitKey {
            scope,
            key: key.into(),
        }
    }

    /// The principal whose identity is `identity`.
    pub fn principal(identity: impl Into<String>) -> LimitKey {
        LimitKey::new(LimitScope::Principal, identity)
    }

    /// The upstream `upstream` (its configured key).
    pub fn upstream(upstream: impl Into<String>) -> LimitKey {
        LimitKey::new(LimitScope::Upstream, upstream)
    }

    /// Tool `tool` of upstream `upstream`: `upstream/tool`.
    pub fn tool(upstream: &str, tool: &str) -> LimitKey {
        LimitKey::new(LimitScope::Tool, format!("{upstream}/{tool}"))
    }

    /// Its key in a state store: `scope:key` (the scope first, so that a principal and an
    /// upstream of the same name are two buckets).
    pub(crate) fn store_key(&self) -> String {
        format!("{}:{}", self.scope.as_str(), self.key)
    }
}

impl fmt::Display for LimitKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.scope, self.key)
    }
}

/// A call refused by a rate limit: whose, which limit, and how long until a token will be
/// there.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RateLimited {
    /// What the limit is kept per.
    pub scope: LimitScope,
    /// Who in that scope.
    pub key: String,
    /// The limit reached.
    pub limit: Rate,
    /// How long until the bucket has a token again (a call made then is taken, unless
    /// another took it first).
    pub retry_after: Duration,
}

impl RateLimited {
    /// `key` reached `limit`; a token is there again after `retry_after`.
    pub fn new(key: &LimitKey, limit: Rate, retry_after: Duration) -> RateLimited {
        RateLimited {
            scope: key.scope,
            key: key.key.clone(),
            limit,
            retry_after,
        }
    }

    /// `retry_after` in whole seconds, rounded up and at least 1: an HTTP `Retry-After`
    /// header (a client told 0 would retry at once, and be refused again).
    pub fn retry_after_seconds(&self) -> u64 {
        let d = self.retry_after;
        (d.as_secs() + u64::from(d.subsec_nanos() > 0)).max(1)
    }

    /// The JSON-RPC error's `data`: `{"limit": "principal", "key": "alice", "perSecond": 10,
    /// "burst": 1, "retryAfterMs": 100}` (`retryAfterMs` rounded up, so that a client
    /// waiting that long finds a token).
    pub fn data(&self) -> Value {
        let per_second = self.limit.per_second;
        // A whole rate is written as an integer (10, not 10.0), as a configuration says it.
        let per_second = if per_second.fract() == 0.0 && per_second < 9.0e15 {
            json!(per_second as u64)
        } else {
            json!(per_second)
        };
        let nanos = self.retry_after.as_nanos();
        let ms = u64::try_from(nanos.div_ceil(1_000_000)).unwrap_or(u64::MAX);
        json!({
            "limit": self.scope.as_str(),
            "key": self.key,
            "perSecond": per_second,
            "burst": self.limit.burst,
            "retryAfterMs": ms,
        })
    }
}

impl fmt::Display for RateLimited {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rate limit of {} for {} {} reached; retry in {} s",
            self.limit,
            self.scope,
            self.key,
            seconds(self.retry_after)
        )
    }
}

impl std::error::Error for RateLimited {}

/// `d` in seconds, to the millisecond, rounded up and without trailing zeros: `0.1`, `2`,
/// `0.001` (never `0` for a wait that is not none).
fn seconds(d: Duration) -> String {
    let ms = d.as_nanos().div_ceil(1_000_000);
    let (whole, frac) = (ms / 1000, ms % 1000);
    if frac == 0 {
        return whole.to_string();
    }
    let frac = format!("{frac:03}");
    format!("{whole}.{}", frac.trim_end_matches('0'))
}

/// Why a [`Limiter`] did not let a call through.
///
/// Apart from [`RateLimited`] (kept simple: it is what a client is told) because a store
/// that cannot answer is not the caller's doing: the gateway answers it as a JSON-RPC
/// internal error saying the limit could not be checked, as any failure to serve the
/// call, never as too many requests (`-32029`, `429`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitError {
    /// The limit is reached.
    #[error(transparent)]
    Limited(RateLimited),
    /// The shared store could not say whether it is, and the limiter is [`StoreDown::Closed`].
    #[error("the rate limit for {key} could not be checked: {error}")]
    StoreUnavailable {
        /// Whose limit.
        key: LimitKey,
        /// What the store said.
        error: StoreError,
    },
}

impl From<RateLimited> for LimitError {
    fn from(limited: RateLimited) -> Self {
        LimitError::Limited(limited)
    }
}

/// Keeps buckets: takes a call's token, or says why not.
#[async_trait]
pub trait Limiter: Send + Sync + 'static {
    /// Takes one token from `key`'s bucket, shaped by `rate` (a bucket first used is full;
    /// one used before at another rate keeps what was taken from it).
    async fn take(&self, key: &LimitKey, rate: Rate) -> Result<(), LimitError>;

    /// Puts back a token [`Limiter::take`] took from `key`'s bucket, for a call that a
    /// later bucket refused: a call that does not go counts against no limit. Best effort
    /// (a store that cannot be reached keeps the token); by default nothing is put back.
    async fn give_back(&self, key: &LimitKey, rate: Rate) {
        let _ = (key, rate);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_is_positive_and_finite_and_bursts_a_seconds_worth() {
        assert_eq!(Rate::per_second(10.0).burst, 10);
        assert_eq!(Rate::per_second(0.5).burst, 1);
        assert_eq!(Rate::per_second(2.5).burst, 3);
        assert_eq!(Rate::per_second(1e300).burst, u32::MAX);
        assert_eq!(Rate::per_second(10.0).burst(1).burst, 1);
        assert_eq!(Rate::per_second(10.0).burst(0).burst, 1);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(Rate::try_per_second(bad).is_err(), "{bad}");
        }
        assert!(Rate::try_per_second(f64::MIN_POSITIVE).is_ok());
        let said = Rate::try_per_second(-2.0).expect_err("refused").to_string();
        assert!(said.contains("-2"), "{said}");
    }

    #[test]
    #[should_panic(expected = "positive, finite")]
    fn a_rate_written_in_code_that_is_none_panics() {
        let _ = Rate::per_second(0.0);
    }

    #[test]
    fn a_refusal_says_whose_limit_and_when_to_retry() {
        let limited = RateLimited::new(
            &LimitKey::principal("alice"),
            Rate::per_second(10.0).burst(1),
            Duration::from_millis(100),
        );
        assert_eq!(
            limited.to_string(),
            "rate limit of 10 calls per second for principal alice reached; retry in 0.1 s"
        );
        assert_eq!(limited.retry_after_seconds(), 1);
        assert_eq!(
            limited.data(),
            json!({"limit": "principal", "key": "alice", "perSecond": 10, "burst": 1,
                   "retryAfterMs": 100})
        );
        let slow = RateLimited::new(
            &LimitKey::tool("docs", "search"),
            Rate::per_second(0.5),
            Duration::from_nanos(2_000_000_001),
        );
        assert_eq!(slow.retry_after_seconds(), 3);
        assert_eq!(slow.data()["perSecond"], json!(0.5));
        assert_eq!(slow.data()["retryAfterMs"], json!(2001));
        assert_eq!(slow.data()["key"], json!("docs/search"));
        assert_eq!(
            slow.to_string(),
            "rate limit of 0.5 calls per second for tool docs/search reached; retry in 2.001 s"
        );
        let one = RateLimited::new(
            &LimitKey::upstream("docs"),
            Rate::per_second(1.0),
            Duration::from_secs(2),
        );
        assert_eq!(
            one.to_string(),
            "rate limit of 1 call per second for upstream docs reached; retry in 2 s"
        );
        assert_eq!(seconds(Duration::from_nanos(1)), "0.001");
        assert_eq!(seconds(Duration::from_millis(1250)), "1.25");
    }

    #[test]
    fn scopes_have_names_and_keys_in_a_store_are_apart() {
        assert_eq!(LimitScope::Principal.as_str(), "principal");
        assert_eq!(LimitScope::Upstream.as_str(), "upstream");
        assert_eq!(LimitScope::Tool.as_str(), "tool");
        assert_eq!(LimitKey::principal("docs").store_key(), "principal:docs");
        assert_eq!(LimitKey::upstream("docs").store_key(), "upstream:docs");
        assert_eq!(LimitKey::tool("docs", "find").key, "docs/find");
    }
}
