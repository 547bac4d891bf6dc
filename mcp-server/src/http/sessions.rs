//! The endpoint's live legacy sessions, by id, beside the [`SessionManager`] that decides
//! which exist: a session is admitted by the manager and then held here, and it ends
//! (as a `DELETE` ends it: the router's streams go, its requests are cancelled, and the
//! handler sees its [`crate::HostSession`] end) when the manager reports it evicted or
//! expired, when a request finds it idle past the idle timeout, or on `DELETE`.
//!
//! A request naming a session held here is served after one lock, without waiting on the
//! manager, which is only told of the use (the request path stays as cheap with a store
//! elsewhere); an id not held here is looked up in the manager, and gets `404` either way.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use http::{Response, StatusCode};
use mcp_types::{codes, Frame, Message};
use parking_lot::Mutex;

use super::handover::SessionHandover;
use super::legacy::LegacySession;
use super::reply::{rpc_error, HttpBody};
use super::routing::RouterEntries;
use super::session_id;
use super::session_manager::{
    EvictionReason, SessionClient, SessionManager, SessionRecord, SessionRefused,
};
use crate::seal::Sealer;
use crate::stats::{ServerStats, SessionPressure};

/// Whose a new session is: its principal when the endpoint authenticates, else the
/// address it came from (`peer`, else a `SocketAddr` extension of its request), else
/// no one's (no quota applies).
pub(super) fn client_of(
    caller: &crate::context::Caller,
    peer: Option<SocketAddr>,
) -> Option<SessionClient> {
    if let Some(p) = &caller.principal {
        return Some(SessionClient::Principal(p.identity()));
    }
    let from_request = || {
        caller
            .http
            .as_ref()?
            .extensions
            .get::<SocketAddr>()
            .copied()
    };
    peer.or_else(from_request)
        .map(|a| SessionClient::Address(a.ip()))
}

/// The legacy sessions this endpoint serves, and the manager of their records.
pub(super) struct Sessions {
    live: Mutex<HashMap<String, Arc<LegacySession>>>,
    manager: Arc<dyn SessionManager>,
    /// The manager's, read once.
    idle_timeout: Duration,
    stats: Arc<ServerStats>,
    sweeping: AtomicBool,
    /// What tells the ids this deployment issued from any other text.
    sealer: Option<Arc<Sealer>>,
    /// Where replicas keep the sessions' snapshots, if they share them.
    handover: Option<Arc<dyn SessionHandover>>,
}

/// The answer to the `initialize` refused: `503` when the server is full (for now, not
/// the client's doing) or its store cannot be asked, `429` when the client holds its quota
/// (its own doing: it has as many sessions in use as it may).
pub(super) fn refusal(refused: &SessionRefused, frame: &Frame) -> Response<HttpBody> {
    let id = match frame {
        Frame::Single(Message::Request(r)) => Some(r.id.clone()),
        _ => None,
    };
    let (status, why) = match refused {
        SessionRefused::Full { max } => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("Server busy: all {max} sessions are in use; try again later"),
        ),
        SessionRefused::ClientQuota { quota, client } => (
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "Too many sessions: this {} holds {quota}, its quota, all in use; \
                 end one (DELETE) or try again later",
                match client {
                    SessionClient::Principal(_) => "principal",
                    _ => "client address",
                }
            ),
        ),
        other => {
            tracing::warn!("session manager: {other}");
            (StatusCode::SERVICE_UNAVAILABLE, unavailable_text())
        }
    };
    tracing::warn!("refused initialize: {why}");
    rpc_error(status, id, codes::SERVER_BUSY, why)
}

fn unavailable_text() -> String {
    "Server busy: sessions cannot be looked up now; try again later".into()
}

impl Sessions {
    pub(super) fn new(
        manager: Arc<dyn SessionManager>,
        stats: Arc<ServerStats>,
        sealer: Option<Arc<Sealer>>,
        handover: Option<Arc<dyn SessionHandover>>,
    ) -> Arc<Sessions> {
        Arc::new(Sessions {
            handover,
            live: Mutex::new(HashMap::new()),
            idle_timeout: manager.idle_timeout(),
            manager,
            stats,
            sweeping: AtomicBool::new(false),
            sealer,
        })
    }

    pub(super) fn manager(&self) -> &Arc<dyn SessionManager> {
        &self.manager
    }

    /// Whether session `id` is held here.
    pub(super) fn holds(&self, id: &str) -> bool {
        self.live.lock().contains_key(id)
    }

    pub(super) fn len(&self) -> usize {
        self.live.lock().len()
    }

    /// The session with this id, or the answer to give instead: `404` when it is not
    /// held here or has expired (then it ends now, and is gone), `503` when the manager
    /// cannot say whether it exists.
    pub(super) async fn get(
        &self,
        id: &str,
    ) -> Result<Arc<LegacySession>, Box<Response<HttpBody>>> {
        let found = self.live.lock().get(id).cloned();
        let Some(found) = found else {
            return Err(Box::new(self.not_held(id).await));
        };
        if found.is_claimed() {
            // Claimed by the manager, and about to be ended: as if already gone.
            return Err(Box::new(super::not_found()));
        }
        if !found.claim_expired(self.idle_timeout) {
            self.manager.touch(id);
            return Ok(found);
        }
        let gone = self.live.lock().remove(id);
        // Unless a DELETE took it out meanwhile, and ends it.
        if let Some(s) = gone {
            tracing::debug!("legacy session expired");
            self.close_record(id).await;
            s.end().await;
        }
        Err(Box::new(super::not_found()))
    }

    /// The answer to a request naming a session not held here: an id this deployment did
    /// not issue (altered, forged, sealed with a retired key, not an id at all) is `404`
    /// without asking the manager.
    async fn not_held(&self, id: &str) -> Response<HttpBody> {
        let claims = self.sealer.as_deref().map(|s| session_id::open(s, id));
        if let Some(Err(e)) = claims {
            tracing::debug!("legacy session id refused: {e}");
            return super::not_found();
        }
        match self.manager.find(id).await {
            Ok(None) => {}
            // A session lives in the process that made it.
            Ok(Some(_)) => tracing::debug!("legacy session held by another process"),
            Err(e) => {
                tracing::warn!("legacy session lookup failed: {e}");
                let why = unavailable_text();
                return rpc_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    None,
                    codes::SERVER_BUSY,
                    why,
                );
            }
        }
        super::not_found()
    }

    /// Has the manager admit a session for `client` (`None`: no quota applies) and holds
    /// it, its snapshot kept with the handover from then on (if replicas share sessions),
    /// ending the sessions taken out to make room.
    pub(super) async fn insert(
        self: &Arc<Self>,
        id: String,
        session: Arc<LegacySession>,
        client: Option<SessionClient>,
    ) -> Result<(), SessionRefused> {
        self.start_sweeper();
        if let Some(h) = &self.handover {
            session.keep_with(&id, h.clone());
        }
        let record = SessionRecord::new(id.clone(), client);
        let admitted = match self.manager.create(record, session.activity()).await {
            Ok(a) => a,
            Err(refused) => {
                match &refused {
                    SessionRefused::Full { .. } => {
                        self.stats.session_refused(SessionPressure::TableFull)
                    }
                    SessionRefused::ClientQuota { .. } => {
                        self.stats.session_refused(SessionPressure::ClientQuota)
                    }
                    _ => {}
                }
                return Err(refused);
            }
        };
        let mut gone = Vec::with_capacity(admitted.evicted.len());
        {
            let mut live = self.live.lock();
            for e in &admitted.evicted {
                self.note_eviction(e.reason);
                self.ended(&e.id);
                gone.extend(live.remove(&e.id));
            }
            live.insert(id, session);
        }
        for s in gone {
            s.end().await;
        }
        Ok(())
    }

    fn note_eviction(&self, reason: EvictionReason) {
        match reason {
            EvictionReason::ClientQuota => {
                tracing::info!("a client at its session quota: its session idle longest ended");
                self.stats.session_evicted(SessionPressure::ClientQuota);
            }
            EvictionReason::TableFull => {
                tracing::info!("session table full: the session idle longest ended");
                self.stats.session_evicted(SessionPressure::TableFull);
            }
            _ => tracing::debug!("legacy session expired"),
        }
    }

    /// Takes a session out (`DELETE`); the caller ends it.
    pub(super) async fn remove(&self, id: &str) {
        let removed = self.live.lock().remove(id);
        if removed.is_some() {
            self.close_record(id).await;
        }
    }

    /// Lets session `id` go without ending its records: another replica took it over.
    pub(super) async fn let_go(&self, id: &str) {
        let gone = self.live.lock().remove(id);
        if let Some(s) = gone {
            tracing::info!("a legacy session another replica took over is let go here");
            if let Err(e) = self.manager.close(id).await {
                tracing::debug!("legacy session let go, its record here kept: {e}");
            }
            s.end().await;
        }
    }

    /// The handover, if replicas share sessions.
    pub(super) fn handover(&self) -> Option<&Arc<dyn SessionHandover>> {
        self.handover.as_ref()
    }

    /// Session `id` ended here: the replicas' record of it goes too.
    fn ended(&self, id: &str) {
        if let Some(h) = &self.handover {
            h.ended(id);
        }
    }

    /// Has the manager take out the record of a session ended here.
    async fn close_record(&self, id: &str) {
        self.ended(id);
        if let Err(e) = self.manager.close(id).await {
            // The record goes when it expires.
            tracing::warn!("legacy session ended, its record kept: {e}");
        }
    }

    /// Ends every session the manager expires.
    async fn sweep(&self) {
        let ids = match self.manager.expire().await {
            Ok(ids) => ids,
            Err(e) => {
                tracing::warn!("legacy sessions not swept: {e}");
                return;
            }
        };
        if ids.is_empty() {
            return;
        }
        tracing::debug!(count = ids.len(), "legacy sessions expired");
        for id in &ids {
            self.ended(id);
        }
        let gone: Vec<Arc<LegacySession>> = {
            let mut live = self.live.lock();
            ids.iter().filter_map(|id| live.remove(id)).collect()
        };
        for s in gone {
            s.end().await;
        }
    }

    /// Starts the task that sweeps expired sessions, once (it needs a runtime, which
    /// the first `initialize` runs in). It holds the sessions weakly and stops with them.
    fn start_sweeper(self: &Arc<Self>) {
        if self.sweeping.swap(true, Ordering::SeqCst) {
            return;
        }
        let every =
            (self.idle_timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(30));
        let sessions: Weak<Sessions> = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(s) = sessions.upgrade() else {
                    return;
                };
                s.sweep().await;
            }
        });
    }

    /// What every session's router holds now, summed.
    pub(super) fn entries(&self) -> RouterEntries {
        let sessions: Vec<Arc<LegacySession>> = self.live.lock().values().cloned().collect();
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
