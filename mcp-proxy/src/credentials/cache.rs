//! Tokens per principal, each fetched once however many calls want it at once, kept
//! until shortly before it expires, and bounded in number.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::{CredentialError, UpstreamToken};

/// What a slot holds: the token, and when to get a new one.
#[derive(Clone)]
struct Held {
    token: UpstreamToken,
    renew_at: Instant,
}

type Slot = Arc<tokio::sync::Mutex<Option<Held>>>;

/// Tokens by principal identity.
pub(super) struct TokenCache {
    slots: Mutex<HashMap<String, (Slot, Instant)>>,
    max: usize,
    /// Longest a token that says no expiry is kept.
    default_life: Duration,
}

impl TokenCache {
    /// At most `max` principals' tokens; one without an expiry is kept `default_life`.
    pub(super) fn new(max: usize, default_life: Duration) -> Self {
        TokenCache {
            slots: Mutex::new(HashMap::new()),
            max: max.max(1),
            default_life,
        }
    }

    /// `key`'s token, fetched by `fetch` when there is none still good. Concurrent asks
    /// for one key wait for one fetch. `cap`: a time the token must not be used past
    /// (the subject token's own expiry).
    pub(super) async fn get_or_fetch<F, Fut>(
        &self,
        key: &str,
        cap: Option<Instant>,
        fetch: F,
    ) -> Result<UpstreamToken, CredentialError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<UpstreamToken, CredentialError>>,
    {
        let slot = self.slot(key);
        let mut held = slot.lock().await;
        let now = Instant::now();
        if let Some(h) = held.as_ref().filter(|h| h.renew_at > now) {
            return Ok(h.token.clone());
        }
        *held = None;
        let token = fetch().await?;
        let expires = token.expires_at().unwrap_or(now + self.default_life);
        let expires = cap.map_or(expires, |c| c.min(expires));
        *held = Some(Held {
            renew_at: renew_at(now, expires),
            token: token.clone(),
        });
        Ok(token)
    }

    /// Forgets `key`'s token if it is `token`.
    pub(super) async fn forget(&self, key: &str, token: &UpstreamToken) {
        let slot = self.slots.lock().get(key).map(|(s, _)| s.clone());
        if let Some(slot) = slot {
            let mut held = slot.lock().await;
            if held.as_ref().is_some_and(|h| &h.token == token) {
                *held = None;
            }
        }
    }

    /// How many principals have a slot.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.slots.lock().len()
    }

    /// `key`'s slot, made if new; at the bound, the slots whose token is spent go first,
    /// then the least recently asked for.
    fn slot(&self, key: &str) -> Slot {
        let mut slots = self.slots.lock();
        let now = Instant::now();
        if let Some((slot, used)) = slots.get_mut(key) {
            *used = now;
            return slot.clone();
        }
        if slots.len() >= self.max {
            slots.retain(|_, (slot, _)| match slot.try_lock() {
                Ok(held) => held.as_ref().is_some_and(|h| h.renew_at > now),
                // Being fetched: kept.
                Err(_) => true,
            });
        }
        if slots.len() >= self.max {
            let oldest = slots
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                slots.remove(&k);
            }
        }
        let slot = Slot::default();
        slots.insert(key.to_owned(), (slot.clone(), now));
        slot
    }
}

/// When a token good from `now` until `expires` is renewed: a tenth of its life before
/// it ends, at least a second and at most a minute before.
fn renew_at(now: Instant, expires: Instant) -> Instant {
    let life = expires.saturating_duration_since(now);
    let margin = (life / 10).clamp(Duration::from_secs(1), Duration::from_secs(60));
    expires.checked_sub(margin).unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn token(text: &str, life: Duration) -> UpstreamToken {
        UpstreamToken::new(text, Some(Instant::now() + life))
    }

    #[tokio::test]
    async fn concurrent_asks_for_one_principal_fetch_once() {
        let cache = Arc::new(TokenCache::new(10, Duration::from_secs(300)));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = tokio::sync::watch::channel(false);
        let mut asks = tokio::task::JoinSet::new();
        for _ in 0..20 {
            let (cache, fetches, mut rx) = (cache.clone(), fetches.clone(), rx.clone());
            asks.spawn(async move {
                cache
                    .get_or_fetch("alice", None, || async move {
                        fetches.fetch_add(1, Ordering::SeqCst);
                        let _ = rx.wait_for(|go| *go).await;
                        Ok(token("t-alice", Duration::from_secs(300)))
                    })
                    .await
            });
        }
        tokio::task::yield_now().await;
        tx.send(true).expect("asks wait");
        while let Some(got) = asks.join_next().await {
            assert_eq!(got.expect("joined").expect("token").secret(), "t-alice");
        }
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_token_near_its_end_or_past_its_cap_is_fetched_again() {
        let cache = TokenCache::new(10, Duration::from_secs(300));
        let n = AtomicUsize::new(0);
        let fetch = |life: Duration| {
            let i = n.fetch_add(1, Ordering::SeqCst);
            async move { Ok(token(&format!("t{i}"), life)) }
        };
        // Ten seconds of life: renewed a second before its end, so still good now.
        let a = cache
            .get_or_fetch("a", None, || fetch(Duration::from_secs(10)))
            .await
            .expect("a");
        let again = cache
            .get_or_fetch("a", None, || fetch(Duration::from_secs(10)))
            .await
            .expect("a again");
        assert_eq!(a, again);
        // Capped by a subject token already spent: never kept.
        let capped = Some(Instant::now());
        let b1 = cache
            .get_or_fetch("b", capped, || fetch(Duration::from_secs(300)))
            .await
            .expect("b");
        let b2 = cache
            .get_or_fetch("b", capped, || fetch(Duration::from_secs(300)))
            .await
            .expect("b again");
        assert_ne!(b1, b2);
        // Forgotten after a refusal: fetched anew.
        cache.forget("a", &a).await;
        let a2 = cache
            .get_or_fetch("a", None, || fetch(Duration::from_secs(10)))
            .await
            .expect("a anew");
        assert_ne!(a, a2);
    }

    #[tokio::test]
    async fn a_refusal_is_not_kept() {
        let cache = TokenCache::new(10, Duration::from_secs(300));
        let refused = cache
            .get_or_fetch("a", None, || async {
                Err(CredentialError::Refused {
                    upstream: "u".into(),
                    reason: "invalid_grant".into(),
                })
            })
            .await;
        assert!(refused.is_err());
        let then = cache
            .get_or_fetch("a", None, || async {
                Ok(token("t", Duration::from_secs(60)))
            })
            .await;
        assert_eq!(then.expect("token").secret(), "t");
    }

    #[tokio::test]
    async fn the_cache_is_bounded_and_drops_the_least_recently_asked() {
        let cache = TokenCache::new(3, Duration::from_secs(300));
        for who in ["a", "b", "c", "a", "d"] {
            cache
                .get_or_fetch(who, None, || async {
                    Ok(token(who, Duration::from_secs(300)))
                })
                .await
                .expect("token");
        }
        assert_eq!(cache.len(), 3);
        let slots = cache.slots.lock();
        assert!(slots.contains_key("a") && slots.contains_key("d"));
        assert!(!slots.contains_key("b"), "b was asked for least recently");
    }

    #[test]
    fn renewal_leaves_a_tenth_of_the_life_within_bounds() {
        let now = Instant::now();
        let at = |secs| renew_at(now, now + Duration::from_secs(secs)) - now;
        assert_eq!(at(300), Duration::from_secs(270));
        assert_eq!(at(3600), Duration::from_secs(3540));
        assert_eq!(at(5), Duration::from_secs(4));
    }
}
