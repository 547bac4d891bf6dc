//! `gateway.views`: what each principal sees, first matching rule wins, and a principal
//! no rule matches sees nothing.
//!
//! ```json
//! "views": [{"name": "ci", "credentials": ["ci"], "upstreams": ["fs"], "allowTools": ["fs__read_*"]},
//!           {"name": "staff", "scopes": ["staff"], "surface": "dispatcher"}]
//! ```

use std::sync::Arc;

use crate::policy::GlobFilter;
use crate::views::{Audience, View, ViewRules};

use super::{file, join, surface, Problem};

/// The `views` array at `gateway.views`, each view's `upstreams` among `upstream_keys`.
pub(super) fn views(
    entries: Vec<file::View>,
    upstream_keys: &[&str],
) -> Result<Arc<ViewRules>, Problem> {
    let mut rules = ViewRules::new();
    for (n, entry) in entries.into_iter().enumerate() {
        let file::View {
            name,
            subjects,
            scopes,
            credentials,
            upstreams,
            allow_tools,
            deny_tools,
            surface: shown,
        } = entry;
        let audience = Audience {
            subjects: subjects.unwrap_or_default(),
            scopes: scopes.unwrap_or_default(),
            credentials: credentials.unwrap_or_default(),
        };
        let mut view = View::new(name.unwrap_or_else(|| format!("view {n}")));
        if let Some(keys) = upstreams {
            if let Some(k) = keys.iter().find(|k| !upstream_keys.contains(&k.as_str())) {
                let at = join(&format!("gateway.views[{n}]"), "upstreams");
                return Err(Problem::new(at, format!("no server `{k}` in mcpServers")));
            }
            view = view.upstreams(keys);
        }
        view = view.tools(GlobFilter {
            allow: allow_tools.map(|p| p.0),
            deny: deny_tools.map(|p| p.0).unwrap_or_default(),
        });
        if let Some(s) = shown {
            view = view.surface(surface(s));
        }
        rules = rules.rule(audience, view);
    }
    Ok(Arc::new(rules))
}

#[cfg(test)]
mod tests {
    use crate::config::parse;
    use mcp_server::auth::Principal;

    #[test]
    fn views_are_read_in_order_and_checked() {
        let g = parse(
            r#"{"mcpServers": {"fs": {"command": "x"}, "db": {"command": "y"}},
                "gateway": {"views": [
                  {"name": "ci", "credentials": ["ci"], "upstreams": ["fs"], "allowTools": ["fs__read_*"]},
                  {"name": "staff", "scopes": ["staff"], "surface": "dispatcher"}]}}"#,
            "c.json",
        )
        .expect("valid");
        let views = g.options.views.expect("views");
        let ci = Principal::new("bot").with_credential("ci");
        let view = views.view_for(Some(&ci)).expect("ci's view");
        assert!(view.sees_tool("fs", "fs__read_file") && !view.sees_tool("fs", "fs__write"));
        assert!(!view.sees_upstream("db"));
        let staff = Principal::new("ann").with_scopes(["staff"]);
        assert_eq!(
            views
                .view_for(Some(&staff))
                .map(|v| v.name.clone())
                .as_deref(),
            Some("staff")
        );
        assert!(views.view_for(Some(&Principal::new("eve"))).is_none());
        for (bad, at) in [
            (r#"[{"upstreams": ["nope"]}]"#, "gateway.views[0].upstreams"),
            (r#"[{"denyTool": ["x"]}]"#, "gateway.views[0].denyTool"),
            (r#"[{"surface": "wide"}]"#, "gateway.views[0].surface"),
            (r#"{"name": "x"}"#, "gateway.views"),
        ] {
            let text = format!(
                r#"{{"mcpServers": {{"fs": {{"command": "x"}}}}, "gateway": {{"views": {bad}}}}}"#
            );
            assert_eq!(parse(&text, "c.json").expect_err(bad).location, at, "{bad}");
        }
    }
}
