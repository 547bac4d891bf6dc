//! A server's `overrides`: what hosts see of its tools instead of what it lists.
//!
//! ```json
//! "overrides": {"delete_file": {"name": "remove", "description": "Deletes one file.",
//!                               "annotations": {"destructiveHint": true}}}
//! ```

use std::collections::BTreeMap;

use serde_json::Value;

use crate::overrides::ToolOverride;

use super::{keys, known_keys, Fields, Problem};

/// The `overrides` member of a server entry, by real tool name.
pub(super) fn overrides(server: &Fields<'_>) -> Result<BTreeMap<String, ToolOverride>, Problem> {
    let Some(v) = server.obj.get("overrides").filter(|v| !v.is_null()) else {
        return Ok(BTreeMap::new());
    };
    let at = server.at("overrides");
    let map = v
        .as_object()
        .ok_or_else(|| Problem::new(at.clone(), "must be an object of tool names"))?;
    let mut out = BTreeMap::new();
    for (tool, o) in map {
        let at = format!("{at}.{tool}");
        let obj = o
            .as_object()
            .ok_or_else(|| Problem::new(at.clone(), "must be an object"))?;
        known_keys(obj, &keys::OVERRIDE, &at)?;
        let f = Fields { obj, at };
        let mut over = ToolOverride::new();
        if let Some(name) = f.string("name")? {
            if let Some(problem) = keys::bad_tool_name(&name) {
                return Err(f.problem("name", problem));
            }
            over = over.name(name);
        }
        if let Some(t) = f.string("title")? {
            over = over.title(t);
        }
        if let Some(d) = f.string("description")? {
            over = over.description(d);
        }
        match obj.get("annotations") {
            None | Some(Value::Null) => {}
            Some(Value::Object(a)) => over = over.annotations(a.clone()),
            Some(_) => return Err(f.problem("annotations", "must be an object of hints")),
        }
        out.insert(tool.clone(), over);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::config::parse;

    #[test]
    fn overrides_are_read_per_tool_and_checked() {
        let g = parse(
            r#"{"mcpServers": {"fs": {"command": "x", "overrides": {
                "delete_file": {"name": "remove", "description": "Deletes one file.",
                                "annotations": {"destructiveHint": true}}}}}}"#,
            "c.json",
        )
        .expect("valid");
        let o = &g.upstreams[0].overrides["delete_file"];
        assert_eq!(o.name.as_deref(), Some("remove"));
        assert_eq!(o.description.as_deref(), Some("Deletes one file."));
        assert!(o.annotations.is_some());
        for (bad, at) in [
            (
                r#"{"t": {"descripton": "x"}}"#,
                "mcpServers.fs.overrides.t.descripton",
            ),
            (
                r#"{"t": {"name": "a b"}}"#,
                "mcpServers.fs.overrides.t.name",
            ),
            (
                r#"{"t": {"annotations": true}}"#,
                "mcpServers.fs.overrides.t.annotations",
            ),
            (r#"["t"]"#, "mcpServers.fs.overrides"),
        ] {
            let text =
                format!(r#"{{"mcpServers": {{"fs": {{"command": "x", "overrides": {bad}}}}}}}"#);
            assert_eq!(parse(&text, "c.json").expect_err(bad).location, at, "{bad}");
        }
    }
}
