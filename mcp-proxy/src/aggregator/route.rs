//! Where an exposed tool name leads.

use super::id::UpstreamId;
use mcp_types::headers::HeaderParam;
use mcp_types::protocol::Tool;
use mcp_types::raw::{self, Exact};
use serde_json::value::RawValue;

/// Where an exposed tool name leads: the upstream that owns the tool, the tool as that
/// upstream listed it (with the operator's overrides applied, its real name kept), and
/// the tool's real name as JSON text (each call's params get it).
pub(crate) struct Route {
    pub(crate) upstream: UpstreamId,
    pub(crate) tool: Exact<Tool>,
    pub(super) name: Box<RawValue>,
    /// Its `x-mcp-header` arguments (none when the annotations are invalid).
    pub(crate) header_params: Vec<HeaderParam>,
    /// Whether a policy may rely on its hints: its upstream is trusted, or the operator
    /// wrote them (an override's annotations).
    pub(crate) hints_trusted: bool,
    /// Why the host's user must allow each call (the tool is not as approved; see
    /// [`crate::pins`]), if they must.
    pub(crate) unapproved: Option<std::sync::Arc<str>>,
    /// The meters of its calls, made at its first call.
    pub(super) meter: std::sync::OnceLock<std::sync::Arc<crate::metrics::ToolMeter>>,
}

impl Route {
    pub(super) fn new(upstream: UpstreamId, tool: Exact<Tool>, hints_trusted: bool) -> Self {
        let header_params = mcp_types::headers::listed_header_params(tool.input_schema.as_ref())
            .unwrap_or_default();
        Route {
            header_params,
            upstream,
            name: raw::string(&tool.name),
            tool,
            hints_trusted,
            unapproved: None,
            meter: std::sync::OnceLock::new(),
        }
    }
}
