//! [`StorePeers`]: where the other replicas are, as the store's registry says: this
//! replica announces itself there every quarter of its TTL and reads the others back, so
//! that replicas come and go without a list to edit. A replica that stops announcing is
//! gone within its TTL; while the store cannot be reached, the last list read stands, and
//! for a TTL after it answers again the replicas known before stay known (a store that
//! came back empty lists only those that announced since).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_server::http::Peers;
use mcp_server::seal::ReplicaId;
use parking_lot::RwLock;

use super::lease::Lease;
use super::{ReplicaEntry, StateStore};

/// The live replicas by the store's registry (see the module). Cheap to ask: answers come
/// from the list the heartbeat last read.
pub struct StorePeers {
    store: Arc<dyn StateStore>,
    me: ReplicaEntry,
    ttl: Duration,
    known: RwLock<HashMap<ReplicaId, http::Uri>>,
    /// Every replica ever read, at its last address (at most one per replica number).
    seen: RwLock<HashMap<ReplicaId, http::Uri>>,
    lease: Arc<Lease>,
    /// Until when the replicas known before an outage stay known.
    grace: parking_lot::Mutex<Option<tokio::time::Instant>>,
}

impl std::fmt::Debug for StorePeers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorePeers")
            .field("me", &self.me)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl StorePeers {
    /// This replica (`me`) among those `store` lists, announced for `ttl` at a time.
    pub fn new(store: Arc<dyn StateStore>, me: ReplicaEntry, ttl: Duration) -> Arc<StorePeers> {
        Arc::new(StorePeers {
            store,
            me,
            ttl,
            known: RwLock::new(HashMap::new()),
            seen: RwLock::new(HashMap::new()),
            lease: Arc::new(Lease::new(ttl)),
            grace: parking_lot::Mutex::new(None),
        })
    }

    /// Announces this replica and reads the others once: what the heartbeat does. Says
    /// which live replicas announce a configuration other than this one's (configuration
    /// skew: they may list other tools, apply other views).
    pub async fn beat(&self) -> Result<Vec<ReplicaId>, super::StoreError> {
        if let Err(e) = self.store.announce(&self.me, self.ttl).await {
            self.lease.failed();
            return Err(e);
        }
        if self.lease.renewed() {
            *self.grace.lock() = Some(tokio::time::Instant::now() + self.ttl);
        }
        let live = self.store.replicas().await?;
        let skewed = live
            .iter()
            .filter(|e| e.config_digest != self.me.config_digest)
            .map(|e| e.replica)
            .collect();
        let mut known: HashMap<ReplicaId, http::Uri> = live
            .into_iter()
            .filter_map(|e| Some((e.replica, e.address.parse::<http::Uri>().ok()?)))
            .collect();
        self.seen
            .write()
            .extend(known.iter().map(|(r, a)| (*r, a.clone())));
        let grace = *self.grace.lock();
        if grace.is_some_and(|until| tokio::time::Instant::now() < until) {
            for (replica, address) in self.known.read().iter() {
                known.entry(*replica).or_insert_with(|| address.clone());
            }
        }
        *self.known.write() = known;
        Ok(skewed)
    }

    /// Beats every quarter of the TTL until the returned task is aborted (or the runtime
    /// ends); a failure is logged once per outage, and the last list read stands.
    pub fn start(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            let mut down = false;
            let mut skew = Vec::new();
            loop {
                match me.beat().await {
                    Ok(skewed) => {
                        if down {
                            tracing::info!("the state store answers again");
                            down = false;
                        }
                        if skewed != skew && !skewed.is_empty() {
                            tracing::warn!(replicas = ?skewed, "replicas run another configuration than this one: hosts may see different tools on each");
                        }
                        skew = skewed;
                    }
                    Err(e) if !down => {
                        tracing::warn!("cannot announce this replica: {e}");
                        down = true;
                    }
                    Err(_) => {}
                }
                tokio::time::sleep(me.ttl / BEATS_PER_TTL).await;
            }
        })
    }

    /// The store the registry is kept in.
    pub fn store(&self) -> Arc<dyn StateStore> {
        self.store.clone()
    }

    /// This replica's hold on what it keeps in the store, as its heartbeats renew it (see
    /// [`super::StoreHandover`]).
    pub fn lease(&self) -> Arc<Lease> {
        self.lease.clone()
    }

    /// Whether the store takes this replica now (see [`StateStore::check`]).
    pub async fn check(&self) -> Result<(), super::StoreError> {
        self.store.check().await
    }

    /// Takes this replica out of the registry (it is stopping).
    pub async fn leave(&self) -> Result<(), super::StoreError> {
        self.store.leave(self.me.replica).await
    }
}

/// How many times a replica announces itself within its TTL: a replica that stops is
/// gone from the others' lists within the TTL and one beat.
const BEATS_PER_TTL: u32 = 4;

impl Peers for StorePeers {
    fn address(&self, replica: ReplicaId) -> Option<http::Uri> {
        self.known.read().get(&replica).cloned()
    }

    fn replicas(&self) -> Vec<ReplicaId> {
        let mut all: Vec<ReplicaId> = self.known.read().keys().copied().collect();
        all.sort();
        all
    }

    fn last_known(&self, replica: ReplicaId) -> Option<http::Uri> {
        self.seen.read().get(&replica).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    #[tokio::test(start_paused = true)]
    async fn replicas_find_each_other_and_one_that_stops_is_gone_within_its_ttl() {
        let store: Arc<dyn StateStore> = Arc::new(MemoryStore::new());
        let ttl = Duration::from_secs(3);
        let entry = |n| ReplicaEntry::new(ReplicaId(n), format!("http://10.0.0.{n}:8080"), "d");
        let one = StorePeers::new(store.clone(), entry(1), ttl);
        let two = StorePeers::new(store.clone(), entry(2), ttl);
        one.beat().await.expect("beat");
        two.beat().await.expect("beat");
        assert_eq!(
            one.beat().await.expect("beat"),
            [],
            "the same configuration"
        );
        assert_eq!(one.replicas(), [ReplicaId(1), ReplicaId(2)]);
        let address = one.address(ReplicaId(2)).map(|u| u.to_string());
        assert_eq!(address.as_deref(), Some("http://10.0.0.2:8080/"));
        // Two stops beating; one beats on: two is gone once its TTL has passed.
        for _ in 0..4 {
            tokio::time::advance(ttl / 3 + Duration::from_millis(1)).await;
            one.beat().await.expect("beat");
        }
        assert_eq!(one.replicas(), [ReplicaId(1)]);
        one.leave().await.expect("leave");
        // Two, back after a lapse of its own, keeps what it knew for a TTL (the store
        // may have come back empty), then knows only who announces.
        for _ in 0..4 {
            two.beat().await.expect("beat");
            tokio::time::advance(ttl / 3 + Duration::from_millis(1)).await;
        }
        two.beat().await.expect("beat");
        assert_eq!(two.replicas(), [ReplicaId(2)]);
        // A replica configured otherwise is named by every beat while it is live.
        let other = ReplicaEntry::new(ReplicaId(3), "http://10.0.0.3:8080", "another digest");
        let three = StorePeers::new(store.clone(), other, ttl);
        three.beat().await.expect("beat");
        assert_eq!(two.beat().await.expect("beat"), [ReplicaId(3)]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_store_back_empty_after_an_outage_forgets_no_replica_for_a_ttl() {
        let store: Arc<dyn StateStore> = Arc::new(MemoryStore::new());
        let ttl = Duration::from_secs(3);
        let entry = |n| ReplicaEntry::new(ReplicaId(n), format!("http://10.0.0.{n}:8080"), "d");
        let one = StorePeers::new(store.clone(), entry(1), ttl);
        let two = StorePeers::new(store.clone(), entry(2), ttl);
        two.beat().await.expect("beat");
        one.beat().await.expect("beat");
        assert_eq!(one.replicas(), [ReplicaId(1), ReplicaId(2)]);
        // The store is out of reach for longer than a TTL, and comes back empty: one
        // announces first, and still knows two until two has had the time to.
        tokio::time::advance(ttl * 4).await;
        store.leave(ReplicaId(2)).await.expect("emptied");
        one.beat().await.expect("beat");
        assert_eq!(one.replicas(), [ReplicaId(1), ReplicaId(2)]);
        two.beat().await.expect("beat");
        tokio::time::advance(ttl + Duration::from_millis(1)).await;
        two.beat().await.expect("beat");
        one.beat().await.expect("beat");
        assert_eq!(one.replicas(), [ReplicaId(1), ReplicaId(2)]);
        // Past the grace, a replica that does not announce is gone again.
        tokio::time::advance(ttl / 2).await;
        one.beat().await.expect("beat");
        tokio::time::advance(ttl / 2 + Duration::from_millis(1)).await;
        one.beat().await.expect("beat");
        assert_eq!(one.replicas(), [ReplicaId(1)]);
    }
}
