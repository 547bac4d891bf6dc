//! What a host with upstream sessions of its own sees: each such session's lists (tools,
//! prompts, resources) in place of the catalog's for that upstream (an upstream whose
//! lists differ per session is exactly why a host would have a session of its own),
//! followed as the session says they changed, told to that host only, and the routes its
//! calls take.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use mcp_client::Client;
use mcp_server::auth::PrincipalDigest;
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
    pub(super) fn token(&self) -> u64 {
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
    pub(super) fn remove(&self, host: H, i: UpstreamId, token: u64) {
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

    /// Whether anyone sees a listing of its own.
    fn any(&self) -> bool {
        self.count.load(Ordering::SeqCst) > 0
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

/// Whose own listings a request sees: its host session's (which a per-user upstream's
/// principal connection lists for it too), else, for a lone 2026 request, its
/// principal's.
#[derive(Clone, Copy)]
enum Viewer {
    Host(HostSessionId),
    Principal(PrincipalDigest),
    Nobody,
}

/// The catalog as each host sees it: the listings of its own upstream sessions in place
/// of the catalog's, followed as those sessions change, and told to that host alone.
pub(super) struct OwnSessions {
    lists: OwnLists,
    /// What each principal's own connections to per-user upstreams list, for its requests
    /// that come without a host session (2026).
    pub(super) principals: OwnLists<PrincipalDigest>,
    /// The viewers following a principal's connection now (`principal_lists.rs`).
    pub(super) following: parking_lot::Mutex<
        std::collections::HashSet<(super::principal_lists::Follower, UpstreamId)>,
    >,
    pool: Arc<Pool>,
    catalog: Arc<Catalog>,
    announcer: Arc<Announcer>,
}

impl OwnSessions {
    /// No host has a session of its own yet.
    pub(super) fn new(pool: Arc<Pool>, catalog: Arc<Catalog>, announcer: Arc<Announcer>) -> Self {
        OwnSessions {
            lists: OwnLists::default(),
            principals: OwnLists::default(),
            following: Default::default(),
            pool,
            catalog,
            announcer,
        }
    }

    /// Whether `host` sees a listing of its own of upstream `i`.
    pub(super) fn has(&self, host: Option<HostSessionId>, i: UpstreamId) -> bool {
        self.lists.has(host, i)
    }

    /// Whose own listings `ctx` sees, if anyone has any: one load when nobody does (a
    /// principal's digest, a hash, is made only when some principal has listings).
    fn viewer(&self, ctx: Option<&RequestContext>) -> Viewer {
        let Some(ctx) = ctx else {
            return Viewer::Nobody;
        };
        if let Some(h) = ctx.host_session() {
            return match self.lists.any() {
                true => Viewer::Host(h.id()),
                false => Viewer::Nobody,
            };
        }
        match ctx.principal() {
            Some(p) if self.principals.any() => Viewer::Principal(PrincipalDigest::of(Some(p))),
            _ => Viewer::Nobody,
        }
    }

    /// The listings the viewer of `ctx` sees in place of the catalog's, if any.
    fn own_listings(&self, ctx: Option<&RequestContext>) -> Option<OwnListings> {
        match self.viewer(ctx) {
            Viewer::Host(h) => self.lists.listings(Some(h)),
            Viewer::Principal(p) => self.principals.listings(Some(p)),
            Viewer::Nobody => None,
        }
    }

    /// The routes of the calls of the viewer of `ctx`, if it sees listings of its own.
    fn own_routes(&self, ctx: &RequestContext) -> Option<Arc<Routes>> {
        match self.viewer(Some(ctx)) {
            Viewer::Host(h) => self.lists.routes(Some(h), &self.catalog),
            Viewer::Principal(p) => self.principals.routes(Some(p), &self.catalog),
            Viewer::Nobody => None,
        }
    }

    /// Whether the viewer of `ctx` sees any listing of its own.
    pub(super) fn has_any_own(&self, ctx: &RequestContext) -> bool {
        match self.viewer(Some(ctx)) {
            Viewer::Host(h) => self.lists.has_any(Some(h)),
            Viewer::Principal(p) => self.principals.has_any(Some(p)),
            Viewer::Nobody => false,
        }
    }

    /// The upstream and tool behind `name` for the host of `ctx`.
    pub(super) fn host_route(&self, ctx: &RequestContext, name: &str) -> Option<Arc<Route>> {
        match self.own_routes(ctx) {
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
        for (i, l) in self.own_listings(Some(ctx)).into_iter().flatten() {
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
        let own = self.own_listings(Some(ctx)).unwrap_or_default();
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

    /// The catalog's generation (bumped at each change of an upstream's listing).
    pub(super) fn catalog_generation(&self) -> u64 {
        self.catalog.generation()
    }

    /// The catalog's tool entries as the host of `ctx` sees them.
    pub(super) fn tool_entries_for(
        &self,
        ctx: Option<&RequestContext>,
    ) -> Vec<(String, UpstreamId, Exact<Tool>)> {
        let own = self.own_listings(ctx);
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
        if !self.has_any_own(ctx) {
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
    ) -> tokio::task::JoinHandle<()> {
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
        })
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
        self.relist_into(&self.lists, host, i, client, token).await
    }

    /// Lists `client` again as what `viewer` sees of upstream `i` in `lists`; which lists
    /// it changed (from what the viewer saw: its last listing, else the catalog's).
    pub(super) async fn relist_into<H>(
        &self,
        lists: &OwnLists<H>,
        viewer: H,
        i: UpstreamId,
        client: &Client,
        token: u64,
    ) -> ListsChanged
    where
        H: Copy + Eq + std::hash::Hash,
    {
        let host = viewer;
        let listing = match self.pool.first_listing(client).await {
            Ok(l) => self.catalog.admitted(i, l),
            Err(e) => {
                let key = self.pool.key(i);
                tracing::warn!(upstream = %key, "listing an upstream session of a host's own failed: {e}");
                return ListsChanged::default();
            }
        };
        let changed = match lists.get(host, i) {
            Some(seen) => seen.changes_to(&listing),
            None => self.catalog.differs(i, &listing),
        };
        lists.set(host, i, token, listing);
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
pub(super) async fn closed(client: &Client) {
    while client.close_reason().is_none() {
        tokio::time::sleep(CLOSE_POLL).await;
    }
}

#[cfg(test)]
#[path = "own_lists_tests.rs"]
mod tests;
