//! The table of legacy sessions: capped in number, and each ended once idle for longer
//! than the idle timeout, by a sweeper task or by the first request to name it after
//! that, whichever comes first. Ending one is what a `DELETE` does: the router's streams
//! go, the session's requests are cancelled, and the handler sees its
//! [`crate::HostSession`] end.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use super::legacy::LegacySession;
use super::routing::RouterEntries;

/// Legacy sessions by id.
pub(super) struct Sessions {
    map: Mutex<HashMap<String, Arc<LegacySession>>>,
    max: usize,
    idle_timeout: Duration,
    sweeping: AtomicBool,
}

/// The table is full: the session was not added.
pub(super) struct Full;

impl Sessions {
    pub(super) fn new(max: usize, idle_timeout: Duration) -> Arc<Sessions> {
        Arc::new(Sessions {
            map: Mutex::new(HashMap::new()),
            max,
            idle_timeout,
            sweeping: AtomicBool::new(false),
        })
    }

    pub(super) fn len(&self) -> usize {
        self.map.lock().map(|s| s.len()).unwrap_or(0)
    }

    fn expired(&self, s: &LegacySession) -> bool {
        s.idle_for().is_some_and(|d| d >= self.idle_timeout)
    }

    /// The session with this id, unless there is none or it has expired (then it ends
    /// now, and is gone).
    pub(super) async fn get(&self, id: &str) -> Option<Arc<LegacySession>> {
        let found = self.map.lock().ok()?.get(id).cloned()?;
        if !self.expired(&found) {
            return Some(found);
        }
        let gone = self.map.lock().ok().and_then(|mut m| m.remove(id));
        if let Some(s) = gone {
            tracing::debug!("legacy session expired");
            s.end().await;
        }
        None
    }

    /// Adds a session, unless the table is full of sessions that have not expired.
    pub(super) async fn insert(
        self: &Arc<Self>,
        id: String,
        session: Arc<LegacySession>,
    ) -> Result<(), Full> {
        self.start_sweeper();
        let full = self.map.lock().map(|m| m.len() >= self.max).unwrap_or(true);
        if full {
            self.sweep().await;
        }
        let Ok(mut m) = self.map.lock() else {
            return Err(Full);
        };
        if m.len() >= self.max {
            return Err(Full);
        }
        m.insert(id, session);
        Ok(())
    }

    /// Takes a session out (`DELETE`); the caller ends it.
    pub(super) fn remove(&self, id: &str) -> Option<Arc<LegacySession>> {
        self.map.lock().ok()?.remove(id)
    }

    /// Ends and removes every expired session.
    async fn sweep(&self) {
        let gone: Vec<Arc<LegacySession>> = match self.map.lock() {
            Ok(mut m) => {
                let ids: Vec<String> = m
                    .iter()
                    .filter(|(_, s)| self.expired(s))
                    .map(|(id, _)| id.clone())
                    .collect();
                ids.iter().filter_map(|id| m.remove(id)).collect()
            }
            Err(_) => Vec::new(),
        };
        if !gone.is_empty() {
            tracing::debug!(count = gone.len(), "legacy sessions expired");
        }
        for s in gone {
            s.end().await;
        }
    }

    /// Starts the task that sweeps expired sessions, once (it needs a runtime, which
    /// the first `initialize` runs in). It holds the table weakly and stops with it.
    fn start_sweeper(self: &Arc<Self>) {
        if self.sweeping.swap(true, Ordering::SeqCst) {
            return;
        }
        let every =
            (self.idle_timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(30));
        let table: Weak<Sessions> = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(t) = table.upgrade() else {
                    return;
                };
                t.sweep().await;
            }
        });
    }

    /// What every session's router holds now, summed.
    pub(super) fn entries(&self) -> RouterEntries {
        let sessions: Vec<Arc<LegacySession>> = self
            .map
            .lock()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default();
        sessions
            .iter()
            .map(|s| s.entries())
            .fold(RouterEntries::default(), |a, e| RouterEntries {
                streams: a.streams + e.streams,
                waiting: a.waiting + e.waiting,
                progress: a.progress + e.progress,
                replay_events: a.replay_events + e.replay_events,
                replay_bytes: a.replay_bytes + e.replay_bytes,
                parked: a.parked + e.parked,
            })
    }
}
