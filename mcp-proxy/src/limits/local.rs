//! [`LocalLimiter`]: buckets in this process, taken synchronously.

use std::collections::HashMap;
use std::time::Instant;

use async_trait::async_trait;
use parking_lot::Mutex;

use super::bucket::{bound, TokenBucket};
use super::{LimitError, LimitKey, Limiter, Rate, RateLimited};

/// How many keys a limiter keeps by default (a few MB at most).
pub(crate) const DEFAULT_CAPACITY: usize = 100_000;

/// Locks held by one call at a time: a map split in 16 by the key's hash, so that calls
/// for different keys on different threads seldom wait for each other.
#[derive(Debug)]
pub(crate) struct Shards<V> {
    shards: Box<[Mutex<HashMap<LimitKey, V, ahash::RandomState>>]>,
    hasher: ahash::RandomState,
    /// Keys one shard keeps (its share of the capacity).
    pub(crate) capacity: usize,
}

const SHARDS: usize = 16;

impl<V> Shards<V> {
    /// Keeping about `capacity` keys in all.
    pub(crate) fn new(capacity: usize) -> Shards<V> {
        Shards {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(HashMap::default()))
                .collect(),
            hasher: ahash::RandomState::new(),
            capacity: capacity.div_ceil(SHARDS).max(1),
        }
    }

    /// The shard `key` is in.
    pub(crate) fn of(&self, key: &LimitKey) -> &Mutex<HashMap<LimitKey, V, ahash::RandomState>> {
        // The hash's low bits pick the shard; the map inside hashes on its own.
        let i = (self.hasher.hash_one(key) as usize) % self.shards.len();
        &self.shards[i]
    }

    /// The keys kept now.
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }
}

/// Rate limits kept in this process: for one replica, or for limits each replica keeps on
/// its own (N replicas then let N times the rate through).
///
/// Bounded: past its capacity (100,000 keys unless told) it forgets the buckets that are
/// full again, and under a flood of distinct keys, those nearest to full (see
/// [`TokenBucket`] for the arithmetic).
///
/// Its clock is tokio's (real time, unless a test pauses it).
#[derive(Debug)]
pub struct LocalLimiter {
    buckets: Shards<TokenBucket>,
}

impl Default for LocalLimiter {
    fn default() -> Self {
        LocalLimiter::new()
    }
}

impl LocalLimiter {
    /// A limiter keeping up to 100,000 keys.
    pub fn new() -> LocalLimiter {
        LocalLimiter::with_capacity(DEFAULT_CAPACITY)
    }

    /// A limiter keeping up to about `keys` keys (at least 16).
    pub fn with_capacity(keys: usize) -> LocalLimiter {
        LocalLimiter {
            buckets: Shards::new(keys),
        }
    }

    /// Takes one token from `key`'s bucket, shaped by `rate`, now: the gateway's fast path
    /// (a lock held for a map lookup and a few additions, no await).
    pub fn take_now(&self, key: &LimitKey, rate: Rate) -> Result<(), RateLimited> {
        self.take_at(key, rate, tokio::time::Instant::now().into_std())
    }

    /// [`take_now`](LocalLimiter::take_now) as if it were `now` (for tests with a clock of
    /// their own; times before a bucket's first use count as its first use).
    pub fn take_at(&self, key: &LimitKey, rate: Rate, now: Instant) -> Result<(), RateLimited> {
        let mut shard = self.buckets.of(key).lock();
        let taken = match shard.get_mut(key) {
            Some(bucket) => {
                bucket.set_rate(rate);
                bucket.take(now)
            }
            None => {
                bound(&mut shard, self.buckets.capacity, now);
                let mut bucket = TokenBucket::new(rate, now);
                let taken = bucket.take(now);
                // The key's String is copied only for a key not kept yet.
                shard.insert(key.clone(), bucket);
                taken
            }
        };
        taken.map_err(|retry_after| RateLimited::new(key, rate, retry_after))
    }

    /// Puts back a token taken from `key`'s bucket ([`Limiter::give_back`]).
    pub fn give_back_now(&self, key: &LimitKey) {
        if let Some(bucket) = self.buckets.of(key).lock().get_mut(key) {
            bucket.give_back();
        }
    }

    /// How many keys it keeps now.
    pub fn len(&self) -> usize {
        self.buckets.len()
    }

    /// Whether it keeps none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl Limiter for LocalLimiter {
    async fn take(&self, key: &LimitKey, rate: Rate) -> Result<(), LimitError> {
        self.take_now(key, rate).map_err(LimitError::Limited)
    }

    async fn give_back(&self, key: &LimitKey, _rate: Rate) {
        self.give_back_now(key);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::limits::LimitScope;

    #[test]
    fn keys_have_buckets_of_their_own() {
        let limiter = LocalLimiter::new();
        let t0 = Instant::now();
        let rate = Rate::per_second(1.0).burst(2);
        let (alice, bob) = (LimitKey::principal("alice"), LimitKey::principal("bob"));
        let docs = LimitKey::upstream("alice");
        assert!(limiter.take_at(&alice, rate, t0).is_ok());
        assert!(limiter.take_at(&alice, rate, t0).is_ok());
        let refused = limiter.take_at(&alice, rate, t0).expect_err("empty");
        assert_eq!(refused.scope, LimitScope::Principal);
        assert_eq!(refused.key, "alice");
        assert_eq!(refused.limit, rate);
        assert_eq!(refused.retry_after, Duration::from_secs(1));
        assert!(limiter.take_at(&bob, rate, t0).is_ok());
        assert!(
            limiter.take_at(&docs, rate, t0).is_ok(),
            "an upstream named as a principal is another bucket"
        );
        assert!(limiter
            .take_at(&alice, rate, t0 + Duration::from_secs(1))
            .is_ok());
        assert_eq!(limiter.len(), 3);
    }

    #[test]
    fn it_keeps_no_more_keys_than_its_capacity() {
        let limiter = LocalLimiter::with_capacity(160);
        let t0 = Instant::now();
        let rate = Rate::per_second(1.0).burst(1);
        for i in 0..10_000 {
            let now = t0 + Duration::from_millis(i);
            let _ = limiter.take_at(&LimitKey::principal(format!("p{i}")), rate, now);
            assert!(limiter.len() <= 160, "{}", limiter.len());
        }
        // The ones still owing a token are the latest: the flood forgave the oldest.
        let latest = LimitKey::principal("p9999");
        assert!(limiter
            .take_at(&latest, rate, t0 + Duration::from_millis(9999))
            .is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn its_clock_is_tokios() {
        let limiter = LocalLimiter::new();
        let key = LimitKey::tool("docs", "search");
        let rate = Rate::per_second(2.0).burst(1);
        assert!(limiter.take(&key, rate).await.is_ok());
        let Err(LimitError::Limited(refused)) = limiter.take(&key, rate).await else {
            panic!("refused");
        };
        assert_eq!(refused.retry_after, Duration::from_millis(500));
        tokio::time::advance(Duration::from_millis(500)).await;
        assert!(limiter.take_now(&key, rate).is_ok());
    }
}
