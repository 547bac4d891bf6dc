//! What a host with upstream sessions of its own sees: each such session's lists (tools,
//! prompts, resources) in place of the catalog's for that upstream (an upstream whose
//! lists differ per session is exactly why a host would have a session of its own),
//! followed as the session says they changed, told to that host only, and the routes its
//! calls take.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use mcp_client::Client;
use mcp_server::{HostSession, HostSessionId, RequestContext};
use mcp_types::protocol::{Prompt, Tool, TypedNotification};
use mcp_types::raw::Exact;
use parking_lot::Mutex;

use super::announcer::Announcer;
use super::catalog::{Catalog, Listing, ListsChanged, OwnListings, Routes};
use super::id::{PerUpstream, UpstreamId};
use super::listing::{CLOSE_POLL, RELIST_INTERVAL};
use super::pages::{as_exposed, exposed_text};
use super::pool::Pool;
use super::route::Route;
use super::visibility::Seen;
use serde_json::value::RawValue;

/// The listings of hosts' own upstream sessions, by host (a host session's id; any key
/// in the unit tests).
pub(super) struct OwnLists<H = HostSessionId> {
    hosts: Mutex<HashMap<H, HostLists>>,
    /// How many hosts have any: a call looks here before it takes the lock.
    count: AtomicUsize,
    /// Gives each session followed a token of its own.
    next_token: std::sync::atomic::AtomicU64,
}

impl<H> Default for OwnLists<H> {
    fn default() -> Self {
        OwnLists {
            hosts: Mutex::new(HashMap::new()),
            count: AtomicUsize::new(0),
            next_token: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

#[derive(Default)]
struct HostLists {
    listings: OwnListings,
    /// Which session's follower set each listing: a follower whose session was replaced
    /// must not remove (or overwrite) its successor's.
    tokens: HashMap<UpstreamId, u64>,
    /// Bumped whenever `listings` changes.
    generation: u64,
    /// The routes made for (the catalog's generation, `generation`).
    routes: Option<(u64, u64, Arc<Routes>)>,
}

impl<H: Copy + Eq + std::hash::Hash> OwnLists<H> {
    /// A token for the follower of a newly opened session.
    fn token(&self) -> u64 {
        self.next_token.fetch_add(1, Ordering::Relaxed)
    }

    /// Takes `listing`, by the follower holding `token`, as what `host` sees of upstream
    /// `i`; the newest session's follower wins.
    fn set(&self, host: H, i: UpstreamId, token: u64, listing: Listing) {
        let mut hosts = self.hosts.lock();
        let lists = hosts.entry(host).or_insert_with(|| {
            self.count.fetch_add(1, Ordering::SeqCst);
            HostLists::default()
        });
        if lists.tokens.get(&i).is_some_and(|t| *t > token) {
            return;
        }
        lists.tokens.insert(i, token);
        lists.listings.insert(i, Arc::new(listing));
        lists.generation += 1;
    }

    /// `host` sees the catalog's listing of upstream `i` again, unless a newer session's
    /// follower than `token`'s set it.
    fn remove(&self, host: H, i: UpstreamId, token: u64) {
        let mut hosts = self.hosts.lock();
        let Some(lists) = hosts.get_mut(&host) else {
            return;
        };
        if lists.tokens.get(&i) != Some(&token) {
            return;
        }
        lists.tokens.remove(&i);
        lists.listings.remove(&i);
        lists.generation += 1;
        if lists.listings.is_empty() {
            hosts.remove(&host);
            self.count.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// What `host` sees of upstream `i` in place of the catalog's listing, if anything.
    fn get(&self, host: H, i: UpstreamId) -> Option<Arc<Listing>> {
        let hosts = self.hosts.lock();
        hosts.get(&host)?.listings.get(&i).cloned()
    }

    /// Whether `host` sees a listing of its own of upstream `i`.
    pub(super) fn has(&self, host: Option<H>, i: UpstreamId) -> bool {
        match host {
            Some(host) if self.count.load(Ordering::SeqCst) > 0 => self.get(host, i).is_some(),
            _ => false,
        }
    }

    /// Whether `host` sees any listing of its own.
    fn has_any(&self, host: Option<H>) -> bool {
        match host {
            Some(host) if self.count.load(Ordering::SeqCst) > 0 => {
                self.hosts.lock().contains_key(&host)
            }
            _ => false,
        }
    }

    /// The listings `host` sees in place of the catalog's, if any.
    fn listings(&self, host: Option<H>) -> Option<OwnListings> {
        if self.count.load(Ordering::SeqCst) == 0 {
            return None;
        }
        let hosts = self.hosts.lock();
        Some(hosts.get(&host?)?.listings.clone())
    }

    /// The routes of `host`'s calls, if it sees listings of its own (made again only when
    /// they or the catalog changed).
    fn routes(&self, host: Option<H>, catalog: &Catalog) -> Option<Arc<Routes>> {
        if self.count.load(Ordering::SeqCst) == 0 {
            return None;
        }
        let mut hosts = self.hosts.lock();
        let lists = hosts.get_mut(&host?)?;
        let now = (catalog.generation(), lists.generation);
        if let Some((c, o, routes)) = &lists.routes {
            if (*c, *o) == now {
                return Some(routes.clone());
            }
        }
        let routes = Arc::new(catalog.routes_with(Some(&lists.listings)));
        lists.routes = Some((now.0, now.1, routes.clone()));
        Some(routes)
    }
}

/// The catalog as each host sees it: the listings of its own upstream sessions in place
/// of the catalog's, followed as those sessions change, and told to that host alone.
pub(super) struct OwnSessions {
    lists: OwnLists,
    pool: Arc<Pool>,
    catalog: Arc<Catalog>,
    announcer: Arc<Announcer>,
}

impl OwnSessions {
    /// No host has a session of its own yet.
    pub(super) fn new(pool: Arc<Pool>, catalog: Arc<Catalog>, announcer: Arc<Announcer>) -> Self {
        OwnSessions {
            lists: OwnLists::default(),
            pool,
            catalog,
            announcer,
        }
    }

    /// Whether `host` sees a listing of its own of upstream `i`.
    pub(super) fn has(&self, host: Option<HostSessionId>, i: UpstreamId) -> bool {
        self.lists.has(host, i)
    }

    /// The upstream and tool behind `name` for the host of `ctx`.
    pub(super) fn host_route(&self, ctx: &RequestContext, name: &str) -> Option<Arc<Route>> {
        let host = ctx.host_session().map(|h| h.id());
        match self.lists.routes(host, &self.catalog) {
            Some(routes) => routes.get(name).cloned(),
            None => self.catalog.route(name),
        }
    }

    /// One part of each upstream's listing as the host of `ctx` sees it, in upstream order.
    pub(super) fn listings_for<T>(
        &self,
        ctx: &RequestContext,
        part: impl Fn(&Listing) -> T,
    ) -> PerUpstream<T> {
        let mut all = self.catalog.read_listings(&part);
        let host = ctx.host_session().map(|h| h.id());
        for (i, l) in self.lists.listings(host).into_iter().flatten() {
            all[i] = part(&l);
        }
        all
    }

    /// `(exposed name, upstream, prompt)` as the host of `ctx` sees them.
    pub(super) fn prompt_entries_for(
        &self,
        ctx: &RequestContext,
    ) -> Vec<(String, UpstreamId, Exact<Prompt>)> {
        let prompts = self.listings_for(ctx, |l| l.prompts.clone());
        self.catalog.prompt_entries_of(prompts)
    }

    /// The upstream owning resource `uri` for the host of `ctx`: one of its own sessions
    /// that lists it (or a template it matches), else the catalog's owner.
    pub(super) fn resource_owner_for(&self, ctx: &RequestContext, uri: &str) -> Option<UpstreamId> {
        let host = ctx.host_session().map(|h| h.id());
        let own = self.lists.listings(host).unwrap_or_default();
        let mine = own
            .iter()
            .find(|(_, l)| l.lists_resource(uri) || l.has_template_for(uri));
        match mine {
            Some((i, _)) => Some(*i),
            None => self.catalog.resource_owner(uri),
        }
    }

    /// The upstream that listed resource `uri` for the host of `ctx`, or the error a host
    /// gets for an unknown one.
    pub(super) fn owner_of_resource(
        &self,
        ctx: &RequestContext,
        uri: &str,
    ) -> Result<UpstreamId, mcp_types::ErrorObject> {
        self.resource_owner_for(ctx, uri)
            .ok_or_else(|| super::answers::resource_not_found(uri))
    }

    /// The catalog's tool entries as the host of `ctx` sees them.
    pub(super) fn tool_entries_for(
        &self,
        ctx: Option<&RequestContext>,
    ) -> Vec<(String, UpstreamId, Exact<Tool>)> {
        let host = ctx.and_then(|c| c.host_session()).map(|h| h.id());
        let own = self.lists.listings(host);
        self.catalog.tool_entries_with(own.as_ref())
    }

    /// `(namespace, tool with its exposed name)` of what `seen` sees, in catalog order, as
    /// the host of `ctx` sees the catalog (see [`OwnSessions::tool_entries_for`]).
    pub(super) fn namespaced_tools_seen(
        &self,
        ctx: &RequestContext,
        seen: &Seen<'_>,
    ) -> Vec<(String, Exact<Tool>)> {
        self.tool_entries_for(Some(ctx))
            .into_iter()
            .filter(|(exposed, i, _)| seen.sees_tool(*i, exposed))
            .map(|(exposed, i, t)| {
                let ns = self.pool.get(i).namespace.clone();
                (ns, as_exposed(exposed, t))
            })
            .collect()
    }

    /// The tools `seen` sees, as the host of `ctx` sees them, in catalog order: the
    /// catalog's shown tools (made once per change) for a host without sessions of its
    /// own.
    pub(super) fn tools_seen(&self, ctx: &RequestContext, seen: &Seen<'_>) -> Vec<Arc<RawValue>> {
        let host = ctx.host_session().map(|h| h.id());
        if !self.lists.has_any(host) {
            let shown = self.catalog.shown_tools();
            return shown
                .iter()
                .filter(|s| seen.everything() || seen.sees_tool(s.upstream, &s.exposed))
                .map(|s| s.text.clone())
                .collect();
        }
        self.tool_entries_for(Some(ctx))
            .into_iter()
            .filter(|(exposed, i, _)| seen.everything() || seen.sees_tool(*i, exposed))
            .map(|(exposed, _, t)| exposed_text(&exposed, &t))
            .collect()
    }

    /// Lists `host`'s own session `client` of upstream `i` and follows its list changes,
    /// telling that host (and no one else) of each, until the session ends; the host then
    /// sees the catalog's listing again.
    pub(super) fn follow_own_session(
        self: &Arc<Self>,
        i: UpstreamId,
        host: HostSession,
        client: Client,
    ) {
        let me = Arc::downgrade(self);
        let token = self.lists.token();
        tokio::spawn(async move {
            let notes = client.notifications();
            follow(me.clone(), i, &host, &client, token, notes).await;
            let Some(own) = me.upgrade() else { return };
            let seen = own.lists.get(host.id(), i);
            own.lists.remove(host.id(), i, token);
            // A newer session's follower has taken over: it tells the host what it sees.
            if own.lists.get(host.id(), i).is_some() {
                return;
            }
            // Back to the catalog's listing: the host hears of it if that reads otherwise.
            if let Some(seen) = seen.filter(|_| !host.is_ended()) {
                let changed = own.catalog.differs(i, &seen);
                own.announcer.announce_to(host.id(), changed);
            }
        });
    }

    /// Lists `client` again as `host`'s view of upstream `i`; which lists it changed (from
    /// what the host saw: its last listing, else the catalog's).
    async fn relist_own(
        &self,
        i: UpstreamId,
        host: HostSessionId,
        client: &Client,
        token: u64,
    ) -> ListsChanged {
        let listing = match self.pool.first_listing(client).await {
            Ok(l) => self.catalog.admitted(i, l),
            Err(e) => {
                let key = self.pool.key(i);
                tracing::warn!(upstream = %key, host = %host, "listing a host's own session failed: {e}");
                return ListsChanged::default();
            }
        };
        let changed = match self.lists.get(host, i) {
            Some(seen) => seen.changes_to(&listing),
            None => self.catalog.differs(i, &listing),
        };
        self.lists.set(host, i, token, listing);
        changed
    }
}

/// The loop of [`OwnSessions::follow_own_session`]: the first listing at once, then one
/// for each list change the session announces, at most once per [`RELIST_INTERVAL`].
async fn follow(
    me: Weak<OwnSessions>,
    i: UpstreamId,
    host: &HostSession,
    client: &Client,
    token: u64,
    mut notes: tokio::sync::broadcast::Receiver<TypedNotification>,
) {
    let mut due = true;
    loop {
        if due {
            due = false;
            let Some(own) = me.upgrade() else { return };
            let said = client.take_list_changes();
            let changed = own
                .relist_own(i, host.id(), client, token)
                .await
                .or_said(said);
            own.announcer.announce_to(host.id(), changed);
            drop(own);
            tokio::time::sleep(RELIST_INTERVAL).await;
        }
        let note = tokio::select! {
            n = notes.recv() => n,
            () = host.ended() => return,
            () = closed(client) => return,
        };
        match note {
            Ok(TypedNotification::Bare(_)) => due = true,
            Ok(_) => {}
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => due = true,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// Resolves once `client`'s connection has ended.
async fn closed(client: &Client) {
    while client.close_reason().is_none() {
        tokio::time::sleep(CLOSE_POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(tool: &str) -> Listing {
        let tool: Tool = serde_json::from_value(serde_json::json!(
            {"name": tool, "inputSchema": {"type": "object"}}
        ))
        .expect("tool");
        Listing {
            tools: vec![Exact::encode(tool).expect("encode")],
            ..Default::default()
        }
    }

    fn tool_of(lists: &OwnLists<u32>, host: u32, i: UpstreamId) -> Option<String> {
        Some(lists.get(host, i)?.tools.first()?.name.clone())
    }

    #[test]
    fn a_hosts_own_listing_stands_for_it_alone_and_the_newest_session_wins() {
        let ids: Vec<UpstreamId> = [(), ()]
            .into_iter()
            .collect::<PerUpstream<()>>()
            .ids()
            .collect();
        let (a, b) = (ids[0], ids[1]);
        let lists = OwnLists::<u32>::default();
        assert!(!lists.has(Some(1), a) && lists.listings(Some(1)).is_none());
        let (old, new) = (lists.token(), lists.token());
        lists.set(1, a, new, listing("newer"));
        // A replaced session's follower, late: neither overwrites nor removes its successor's.
        lists.set(1, a, old, listing("older"));
        lists.remove(1, a, old);
        assert_eq!(tool_of(&lists, 1, a).as_deref(), Some("newer"));
        assert!(lists.has(Some(1), a));
        assert!(
            !lists.has(Some(1), b),
            "only the upstream it has a session of"
        );
        assert!(
            !lists.has(Some(2), a) && lists.listings(Some(2)).is_none(),
            "only that host"
        );
        assert!(
            !lists.has(None, a),
            "a request without a host session has none"
        );
        lists.remove(1, a, new);
        assert!(!lists.has(Some(1), a));
        assert!(
            lists.listings(Some(1)).is_none(),
            "the host sees the catalog again"
        );
        assert_eq!(lists.count.load(Ordering::SeqCst), 0);
    }

    use super::super::announcer::Heard;
    use super::super::test_parts::{ids, in_process, parts, request};
    use mcp_server::ListChanged;

    /// A listing of tools named `tools` and resources at `uris`.
    fn offering(tools: &[&str], uris: &[&str]) -> Listing {
        let resource = |uri: &&str| -> Exact<mcp_types::protocol::Resource> {
            let r = serde_json::from_value(serde_json::json!({"uri": uri, "name": uri}))
                .expect("resource");
            Exact::encode(r).expect("encode")
        };
        Listing {
            tools: tools.iter().flat_map(|t| listing(t).tools).collect(),
            resources: uris.iter().map(resource).collect(),
            ..Default::default()
        }
    }

    /// `(exposed name, upstream, real name)` of the tools the host of `ctx` sees.
    fn seen_by(own: &OwnSessions, ctx: &RequestContext) -> Vec<(String, UpstreamId, String)> {
        own.tool_entries_for(Some(ctx))
            .into_iter()
            .map(|(exposed, i, t)| (exposed, i, t.name.clone()))
            .collect()
    }

    #[tokio::test]
    async fn without_sessions_of_its_own_a_host_sees_the_catalog() {
        let (pool, catalog) = parts(vec![
            in_process("alpha", vec![]),
            in_process("beta", vec![]),
        ]);
        let [a, b] = ids(2)[..] else { unreachable!() };
        catalog.set_listing(a, offering(&["echo"], &[]));
        catalog.set_listing(b, offering(&["add", "sub"], &[]));
        let own = OwnSessions::new(pool, catalog.clone(), Arc::default());
        let req = request().await;
        let seen = seen_by(&own, &req.ctx);
        let listed: Vec<_> = catalog
            .tool_entries()
            .into_iter()
            .map(|(exposed, i, t)| (exposed, i, t.name.clone()))
            .collect();
        assert_eq!(seen, listed);
        assert_eq!(seen.len(), 3);
        assert_eq!(own.tool_entries_for(None).len(), 3);
        for (exposed, i, name) in &seen {
            let route = own.host_route(&req.ctx, exposed).expect("routed");
            let theirs = catalog.route(exposed).expect("the catalog's route");
            assert!(Arc::ptr_eq(&route, &theirs), "the catalog's own route");
            assert_eq!(
                (route.upstream, route.tool.name.as_str()),
                (*i, name.as_str())
            );
        }
        assert!(own.host_route(&req.ctx, "echo-nowhere").is_none());
        let host = req.ctx.host_session().map(|h| h.id());
        assert!(host.is_some() && !own.has(host, a) && !own.has(host, b));
    }

    #[tokio::test]
    async fn a_resource_nobody_listed_is_not_found() {
        let (pool, catalog) = parts(vec![
            in_process("alpha", vec![]),
            in_process("beta", vec![]),
        ]);
        let [_, b] = ids(2)[..] else { unreachable!() };
        catalog.set_listing(b, offering(&[], &["file:///b.txt"]));
        let own = OwnSessions::new(pool, catalog, Arc::default());
        let req = request().await;
        assert_eq!(own.owner_of_resource(&req.ctx, "file:///b.txt"), Ok(b));
        assert_eq!(own.resource_owner_for(&req.ctx, "file:///b.txt"), Some(b));
        let e = own
            .owner_of_resource(&req.ctx, "file:///nowhere.txt")
            .expect_err("nobody lists it");
        assert_eq!(e.code, mcp_types::codes::RESOURCE_NOT_FOUND);
        assert_eq!(
            e.data,
            Some(serde_json::json!({"uri": "file:///nowhere.txt"}))
        );
    }

    #[tokio::test]
    async fn a_hosts_own_session_lists_for_that_host_alone_until_it_ends() {
        // The upstream's sessions list `mine`; the catalog, listed before, says `theirs`.
        let (pool, catalog) = parts(vec![in_process("alpha", vec!["mine"])]);
        let i = ids(1)[0];
        catalog.set_listing(i, offering(&["theirs"], &[]));
        let announcer = Arc::new(Announcer::default());
        let (tx, mut heard) = tokio::sync::mpsc::unbounded_channel();
        announcer.listen(Arc::new(move |what, who| {
            let _ = tx.send((what, who));
        }));
        let own = Arc::new(OwnSessions::new(pool.clone(), catalog, announcer));
        let (req, other) = (request().await, request().await);
        let host = req.ctx.host_session().expect("a host session").clone();
        let session = pool.open_shared(pool.get(i)).await.expect("a session");
        own.follow_own_session(i, host.clone(), session.clone());
        let limit = std::time::Duration::from_secs(5);
        let told = |heard: Result<Option<(ListChanged, Heard)>, _>| match heard {
            Ok(Some((ListChanged::Tools, Heard::Host(h)))) => h == host.id(),
            _ => false,
        };
        let next = tokio::time::timeout(limit, heard.recv()).await;
        assert!(told(next), "the host alone hears of its tools");
        assert!(own.has(Some(host.id()), i));
        let mine = seen_by(&own, &req.ctx);
        assert_eq!(mine.len(), 1);
        assert_eq!((mine[0].1, mine[0].2.as_str()), (i, "mine"));
        let route = own.host_route(&req.ctx, &mine[0].0).expect("its route");
        assert_eq!(route.tool.name, "mine");
        // Another host sees the catalog's.
        let theirs = seen_by(&own, &other.ctx);
        assert_eq!(theirs.len(), 1);
        assert_eq!(theirs[0].2, "theirs");
        assert!(own.host_route(&other.ctx, &mine[0].0).is_none());
        // The session ends: the host sees (and hears of) the catalog's again.
        session.close().await;
        let next = tokio::time::timeout(limit, heard.recv()).await;
        assert!(told(next), "told it sees the catalog again");
        assert!(!own.has(Some(host.id()), i));
        assert_eq!(seen_by(&own, &req.ctx), theirs);
    }
}
