//! [`StoreHandover`]: legacy sessions handed over between replicas through the
//! [`StateStore`]. Each session this replica holds has a record there (its snapshot, its
//! holder and epoch), written off the request path by one task: when the session changes,
//! every third of the idle timeout (records expire with it), and all at once when the
//! replica's [`Lease`] starts a new generation (the store came back, perhaps empty). A
//! record another replica holds is never overwritten or removed: that replica took the
//! session over, and this one lets it go.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_server::http::{SessionHandover, SessionSnapshot, SessionStoreError, TakeOver};
use mcp_server::seal::ReplicaId;
use mcp_types::Revision;
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::lease::Lease;
use super::{SessionState, StateStore, StoreError};

/// How long the writer waits before trying again after the store failed.
const RETRY: Duration = Duration::from_secs(1);

/// How often the writer looks for a new lease generation.
const GENERATION_POLL: Duration = Duration::from_secs(1);

/// Hands legacy sessions over between replicas through a [`StateStore`] (see the module).
pub struct StoreHandover {
    store: Arc<dyn StateStore>,
    me: ReplicaId,
    /// The sessions' idle timeout: how long a record lives unless written again.
    ttl: Duration,
    lease: Arc<Lease>,
    held: Mutex<Held>,
    wake: Arc<Notify>,
    /// The writer task was started (at the first record, in the runtime that keeps it).
    writing: std::sync::atomic::AtomicBool,
    me_weak: std::sync::Weak<StoreHandover>,
    taken_over: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for StoreHandover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreHandover")
            .field("me", &self.me)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Held {
    sessions: HashMap<String, Entry>,
    /// Sessions ended here whose records are still to be removed.
    ended: HashSet<String>,
}

struct Entry {
    record: SessionState,
    /// Changed since it was last written.
    dirty: bool,
    /// Another replica holds it now.
    lost: bool,
    /// The lease generation in which its record was last found to be this replica's.
    confirmed: u64,
}

impl StoreHandover {
    /// Sessions of replica `me`, recorded in `store` for `ttl` (their idle timeout) at a
    /// time, served without asking while `lease` (its heartbeats', see
    /// [`super::StorePeers::lease`]) is current. The task writing the records starts with
    /// the first (it needs a runtime) and stops when the handover is dropped.
    pub fn new(
        store: Arc<dyn StateStore>,
        me: ReplicaId,
        ttl: Duration,
        lease: Arc<Lease>,
    ) -> Arc<StoreHandover> {
        Arc::new_cyclic(|weak| StoreHandover {
            store,
            me,
            ttl,
            lease,
            held: Mutex::new(Held::default()),
            wake: Arc::new(Notify::new()),
            writing: std::sync::atomic::AtomicBool::new(false),
            me_weak: weak.clone(),
            taken_over: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Wakes the writer, starting it first if need be.
    fn wake(&self) {
        if !self.writing.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let (weak, wake) = (self.me_weak.clone(), self.wake.clone());
            tokio::spawn(Self::writer(weak, wake));
        }
        self.wake.notify_one();
    }

    /// Writes records as they change and renews them, until the handover is dropped.
    async fn writer(weak: std::sync::Weak<StoreHandover>, wake: Arc<Notify>) {
        let Some(every) = weak
            .upgrade()
            .map(|me| (me.ttl / 3).max(Duration::from_millis(100)))
        else {
            return;
        };
        let mut renewed = tokio::time::Instant::now();
        let mut generation = None;
        loop {
            // Woken at least every second: a new lease generation (the store back after
            // an outage, perhaps empty) has every record written again at once.
            tokio::select! {
                () = wake.notified() => {}
                () = tokio::time::sleep(every.min(GENERATION_POLL)) => {}
            }
            let Some(me) = weak.upgrade() else {
                return;
            };
            let now_generation = me.lease.current();
            let all = renewed.elapsed() >= every
                || (now_generation.is_some() && now_generation != generation);
            if all {
                renewed = tokio::time::Instant::now();
                generation = now_generation.or(generation);
            }
            if !me.write(all).await {
                drop(me);
                tokio::time::sleep(RETRY).await;
                wake.notify_one();
            }
        }
    }

    /// Writes the records that changed (`all`: every record held), and removes those of
    /// sessions ended; `false` when the store failed (what failed stays to do).
    async fn write(&self, all: bool) -> bool {
        let (puts, removals) = {
            let mut held = self.held.lock();
            let puts: Vec<SessionState> = held
                .sessions
                .values()
                .filter(|e| !e.lost && (all || e.dirty))
                .map(|e| e.record.clone())
                .collect();
            (puts, std::mem::take(&mut held.ended))
        };
        let mut ok = true;
        for id in removals {
            if let Err(e) = self.store.remove_session(&id, self.me).await {
                self.note(&e, &mut ok);
                self.held.lock().ended.insert(id);
            }
        }
        for record in puts {
            match self.store.put_session(&record, self.ttl).await {
                Ok(written) => {
                    let mut held = self.held.lock();
                    if let Some(e) = held.sessions.get_mut(&record.id) {
                        if !written {
                            tracing::info!("a legacy session was taken over by another replica");
                            e.lost = true;
                        } else if e.record == record {
                            e.dirty = false;
                        }
                    }
                }
                Err(e) => self.note(&e, &mut ok),
            }
        }
        ok
    }

    fn note(&self, e: &StoreError, ok: &mut bool) {
        if *ok {
            tracing::warn!("legacy session records not written: {e}");
        }
        *ok = false;
    }

    /// How many legacy sessions this replica took over from replicas gone.
    pub fn taken_over(&self) -> u64 {
        self.taken_over.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn generation(&self) -> u64 {
        self.lease.current().unwrap_or(0)
    }
}

/// What a record says of its session.
fn snapshot_of(record: &SessionState) -> Option<SessionSnapshot> {
    let revision = Revision::parse(&record.revision).ok()?;
    let level = record.log_level.as_deref().map(Into::into);
    Some(
        SessionSnapshot::new(revision, &record.capabilities, &record.client_info)
            .with_log_level(level)
            .with_subscriptions(record.subscriptions.clone()),
    )
}

fn unavailable(e: StoreError) -> SessionStoreError {
    SessionStoreError::Unavailable(e.to_string())
}

#[async_trait]
impl SessionHandover for StoreHandover {
    fn kept(&self, id: &str, snapshot: SessionSnapshot) {
        let generation = self.generation();
        let mut held = self.held.lock();
        held.ended.remove(id);
        let entry = held.sessions.entry(id.to_owned()).or_insert_with(|| Entry {
            record: SessionState::new(id, self.me, "", "", ""),
            dirty: true,
            lost: false,
            confirmed: generation,
        });
        let r = &mut entry.record;
        r.revision = snapshot.revision.as_str().to_owned();
        r.capabilities = snapshot.capabilities;
        r.client_info = snapshot.client_info;
        r.log_level = snapshot.log_level.map(|l| l.as_str().to_owned());
        r.subscriptions = snapshot.subscriptions;
        entry.dirty = true;
        drop(held);
        self.wake();
    }

    fn ended(&self, id: &str) {
        let mut held = self.held.lock();
        if held.sessions.remove(id).is_some_and(|e| !e.lost) {
            held.ended.insert(id.to_owned());
            drop(held);
            self.wake();
        }
    }

    fn current(&self, id: &str) -> bool {
        let Some(generation) = self.lease.current() else {
            return false;
        };
        match self.held.lock().sessions.get(id) {
            Some(e) => !e.lost && e.confirmed == generation,
            // Not kept yet: its `initialize` is being answered here.
            None => true,
        }
    }

    async fn still_held(&self, id: &str) -> bool {
        let epoch = match self.held.lock().sessions.get(id) {
            Some(e) if e.lost => return false,
            Some(e) => e.record.epoch,
            None => return true,
        };
        if self.lease.unreachable() {
            return true;
        }
        let found = match self.store.session(id).await {
            Ok(found) => found,
            Err(_) => return true,
        };
        let generation = self.generation();
        let mut held = self.held.lock();
        let Some(e) = held.sessions.get_mut(id) else {
            return true;
        };
        match found {
            Some(r) if r.owner != self.me || r.epoch != epoch => {
                e.lost = true;
                false
            }
            found => {
                // A record missing (the store lost its data) is written again.
                e.dirty |= found.is_none();
                e.confirmed = generation;
                drop(held);
                self.wake();
                true
            }
        }
    }

    async fn take_over(&self, id: &str, from: ReplicaId) -> Result<TakeOver, SessionStoreError> {
        let Some(record) = self.store.session(id).await.map_err(unavailable)? else {
            return Ok(TakeOver::Gone);
        };
        if record.owner != from && record.owner != self.me {
            return Ok(TakeOver::HeldBy(record.owner));
        }
        let claimed = self
            .store
            .claim_session(id, record.epoch, self.me, self.ttl)
            .await
            .map_err(unavailable)?;
        let Some(claimed) = claimed else {
            // Another replica was first.
            return Ok(match self.store.session(id).await.map_err(unavailable)? {
                Some(r) if r.owner != self.me => TakeOver::HeldBy(r.owner),
                _ => TakeOver::Gone,
            });
        };
        let Some(snapshot) = snapshot_of(&claimed) else {
            tracing::warn!("a legacy session record names no revision served here: not resumed");
            return Ok(TakeOver::Gone);
        };
        let entry = Entry {
            record: claimed,
            dirty: false,
            lost: false,
            confirmed: self.generation(),
        };
        self.held.lock().sessions.insert(id.to_owned(), entry);
        self.taken_over
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(TakeOver::Taken(snapshot))
    }
}
