//! `gateway.views`: what each principal sees, first matching rule wins, and a principal
//! no rule matches sees nothing.
//!
//! ```json
//! "views": [{"name": "ci", "credentials": ["ci"], "upstreams": ["fs"], "allowTools": ["fs__read_*"]},
//!           {"name": "staff", "scopes": ["staff"], "surface": "dispatcher"}]
//! ```

use std::sync::Arc;

use serde_json::Value;

use crate::policy::GlobFilter;
use crate::views::{Audience, View, ViewRules};

use super::{keys, known_keys, surface, Fields, Problem};

/// The `views` array at `gateway.views`.
pub(super) fn views(v: &Value, upstream_keys: &[&str]) -> Result<Arc<ViewRules>, Problem> {
    let at = "gateway.views";
    let entries = v
        .as_array()
        .ok_or_else(|| Problem::new(at, "must be an array of views"))?;
    let mut rules = ViewRules::new();
    for (n, entry) in entries.iter().enumerate() {
        let at = format!("{at}[{n}]");
        let obj = entry
            .as_object()
            .ok_or_else(|| Problem::new(at.clone(), "must be an object"))?;
        known_keys(obj, &keys::VIEW, &at)?;
        let f = Fields { obj, at };
        let audience = Audience {
            subjects: f.strings("subjects")?,
            scopes: f.strings("scopes")?,
            credentials: f.strings("credentials")?,
        };
        let mut view = View::new(f.string("name")?.unwrap_or_else(|| format!("view {n}")));
        if obj.get("upstreams").is_some_and(|u| !u.is_null()) {
            let keys = f.strings("upstreams")?;
            if let Some(k) = keys.iter().find(|k| !upstream_keys.contains(&k.as_str())) {
                return Err(f.problem("upstreams", format!("no server `{k}` in mcpServers")));
            }
            view = view.upstreams(keys);
        }
        let allow = match obj.get("allowTools") {
            None | Some(Value::Null) => None,
            Some(_) => Some(f.patterns("allowTools")?),
        };
        view = view.tools(GlobFilter {
            allow,
            deny: f.patterns("denyTools")?,
        });
        if let Some(s) = surface(&f)? {
            view = view.surface(s);
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
