//! [`SessionTable`]: the default [`SessionManager`], the legacy sessions of one endpoint
//! in this process's memory, capped in number and per client, each expiring once idle
//! for longer than the idle timeout.
//!
//! A new session that finds no room makes some before anyone is refused: the idle
//! session (no request running, no stream open) idle longest is taken out, as expiry
//! would take it, so sessions abandoned by crashed hosts (or an abuser) cannot lock out a
//! new host until they expire; its id then gets `404`, and a host still using it
//! initialises again. A session in use is never taken out for room. A client (its
//! principal with authorization, else its address) at its quota makes room among its own
//! sessions only, so that it never costs another client a session: its own idle session
//! idle longest goes (a host that crashed and came back is not locked out by what it left
//! behind), and with none idle it is refused.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;

use super::session_manager::{
    Admitted, Eviction, EvictionReason, SessionActivity, SessionClient, SessionManager,
    SessionRecord, SessionRefused, SessionStoreError,
};
use super::HttpOptions;

/// The legacy sessions of one endpoint, in memory: the [`SessionManager`] an endpoint
/// uses unless [`HttpOptions::session_manager`] names another.
///
/// Bounds: [`HttpOptions::max_sessions`] sessions, [`HttpOptions::max_sessions_per_client`]
/// per client, each idle for at most [`HttpOptions::session_idle_timeout`] (see the
/// module's documentation for how room is made). Idleness is read from each session's
/// [`SessionActivity`], so [`SessionManager::touch`] does nothing. Records are only ever
/// added by [`SessionManager::create`], which keeps to the bound, so the table holds
/// `max_sessions` at most.
pub struct SessionTable {
    table: Mutex<Table>,
    max: usize,
    per_client: usize,
    idle_timeout: Duration,
}

impl std::fmt::Debug for SessionTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionTable")
            .field("sessions", &self.table.lock().by_id.len())
            .field("max", &self.max)
            .field("per_client", &self.per_client)
            .field("idle_timeout", &self.idle_timeout)
            .finish()
    }
}

/// The sessions, and how many each client holds.
#[derive(Default)]
struct Table {
    by_id: HashMap<String, Entry>,
    held: HashMap<SessionClient, usize>,
}

struct Entry {
    record: SessionRecord,
    activity: Arc<dyn SessionActivity>,
}

impl Table {
    fn insert(&mut self, entry: Entry) {
        if let Some(c) = &entry.record.client {
            *self.held.entry(c.clone()).or_default() += 1;
        }
        if let Some(old) = self.by_id.insert(entry.record.id.clone(), entry) {
            self.forget(&old);
        }
    }

    fn remove(&mut self, id: &str) -> Option<Entry> {
        let entry = self.by_id.remove(id)?;
        self.forget(&entry);
        Some(entry)
    }

    fn forget(&mut self, entry: &Entry) {
        let Some(c) = &entry.record.client else {
            return;
        };
        if let Some(n) = self.held.get_mut(c) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.held.remove(c);
            }
        }
    }

    fn held_by(&self, client: &SessionClient) -> usize {
        self.held.get(client).copied().unwrap_or(0)
    }

    /// Takes out the session idle longest (of `client`, when given), unless none is
    /// idle; its id.
    fn take_oldest_idle(&mut self, client: Option<&SessionClient>) -> Option<String> {
        let mut idle: Vec<(Duration, &String, &Entry)> = self
            .by_id
            .iter()
            .filter(|(_, e)| client.is_none() || e.record.client.as_ref() == client)
            .filter_map(|(id, e)| Some((e.activity.idle_for()?, id, e)))
            .collect();
        idle.sort_by_key(|e| std::cmp::Reverse(e.0));
        // One that became busy since it was looked at stays.
        let id = idle
            .into_iter()
            .find(|(_, _, e)| e.activity.claim_idle())
            .map(|(_, id, _)| id.clone())?;
        self.remove(&id);
        Some(id)
    }

    /// Takes out every session idle for `timeout` or longer; their ids.
    fn take_expired(&mut self, timeout: Duration) -> Vec<String> {
        let ids: Vec<String> = self
            .by_id
            .iter()
            .filter(|(_, e)| expired(e.activity.as_ref(), timeout) && e.activity.claim_idle())
            .map(|(id, _)| id.clone())
            .collect();
        for id in &ids {
            self.remove(id);
        }
        ids
    }
}

fn expired(a: &dyn SessionActivity, timeout: Duration) -> bool {
    a.idle_for().is_some_and(|d| d >= timeout)
}

impl SessionTable {
    /// An empty table bounded by `options`' `max_sessions`, `max_sessions_per_client`
    /// and `session_idle_timeout`.
    pub fn new(options: &HttpOptions) -> Self {
        SessionTable {
            table: Mutex::new(Table::default()),
            max: options.max_sessions,
            per_client: options.max_sessions_per_client,
            idle_timeout: options.session_idle_timeout,
        }
    }

    /// [`SessionManager::create`] under the table's lock.
    fn admit(&self, t: &mut Table, entry: Entry) -> Result<Admitted, SessionRefused> {
        let mut evicted = Vec::new();
        if let Some(c) = entry.record.client.as_ref() {
            let quota = self.per_client;
            if t.held_by(c) >= quota {
                let Some(own) = t.take_oldest_idle(Some(c)) else {
                    let client = c.clone();
                    return Err(SessionRefused::ClientQuota { quota, client });
                };
                evicted.push(Eviction::new(own, EvictionReason::ClientQuota));
            }
        }
        if t.by_id.len() >= self.max {
            let gone = t.take_expired(self.idle_timeout);
            evicted.extend(
                gone.into_iter()
                    .map(|id| Eviction::new(id, EvictionReason::Expired)),
            );
        }
        if t.by_id.len() >= self.max {
            let Some(oldest) = t.take_oldest_idle(None) else {
                return Err(SessionRefused::Full { max: self.max });
            };
            evicted.push(Eviction::new(oldest, EvictionReason::TableFull));
        }
        t.insert(entry);
        Ok(Admitted::new(evicted))
    }
}

#[async_trait]
impl SessionManager for SessionTable {
    fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }

    async fn create(
        &self,
        record: SessionRecord,
        activity: Arc<dyn SessionActivity>,
    ) -> Result<Admitted, SessionRefused> {
        self.admit(&mut self.table.lock(), Entry { record, activity })
    }

    async fn find(&self, id: &str) -> Result<Option<SessionRecord>, SessionStoreError> {
        Ok(self.table.lock().by_id.get(id).map(|e| e.record.clone()))
    }

    fn touch(&self, _id: &str) {}

    async fn expire(&self) -> Result<Vec<String>, SessionStoreError> {
        Ok(self.table.lock().take_expired(self.idle_timeout))
    }

    async fn close(&self, id: &str) -> Result<bool, SessionStoreError> {
        Ok(self.table.lock().remove(id).is_some())
    }

    async fn count(&self) -> Result<usize, SessionStoreError> {
        Ok(self.table.lock().by_id.len())
    }

    async fn list(&self, limit: usize) -> Result<Vec<SessionRecord>, SessionStoreError> {
        let t = self.table.lock();
        Ok(t.by_id
            .values()
            .take(limit)
            .map(|e| e.record.clone())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use tokio::time::advance;

    use super::*;
    use crate::http::legacy::{Activity, Busy};

    const SEC: Duration = Duration::from_secs(1);

    fn table(max: usize, per_client: usize, idle: Duration) -> SessionTable {
        let o = HttpOptions::default()
            .max_sessions(max)
            .max_sessions_per_client(per_client)
            .session_idle_timeout(idle);
        SessionTable::new(&o)
    }

    fn address(n: u8) -> SessionClient {
        SessionClient::Address(IpAddr::V4(Ipv4Addr::new(10, 0, 0, n)))
    }

    /// Has `t` admit session `id` of `client`: its activity, and what went for it.
    async fn create(
        t: &SessionTable,
        id: &str,
        client: Option<SessionClient>,
    ) -> Result<(Arc<Activity>, Vec<(String, EvictionReason)>), SessionRefused> {
        let activity = Activity::new();
        let admitted = t
            .create(SessionRecord::new(id, client), activity.clone())
            .await?;
        let evicted = admitted.evicted.into_iter().map(|e| (e.id, e.reason));
        Ok((activity, evicted.collect()))
    }

    fn gone(id: &str, reason: EvictionReason) -> Vec<(String, EvictionReason)> {
        vec![(id.to_owned(), reason)]
    }

    async fn has(t: &SessionTable, id: &str) -> bool {
        t.find(id).await.expect("in memory").is_some()
    }

    #[tokio::test(start_paused = true)]
    async fn sessions_are_admitted_up_to_the_bound_and_refused_past_it_while_all_are_in_use() {
        let t = table(3, 3, 60 * SEC);
        let mut uses = Vec::new();
        for id in ["a", "b", "c"] {
            let (activity, evicted) = create(&t, id, None).await.expect("room");
            assert!(evicted.is_empty());
            uses.push((Busy::new(&activity), activity));
            advance(SEC).await;
        }
        let refused = create(&t, "d", None).await.err();
        assert_eq!(refused, Some(SessionRefused::Full { max: 3 }));
        assert_eq!(t.count().await, Ok(3));
        assert!(!has(&t, "d").await);
        // Once one is idle it makes room, and is claimed: no use begins on it again.
        let (_, b_activity) = uses.remove(1);
        advance(SEC).await;
        let (_, evicted) = create(&t, "d", None).await.expect("room made");
        assert_eq!(evicted, gone("b", EvictionReason::TableFull));
        assert_eq!(b_activity.idle_for(), None);
        assert!(!b_activity.claim_idle());
        assert!(!has(&t, "b").await && has(&t, "d").await);
        assert_eq!(t.count().await, Ok(3));
    }

    #[tokio::test(start_paused = true)]
    async fn the_session_idle_longest_goes_first() {
        let t = table(3, 3, 600 * SEC);
        let mut made = Vec::new();
        for id in ["a", "b", "c"] {
            made.push(create(&t, id, None).await.expect("room").0);
            advance(SEC).await;
        }
        // `a` is the oldest, but used since: `b` has been idle longest.
        drop(Busy::new(&made[0]));
        advance(SEC).await;
        let (_, evicted) = create(&t, "d", None).await.expect("room made");
        assert_eq!(evicted, gone("b", EvictionReason::TableFull));
        advance(SEC).await;
        let (_, evicted) = create(&t, "e", None).await.expect("room made");
        assert_eq!(evicted, gone("c", EvictionReason::TableFull));
        assert!(has(&t, "a").await);
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_at_its_quota_makes_room_among_its_own_sessions_only() {
        let t = table(8, 2, 600 * SEC);
        let (x, y) = (address(1), address(2));
        // Y's session is the one idle longest of all.
        create(&t, "y1", Some(y.clone())).await.expect("room");
        advance(SEC).await;
        let mut uses = Vec::new();
        for id in ["x1", "x2"] {
            let (activity, _) = create(&t, id, Some(x.clone())).await.expect("room");
            uses.push(Busy::new(&activity));
            advance(SEC).await;
        }
        let refused = create(&t, "x3", Some(x.clone())).await.err();
        let quota = SessionRefused::ClientQuota {
            quota: 2,
            client: x.clone(),
        };
        assert_eq!(refused, Some(quota));
        // Another client still gets in; one of no known client is held to no quota.
        create(&t, "y2", Some(y)).await.expect("room");
        for id in ["n1", "n2", "n3"] {
            create(&t, id, None).await.expect("room");
        }
        // With its sessions idle, X's third ends X's own oldest, not Y's older one.
        for u in uses {
            drop(u);
            advance(SEC).await;
        }
        let (_, evicted) = create(&t, "x3", Some(x.clone())).await.expect("room made");
        assert_eq!(evicted, gone("x1", EvictionReason::ClientQuota));
        assert!(has(&t, "y1").await);
        // A session closed no longer counts against its client.
        assert_eq!(t.close("x2").await, Ok(true));
        assert_eq!(t.close("x2").await, Ok(false));
        let (_, evicted) = create(&t, "x4", Some(x)).await.expect("room");
        assert!(evicted.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn idle_sessions_expire_once_the_timeout_has_passed_and_those_in_use_do_not() {
        let t = table(8, 8, 60 * SEC);
        let (idle, _) = create(&t, "idle", None).await.expect("room");
        let (used, _) = create(&t, "used", None).await.expect("room");
        let running = Busy::new(&used);
        advance(59 * SEC).await;
        assert_eq!(t.expire().await, Ok(Vec::new()));
        advance(SEC).await;
        assert_eq!(t.expire().await, Ok(vec!["idle".to_owned()]));
        assert!(!idle.claim_idle(), "claimed as it expired");
        assert!(!has(&t, "idle").await);
        advance(120 * SEC).await;
        assert_eq!(t.expire().await, Ok(Vec::new()), "in use");
        drop(running);
        advance(60 * SEC).await;
        assert_eq!(t.expire().await, Ok(vec!["used".to_owned()]));
        assert_eq!(t.count().await, Ok(0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_table_takes_out_its_expired_sessions_before_evicting() {
        let t = table(2, 2, 60 * SEC);
        create(&t, "a", None).await.expect("room");
        create(&t, "b", None).await.expect("room");
        advance(61 * SEC).await;
        let (_, mut evicted) = create(&t, "c", None).await.expect("room made");
        evicted.sort_by(|a, b| a.0.cmp(&b.0));
        let expired = |id: &str| (id.to_owned(), EvictionReason::Expired);
        assert_eq!(evicted, vec![expired("a"), expired("b")]);
        assert_eq!(t.list(8).await.map(|l| l.len()), Ok(1));
        assert_eq!(t.list(0).await, Ok(Vec::new()));
    }
}
