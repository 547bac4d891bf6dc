//! Tools: definitions, `tools/list`, `tools/call`.

use serde_json::Value;

use super::common::{CacheScope, Cursor, Icon, JsonObject, ResultType};
use super::content::ContentBlock;
use super::tasks::TaskMetadata;
use crate::meta::Meta;
use crate::model::{open_enum, wire_object};
use crate::raw::RawJson;

wire_object! {
    /// A tool a server offers.
    pub struct Tool {
        /// Unique name within the server. Accepted whatever its characters; see [`Tool::name_issues`].
        req name: String,
        /// Display name (2025-06-18+).
        opt title: String,
        /// Description, a hint to the model.
        opt description: String,
        /// JSON Schema of the arguments, kept as its text ([`RawJson::decode`] reads it).
        /// `null` is tolerated on read and written back as sent.
        #[serde(deserialize_with = "crate::serde_util::present")]
        opt input_schema: RawJson,
        /// JSON Schema of `structuredContent` (2025-06-18+; any root in 2026-07-28), kept as
        /// its text.
        #[serde(deserialize_with = "crate::serde_util::present")]
        opt output_schema: RawJson,
        /// Behaviour hints; untrusted unless the server is (2025-03-26+).
        opt annotations: ToolAnnotations,
        /// Icons (2025-11-25+).
        opt icons: Vec<Icon>,
        /// Task support (2025-11-25 only).
        opt execution: ToolExecution,
        /// Metadata (2025-06-18+).
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// Hints about a tool's behaviour (2025-03-26+). Every hint is optional; absent hints take the
    /// spec defaults, which the accessors on [`Tool`] apply.
    pub struct ToolAnnotations {
        /// Display name (the only one before 2025-06-18).
        opt title: String,
        /// Does not modify its environment. Default false.
        opt read_only_hint: bool,
        /// May perform destructive updates. Default true; meaningful only when not read-only.
        opt destructive_hint: bool,
        /// Repeating a call has no further effect. Default false; meaningful only when not read-only.
        opt idempotent_hint: bool,
        /// Interacts with an open world of external entities. Default true.
        opt open_world_hint: bool,
    }
}

open_enum! {
    /// 2025-11-25 `execution.taskSupport`.
    pub enum TaskSupport {
        /// `forbidden` (the default): never call as a task.
        Forbidden = "forbidden",
        /// `optional`: may be called as a task.
        Optional = "optional",
        /// `required`: must be called as a task.
        Required = "required",
    }
}

wire_object! {
    /// 2025-11-25 execution properties of a tool.
    pub struct ToolExecution {
        /// Whether the tool may or must be called as a task.
        opt task_support: TaskSupport,
    }
}

/// Why a tool name falls outside the 2025-11-25 SHOULD rules. Reported, never enforced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameIssue {
    /// Empty name.
    Empty,
    /// Longer than 128 characters (the length is given).
    TooLong(usize),
    /// Contains a character other than ASCII letters, digits, `_`, `-` and `.`.
    DisallowedChar(char),
}

impl Tool {
    /// A tool with a name and an input schema.
    pub fn new(name: impl Into<String>, input_schema: impl Into<RawJson>) -> Self {
        Tool {
            name: name.into(),
            input_schema: Some(input_schema.into()),
            ..Default::default()
        }
    }

    /// The name to show a person: `title`, then `annotations.title`, then `name`.
    pub fn display_name(&self) -> &str {
        self.title
            .as_deref()
            .or_else(|| self.annotations.as_ref().and_then(|a| a.title.as_deref()))
            .unwrap_or(&self.name)
    }

    /// `readOnlyHint`, default false.
    pub fn is_read_only(&self) -> bool {
        self.hint(|a| a.read_only_hint).unwrap_or(false)
    }

    /// Whether the tool may be destructive: never when read-only, else `destructiveHint` (default true).
    pub fn is_destructive(&self) -> bool {
        !self.is_read_only() && self.hint(|a| a.destructive_hint).unwrap_or(true)
    }

    /// Whether repeating a call is safe: read-only tools are, else `idempotentHint` (default false).
    pub fn is_idempotent(&self) -> bool {
        self.is_read_only() || self.hint(|a| a.idempotent_hint).unwrap_or(false)
    }

    /// `openWorldHint`, default true.
    pub fn is_open_world(&self) -> bool {
        self.hint(|a| a.open_world_hint).unwrap_or(true)
    }

    /// `execution.taskSupport`, default forbidden.
    pub fn task_support(&self) -> TaskSupport {
        self.execution
            .as_ref()
            .and_then(|e| e.task_support.clone())
            .unwrap_or_default()
    }

    fn hint(&self, f: impl Fn(&ToolAnnotations) -> Option<bool>) -> Option<bool> {
        self.annotations.as_ref().and_then(f)
    }

    /// How the name departs from the 2025-11-25 naming SHOULDs (1–128 characters of
    /// `[A-Za-z0-9_.-]`). An empty list means it follows them. Names outside the rules stay usable.
    pub fn name_issues(&self) -> Vec<NameIssue> {
        let mut issues = Vec::new();
        let len = self.name.chars().count();
        if len == 0 {
            issues.push(NameIssue::Empty);
        }
        if len > 128 {
            issues.push(NameIssue::TooLong(len));
        }
        if let Some(c) = self
            .name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        {
            issues.push(NameIssue::DisallowedChar(c));
        }
        issues
    }
}

wire_object! {
    /// Result of `tools/list`.
    pub struct ListToolsResult {
        /// The tools on this page.
        req tools: Vec<Tool>,
        /// Cursor of the next page.
        opt next_cursor: Cursor,
        /// 2026-07-28 cache lifetime in milliseconds (kept as sent: clients treat a negative value as 0).
        opt ttl_ms: serde_json::Number,
        /// 2026-07-28 cache scope.
        opt cache_scope: CacheScope,
        /// 2026-07-28 result type.
        opt result_type: ResultType,
        /// Result metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// Params of `tools/call`.
    pub struct CallToolRequestParams {
        /// Tool name.
        req name: String,
        /// Arguments.
        opt arguments: JsonObject,
        /// 2025-11-25: run as a task.
        opt task: TaskMetadata,
        /// 2026-07-28: answers to the server's `inputRequests`.
        opt input_responses: JsonObject,
        /// 2026-07-28: the server's `requestState`, echoed exactly.
        opt request_state: String,
        /// Request metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// Result of `tools/call`.
    pub struct CallToolResult {
        /// Unstructured result.
        req content: Vec<ContentBlock>,
        /// Structured result (2025-06-18+; any JSON value in 2026-07-28). `null` is kept distinct from absent.
        #[serde(deserialize_with = "crate::serde_util::present")]
        opt structured_content: Value,
        /// Whether the tool failed. Absent means false.
        opt is_error: bool,
        /// 2026-07-28 result type.
        opt result_type: ResultType,
        /// Result metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

impl CallToolResult {
    /// Whether the tool reported failure.
    pub fn is_error(&self) -> bool {
        self.is_error.unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(v: Value) -> Tool {
        serde_json::from_value(v).expect("tool")
    }

    #[test]
    fn display_name_precedence() {
        let t = tool(json!({"name": "n", "inputSchema": {"type": "object"}}));
        assert_eq!(t.display_name(), "n");
        let t = tool(json!({"name": "n", "inputSchema": {}, "annotations": {"title": "A"}}));
        assert_eq!(t.display_name(), "A");
        let t = tool(
            json!({"name": "n", "title": "T", "inputSchema": {}, "annotations": {"title": "A"}}),
        );
        assert_eq!(t.display_name(), "T");
    }

    #[test]
    fn hints_apply_spec_defaults() {
        let bare = tool(json!({"name": "n", "inputSchema": {}}));
        assert!(!bare.is_read_only());
        assert!(
            bare.is_destructive(),
            "absent destructiveHint means destructive"
        );
        assert!(!bare.is_idempotent());
        assert!(bare.is_open_world());
        let ro = tool(
            json!({"name": "n", "inputSchema": {}, "annotations": {"readOnlyHint": true, "destructiveHint": true}}),
        );
        assert!(
            !ro.is_destructive(),
            "destructiveHint is meaningless on a read-only tool"
        );
        assert!(ro.is_idempotent());
        let additive = tool(
            json!({"name": "n", "inputSchema": {}, "annotations": {"destructiveHint": false, "idempotentHint": true, "openWorldHint": false}}),
        );
        assert!(!additive.is_destructive());
        assert!(additive.is_idempotent());
        assert!(!additive.is_open_world());
        assert_eq!(bare.task_support(), TaskSupport::Forbidden);
    }

    #[test]
    fn name_rules_report_and_never_reject() {
        let t = tool(json!({"name": "admin tools,list", "inputSchema": {}}));
        assert_eq!(t.name_issues(), vec![NameIssue::DisallowedChar(' ')]);
        assert!(
            tool(json!({"name": "admin.tools_list-2", "inputSchema": {}}))
                .name_issues()
                .is_empty()
        );
        let long = "x".repeat(129);
        assert_eq!(
            tool(json!({"name": long, "inputSchema": {}})).name_issues(),
            vec![NameIssue::TooLong(129)]
        );
        assert_eq!(
            tool(json!({"name": "", "inputSchema": {}})).name_issues(),
            vec![NameIssue::Empty]
        );
    }

    #[test]
    fn schemas_are_written_back_as_they_came() {
        let text = r#"{"name":"n","inputSchema":{"type":"object","properties":{"z":{"maximum":1.50},"a":{"minimum":1e400}}},"outputSchema":{"z":true,"a":[0.10]}}"#;
        let t: Tool = serde_json::from_str(text).expect("a tool");
        assert_eq!(serde_json::to_string(&t).expect("encode"), text);
    }

    #[test]
    fn null_input_schema_is_tolerated_and_kept() {
        let v = json!({"name": "n", "inputSchema": null});
        let t = tool(v.clone());
        assert_eq!(t.input_schema.as_ref().map(RawJson::get), Some("null"));
        assert_eq!(serde_json::to_value(&t).expect("encode"), v);
    }

    #[test]
    fn null_structured_content_is_not_absent() {
        let v = json!({"content": [], "structuredContent": null});
        let r: CallToolResult = serde_json::from_value(v.clone()).expect("decode");
        assert_eq!(r.structured_content, Some(Value::Null));
        assert_eq!(serde_json::to_value(&r).expect("encode"), v);
        let r: CallToolResult = serde_json::from_value(json!({"content": []})).expect("decode");
        assert_eq!(r.structured_content, None);
    }
}
