//! `gateway.rateLimits`: token buckets per principal, upstream and tool.
//!
//! ```json
//! "gateway": {
//!   "rateLimits": {
//!     "principal": {"perSecond": 10, "burst": 20},
//!     "upstreams": {"github": {"perMinute": 300}},
//!     "tools": {"github__create_issue": {"perHour": 50}},
//!     "whenStoreDown": "open"
//!   }
//! }
//! ```
//!
//! With `gateway.cluster.redis` the buckets are kept there, one per key for every
//! replica; `whenStoreDown` says whether calls go (`open`, the default) or are refused
//! (`closed`) while Redis cannot be reached.

use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use super::values::{given, Choice, Count};
use super::{join, Problem};
use crate::limits::{Rate, RateLimits, StoreDown};

/// `gateway.rateLimits`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, expecting = "an object")]
pub(super) struct RateLimitsFile {
    /// Each principal's own limit, across everything it calls (a token's subject, an API
    /// key, the stdio user; hosts without a principal share one).
    #[serde(default, deserialize_with = "given")]
    pub(super) principal: Option<RateFile>,
    /// Limits per upstream (by key), all callers together.
    pub(super) upstreams: Option<BTreeMap<String, RateFile>>,
    /// Limits per tool (by the name hosts call it), all callers together.
    pub(super) tools: Option<BTreeMap<String, RateFile>>,
    /// With `gateway.cluster.redis`: calls go (`open`, the default) or are refused
    /// (`closed`) while Redis cannot be reached.
    #[serde(default, deserialize_with = "given")]
    pub(super) when_store_down: Option<Choice<WhenDown>>,
}

/// `whenStoreDown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(super) enum WhenDown {
    Open,
    Closed,
}

/// One limit: one of `perSecond`, `perMinute`, `perHour`, and a `burst`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, expecting = "an object")]
pub(super) struct RateFile {
    /// Calls a second (may be a fraction).
    pub(super) per_second: Option<f64>,
    /// Calls a minute.
    pub(super) per_minute: Option<f64>,
    /// Calls an hour.
    pub(super) per_hour: Option<f64>,
    /// Calls that may come at once (default: the count per the unit given, so a quota
    /// of 50 an hour may be spent in a minute, then refills).
    #[serde(default, deserialize_with = "given")]
    pub(super) burst: Option<Count<1, 1_000_000_000>>,
}

/// `gateway.rateLimits`, kept in `shared` (the replicas' store) when there is one.
pub(super) fn rate_limits(
    file: RateLimitsFile,
    shared: Option<Arc<dyn crate::store::StateStore>>,
) -> Result<RateLimits, Problem> {
    let at = "gateway.rateLimits";
    let down = match file.when_store_down.map(|c| c.0) {
        Some(WhenDown::Closed) => StoreDown::Closed,
        _ => StoreDown::Open,
    };
    let mut limits = match shared {
        Some(store) => RateLimits::shared(store, down),
        None => RateLimits::new(),
    };
    if let Some(r) = file.principal {
        limits = limits.per_principal(rate(r, &join(at, "principal"))?);
    }
    for (key, r) in file.upstreams.unwrap_or_default() {
        let rate = rate(r, &join(&join(at, "upstreams"), &key))?;
        limits = limits.upstream(key, rate);
    }
    for (name, r) in file.tools.unwrap_or_default() {
        let rate = rate(r, &join(&join(at, "tools"), &name))?;
        limits = limits.tool(name, rate);
    }
    Ok(limits)
}

/// One limit, at `at`.
fn rate(r: RateFile, at: &str) -> Result<Rate, Problem> {
    let (count, seconds, unit) = match (r.per_second, r.per_minute, r.per_hour) {
        (Some(n), None, None) => (n, 1.0, "perSecond"),
        (None, Some(n), None) => (n, 60.0, "perMinute"),
        (None, None, Some(n)) => (n, 3600.0, "perHour"),
        _ => {
            return Err(Problem::new(
                at,
                "give one of `perSecond`, `perMinute`, `perHour`",
            ))
        }
    };
    let rate = Rate::try_per_second(count / seconds)
        .map_err(|_| Problem::new(join(at, unit), "must be a positive number"))?;
    let burst = match r.burst {
        Some(b) => u32::try_from(b.0).unwrap_or(u32::MAX),
        None => (count.ceil() as u32).max(1),
    };
    Ok(rate.burst(burst))
}

#[cfg(test)]
mod tests {
    use crate::config::with_gateway as read;

    #[test]
    fn limits_are_read_in_any_unit_with_a_units_worth_of_burst() {
        let g = read(
            r#"{"rateLimits": {"principal": {"perSecond": 10, "burst": 1},
                              "upstreams": {"a": {"perMinute": 120}},
                              "tools": {"a__t": {"perHour": 50}}}}"#,
        )
        .expect("read");
        let said = format!("{:?}", g.options.rate_limits.expect("limits"));
        assert!(
            said.contains("principal: Some(Rate { per_second: 10.0, burst: 1 })"),
            "{said}"
        );
        assert!(
            said.contains(r#""a": Rate { per_second: 2.0, burst: 120 }"#),
            "{said}"
        );
        assert!(
            said.contains(r#""a__t": Rate { per_second: 0.013888888888888888, burst: 50 }"#),
            "{said}"
        );
        assert!(said.contains("shared: false"), "{said}");
    }

    #[test]
    fn a_limit_that_is_none_or_two_is_refused_where_it_is_written() {
        for (gateway, at, why) in [
            (
                r#"{"rateLimits": {"principal": {}}}"#,
                "gateway.rateLimits.principal",
                "give one of",
            ),
            (
                r#"{"rateLimits": {"tools": {"a__t": {"perSecond": 1, "perHour": 2}}}}"#,
                "gateway.rateLimits.tools.a__t",
                "give one of",
            ),
            (
                r#"{"rateLimits": {"upstreams": {"a": {"perSecond": 0}}}}"#,
                "gateway.rateLimits.upstreams.a.perSecond",
                "positive",
            ),
            (
                r#"{"rateLimits": {"principal": {"perSecnd": 1}}}"#,
                "perSecnd",
                "perSecond",
            ),
            (
                r#"{"rateLimits": {"whenStoreDown": "maybe"}}"#,
                "whenStoreDown",
                "open",
            ),
        ] {
            let e = read(gateway)
                .err()
                .unwrap_or_else(|| panic!("{gateway} was taken"));
            assert!(e.contains(at) && e.contains(why), "{gateway}: {e}");
        }
    }
}
