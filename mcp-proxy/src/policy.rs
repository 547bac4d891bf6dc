//! What the gateway lets through: tool filters per upstream, a confirmation gate for tools
//! that may be destructive (TOOL-17), and the surface hosts see (every tool, or a few
//! dispatcher tools — TOOL-24).

use async_trait::async_trait;
use mcp_types::protocol::Tool;
use serde_json::{Map, Value};

/// Which tools of one upstream are exposed. Patterns are exact names, or contain `*`
/// for any run of characters (`admin_*`). Deny wins over allow.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolFilter {
    /// When set, only tools matching one of these are exposed.
    pub allow: Option<Vec<String>>,
    /// Tools matching one of these are never exposed, and calls to them are refused.
    pub deny: Vec<String>,
}

impl ToolFilter {
    /// Whether the upstream tool `name` (its own name, not the exposed one) passes.
    pub fn permits(&self, name: &str) -> bool {
        if self.deny.iter().any(|p| glob(p, name)) {
            return false;
        }
        self.allow
            .as_ref()
            .is_none_or(|a| a.iter().any(|p| glob(p, name)))
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
    /// Three dispatcher tools (`list_tools`, `describe_tool`, `call_tool`) that reach every
    /// permitted upstream tool, so a host's context holds three schemas, not hundreds
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
    fn deny_wins_over_allow() {
        let f = ToolFilter {
            allow: Some(vec!["file_*".into()]),
            deny: vec!["file_delete".into()],
        };
        assert!(f.permits("file_read"));
        assert!(!f.permits("file_delete"));
        assert!(!f.permits("shell"));
        assert!(ToolFilter::default().permits("anything"));
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
