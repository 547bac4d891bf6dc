//! What the gateway lets through: tool filters per upstream, a confirmation gate for tools
//! that may be destructive (TOOL-17), and the surface hosts see (every tool, or a few
//! dispatcher tools — TOOL-24).

use async_trait::async_trait;
use mcp_types::protocol::Tool;
use serde_json::{Map, Value};

/// Decides which of one upstream's tools hosts are shown and may call
/// ([`crate::UpstreamConfig::tools`]). A tool it does not permit is absent from every list
/// (the dispatcher's too), and a call to it is refused with an error that says the
/// gateway's policy does not allow it. [`GlobFilter`] (name patterns, what the
/// configuration file's `allowTools`/`denyTools` make) is the default; implement this to
/// decide some other way (a tool's annotations, a registry of approved tools).
pub trait ToolFilter: Send + Sync + std::fmt::Debug + 'static {
    /// Whether `tool` is exposed. `tool` is the definition as the upstream listed it: its
    /// own name (not the exposed one), before overrides, with its hints even where hosts
    /// are not shown them; an untrusted upstream's annotations are its own word (TOOL-15).
    ///
    /// The catalog asks it whenever it builds a list or its route index (each
    /// `tools/list`, each new listing, a refused call), not on each relayed call: it must
    /// be cheap, and give the same answer for the same definition, since hosts are told
    /// the list changed only when an upstream's listing does.
    fn permits(&self, tool: &Tool) -> bool;
}

/// The default [`ToolFilter`]: name patterns. Patterns are exact names, or contain `*`
/// for any run of characters (`admin_*`). Deny wins over allow. The default permits
/// every tool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GlobFilter {
    /// When set, only tools matching one of these are exposed.
    pub allow: Option<Vec<String>>,
    /// Tools matching one of these are never exposed, and calls to them are refused.
    pub deny: Vec<String>,
}

impl GlobFilter {
    /// Whether the name `name` passes: it matches no `deny` pattern and, when `allow` is
    /// set, one of its patterns (an empty `allow` permits nothing). [`ToolFilter::permits`] asks this of the tool's own name;
    /// a [`crate::views::View`] of the name hosts see.
    pub fn permits_name(&self, name: &str) -> bool {
        if self.deny.iter().any(|p| glob(p, name)) {
            return false;
        }
        self.allow
            .as_ref()
            .is_none_or(|a| a.iter().any(|p| glob(p, name)))
    }
}

impl ToolFilter for GlobFilter {
    fn permits(&self, tool: &Tool) -> bool {
        self.permits_name(&tool.name)
    }
}

/// `*` matches any run of characters, everything else itself.
fn glob(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(first) = parts.next() else {
        return pattern == name;
    };
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Whether a call to `tool` needs confirmation: it may be destructive by the spec defaults
/// (absent `destructiveHint` with `readOnlyHint` not true counts as destructive). An
/// untrusted upstream's annotations cannot vouch for a tool (TOOL-15), so every tool of
/// one needs confirmation.
pub fn may_be_destructive(tool: &Tool, trusted: bool) -> bool {
    !trusted || tool.is_destructive()
}

/// A call that needs confirmation.
#[derive(Debug)]
pub struct Confirmation<'a> {
    /// The upstream's configuration key.
    pub upstream: &'a str,
    /// The name the host called.
    pub exposed: &'a str,
    /// The tool as the upstream described it.
    pub tool: &'a Tool,
    /// The arguments of the call.
    pub arguments: Option<&'a Map<String, Value>>,
}

/// What a [`Confirm`] hook decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Go ahead.
    Allow,
    /// Do not call; the host gets an `isError` result with this reason.
    Refuse(String),
    /// Ask the host's user (an elicitation the host answers; a host that cannot elicit
    /// gets a refusal that says so).
    AskHost,
}

/// Decides calls to tools that may be destructive (see [`may_be_destructive`]).
#[async_trait]
pub trait Confirm: Send + Sync + 'static {
    /// Decides one call.
    async fn confirm(&self, call: &Confirmation<'_>) -> Verdict;
}

/// The hook of `"confirmDestructive": true`: asks the host's user every time.
#[derive(Debug, Clone, Copy, Default)]
pub struct AskHost;

#[async_trait]
impl Confirm for AskHost {
    async fn confirm(&self, _call: &Confirmation<'_>) -> Verdict {
        Verdict::AskHost
    }
}

/// What hosts see in `tools/list`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Surface {
    /// Every permitted upstream tool under its exposed name.
    #[default]
    Direct,
    /// Four dispatcher tools (`search_tools`, `list_tools`, `describe_tool`, `call_tool`) that reach every
    /// permitted upstream tool, so a host's context holds four schemas, not hundreds
    /// (TOOL-24).
    Dispatcher,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_runs_and_exact_names() {
        assert!(glob("read", "read"));
        assert!(!glob("read", "reader"));
        assert!(glob("read*", "reader"));
        assert!(glob("*_file", "write_file"));
        assert!(!glob("*_file", "write_files"));
        assert!(glob("a*b*c", "aXXbYYc"));
        assert!(!glob("a*b*c", "aXXc"));
        assert!(glob("*", ""));
        assert!(!glob("ab*ba", "aba"));
    }

    #[test]
    fn glob_filter_table() {
        let filter = |allow: Option<&[&str]>, deny: &[&str]| GlobFilter {
            allow: allow.map(|a| a.iter().map(|p| p.to_string()).collect()),
            deny: deny.iter().map(|p| p.to_string()).collect(),
        };
        let files = ["file_*"];
        /// Allow, deny, a name, whether it is permitted.
        type Row<'a> = (Option<&'a [&'a str]>, &'a [&'a str], &'a str, bool);
        let table: &[Row<'_>] = &[
            (None, &[], "anything", true),
            (None, &[], "", true),
            (Some(&[]), &[], "anything", false),
            (Some(&files), &[], "file_read", true),
            (Some(&files), &[], "shell", false),
            (Some(&files), &["file_delete"], "file_delete", false),
            (Some(&files), &["file_delete"], "file_read", true),
            (None, &["*"], "file_read", false),
            (Some(&["*"]), &["*_secret"], "read_secret", false),
            (Some(&["*"]), &["*_secret"], "read_secrets", true),
            (Some(&["read"]), &[], "reader", false),
            (Some(&["a*b*c"]), &[], "aXbYc", true),
        ];
        for &(allow, deny, name, permitted) in table {
            let f = filter(allow, deny);
            assert_eq!(f.permits_name(name), permitted, "{f:?} on {name:?}");
            let tool = Tool::new(name, serde_json::json!({"type": "object"}));
            assert_eq!(
                ToolFilter::permits(&f, &tool),
                permitted,
                "{f:?} on {name:?}"
            );
        }
    }

    #[test]
    fn only_trusted_read_only_or_non_destructive_tools_skip_confirmation() {
        let mut t = Tool::new("t", serde_json::json!({"type": "object"}));
        assert!(
            may_be_destructive(&t, true),
            "absent hints mean destructive"
        );
        t.annotations = serde_json::from_value(serde_json::json!({"readOnlyHint": true})).ok();
        assert!(!may_be_destructive(&t, true));
        assert!(
            may_be_destructive(&t, false),
            "untrusted hints do not count"
        );
        t.annotations = serde_json::from_value(serde_json::json!({"destructiveHint": false})).ok();
        assert!(!may_be_destructive(&t, true));
    }
}
