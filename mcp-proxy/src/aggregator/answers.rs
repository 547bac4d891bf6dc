//! What the gateway makes of an upstream's answers for a host: an upstream's failure as
//! the host's error or an `isError` result, a question or a task told apart, the per-hop
//! `_meta` keys dropped both ways.

use mcp_client::ClientError;
use mcp_server::Outcome;
use mcp_types::protocol::*;
use mcp_types::{codes, ErrorObject};
use serde_json::{Map, Value};

use crate::upstream_error::UpstreamError;

/// A tool result that is an error the gateway reports, in words a model can act on.
pub(super) fn tool_error(text: String) -> CallToolResult {
    CallToolResult {
        content: vec![ContentBlock::text(text)],
        is_error: Some(true),
        ..Default::default()
    }
}

/// The task id of a `tools/call` answered with a task (2025-11-25 `CreateTaskResult`, or
/// the 2026 extension's `resultType: "task"`).
pub(super) fn created_task_id(v: &Value) -> Option<String> {
    v.pointer("/task/taskId")
        .or_else(|| (v.get("resultType")? == "task").then(|| v.get("taskId"))?)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

pub(super) fn call_failure(
    upstream: &str,
    e: ClientError,
) -> Result<Outcome<CallToolResult>, ErrorObject> {
    match e {
        // The upstream's own protocol answer (an unknown tool, bad params) goes through.
        ClientError::Server(e) if !UpstreamError::is_refusal(&e) => Err(e),
        ClientError::Timeout(t) => Ok(Outcome::Complete(tool_error(format!(
            "upstream `{upstream}` did not answer within {t:?}; the call was cancelled"
        )))),
        // The client's own words: they say what broke, which is what a model can act on.
        other => Ok(Outcome::Complete(tool_error(format!(
            "upstream `{upstream}` failed: {other}"
        )))),
    }
}

/// A failed request other than a tool call, as the host's error: the upstream's own
/// protocol error as it is, anything else the gateway's error naming the upstream
/// ([`UpstreamError::to_error_object`]).
pub(super) fn upstream_error(upstream: &str, e: ClientError) -> ErrorObject {
    match e {
        ClientError::Server(e) if !UpstreamError::is_refusal(&e) => e,
        other => UpstreamError::from_client(&other).to_error_object(upstream),
    }
}

/// An upstream's `InputRequiredResult`, relayed: a 2026 host answers it itself; for a
/// legacy host the server session turns its requests into real ones.
pub(super) fn input_required(
    upstream: &str,
    v: &Value,
) -> Result<Option<InputRequiredResult>, ErrorObject> {
    if v.get("resultType").and_then(Value::as_str) != Some("input_required") {
        return Ok(None);
    }
    let mut ir: InputRequiredResult = decode(upstream, v.clone())?;
    strip_hop_meta(&mut ir.meta);
    Ok(Some(ir))
}

pub(super) fn decode<T: serde::de::DeserializeOwned>(
    upstream: &str,
    v: Value,
) -> Result<T, ErrorObject> {
    serde_json::from_value(v).map_err(|e| {
        ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("upstream `{upstream}` sent an invalid result: {e}"),
        )
    })
}

/// Drops per-hop keys from an upstream result's `_meta`: the host's answer comes from the
/// gateway, which names itself, and the upstream's task ids are not the host's;
/// everything else in `_meta` is kept.
pub(super) fn strip_hop_meta(meta: &mut Option<Map<String, Value>>) {
    if let Some(m) = meta {
        for k in HOP_META {
            m.remove(k);
        }
        if m.is_empty() {
            *meta = None;
        }
    }
}

/// The per-hop `_meta` keys of an upstream's result.
pub(super) const HOP_META: [&str; 2] =
    [mcp_types::meta::SERVER_INFO, mcp_types::meta::RELATED_TASK];

/// [`strip_hop_meta`] on a result still in raw form.
pub(super) fn strip_hop_meta_raw(result: &mut Map<String, Value>) {
    if let Some(Value::Object(m)) = result.get_mut("_meta") {
        for k in HOP_META {
            m.remove(k);
        }
        if m.is_empty() {
            result.remove("_meta");
        }
    }
}

pub(super) fn forward_meta(meta: Option<Map<String, Value>>) -> Option<Map<String, Value>> {
    // The host's progress token is ours to keep (the upstream gets its own), and the 2026
    // envelope is per hop: the gateway's client writes its own.
    meta.map(|mut m| {
        for k in [
            mcp_types::meta::PROGRESS_TOKEN,
            mcp_types::meta::PROTOCOL_VERSION,
            mcp_types::meta::CLIENT_CAPABILITIES,
            mcp_types::meta::CLIENT_INFO,
            mcp_types::meta::LOG_LEVEL,
        ] {
            m.remove(k);
        }
        m
    })
    .filter(|m| !m.is_empty())
}

/// The key of the gateway's own confirmation request among a round's input requests.
pub(super) const CONFIRM_KEY: &str = "gateway_confirm";

/// The key of the pinning gate's question (see [`crate::pins`]).
pub(super) const APPROVE_KEY: &str = "gateway_approve";

/// The gateway's own questions, whose answers are the gateway's to read and never go
/// upstream.
pub(super) const OWN_KEYS: [&str; 2] = [CONFIRM_KEY, APPROVE_KEY];

/// The error a host gets for a resource it cannot reach, or none lists.
pub(super) fn resource_not_found(uri: &str) -> ErrorObject {
    ErrorObject::new(
        codes::RESOURCE_NOT_FOUND,
        format!("Resource not found: {uri}"),
    )
    .with_data(serde_json::json!({"uri": uri}))
}
