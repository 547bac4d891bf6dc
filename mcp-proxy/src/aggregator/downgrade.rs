//! The downgrade policy the gateway's own translations follow
//! ([`super::AggregatorOptions::downgrade_policy`]).

use std::sync::Arc;

use mcp_revisions::{DowngradePolicy, Translator};

/// The configured downgrade policy, if any (none: the spec's, the translator's shortcut
/// untouched).
#[derive(Clone, Default)]
pub(super) struct Downgrade(Option<Arc<dyn DowngradePolicy>>);

impl Downgrade {
    /// `policy`, or the spec's when `None`.
    pub(super) fn new(policy: Option<Arc<dyn DowngradePolicy>>) -> Downgrade {
        Downgrade(policy)
    }

    /// `t`, following this policy.
    pub(super) fn translator(&self, t: Translator<'static>) -> Translator<'_> {
        match &self.0 {
            Some(p) => t.with_policy(&**p),
            None => t,
        }
    }
}
