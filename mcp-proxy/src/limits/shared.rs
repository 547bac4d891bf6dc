//! [`SharedLimiter`]: buckets in the state store the replicas share.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;
use tokio::time::Instant;

use super::local::{Shards, DEFAULT_CAPACITY};
use super::{LimitError, LimitKey, Limiter, Rate, RateLimited};
use crate::store::{StateStore, StoreError, TokenRate};

/// What a [`SharedLimiter`] does with a call while its store cannot answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreDown {
    /// Lets it through: the limit is not kept until the store is back (availability first).
    Open,
    /// Refuses it ([`LimitError::StoreUnavailable`]): no call goes unlimited (the limit
    /// first).
    Closed,
}

/// After the store fails, how long it is not asked again by default: calls meanwhile are
/// decided by [`StoreDown`] at once, rather than each waiting out the store's timeout (1 s
/// by default, twice that to connect). Longer than that timeout, so that while the store
/// is down most calls do not wait; short, so that a blip is soon over.
const PAUSE: Duration = Duration::from_secs(2);

/// At most one warning this often while the store is down.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// Rate limits kept in the [`StateStore`] the replicas share
/// ([`StateStore::take_token`]): N replicas over one store enforce one bucket per key.
///
/// A refused key is refused here, without asking the store, until the time the store said
/// a token will be there: a flood from one caller costs the store about one round trip per
/// token and replica, not one per call. (A call let through always asks the store.)
///
/// While the store fails, one call is let ask it every 2 s (its [`store_pause`]) and waits
/// for its answer or its timeout; the other calls are let through or refused at once, as
/// its [`StoreDown`] says, with a warning logged at most every 10 s.
///
/// [`store_pause`]: SharedLimiter::store_pause
pub struct SharedLimiter {
    store: Arc<dyn StateStore>,
    down: StoreDown,
    pause: Duration,
    /// Until when each key refused is known to be empty.
    empty: Shards<Instant>,
    /// Whether `outage` holds anything (read on every call without its lock).
    troubled: AtomicBool,
    outage: Mutex<Outage>,
}

impl std::fmt::Debug for SharedLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedLimiter")
            .field("down", &self.down)
            .finish_non_exhaustive()
    }
}

/// The store's failure, while it lasts.
#[derive(Debug, Default)]
struct Outage {
    /// What it said last.
    error: Option<StoreError>,
    /// Until when it is not asked.
    pause_until: Option<Instant>,
    /// When the last warning was logged.
    warned_at: Option<Instant>,
    /// Calls decided without it since then.
    unchecked: u64,
}

impl SharedLimiter {
    /// Buckets in `store`; while it cannot answer, calls go as `down` says.
    pub fn new(store: Arc<dyn StateStore>, down: StoreDown) -> SharedLimiter {
        SharedLimiter {
            store,
            down,
            pause: PAUSE,
            empty: Shards::new(DEFAULT_CAPACITY),
            troubled: AtomicBool::new(false),
            outage: Mutex::new(Outage::default()),
        }
    }

    /// After the store fails, not asking it again for `pause` (2 s unless told): best
    /// longer than the store's timeout, which one call in each `pause` waits out.
    #[must_use]
    pub fn store_pause(mut self, pause: Duration) -> SharedLimiter {
        self.pause = pause;
        self
    }

    /// What it does while the store is down.
    pub fn store_down(&self) -> StoreDown {
        self.down
    }

    /// How long `key` is still known to be empty, if it is.
    fn known_empty(&self, key: &LimitKey, now: Instant) -> Option<Duration> {
        let mut shard = self.empty.of(key).lock();
        let until = *shard.get(key)?;
        if until > now {
            return Some(until - now);
        }
        shard.remove(key);
        None
    }

    fn remember_empty(&self, key: &LimitKey, until: Instant) {
        let mut shard = self.empty.of(key).lock();
        if !shard.contains_key(key) && shard.len() >= self.empty.capacity {
            let now = Instant::now();
            shard.retain(|_, u| *u > now);
            if shard.len() >= self.empty.capacity {
                // Only round trips are lost by forgetting: the store still keeps the limit.
                shard.clear();
            }
        }
        shard.insert(key.clone(), until);
    }

    /// The store's last error, while it is not to be asked. Once the pause is over, the
    /// first call to come asks it, and the pause goes on for the others meanwhile: of
    /// calls arriving together, one waits for a store that may still be down, not all.
    fn paused(&self, now: Instant) -> Option<StoreError> {
        if !self.troubled.load(Ordering::Relaxed) {
            return None;
        }
        let mut outage = self.outage.lock();
        match outage.pause_until {
            Some(until) if until > now => outage.error.clone(),
            Some(_) => {
                outage.pause_until = Some(now + self.pause);
                None
            }
            None => None,
        }
    }

    fn failed(&self, error: &StoreError, now: Instant) {
        let mut outage = self.outage.lock();
        outage.error = Some(error.clone());
        outage.pause_until = Some(now + self.pause);
        self.troubled.store(true, Ordering::Relaxed);
    }

    fn answered(&self) {
        if !self.troubled.swap(false, Ordering::Relaxed) {
            return;
        }
        let mut outage = self.outage.lock();
        if outage.error.take().is_some() {
            tracing::info!(
                unchecked = outage.unchecked,
                "the state store answers for rate limits again"
            );
        }
        *outage = Outage::default();
    }

    /// A call while the store cannot answer: as `self.down` says, warned of now and then.
    fn without_store(
        &self,
        key: &LimitKey,
        error: StoreError,
        now: Instant,
    ) -> Result<(), LimitError> {
        {
            let mut outage = self.outage.lock();
            outage.unchecked += 1;
            if outage
                .warned_at
                .is_none_or(|at| now.duration_since(at) >= WARN_EVERY)
            {
                let what = match self.down {
                    StoreDown::Open => "let through unlimited",
                    StoreDown::Closed => "refused",
                };
                tracing::warn!(
                    %error,
                    calls = outage.unchecked,
                    "rate limits cannot be checked in the state store: calls are {what}"
                );
                outage.warned_at = Some(now);
                outage.unchecked = 0;
            }
        }
        match self.down {
            StoreDown::Open => Ok(()),
            StoreDown::Closed => Err(LimitError::StoreUnavailable {
                key: key.clone(),
                error,
            }),
        }
    }
}

#[async_trait]
impl Limiter for SharedLimiter {
    async fn take(&self, key: &LimitKey, rate: Rate) -> Result<(), LimitError> {
        let now = Instant::now();
        if let Some(retry_after) = self.known_empty(key, now) {
            return Err(RateLimited::new(key, rate, retry_after).into());
        }
        if let Some(error) = self.paused(now) {
            return self.without_store(key, error, now);
        }
        let asked = self
            .store
            .take_token(
                &key.store_key(),
                TokenRate::new(rate.per_second, rate.burst),
            )
            .await;
        let now = Instant::now();
        match asked {
            Ok(token) => {
                self.answered();
                if token.taken {
                    return Ok(());
                }
                self.remember_empty(key, now + token.retry_after);
                Err(RateLimited::new(key, rate, token.retry_after).into())
            }
            Err(error) => {
                self.failed(&error, now);
                self.without_store(key, error, now)
            }
        }
    }

    async fn give_back(&self, key: &LimitKey, rate: Rate) {
        if self.paused(Instant::now()).is_some() {
            return;
        }
        let rate = TokenRate::new(rate.per_second, rate.burst);
        if let Err(error) = self.store.give_token(&key.store_key(), rate).await {
            // The token stays taken: the caller waits a token's worth more, no more.
            tracing::debug!(%error, key = %key, "rate limit: a token could not be put back");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use mcp_server::seal::ReplicaId;

    use super::*;
    use crate::store::{MemoryStore, ReplicaEntry, SessionState, TokenTaken};

    /// A memory store counting the tokens asked of it, failing when told to.
    #[derive(Default)]
    struct Counting {
        inner: MemoryStore,
        asked: AtomicUsize,
        fail: AtomicBool,
    }

    #[async_trait]
    impl StateStore for Counting {
        async fn announce(&self, e: &ReplicaEntry, ttl: Duration) -> Result<(), StoreError> {
            self.inner.announce(e, ttl).await
        }
        async fn leave(&self, replica: ReplicaId) -> Result<(), StoreError> {
            self.inner.leave(replica).await
        }
        async fn replicas(&self) -> Result<Vec<ReplicaEntry>, StoreError> {
            self.inner.replicas().await
        }
        async fn put_session(&self, s: &SessionState, ttl: Duration) -> Result<bool, StoreError> {
            self.inner.put_session(s, ttl).await
        }
        async fn session(&self, id: &str) -> Result<Option<SessionState>, StoreError> {
            self.inner.session(id).await
        }
        async fn claim_session(
            &self,
            id: &str,
            epoch: u64,
            owner: ReplicaId,
            ttl: Duration,
        ) -> Result<Option<SessionState>, StoreError> {
            self.inner.claim_session(id, epoch, owner, ttl).await
        }
        async fn remove_session(&self, id: &str, owner: ReplicaId) -> Result<(), StoreError> {
            self.inner.remove_session(id, owner).await
        }
        async fn take_token(&self, key: &str, rate: TokenRate) -> Result<TokenTaken, StoreError> {
            self.asked.fetch_add(1, Ordering::Relaxed);
            if self.fail.load(Ordering::Relaxed) {
                return Err(StoreError::Unavailable("down for the test".into()));
            }
            self.inner.take_token(key, rate).await
        }
    }

    fn limited(r: Result<(), LimitError>) -> RateLimited {
        match r {
            Err(LimitError::Limited(l)) => l,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn replicas_share_one_bucket_and_a_refused_key_is_refused_without_asking() {
        let store = Arc::new(Counting::default());
        let a = SharedLimiter::new(store.clone(), StoreDown::Closed);
        let b = SharedLimiter::new(store.clone(), StoreDown::Closed);
        let key = LimitKey::principal("alice");
        let rate = Rate::per_second(10.0).burst(2);
        assert!(a.take(&key, rate).await.is_ok());
        assert!(b.take(&key, rate).await.is_ok());
        let refused = limited(a.take(&key, rate).await);
        assert_eq!(refused.retry_after, Duration::from_millis(100));
        assert_eq!(refused.limit, rate);
        let _ = limited(b.take(&key, rate).await);
        assert_eq!(store.asked.load(Ordering::Relaxed), 4);
        tokio::time::advance(Duration::from_millis(40)).await;
        for _ in 0..1000 {
            let refused = limited(a.take(&key, rate).await);
            assert_eq!(refused.retry_after, Duration::from_millis(60));
        }
        assert_eq!(
            store.asked.load(Ordering::Relaxed),
            4,
            "the flood stayed here"
        );
        assert!(a.take(&LimitKey::principal("bob"), rate).await.is_ok());
        tokio::time::advance(Duration::from_millis(60)).await;
        assert!(a.take(&key, rate).await.is_ok());
        let _ = limited(b.take(&key, rate).await);
        assert_eq!(store.asked.load(Ordering::Relaxed), 7);
    }

    #[tokio::test(start_paused = true)]
    async fn a_store_down_lets_calls_through_or_refuses_them_asked_once_a_second() {
        let store = Arc::new(Counting::default());
        store.fail.store(true, Ordering::Relaxed);
        let open = SharedLimiter::new(store.clone(), StoreDown::Open);
        let closed = SharedLimiter::new(store.clone(), StoreDown::Closed);
        let key = LimitKey::upstream("docs");
        let rate = Rate::per_second(1.0).burst(1);
        for _ in 0..100 {
            assert!(open.take(&key, rate).await.is_ok());
            match closed.take(&key, rate).await {
                Err(LimitError::StoreUnavailable { key: k, error }) => {
                    assert_eq!(k, key);
                    assert!(matches!(error, StoreError::Unavailable(_)), "{error:?}");
                }
                other => panic!("expected a refusal, got {other:?}"),
            }
        }
        assert_eq!(store.asked.load(Ordering::Relaxed), 2, "once each");
        let said = closed
            .take(&key, rate)
            .await
            .expect_err("refused")
            .to_string();
        assert!(said.contains("upstream docs"), "{said}");
        // After the pause, one call asks again; the rest are decided here still.
        tokio::time::advance(PAUSE).await;
        for _ in 0..100 {
            assert!(open.take(&key, rate).await.is_ok());
            assert!(closed.take(&key, rate).await.is_err());
        }
        assert_eq!(store.asked.load(Ordering::Relaxed), 4, "once each again");
        tokio::time::advance(PAUSE).await;
        store.fail.store(false, Ordering::Relaxed);
        assert!(closed.take(&key, rate).await.is_ok());
        let _ = limited(closed.take(&key, rate).await);
        assert!(
            open.take(&key, rate).await.is_err(),
            "back: the limit holds"
        );
        assert_eq!(closed.store_down(), StoreDown::Closed);
    }

    #[tokio::test]
    async fn a_store_without_rate_limits_is_a_store_down() {
        let limiter = SharedLimiter::new(Arc::new(NoLimits), StoreDown::Closed);
        let r = limiter
            .take(&LimitKey::principal("a"), Rate::per_second(1.0))
            .await;
        assert!(
            matches!(
                r,
                Err(LimitError::StoreUnavailable {
                    error: StoreError::Refused(_),
                    ..
                })
            ),
            "{r:?}"
        );
    }

    /// A store that keeps nothing, with the default `take_token`.
    struct NoLimits;

    #[async_trait]
    impl StateStore for NoLimits {
        async fn announce(&self, _: &ReplicaEntry, _: Duration) -> Result<(), StoreError> {
            Ok(())
        }
        async fn leave(&self, _: ReplicaId) -> Result<(), StoreError> {
            Ok(())
        }
        async fn replicas(&self) -> Result<Vec<ReplicaEntry>, StoreError> {
            Ok(Vec::new())
        }
        async fn put_session(&self, _: &SessionState, _: Duration) -> Result<bool, StoreError> {
            Ok(false)
        }
        async fn session(&self, _: &str) -> Result<Option<SessionState>, StoreError> {
            Ok(None)
        }
        async fn claim_session(
            &self,
            _: &str,
            _: u64,
            _: ReplicaId,
            _: Duration,
        ) -> Result<Option<SessionState>, StoreError> {
            Ok(None)
        }
        async fn remove_session(&self, _: &str, _: ReplicaId) -> Result<(), StoreError> {
            Ok(())
        }
    }
}
