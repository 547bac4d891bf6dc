//! Keeping upstreams alive: the first connection of each (at once, the start waiting at
//! most for a while), its listing put in the catalog, its list changes followed (`listing.rs`
//! says how often), a restart with backoff when its connection ends, and hosts told of
//! what changed. One keeper per upstream at a time: a reload hands them on.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use mcp_client::Client;
use mcp_types::protocol::*;

use super::announcer::Announcer;
use super::catalog::{Catalog, Listing, ListsChanged};
use super::id::UpstreamId;
use super::listing::{list_all, CLOSE_POLL, RELIST_INTERVAL};
use super::options::StartError;
use super::pool::{Pool, Upstream};
use crate::abort::AbortOnDrop;
use crate::upstream_error::UpstreamError;

/// When each upstream's first start (or listing) is over.
pub(super) struct Starting(Vec<(UpstreamId, tokio::sync::oneshot::Receiver<()>)>);

/// Keeps a pool's upstreams connected and the catalog listing what they offer. Cheap to
/// clone: each upstream's supervisor holds one.
#[derive(Clone)]
pub(super) struct Keeper {
    pool: Arc<Pool>,
    catalog: Arc<Catalog>,
    announcer: Arc<Announcer>,
}

impl Keeper {
    /// A keeper of `pool`'s upstreams, listing them in `catalog` and announcing changes
    /// through `announcer`.
    pub(super) fn new(pool: Arc<Pool>, catalog: Arc<Catalog>, announcer: Arc<Announcer>) -> Keeper {
        Keeper {
            pool,
            catalog,
            announcer,
        }
    }

    /// Connects (or lists) every upstream at once and checks the merged names of those
    /// done within `wait` (`None`: all of them). Gives when each start is over.
    pub(super) async fn connect_all(
        &self,
        wait: Option<std::time::Duration>,
    ) -> Result<Starting, StartError> {
        let mut starts = tokio::task::JoinSet::new();
        let mut over = Vec::new();
        for i in self.pool.upstreams().ids() {
            let keeper = self.clone();
            let (done, is_done) = tokio::sync::oneshot::channel::<()>();
            starts.spawn(async move {
                keeper.connect_or_list(i).await;
                let _ = done.send(());
            });
            over.push((i, is_done));
        }
        let deadline = wait.map(|w| tokio::time::Instant::now() + w);
        loop {
            let next = match deadline {
                Some(d) => tokio::time::timeout_at(d, starts.join_next()).await.ok(),
                None => Some(starts.join_next().await),
            };
            // All done (`Some(None)`), or the wait is over (`None`).
            if !matches!(next, Some(Some(_))) {
                break;
            }
        }
        self.catalog.check_collisions()?;
        if !starts.is_empty() {
            tracing::info!(
                upstreams = starts.len(),
                "serving without the upstreams still starting; their lists come when they do"
            );
        }
        starts.detach_all();
        Ok(Starting(over))
    }

    /// Keeps each upstream alive from now on (see `pool.rs`, `supervise`), once its first
    /// start is over.
    pub(super) fn keep_alive(&self, starting: Starting) {
        for (i, over) in starting.0 {
            let keeper = self.clone();
            tokio::spawn(async move {
                let _ = over.await;
                keeper.supervise(i).await;
            });
        }
    }

    /// Lists what upstream `i` offers over its connection if it has one (an upstream a
    /// reload takes over), else connects it if this aggregator keeps it (one being handed
    /// over is connected again by its new keeper, once it keeps it).
    async fn connect_or_list(&self, i: UpstreamId) -> bool {
        let u = &self.pool.get(i);
        let live = u.client().filter(|c| c.close_reason().is_none());
        match live {
            Some(client) => {
                self.relist(i, &client).await;
                true
            }
            None if self.pool.keeps(u) => self.connect(i).await,
            None => false,
        }
    }

    /// Connects upstream `i` and lists what it offers; false when it failed.
    async fn connect(&self, i: UpstreamId) -> bool {
        let u = self.pool.get(i).clone();
        let opened = match self.pool.open_shared(&u).await {
            Ok(client) => match self.pool.first_listing(&client).await {
                Ok(listing) => Ok((client, listing)),
                Err(e) => {
                    // Not listable is not usable: it fails, and is retried, like a failed start.
                    client.close().await;
                    Err(e)
                }
            },
            Err(e) => Err(e),
        };
        match opened {
            Ok((client, _)) if !self.pool.keeps(&u) => {
                // Shut down, or handed to another keeper, while it connected: it must not
                // outlive the gateway, nor stand beside that keeper's connection.
                client.close().await;
                false
            }
            Ok((client, listing)) => {
                tracing::info!(upstream = %u.config.key, revision = %client.revision(), tools = listing.tools.len(), "upstream connected");
                *u.client.write() = Some(client);
                *u.last_error.lock() = None;
                let changed = self.catalog.set_listing(i, listing);
                self.announcer.announce(i, changed);
                true
            }
            Err(e) => {
                tracing::warn!(upstream = %u.config.key, kind = e.kind(), "upstream failed: {e}");
                self.pool.failed(&u, e);
                false
            }
        }
    }

    /// Keeps upstream `i` alive: relists on its list-changed notifications, and restarts it
    /// with backoff when its connection ends.
    async fn supervise(&self, i: UpstreamId) {
        let u = self.pool.get(i).clone();
        let (min, max) = self.pool.settings().restart_backoff;
        let mut backoff = min;
        while self.pool.keeps(&u) {
            let Some(client) = u.client() else {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(max);
                if !self.pool.keeps(&u) {
                    return;
                }
                // Every start after the first is a restart, whether the last one ended or
                // never came up (an upstream that exits at start).
                u.restarts.fetch_add(1, Ordering::Relaxed);
                if self.connect(i).await {
                    backoff = min;
                } else {
                    // Not back: its tools go until it is (they were kept while it restarted).
                    let gone = self.catalog.set_listing(i, Listing::default());
                    self.announcer.announce(i, gone);
                }
                continue;
            };
            let notes = client.notifications();
            let mut _listen = None;
            if client.revision().era() == mcp_types::Era::Modern {
                // A 2026 upstream tells of list changes only on a subscription stream,
                // this keeper's: it ends with the keeping (a reload hands the connection on).
                _listen = Some(AbortOnDrop(client.listen(SubscriptionFilter {
                    tools_list_changed: Some(true),
                    prompts_list_changed: Some(true),
                    resources_list_changed: Some(true),
                    ..Default::default()
                })));
            }
            self.follow_list_changes(i, &u, &client, notes).await;
            if !self.pool.keeps(&u) {
                return;
            }
            let reason = client
                .close_reason()
                .map(|r| r.to_string())
                .unwrap_or_default();
            tracing::warn!(upstream = %u.config.key, "upstream connection ended ({reason}); restarting");
            {
                let mut c = u.client.write();
                // Only the connection that ended: one a keeper after this one opened stays.
                if c.as_ref().is_some_and(|c| c.same_connection(&client)) {
                    *c = None;
                }
            }
            // Its listing stays while it restarts: a call to one of its tools is told the
            // upstream is restarting (never `Unknown tool`), and hosts hear of no change
            // unless the restart fails or brings other lists.
            let ended = format!("restarting: its connection ended ({reason})");
            self.pool.failed(&u, UpstreamError::Transport(ended));
        }
    }

    /// Lists upstream `i` again when it says a list changed, on this connection or on
    /// another of its sessions (or a new session may offer others), until `client`'s
    /// connection ends or this aggregator stops keeping it. A
    /// flood of list changes is coalesced: the first is followed at once, the rest at most
    /// once per [`RELIST_INTERVAL`]; hosts hear only of the lists the upstream said changed
    /// or that read differently.
    async fn follow_list_changes(
        &self,
        i: UpstreamId,
        u: &Upstream,
        client: &Client,
        mut notes: tokio::sync::broadcast::Receiver<TypedNotification>,
    ) {
        let mut renewals = u.session_renewals.load(Ordering::Relaxed);
        let mut due = false;
        let mut last: Option<tokio::time::Instant> = None;
        loop {
            let next = last.map(|t| t + RELIST_INTERVAL).filter(|_| due);
            let tick = next.unwrap_or_else(|| tokio::time::Instant::now() + CLOSE_POLL);
            let changed = tokio::select! {
                n = notes.recv() => match n {
                    Ok(TypedNotification::Bare(_)) => true,
                    Ok(_) => false,
                    // Notifications were dropped: a list change may be among them.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => true,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => false,
                },
                () = u.heard_elsewhere.notified() => true,
                () = tokio::time::sleep_until(tick) => false,
            };
            let renewed = u.session_renewals.load(Ordering::Relaxed);
            due |= changed || renewed != renewals;
            renewals = renewed;
            let now = tokio::time::Instant::now();
            if due && last.is_none_or(|t| now >= t + RELIST_INTERVAL) {
                due = false;
                last = Some(now);
                // What the upstream said changed is announced even if the listing reads
                // the same (its notification is what a 2026 listen stream must hear); what
                // it did not say is announced only if the listing differs.
                let said = client.take_list_changes();
                let changed = self.relist(i, client).await.or_said(said);
                self.announcer.announce_change(i, changed);
            }
            if client.close_reason().is_some() || !self.pool.keeps(u) {
                return;
            }
        }
    }

    /// Lists again the upstreams whose `ttlMs` has run out.
    pub(super) async fn refresh_stale(&self) {
        for i in self.catalog.stale(std::time::Instant::now()) {
            if let Some(client) = self.pool.get(i).client() {
                let changed = self.relist(i, &client).await;
                self.announcer.announce(i, changed);
            }
        }
    }

    /// Lists upstream `i` again; when that fails, its last listing stays and the failure
    /// is reported in its status until a listing succeeds. Which lists changed.
    async fn relist(&self, i: UpstreamId, client: &Client) -> ListsChanged {
        let u = &self.pool.get(i);
        match list_all(client).await {
            Ok(listing) => {
                *u.last_error.lock() = None;
                self.catalog.set_listing(i, listing)
            }
            Err(e) => {
                tracing::warn!(upstream = %u.config.key, kind = e.kind(), "relisting failed: {e}");
                self.pool.failed(u, e);
                ListsChanged::default()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::announcer::Heard;
    use super::super::test_parts::{ids, in_process, missing, parts};
    use super::*;
    use mcp_server::ListChanged;
    use parking_lot::Mutex;

    /// What an announcer told, in order.
    type Told = Arc<Mutex<Vec<(ListChanged, Heard)>>>;

    /// A keeper of upstreams of `configs`, and what its announcer told.
    fn keeper(configs: Vec<super::super::options::UpstreamConfig>) -> (Keeper, Told) {
        let (pool, catalog) = parts(configs);
        let announcer = Arc::new(Announcer::default());
        let heard = Arc::new(Mutex::new(Vec::new()));
        let sink = heard.clone();
        announcer.listen(Arc::new(move |what, who| sink.lock().push((what, who))));
        (Keeper::new(pool, catalog, announcer), heard)
    }

    fn tool_names(k: &Keeper) -> Vec<(UpstreamId, String)> {
        k.catalog
            .tool_entries()
            .into_iter()
            .map(|(_, i, t)| (i, t.name.clone()))
            .collect()
    }

    #[tokio::test]
    async fn a_connected_upstreams_tools_are_listed_and_announced() {
        let (k, heard) = keeper(vec![in_process("alpha", vec!["echo", "add"])]);
        let i = ids(1)[0];
        assert!(tool_names(&k).is_empty());
        k.connect_all(None).await.expect("started");
        assert_eq!(
            tool_names(&k),
            [(i, "echo".to_string()), (i, "add".to_string())]
        );
        let heard = heard.lock().clone();
        assert_eq!(heard.len(), 1, "the tools alone changed");
        assert!(matches!(heard[0], (ListChanged::Tools, Heard::Upstream(u)) if u == i));
        let status = &k.pool.status()[0];
        assert!(status.connected && status.last_error.is_none());
        k.pool.close_all().await;
    }

    #[tokio::test]
    async fn an_upstream_that_fails_lists_nothing_and_says_why() {
        let (k, heard) = keeper(vec![missing("gone"), in_process("alpha", vec!["echo"])]);
        let [gone, alpha] = ids(2)[..] else {
            unreachable!()
        };
        k.connect_all(None)
            .await
            .expect("a failed upstream fails no start");
        assert_eq!(tool_names(&k), [(alpha, "echo".to_string())]);
        assert!(
            heard
                .lock()
                .iter()
                .all(|(_, who)| matches!(who, Heard::Upstream(u) if *u == alpha)),
            "nothing is announced for the failed upstream"
        );
        assert_eq!(k.pool.id_of("gone"), Some(gone));
        let status = &k.pool.status()[0];
        assert_eq!(status.key, "gone");
        assert!(!status.connected);
        let e = status.last_error.as_ref().expect("its failure is kept");
        assert_eq!(e.kind(), "unavailable");
        k.pool.close_all().await;
    }

    #[tokio::test]
    async fn a_kept_upstream_whose_connection_ends_is_restarted() {
        let (k, _) = keeper(vec![in_process("alpha", vec!["echo"])]);
        let i = ids(1)[0];
        let starting = k.connect_all(None).await.expect("started");
        k.keep_alive(starting);
        let first = k.pool.shared(i).expect("connected");
        first.close().await;
        // Closing is seen once the connection's reader ends: no event to wait on but that.
        let ended = || std::future::ready(first.close_reason().is_some());
        assert!(mcp_examples::wait_until(std::time::Duration::from_secs(5), ended).await);
        assert!(k.pool.reconnected(i).await, "restarted within its backoff");
        let again = k.pool.shared(i).expect("connected again");
        assert!(!again.same_connection(&first));
        let status = &k.pool.status()[0];
        assert_eq!(status.restarts, 1);
        assert!(status.connected && status.last_error.is_none());
        // Its listing stayed while it restarted, and is there after.
        assert_eq!(tool_names(&k), [(i, "echo".to_string())]);
        k.pool.close_all().await;
    }
}
