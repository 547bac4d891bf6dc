//! Who sees what: per-principal views of the catalog. A view names the upstreams and the
//! tools (by exposed name) a principal may see, and its surface; a tool outside it is
//! absent from that principal's lists and a call to it is refused as if it did not exist.
//! The principal is what the server's authenticator made of the request
//! ([`mcp_server::RequestContext::principal`]).

use std::sync::Arc;

use mcp_server::auth::Principal;

use crate::policy::{GlobFilter, Surface};

/// Decides what each principal may see. Implement it to take views from elsewhere (a
/// policy service, a database); [`ViewRules`] takes them from configuration.
pub trait Views: Send + Sync + 'static {
    /// The view of `principal` (`None`: a request without one); `None` sees nothing.
    fn view_for(&self, principal: Option<&Principal>) -> Option<Arc<View>>;
}

/// What one principal may see.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct View {
    /// A name for logs.
    pub name: String,
    /// The upstream keys it reaches (`None`: every upstream).
    pub upstreams: Option<Vec<String>>,
    /// Which tools it sees, by the names hosts see (`fs__read_*`).
    pub tools: GlobFilter,
    /// Its surface (`None`: the gateway's).
    pub surface: Option<Surface>,
}

impl View {
    /// A view named `name` that sees everything.
    pub fn new(name: impl Into<String>) -> Self {
        View {
            name: name.into(),
            ..Default::default()
        }
    }

    /// Reaching only these upstreams.
    pub fn upstreams(mut self, keys: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.upstreams = Some(keys.into_iter().map(Into::into).collect());
        self
    }

    /// Seeing only the tools `filter` permits.
    pub fn tools(mut self, filter: GlobFilter) -> Self {
        self.tools = filter;
        self
    }

    /// With its own surface.
    pub fn surface(mut self, surface: Surface) -> Self {
        self.surface = Some(surface);
        self
    }

    /// Whether it reaches the upstream `key`.
    pub fn sees_upstream(&self, key: &str) -> bool {
        self.upstreams
            .as_ref()
            .is_none_or(|keys| keys.iter().any(|k| k == key))
    }

    /// Whether it sees the tool exposed as `exposed`, of the upstream `key`.
    pub fn sees_tool(&self, key: &str, exposed: &str) -> bool {
        self.sees_upstream(key) && self.tools.permits_name(exposed)
    }
}

/// Whom a rule is for: a principal matches when its subject, one of its scopes or the
/// name of its credential is listed. A rule listing nothing is for everyone, a request
/// without a principal included.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Audience {
    /// Subjects (a token's `sub`, an API key's subject).
    pub subjects: Vec<String>,
    /// Scopes, any of which matches.
    pub scopes: Vec<String>,
    /// Credential names (an API key's name).
    pub credentials: Vec<String>,
}

impl Audience {
    /// Everyone.
    pub fn everyone() -> Self {
        Audience::default()
    }

    /// These subjects.
    pub fn subjects(subjects: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Audience {
            subjects: subjects.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }

    /// Principals with any of these scopes.
    pub fn scopes(scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Audience {
            scopes: scopes.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }

    /// Principals let in by credentials of these names.
    pub fn credentials(names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Audience {
            credentials: names.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }

    /// Whether `principal` is in it.
    pub fn matches(&self, principal: Option<&Principal>) -> bool {
        if self.subjects.is_empty() && self.scopes.is_empty() && self.credentials.is_empty() {
            return true;
        }
        let Some(p) = principal else {
            return false;
        };
        self.subjects.contains(&p.subject)
            || p.scopes.iter().any(|s| self.scopes.contains(s))
            || p.credential
                .as_ref()
                .is_some_and(|c| self.credentials.contains(c))
    }
}

/// Views by rule: the first rule whose audience holds the principal gives its view; a
/// principal no rule holds sees nothing (closed by default: a forgotten rule hides, it
/// never exposes).
#[derive(Debug, Clone, Default)]
pub struct ViewRules {
    rules: Vec<(Audience, Arc<View>)>,
}

impl ViewRules {
    /// No rules: nobody sees anything.
    pub fn new() -> Self {
        ViewRules::default()
    }

    /// With `view` for `audience`, after the rules already given.
    pub fn rule(mut self, audience: Audience, view: View) -> Self {
        self.rules.push((audience, Arc::new(view)));
        self
    }

    /// How many rules it has.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

impl Views for ViewRules {
    fn view_for(&self, principal: Option<&Principal>) -> Option<Arc<View>> {
        self.rules
            .iter()
            .find(|(who, _)| who.matches(principal))
            .map(|(_, view)| view.clone())
    }
}

/// What one request may see: everything (no views configured), nothing, or a view.
#[derive(Debug, Clone)]
pub(crate) enum Scope {
    Everything,
    Nothing,
    View(Arc<View>),
}

impl Scope {
    pub(crate) fn of(views: Option<&Arc<dyn Views>>, principal: Option<&Principal>) -> Scope {
        match views {
            None => Scope::Everything,
            Some(v) => match v.view_for(principal) {
                Some(view) => Scope::View(view),
                None => Scope::Nothing,
            },
        }
    }

    pub(crate) fn sees_upstream(&self, key: &str) -> bool {
        match self {
            Scope::Everything => true,
            Scope::Nothing => false,
            Scope::View(v) => v.sees_upstream(key),
        }
    }

    pub(crate) fn sees_tool(&self, key: &str, exposed: &str) -> bool {
        match self {
            Scope::Everything => true,
            Scope::Nothing => false,
            Scope::View(v) => v.sees_tool(key, exposed),
        }
    }

    /// The surface it is served, the gateway's being `default`.
    pub(crate) fn surface(&self, default: Surface) -> Surface {
        match self {
            Scope::View(v) => v.surface.unwrap_or(default),
            _ => default,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_rule_holding_the_principal_decides_and_none_sees_nothing() {
        let rules = ViewRules::new()
            .rule(
                Audience::subjects(["alice"]),
                View::new("alice").upstreams(["fs"]),
            )
            .rule(
                Audience {
                    scopes: vec!["admin".into()],
                    ..Default::default()
                },
                View::new("admins"),
            );
        let alice = Principal::new("alice").with_scopes(["admin"]);
        let view = rules.view_for(Some(&alice)).expect("a view");
        assert_eq!(view.name, "alice");
        assert!(view.sees_upstream("fs") && !view.sees_upstream("db"));
        let bob = Principal::new("bob").with_scopes(["admin"]);
        assert_eq!(
            rules
                .view_for(Some(&bob))
                .map(|v| v.name.clone())
                .as_deref(),
            Some("admins")
        );
        assert!(rules.view_for(Some(&Principal::new("eve"))).is_none());
        assert!(rules.view_for(None).is_none());
        let open = ViewRules::new().rule(Audience::everyone(), View::new("all"));
        assert!(open.view_for(None).is_some());
    }

    #[test]
    fn tools_are_seen_by_exposed_name_within_the_upstreams() {
        let v = View::new("v").upstreams(["fs"]).tools(GlobFilter {
            allow: Some(vec!["fs__read_*".into()]),
            deny: vec!["fs__read_secret".into()],
        });
        assert!(v.sees_tool("fs", "fs__read_file"));
        assert!(!v.sees_tool("fs", "fs__read_secret"));
        assert!(!v.sees_tool("fs", "fs__write_file"));
        assert!(!v.sees_tool("db", "fs__read_file"));
    }
}
