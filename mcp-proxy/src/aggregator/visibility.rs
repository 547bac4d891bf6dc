//! What the principal of a request sees of the catalog ([`crate::views`]): a part of its
//! own, [`Visibility`] (the views, the gateway's surface, each upstream's key), which
//! answers for one principal at a time ([`Seen`]): the upstreams it reaches, the tools it
//! sees, its surface.

use std::sync::Arc;

use mcp_server::auth::Principal;
use mcp_server::RequestContext;

use super::id::{PerUpstream, UpstreamId};
use crate::policy::Surface;
use crate::views::{Scope, Views};

/// Who sees what (see the module).
pub(super) struct Visibility {
    views: Option<Arc<dyn Views>>,
    surface: Surface,
    keys: PerUpstream<String>,
}

/// What one principal sees ([`Visibility::seen_by`]).
pub(crate) struct Seen<'a> {
    scope: Scope,
    of: &'a Visibility,
}

impl Visibility {
    /// `views` (none: everyone sees everything), the surface of a principal whose view
    /// does not choose one, and the key of each upstream.
    pub(super) fn new(
        views: Option<Arc<dyn Views>>,
        surface: Surface,
        keys: PerUpstream<String>,
    ) -> Self {
        Visibility {
            views,
            surface,
            keys,
        }
    }

    /// What the principal of `ctx` sees.
    pub(super) fn seen(&self, ctx: &RequestContext) -> Seen<'_> {
        self.seen_by(ctx.principal())
    }

    /// What `principal` sees.
    pub(super) fn seen_by(&self, principal: Option<&Principal>) -> Seen<'_> {
        Seen {
            scope: Scope::of(self.views.as_ref(), principal),
            of: self,
        }
    }
}

impl Seen<'_> {
    /// The surface it is served: its view's, else the gateway's.
    pub(crate) fn surface(&self) -> Surface {
        match self.of.views {
            None => self.of.surface,
            Some(_) => self.scope.surface(self.of.surface),
        }
    }

    /// Whether it sees nothing at all (no view is for it).
    pub(crate) fn nothing(&self) -> bool {
        matches!(self.scope, Scope::Nothing)
    }

    /// Whether it reaches upstream `i` (its prompts, resources and tasks).
    pub(crate) fn reaches(&self, i: UpstreamId) -> bool {
        self.of
            .keys
            .get(i)
            .is_some_and(|k| self.scope.sees_upstream(k))
    }

    /// Whether it reaches the upstream whose key is `key`.
    pub(crate) fn reaches_key(&self, key: &str) -> bool {
        self.scope.sees_upstream(key)
    }

    /// Whether it sees upstream `i`'s tool exposed as `exposed`.
    pub(crate) fn sees_tool(&self, i: UpstreamId, exposed: &str) -> bool {
        self.of
            .keys
            .get(i)
            .is_some_and(|k| self.scope.sees_tool(k, exposed))
    }

    /// Whether it sees every tool (no view narrows it).
    pub(super) fn everything(&self) -> bool {
        matches!(self.scope, Scope::Everything)
    }

    /// The items of `per_upstream` of the upstreams it reaches, in catalog order.
    pub(super) fn reached<T>(&self, per_upstream: PerUpstream<Vec<T>>) -> Vec<T> {
        per_upstream
            .into_iter_ids()
            .filter(|(i, _)| self.reaches(*i))
            .flat_map(|(_, items)| items)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::GlobFilter;
    use crate::views::{Audience, View, ViewRules};

    fn visibility(views: Option<ViewRules>) -> Visibility {
        let keys: PerUpstream<String> = ["fs", "web"].into_iter().map(String::from).collect();
        let views = views.map(|v| Arc::new(v) as Arc<dyn Views>);
        Visibility::new(views, Surface::Direct, keys)
    }

    #[test]
    fn each_principal_sees_what_its_view_says() {
        let fs_reader = View::new("fs")
            .upstreams(["fs"])
            .tools(GlobFilter {
                allow: Some(vec!["fs__read_*".into()]),
                deny: Vec::new(),
            })
            .surface(Surface::Dispatcher);
        let rules = ViewRules::new().rule(Audience::subjects(["ada"]), fs_reader);
        let ids: Vec<UpstreamId> = visibility(None).keys.ids().collect();
        let (fs, web) = (ids[0], ids[1]);
        let (ada, bob) = (Principal::new("ada"), Principal::new("bob"));
        let everyone = visibility(None);
        let viewed = visibility(Some(rules));
        // (who, upstream, tool, reaches, sees the tool, surface, sees nothing)
        let cases = [
            (
                everyone.seen_by(None),
                fs,
                "fs__write",
                true,
                true,
                Surface::Direct,
                false,
            ),
            (
                everyone.seen_by(Some(&bob)),
                web,
                "web__get",
                true,
                true,
                Surface::Direct,
                false,
            ),
            (
                viewed.seen_by(Some(&ada)),
                fs,
                "fs__read_file",
                true,
                true,
                Surface::Dispatcher,
                false,
            ),
            (
                viewed.seen_by(Some(&ada)),
                fs,
                "fs__write",
                true,
                false,
                Surface::Dispatcher,
                false,
            ),
            (
                viewed.seen_by(Some(&ada)),
                web,
                "web__get",
                false,
                false,
                Surface::Dispatcher,
                false,
            ),
            (
                viewed.seen_by(Some(&bob)),
                fs,
                "fs__read_file",
                false,
                false,
                Surface::Direct,
                true,
            ),
            (
                viewed.seen_by(None),
                fs,
                "fs__read_file",
                false,
                false,
                Surface::Direct,
                true,
            ),
        ];
        for (n, (seen, i, tool, reaches, sees, surface, nothing)) in cases.into_iter().enumerate() {
            assert_eq!(seen.reaches(i), reaches, "case {n}: reaches");
            assert_eq!(seen.sees_tool(i, tool), sees, "case {n}: sees {tool}");
            assert_eq!(seen.surface(), surface, "case {n}: surface");
            assert_eq!(seen.nothing(), nothing, "case {n}: nothing");
        }
    }
}
