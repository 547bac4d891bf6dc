//! [`MemoryStore`]: the state of one process, expiring by tokio's clock (which tests can
//! pause and advance). Its token buckets are [`TokenBucket`]s, at most 100,000 of them
//! (past that, those full again are forgotten first).

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use mcp_server::seal::ReplicaId;
use parking_lot::Mutex;
use tokio::time::Instant;

use super::{ReplicaEntry, SessionState, StateStore, StoreError, TokenRate, TokenTaken};
use crate::limits::bucket::{bound, TokenBucket};

/// The most token buckets kept: past it, those full again are forgotten first.
const BUCKETS: usize = 100_000;

/// The shared state kept in this process: for one replica, and for tests of what stands
/// on a store.
#[derive(Debug, Default)]
pub struct MemoryStore {
    replicas: Mutex<HashMap<ReplicaId, (ReplicaEntry, Instant)>>,
    sessions: Mutex<HashMap<String, (SessionState, Instant)>>,
    values: Mutex<HashMap<String, (String, Option<Instant>)>>,
    buckets: Mutex<HashMap<String, TokenBucket>>,
}

impl MemoryStore {
    /// The live value under `key`, the expired ones dropped first.
    fn live(values: &mut HashMap<String, (String, Option<Instant>)>, key: &str) -> bool {
        let now = Instant::now();
        if values
            .get(key)
            .is_some_and(|(_, until)| until.is_some_and(|u| u <= now))
        {
            values.remove(key);
        }
        values.contains_key(key)
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }
}

#[async_trait]
impl StateStore for MemoryStore {
    async fn announce(&self, entry: &ReplicaEntry, ttl: Duration) -> Result<(), StoreError> {
        let until = Instant::now() + ttl;
        self.replicas
            .lock()
            .insert(entry.replica, (entry.clone(), until));
        Ok(())
    }

    async fn leave(&self, replica: ReplicaId) -> Result<(), StoreError> {
        self.replicas.lock().remove(&replica);
        Ok(())
    }

    async fn replicas(&self) -> Result<Vec<ReplicaEntry>, StoreError> {
        let now = Instant::now();
        let mut live = self.replicas.lock();
        live.retain(|_, (_, until)| *until > now);
        let mut out: Vec<ReplicaEntry> = live.values().map(|(e, _)| e.clone()).collect();
        out.sort_by_key(|e| e.replica);
        Ok(out)
    }

    async fn put_session(&self, state: &SessionState, ttl: Duration) -> Result<bool, StoreError> {
        let now = Instant::now();
        let mut sessions = self.sessions.lock();
        if let Some((held, until)) = sessions.get(&state.id) {
            if *until > now && (held.owner != state.owner || held.epoch != state.epoch) {
                return Ok(false);
            }
        }
        sessions.insert(state.id.clone(), (state.clone(), now + ttl));
        Ok(true)
    }

    async fn session(&self, id: &str) -> Result<Option<SessionState>, StoreError> {
        let now = Instant::now();
        let mut sessions = self.sessions.lock();
        match sessions.get(id) {
            Some((s, until)) if *until > now => Ok(Some(s.clone())),
            Some(_) => {
                sessions.remove(id);
                Ok(None)
            }
            None => Ok(None),
        }
    }

    async fn claim_session(
        &self,
        id: &str,
        epoch: u64,
        owner: ReplicaId,
        ttl: Duration,
    ) -> Result<Option<SessionState>, StoreError> {
        let now = Instant::now();
        let mut sessions = self.sessions.lock();
        let Some((s, until)) = sessions.get_mut(id) else {
            return Ok(None);
        };
        if *until <= now || s.epoch != epoch {
            return Ok(None);
        }
        s.owner = owner;
        s.epoch += 1;
        *until = now + ttl;
        Ok(Some(s.clone()))
    }

    async fn remove_session(&self, id: &str, owner: ReplicaId) -> Result<(), StoreError> {
        let mut sessions = self.sessions.lock();
        if sessions.get(id).is_some_and(|(s, _)| s.owner == owner) {
            sessions.remove(id);
        }
        Ok(())
    }

    async fn put_value(
        &self,
        key: &str,
        value: &str,
        ttl: Option<Duration>,
    ) -> Result<(), StoreError> {
        let until = ttl.map(|t| Instant::now() + t);
        self.values
            .lock()
            .insert(key.to_owned(), (value.to_owned(), until));
        Ok(())
    }

    async fn put_value_once(
        &self,
        key: &str,
        value: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let mut values = self.values.lock();
        if MemoryStore::live(&mut values, key) {
            return Ok(false);
        }
        let until = Some(Instant::now() + ttl);
        values.insert(key.to_owned(), (value.to_owned(), until));
        Ok(true)
    }

    async fn value(&self, key: &str) -> Result<Option<String>, StoreError> {
        let mut values = self.values.lock();
        Ok(MemoryStore::live(&mut values, key)
            .then(|| values.get(key).map(|(v, _)| v.clone()))
            .flatten())
    }

    async fn take_value(&self, key: &str) -> Result<Option<String>, StoreError> {
        let mut values = self.values.lock();
        Ok(MemoryStore::live(&mut values, key)
            .then(|| values.remove(key).map(|(v, _)| v))
            .flatten())
    }

    async fn remove_value(&self, key: &str) -> Result<bool, StoreError> {
        let mut values = self.values.lock();
        Ok(MemoryStore::live(&mut values, key) && values.remove(key).is_some())
    }

    async fn take_token(&self, key: &str, rate: TokenRate) -> Result<TokenTaken, StoreError> {
        let rate = rate.rate()?;
        let now = Instant::now().into_std();
        let mut buckets = self.buckets.lock();
        let bucket = match buckets.get_mut(key) {
            Some(bucket) => {
                bucket.set_rate(rate);
                bucket
            }
            None => {
                bound(&mut buckets, BUCKETS, now);
                buckets
                    .entry(key.to_owned())
                    .or_insert(TokenBucket::new(rate, now))
            }
        };
        Ok(match bucket.take(now) {
            Ok(()) => TokenTaken::taken(bucket.remaining(now)),
            Err(retry_after) => TokenTaken::refused(retry_after),
        })
    }

    async fn give_token(&self, key: &str, rate: TokenRate) -> Result<(), StoreError> {
        rate.rate()?;
        if let Some(bucket) = self.buckets.lock().get_mut(key) {
            bucket.give_back();
        }
        Ok(())
    }
}
