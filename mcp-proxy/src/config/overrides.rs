//! A server's `overrides`: what hosts see of its tools instead of what it lists.
//!
//! ```json
//! "overrides": {"delete_file": {"name": "remove", "description": "Deletes one file.",
//!                               "annotations": {"destructiveHint": true}}}
//! ```

use std::collections::BTreeMap;

use crate::overrides::ToolOverride;

use super::file;

/// A server's `overrides`, by real tool name.
pub(super) fn overrides(
    file: BTreeMap<String, file::ToolOverride>,
) -> BTreeMap<String, ToolOverride> {
    file.into_iter()
        .map(|(tool, o)| {
            let file::ToolOverride {
                name,
                title,
                description,
                annotations,
            } = o;
            let mut over = ToolOverride::new();
            if let Some(name) = name {
                over = over.name(name.0);
            }
            if let Some(t) = title {
                over = over.title(t);
            }
            if let Some(d) = description {
                over = over.description(d);
            }
            if let Some(a) = annotations {
                over = over.annotations(a);
            }
            (tool, over)
        })
        .collect()
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
