//! The confirmation gate (TOOL-17): before a call to a tool that may be destructive, the
//! configured [`crate::policy::Confirm`] hook decides, and may have the host's user asked.

use mcp_server::{Outcome, RequestContext};
use mcp_types::protocol::*;
use serde_json::{json, Map, Value};

use super::gates::{APPROVE_KEY, CONFIRM_KEY};
use super::Relay;
use crate::aggregator::answers::tool_error;
use crate::policy::{may_be_destructive, Confirmation, Verdict};

impl Relay {
    /// The confirmation gate (TOOL-17): `None` to go ahead, else what to answer instead.
    /// Only a first round is gated: a retry carrying `inputResponses` continues a call the
    /// host already confirmed (or is answering this gate).
    pub(super) async fn confirmation(
        &self,
        ctx: &RequestContext,
        exposed: &str,
        key: &str,
        tool: &Tool,
        trusted: bool,
        arguments: impl FnOnce() -> Option<Map<String, Value>>,
    ) -> Option<Outcome<CallToolResult>> {
        let hook = self.confirm.as_ref()?;
        if !may_be_destructive(tool, trusted) {
            return None;
        }
        let arguments = arguments();
        let call = Confirmation {
            upstream: key,
            exposed,
            tool,
            arguments: arguments.as_ref(),
        };
        // The hook decides every round: what it refuses stays refused, whatever answers a
        // retry carries.
        match hook.confirm(&call).await {
            Verdict::Allow => None,
            Verdict::Refuse(why) => Some(Outcome::Complete(tool_error(format!(
                "The call to {exposed} was refused: {why}"
            )))),
            Verdict::AskHost if ctx.input_response(CONFIRM_KEY).is_some() => {
                let answer = ctx.input_response(CONFIRM_KEY)?;
                (!accepted(answer)).then(|| {
                    Outcome::Complete(tool_error(format!(
                        "The user declined the call to {exposed}; nothing was done."
                    )))
                })
            }
            // A later round of a call already asked about (its upstream's own questions
            // being answered): the user was asked at its first round. A host that sends
            // answers at once skips its own user's question, as it could by answering it.
            Verdict::AskHost if !ctx.input_responses().is_empty() => None,
            Verdict::AskHost if ctx.client_capabilities().elicitation.is_none() => {
                Some(Outcome::Complete(tool_error(format!(
                    "The call to {exposed} needs the user's confirmation (it may be destructive), \
                     and this host cannot ask: it did not declare elicitation."
                ))))
            }
            Verdict::AskHost => Some(ask_user(
                CONFIRM_KEY,
                format!(
                    "Allow the call to {} (upstream `{key}`)? It may change or delete data.",
                    tool.display_name()
                ),
            )),
        }
    }

    /// The pinning gate: a tool that is not as approved runs only if the host's user allows
    /// this call. `None` to go ahead, else what to answer instead.
    pub(super) fn approval(
        &self,
        ctx: &RequestContext,
        exposed: &str,
        key: &str,
        why: &str,
    ) -> Option<Outcome<CallToolResult>> {
        if let Some(answer) = ctx.input_response(APPROVE_KEY) {
            return (!accepted(answer)).then(|| {
                Outcome::Complete(tool_error(format!(
                    "The user did not allow the call to {exposed}; nothing was done."
                )))
            });
        }
        if ctx.client_capabilities().elicitation.is_none() {
            return Some(Outcome::Complete(tool_error(format!(
                "The tool {exposed} (upstream `{key}`) {why}, so each call needs the user's \
                 approval, and this host cannot ask: it did not declare elicitation."
            ))));
        }
        Some(ask_user(
            APPROVE_KEY,
            format!(
                "The tool {exposed} (upstream `{key}`) {why}. It may change or delete data. \
                 Allow this call anyway?"
            ),
        ))
    }
}

/// Whether an elicitation answer says yes.
fn accepted(answer: &Value) -> bool {
    answer.get("action").and_then(Value::as_str) == Some("accept")
        && answer.pointer("/content/confirm").and_then(Value::as_bool) == Some(true)
}

/// A yes/no question for the host's user, under `key`.
fn ask_user(key: &str, message: String) -> Outcome<CallToolResult> {
    let mut requests = Map::new();
    requests.insert(
        key.into(),
        json!({
            "method": method::ELICITATION_CREATE,
            "params": {
                "message": message,
                "requestedSchema": {
                    "type": "object",
                    "properties": {"confirm": {"type": "boolean", "title": "Allow this call"}},
                    "required": ["confirm"]
                }
            }
        }),
    );
    Outcome::InputRequired(InputRequiredResult {
        input_requests: Some(requests),
        ..Default::default()
    })
}
