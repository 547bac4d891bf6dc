//! The catalog: every upstream's listings merged into what hosts see. Synchronous and
//! pure: it names, filters, orders, detects clashes, indexes routes and pages, and never
//! talks to an upstream (the pool fills it; the handler reads it).

use super::id::UpstreamId;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use mcp_types::protocol::*;
use mcp_types::raw::Exact;
use parking_lot::RwLock;

use super::id::PerUpstream;
use super::options::StartError;
use super::route::Route;
use crate::naming::Namespacing;
use crate::overrides::ToolOverride;
use crate::pins::{PinAction, PinCheck, Pins};
use crate::policy::ToolFilter;
pub(super) use shown::ShownTool;

/// One upstream's part of the catalog: each item as the upstream wrote it (TOOL-07), but
/// for a tool definition's fixes ([`super::definitions`]).
#[derive(Default, Clone)]
pub(super) struct Listing {
    pub(super) tools: Vec<Exact<Tool>>,
    pub(super) prompts: Vec<Exact<Prompt>>,
    pub(super) resources: Vec<Exact<Resource>>,
    pub(super) templates: Vec<Exact<ResourceTemplate>>,
    /// When a 2026 upstream's `ttlMs` (if it gave a positive one) says to list again.
    pub(super) stale_at: Option<std::time::Instant>,
    /// Its tools the pins hide, by real name.
    pub(super) pin_hidden: HashSet<String>,
    /// Its tools whose calls the host's user must allow, by real name, with why.
    pub(super) pin_ask: HashMap<String, Arc<str>>,
}

/// Which of an upstream's lists a new listing changed: what hosts are told of.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct ListsChanged {
    pub(super) tools: bool,
    pub(super) prompts: bool,
    pub(super) resources: bool,
}

impl ListsChanged {
    pub(super) fn any(self) -> bool {
        self.tools || self.prompts || self.resources
    }

    /// These, and the lists the upstream said changed.
    pub(super) fn or_said(self, said: mcp_client::ListChanges) -> Self {
        ListsChanged {
            tools: self.tools || said.tools,
            prompts: self.prompts || said.prompts,
            resources: self.resources || said.resources,
        }
    }
}

impl Listing {
    /// Whether it lists resource `uri`.
    pub(super) fn lists_resource(&self, uri: &str) -> bool {
        self.resources.iter().any(|r| r.uri == uri)
    }

    /// Whether one of its resource templates matches `uri`.
    pub(super) fn has_template_for(&self, uri: &str) -> bool {
        self.templates
            .iter()
            .any(|t| template_matches(&t.uri_template, uri))
    }

    /// What differs between `self` and `next`, as hosts would see it (pins included).
    pub(super) fn changes_to(&self, next: &Listing) -> ListsChanged {
        ListsChanged {
            tools: self.tools != next.tools
                || self.pin_hidden != next.pin_hidden
                || self.pin_ask != next.pin_ask,
            prompts: self.prompts != next.prompts,
            resources: self.resources != next.resources || self.templates != next.templates,
        }
    }
}

/// Exposed tool name → route, for one generation of the catalog.
pub(super) type Routes = HashMap<String, Arc<Route>, ahash::RandomState>;

/// Listings a host sees in place of the catalog's, by upstream: those of its own upstream
/// sessions.
pub(super) type OwnListings = HashMap<UpstreamId, Arc<Listing>>;

/// What the catalog knows of one upstream: how its names are exposed and filtered.
pub(super) struct Member {
    /// Its configuration key.
    pub(super) key: String,
    /// The namespace of its names.
    pub(super) namespace: String,
    /// Which of its tools are exposed ([`crate::UpstreamConfig::tools`]).
    pub(super) tools: Arc<dyn ToolFilter>,
    /// What hosts see of its tools, by real name.
    pub(super) overrides: Arc<BTreeMap<String, ToolOverride>>,
    /// Whether its annotations are trusted.
    pub(super) trusted: bool,
    /// Whether hosts are shown none of its hints ([`crate::UpstreamConfig::withhold_hints`],
    /// for an untrusted upstream).
    pub(super) withhold_hints: bool,
}

impl Member {
    /// The name `tool` is exposed under (before namespacing).
    fn shown_name<'t>(&'t self, tool: &'t Tool) -> &'t str {
        self.overrides
            .get(&tool.name)
            .and_then(|o| o.name.as_deref())
            .unwrap_or(&tool.name)
    }

    /// `tool` as hosts are shown it (its real name kept): hints withheld, overrides
    /// applied, each in its own members only, the rest as the upstream wrote it.
    fn as_shown(&self, tool: Exact<Tool>) -> Exact<Tool> {
        let overridden = self.overrides.get(&tool.name);
        if !self.withhold_hints && overridden.is_none() {
            return tool;
        }
        let shown = tool.edit_typed(|t| {
            if self.withhold_hints {
                super::definitions::withhold_hints(t);
            }
            if let Some(o) = overridden {
                o.apply(t, self.trusted);
            }
        });
        shown.unwrap_or_else(|e| {
            tracing::warn!(upstream = %self.key, tool = %tool.name, "overrides not applied: {e}");
            tool
        })
    }

    /// Whether a policy may rely on `tool`'s hints.
    fn hints_trusted(&self, tool: &Tool) -> bool {
        self.trusted
            || self
                .overrides
                .get(&tool.name)
                .is_some_and(|o| o.annotations.is_some())
    }
}

/// What was made of one generation of the catalog, kept until the catalog changes. The
/// generation is read before the listings it is made from, so what is kept is at least as
/// new as the generation it is kept under.
pub(in crate::aggregator) struct OfGeneration<T: ?Sized>(RwLock<Option<(u64, Arc<T>)>>);

impl<T: ?Sized> Default for OfGeneration<T> {
    fn default() -> Self {
        OfGeneration(RwLock::new(None))
    }
}

impl<T: ?Sized> OfGeneration<T> {
    /// What was made of `generation`, made by `make` if nothing of it is kept.
    pub(in crate::aggregator) fn get_or_make(
        &self,
        generation: u64,
        make: impl FnOnce() -> Arc<T>,
    ) -> Arc<T> {
        if let Some((g, kept)) = &*self.0.read() {
            if *g == generation {
                return kept.clone();
            }
        }
        let made = make();
        *self.0.write() = Some((generation, made.clone()));
        made
    }
}

/// The merged catalog of every upstream, by upstream index (the order of `members`).
pub(super) struct Catalog {
    members: PerUpstream<Member>,
    namespacing: Arc<dyn Namespacing>,
    /// Items per page of a merged list (0: one page).
    page_size: usize,
    /// The approved tool definitions, if pinning is on.
    pins: Option<Arc<Pins>>,
    listings: RwLock<PerUpstream<Listing>>,
    /// A digest of each upstream's listing (`cursor.rs`), made when it changes.
    digests: RwLock<PerUpstream<[u8; 16]>>,
    /// Bumped on every change; the route index and the content digest carry it.
    generation: AtomicU64,
    /// The digest of every listing of one generation, which cursors carry.
    content: OfGeneration<[u8; 16]>,
    /// The route index of one generation.
    routes: OfGeneration<Routes>,
    /// The tools shown of one generation (`shown.rs`).
    shown: OfGeneration<[ShownTool]>,
    /// The definition fixes already warned of.
    warned: super::definitions::Warned,
}

impl Catalog {
    /// What hosts are shown, as text to compare: tools, prompts, resources and templates.
    pub(super) fn shown(&self) -> [String; 3] {
        let c = self;
        let text = |v: serde_json::Result<String>| v.unwrap_or_default();
        let tools: Vec<_> = c
            .tool_entries()
            .into_iter()
            .map(|(n, _, t)| (n, t))
            .collect();
        let prompts: Vec<_> = c
            .prompt_entries()
            .into_iter()
            .map(|(n, _, p)| (n, p))
            .collect();
        let resources = c.read_listings(|l| (l.resources.clone(), l.templates.clone()));
        let resources: Vec<_> = resources.iter().collect();
        [
            text(serde_json::to_string(&tools)),
            text(serde_json::to_string(&prompts)),
            text(serde_json::to_string(&resources)),
        ]
    }

    pub(super) fn new(
        members: PerUpstream<Member>,
        namespacing: Arc<dyn Namespacing>,
        page_size: usize,
        pins: Option<Arc<Pins>>,
    ) -> Self {
        Catalog {
            pins,
            listings: RwLock::new(members.map(|_| Listing::default())),
            digests: RwLock::new(
                members.map(|m| cursor::listing_digest(&m.key, &Listing::default())),
            ),
            members,
            namespacing,
            page_size,
            generation: AtomicU64::new(1),
            content: OfGeneration::default(),
            routes: OfGeneration::default(),
            shown: OfGeneration::default(),
            warned: Default::default(),
        }
    }

    /// Upstreams whose listing a 2026 upstream's `ttlMs` says to list again by `now`.
    pub(super) fn stale(&self, now: std::time::Instant) -> Vec<UpstreamId> {
        self.listings
            .read()
            .iter_ids()
            .filter(|(_, x)| x.stale_at.is_some_and(|t| t <= now))
            .map(|(i, _)| i)
            .collect()
    }

    /// The upstream that listed a resource template written exactly `uri_template`.
    pub(super) fn template_owner(&self, uri_template: &str) -> Option<UpstreamId> {
        let listings = self.listings.read();
        let owner = listings
            .iter_ids()
            .find(|(_, l)| l.templates.iter().any(|t| t.uri_template == uri_template))
            .map(|(i, _)| i);
        owner
    }

    /// Whether a listed tool may run as a task.
    pub(super) fn has_task_tools(&self) -> bool {
        self.routes()
            .values()
            .any(|r| r.tool.task_support() != TaskSupport::Forbidden)
    }

    /// Replaces upstream `i`'s part of the catalog; a new generation of the catalog begins.
    /// Takes `listing` as upstream `i`'s, and says which of its lists it changed (nothing
    /// changed: the catalog's generation, and so its cursors, stay).
    pub(super) fn set_listing(&self, i: UpstreamId, listing: Listing) -> ListsChanged {
        let listing = self.admitted(i, listing);
        let digest = cursor::listing_digest(&self.members[i].key, &listing);
        let changed = {
            let mut l = self.listings.write();
            let changed = l[i].changes_to(&listing);
            l[i] = listing;
            self.digests.write()[i] = digest;
            changed
        };
        if changed.any() {
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
        changed
    }

    /// `listing`, of upstream `i`, as hosts may be shown it: its tools' definitions made
    /// usable ([`super::definitions`]), and what the pins say of each marked.
    pub(super) fn admitted(&self, i: UpstreamId, mut listing: Listing) -> Listing {
        let tools = std::mem::take(&mut listing.tools);
        listing.tools = super::definitions::usable(&self.members[i].key, tools, &self.warned);
        if let Some(pins) = &self.pins {
            self.check_pins(pins, i, &mut listing);
        }
        listing
    }

    /// Which of upstream `i`'s lists read differently in `own` than in the catalog.
    pub(super) fn differs(&self, i: UpstreamId, own: &Listing) -> ListsChanged {
        self.listings.read()[i].changes_to(own)
    }

    /// The catalog's generation: bumped whenever a listing changes.
    pub(super) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Marks what `pins` says of upstream `i`'s new listing, and logs every tool that is
    /// not as approved.
    fn check_pins(&self, pins: &Pins, i: UpstreamId, listing: &mut Listing) {
        let key = &self.members[i].key;
        for t in &listing.tools {
            let check = pins.check(key, t);
            let why = match &check {
                PinCheck::Approved => continue,
                PinCheck::Changed(parts) => format!(
                    "changed since it was approved ({} differ)",
                    parts.join(", ")
                ),
                PinCheck::Unpinned => "was never approved".to_owned(),
            };
            let action = pins.action(&check);
            match action {
                PinAction::Allow => {}
                PinAction::Hide => {
                    listing.pin_hidden.insert(t.name.clone());
                }
                PinAction::Ask => {
                    listing.pin_ask.insert(t.name.clone(), why.clone().into());
                }
            }
            match check {
                PinCheck::Changed(_) => {
                    tracing::warn!(upstream = %key, tool = %t.name, ?action, "pinned tool {why}")
                }
                _ => tracing::info!(upstream = %key, tool = %t.name, ?action, "tool {why}"),
            }
        }
    }

    /// The upstream and tool behind an exposed name.
    pub(super) fn route(&self, name: &str) -> Option<Arc<Route>> {
        self.routes().get(name).cloned()
    }

    /// The route index of the current catalog, rebuilt only when the catalog changed (a
    /// call must not copy the whole catalog).
    pub(super) fn routes(&self) -> Arc<Routes> {
        let generation = self.generation.load(Ordering::SeqCst);
        self.routes
            .get_or_make(generation, || Arc::new(self.routes_with(None)))
    }

    /// The route index of the catalog with `own`'s listings in place of their upstreams'.
    pub(super) fn routes_with(&self, own: Option<&OwnListings>) -> Routes {
        let mut asks = self.read_listings(|l| l.pin_ask.clone());
        for (i, l) in own.into_iter().flatten() {
            asks[*i] = l.pin_ask.clone();
        }
        self.tool_entries_with(own)
            .into_iter()
            .map(|(exposed, i, t)| {
                let trusted = self.members[i].hints_trusted(&t);
                let ask = asks[i].get(&t.name).cloned();
                let mut route = Route::new(i, t, trusted);
                route.unapproved = ask;
                (exposed, Arc::new(route))
            })
            .collect()
    }

    pub(super) fn check_collisions(&self) -> Result<(), StartError> {
        let mut seen: HashMap<String, String> = HashMap::new();
        for (exposed, i, original) in self.all_tool_entries() {
            let who = format!("{}/{}", self.members[i].key, original.name);
            if let Some(first) = seen.insert(exposed.clone(), who.clone()) {
                return Err(StartError::NameCollision {
                    exposed,
                    first,
                    second: who,
                });
            }
        }
        Ok(())
    }

    /// One part of each upstream's listing, in upstream order (copying only that part).
    pub(super) fn read_listings<T>(&self, part: impl Fn(&Listing) -> T) -> PerUpstream<T> {
        let listings = self.listings.read();
        listings.map(part)
    }

    /// `(exposed name, upstream, tool as the upstream sent it, overrides applied)`, in
    /// catalog order. A name exposed twice (two upstreams, or an override's name that an
    /// upstream's own tool also has) is served by the first only: the later is hidden.
    pub(super) fn tool_entries(&self) -> Vec<(String, UpstreamId, Exact<Tool>)> {
        self.tool_entries_with(None)
    }

    /// [`Catalog::tool_entries`] with `own`'s listings in place of their upstreams'.
    pub(super) fn tool_entries_with(
        &self,
        own: Option<&OwnListings>,
    ) -> Vec<(String, UpstreamId, Exact<Tool>)> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for (exposed, i, t) in self.all_tool_entries_with(own) {
            if !seen.insert(exposed.clone()) {
                tracing::warn!(tool = %exposed, upstream = %self.members[i].key, "name clash after a list change; the later tool is hidden");
                continue;
            }
            out.push((exposed, i, t));
        }
        out
    }

    /// [`Catalog::tool_entries`] with every clash kept.
    fn all_tool_entries(&self) -> Vec<(String, UpstreamId, Exact<Tool>)> {
        self.all_tool_entries_with(None)
    }

    fn all_tool_entries_with(
        &self,
        own: Option<&OwnListings>,
    ) -> Vec<(String, UpstreamId, Exact<Tool>)> {
        let mut listings = self.read_listings(|l| (l.tools.clone(), l.pin_hidden.clone()));
        for (i, l) in own.into_iter().flatten() {
            listings[*i] = (l.tools.clone(), l.pin_hidden.clone());
        }
        let naming = &self.namespacing;
        let mut out = Vec::new();
        for (i, (tools, hidden)) in listings.into_iter_ids() {
            let u = &self.members[i];
            for t in tools {
                if !u.tools.permits(&t) || hidden.contains(&t.name) {
                    continue;
                }
                let exposed = naming.expose(&u.namespace, u.shown_name(&t));
                out.push((exposed, i, u.as_shown(t)));
            }
        }
        out
    }

    pub(super) fn prompt_entries(&self) -> Vec<(String, UpstreamId, Exact<Prompt>)> {
        self.prompt_entries_of(self.read_listings(|l| l.prompts.clone()))
    }

    /// `(exposed name, upstream, prompt)` of each of `listings`' prompts, in catalog order.
    pub(super) fn prompt_entries_of(
        &self,
        listings: PerUpstream<Vec<Exact<Prompt>>>,
    ) -> Vec<(String, UpstreamId, Exact<Prompt>)> {
        let naming = &self.namespacing;
        listings
            .into_iter_ids()
            .flat_map(|(i, prompts)| {
                let ns = self.members[i].namespace.clone();
                prompts
                    .into_iter()
                    .map(move |p| (naming.expose(&ns, &p.name), i, p))
            })
            .collect()
    }

    /// The upstream owning a resource URI: one that listed it, else one with a matching template.
    pub(super) fn resource_owner(&self, uri: &str) -> Option<UpstreamId> {
        let listings = self.listings.read();
        let owner = |has: &dyn Fn(&Listing) -> bool| {
            listings.iter_ids().find(|(_, l)| has(l)).map(|(i, _)| i)
        };
        owner(&|l| l.lists_resource(uri)).or_else(|| owner(&|l| l.has_template_for(uri)))
    }

    /// The key of the upstream whose filtered-out tool would be exposed as `name`.
    pub(super) fn denied_upstream(&self, name: &str) -> Option<String> {
        let listings = self.listings.read();
        let naming = &self.namespacing;
        let key = listings.iter_ids().find_map(|(i, l)| {
            let u = &self.members[i];
            l.tools
                .iter()
                .any(|t| {
                    !u.tools.permits(t) && naming.expose(&u.namespace, u.shown_name(t)) == name
                })
                .then(|| u.key.clone())
        });
        key
    }
}

/// Whether `uri` fits an RFC 6570 level-1 template (`{var}` matches one or more characters
/// other than `/`).
fn template_matches(template: &str, uri: &str) -> bool {
    let mut rest = uri;
    let mut parts = template.split('{');
    let Some(first) = parts.next() else {
        return false;
    };
    let Some(r) = rest.strip_prefix(first) else {
        return false;
    };
    rest = r;
    for part in parts {
        let Some((_, literal)) = part.split_once('}') else {
            return false;
        };
        let end = if literal.is_empty() {
            rest.find('/').unwrap_or(rest.len())
        } else {
            match rest.find(literal) {
                Some(e) => e,
                None => return false,
            }
        };
        if end == 0 {
            return false;
        }
        rest = &rest[end..];
        match rest.strip_prefix(literal) {
            Some(r) => rest = r,
            None => return false,
        }
    }
    rest.is_empty()
}

mod cursor;
mod shown;
#[cfg(test)]
mod tests;
