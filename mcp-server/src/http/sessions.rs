//! The table of legacy sessions: capped in number and per client, and each ended once
//! idle for longer than the idle timeout, by a sweeper task or by the first request to
//! name it after that, whichever comes first. Ending one is what a `DELETE` does: the
//! router's streams go, the session's requests are cancelled, and the handler sees its
//! [`crate::HostSession`] end.
//!
//! A new session that finds no room makes some before anyone is refused: the idle
//! session (no request running, no stream open) idle longest is ended, as expiry would
//! end it, so sessions abandoned by crashed hosts (or an abuser) cannot lock out a new
//! host until they expire; its id then gets `404`, and a host still using it initialises
//! again. A session in use is never ended for room. A client (its principal with
//! authorization, else its address) at its quota makes room among its own sessions only,
//! so that it never costs another client a session: its own idle session idle longest
//! goes (a host that crashed and came back is not locked out by what it left behind),
//! and with none idle it is refused.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use http::{Response, StatusCode};
use mcp_types::{codes, Frame, Message};
use parking_lot::Mutex;

use super::legacy::LegacySession;
use super::reply::{rpc_error, HttpBody};
use super::routing::RouterEntries;
use crate::stats::{ServerStats, SessionPressure};

/// Whose a session is, for the per-client quota.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Client {
    /// An authenticated principal ([`crate::auth::Principal::identity`]).
    Principal(String),
    /// A client address, without authorization.
    Address(IpAddr),
}

/// The bounds of a session table.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub(super) max: usize,
    pub(super) per_client: usize,
    pub(super) idle_timeout: Duration,
}

impl Limits {
    pub(super) fn of(o: &super::HttpOptions) -> Limits {
        Limits {
            max: o.max_sessions,
            per_client: o.max_sessions_per_client,
            idle_timeout: o.session_idle_timeout,
        }
    }
}

/// Whose a new session is: its principal when the endpoint authenticates, else the
/// address it came from (`peer`, else a `SocketAddr` extension of its request), else
/// no one's (no quota applies).
pub(super) fn client_of(
    caller: &crate::context::Caller,
    peer: Option<SocketAddr>,
) -> Option<Client> {
    if let Some(p) = &caller.principal {
        return Some(Client::Principal(p.identity()));
    }
    let from_request = || {
        caller
            .http
            .as_ref()?
            .extensions
            .get::<SocketAddr>()
            .copied()
    };
    peer.or_else(from_request).map(|a| Client::Address(a.ip()))
}

/// Legacy sessions by id.
pub(super) struct Sessions {
    table: Mutex<Table>,
    limits: Limits,
    stats: Arc<ServerStats>,
    sweeping: AtomicBool,
}

/// The sessions, and how many each client holds.
#[derive(Default)]
struct Table {
    by_id: HashMap<String, Entry>,
    held: HashMap<Client, usize>,
}

struct Entry {
    session: Arc<LegacySession>,
    client: Option<Client>,
}

/// Why a session was not added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refused {
    /// Every session is in use.
    Full { max: usize },
    /// Every session of this client is in use, and it holds its quota.
    Quota { quota: usize, principal: bool },
}

impl Refused {
    /// The answer to the `initialize` refused: `503` when the server is full (for now,
    /// not the client's doing), `429` when the client holds its quota (its own doing: it
    /// has as many sessions in use as it may).
    pub(super) fn answer(&self, frame: &Frame) -> Response<HttpBody> {
        let id = match frame {
            Frame::Single(Message::Request(r)) => Some(r.id.clone()),
            _ => None,
        };
        let (status, why) = match self {
            Refused::Full { max } => (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("Server busy: all {max} sessions are in use; try again later"),
            ),
            Refused::Quota { quota, principal } => (
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "Too many sessions: this {} holds {quota}, its quota, all in use; \
                     end one (DELETE) or try again later",
                    if *principal {
                        "principal"
                    } else {
                        "client address"
                    }
                ),
            ),
        };
        tracing::warn!("refused initialize: {why}");
        rpc_error(status, id, codes::SERVER_BUSY, why)
    }
}

impl Table {
    fn insert(&mut self, id: String, entry: Entry) {
        if let Some(c) = &entry.client {
            *self.held.entry(c.clone()).or_default() += 1;
        }
        if let Some(old) = self.by_id.insert(id, entry) {
            self.forget(&old);
        }
    }

    fn remove(&mut self, id: &str) -> Option<Arc<LegacySession>> {
        let entry = self.by_id.remove(id)?;
        self.forget(&entry);
        Some(entry.session)
    }

    fn forget(&mut self, entry: &Entry) {
        let Some(c) = &entry.client else {
            return;
        };
        if let Some(n) = self.held.get_mut(c) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.held.remove(c);
            }
        }
    }

    fn held_by(&self, client: &Client) -> usize {
        self.held.get(client).copied().unwrap_or(0)
    }

    /// Takes out the session idle longest (of `client`, when given), unless none is
    /// idle.
    fn take_oldest_idle(&mut self, client: Option<&Client>) -> Option<Arc<LegacySession>> {
        let mut idle: Vec<(Duration, &String, &Entry)> = self
            .by_id
            .iter()
            .filter(|(_, e)| client.is_none() || e.client.as_ref() == client)
            .filter_map(|(id, e)| Some((e.session.idle_for()?, id, e)))
            .collect();
        idle.sort_by_key(|e| std::cmp::Reverse(e.0));
        // One that became busy since it was looked at stays.
        let id = idle
            .into_iter()
            .find(|(_, _, e)| e.session.take_if_idle())
            .map(|(_, id, _)| id.clone())?;
        self.remove(&id)
    }

    /// Takes out every session idle for `timeout` or longer.
    fn take_expired(&mut self, timeout: Duration) -> Vec<Arc<LegacySession>> {
        let ids: Vec<String> = self
            .by_id
            .iter()
            .filter(|(_, e)| expired(&e.session, timeout) && e.session.take_if_idle())
            .map(|(id, _)| id.clone())
            .collect();
        ids.iter().filter_map(|id| self.remove(id)).collect()
    }
}

fn expired(s: &LegacySession, timeout: Duration) -> bool {
    s.idle_for().is_some_and(|d| d >= timeout)
}

impl Sessions {
    pub(super) fn new(limits: Limits, stats: Arc<ServerStats>) -> Arc<Sessions> {
        Arc::new(Sessions {
            table: Mutex::new(Table::default()),
            limits,
            stats,
            sweeping: AtomicBool::new(false),
        })
    }

    pub(super) fn len(&self) -> usize {
        self.table.lock().by_id.len()
    }

    /// The session with this id, unless there is none or it has expired (then it ends
    /// now, and is gone).
    pub(super) async fn get(&self, id: &str) -> Option<Arc<LegacySession>> {
        let found = self.table.lock().by_id.get(id)?.session.clone();
        if !expired(&found, self.limits.idle_timeout) || !found.take_if_idle() {
            return Some(found);
        }
        let gone = self.table.lock().remove(id);
        // Unless a DELETE took it out meanwhile, and ends it.
        if let Some(s) = gone {
            tracing::debug!("legacy session expired");
            s.end().await;
        }
        None
    }

    /// Adds a session for `client` (`None`: no quota applies), making room first if the
    /// table is full or the client holds its quota (see the module's documentation).
    pub(super) async fn insert(
        self: &Arc<Self>,
        id: String,
        session: Arc<LegacySession>,
        client: Option<Client>,
    ) -> Result<(), Refused> {
        self.start_sweeper();
        let (admitted, gone) = self.admit(&mut self.table.lock(), id, session, client);
        for s in gone {
            s.end().await;
        }
        admitted
    }

    /// [`Sessions::insert`] under the table's lock: the sessions taken out to make room,
    /// for the caller to end once the lock is let go.
    fn admit(
        &self,
        t: &mut Table,
        id: String,
        session: Arc<LegacySession>,
        client: Option<Client>,
    ) -> (Result<(), Refused>, Vec<Arc<LegacySession>>) {
        let mut gone = Vec::new();
        if let Some(c) = client.as_ref() {
            let quota = self.limits.per_client;
            if t.held_by(c) >= quota {
                let Some(own) = t.take_oldest_idle(Some(c)) else {
                    self.stats.session_refused(SessionPressure::ClientQuota);
                    let principal = matches!(c, Client::Principal(_));
                    return (Err(Refused::Quota { quota, principal }), gone);
                };
                tracing::info!("a client at its session quota: its session idle longest ended");
                self.stats.session_evicted(SessionPressure::ClientQuota);
                gone.push(own);
            }
        }
        if t.by_id.len() >= self.limits.max {
            gone.extend(t.take_expired(self.limits.idle_timeout));
        }
        if t.by_id.len() >= self.limits.max {
            let Some(oldest) = t.take_oldest_idle(None) else {
                self.stats.session_refused(SessionPressure::TableFull);
                let max = self.limits.max;
                return (Err(Refused::Full { max }), gone);
            };
            tracing::info!("session table full: the session idle longest ended");
            self.stats.session_evicted(SessionPressure::TableFull);
            gone.push(oldest);
        }
        t.insert(id, Entry { session, client });
        (Ok(()), gone)
    }

    /// Takes a session out (`DELETE`); the caller ends it.
    pub(super) fn remove(&self, id: &str) -> Option<Arc<LegacySession>> {
        self.table.lock().remove(id)
    }

    /// Ends and removes every expired session.
    async fn sweep(&self) {
        let gone = self.table.lock().take_expired(self.limits.idle_timeout);
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
        let every = (self.limits.idle_timeout / 4)
            .clamp(Duration::from_millis(10), Duration::from_secs(30));
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
            .table
            .lock()
            .by_id
            .values()
            .map(|e| e.session.clone())
            .collect();
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
