//! A request that needs the user's consent first: the `-32042`
//! (`URLElicitationRequiredError`) a per-user upstream's credentials (or an upstream
//! itself) answered, told to each host the way it can be asked.
//!
//! - a host of a revision with the error that declared URL-mode elicitation hears the
//!   error as it is, and `notifications/elicitation/complete` when the flow completes;
//! - a 2026 host that declared it gets an `InputRequiredResult` with the URL elicitations
//!   and a `requestState` of the gateway's; its retry goes upstream afresh;
//! - any other host is told in words: the link to open, and to try again after.

use std::time::Duration;

use mcp_revisions::features;
use mcp_server::{RequestContext, Subscriber};
use mcp_types::protocol::{ClientCapabilities, InputRequiredResult};
use mcp_types::{codes, ErrorObject};
use serde_json::{json, Map, Value};

/// How long a host waits for a consent it was sent to complete: a connect link's life.
pub(crate) const CONSENT_WAIT: Duration = Duration::from_secs(600);

/// How the host of a request hears that it needs consents first.
#[derive(Debug)]
pub(super) enum Asked {
    /// The `-32042` error, as it is.
    Error(ErrorObject),
    /// A 2026 `InputRequiredResult`.
    InputRequired(InputRequiredResult),
    /// Words for a host that cannot be sent to a URL: the links, and to try again.
    Told(String),
}

/// Whether `e` is a request's need for URL-mode elicitations.
pub(super) fn needs_consent(e: &ErrorObject) -> bool {
    e.code == codes::URL_ELICITATION_REQUIRED
}

/// How the host of `ctx` hears `e` (a `-32042`): `state` seals the retry's
/// `requestState` for a 2026 host; `sent` is told which host awaits each elicitation.
pub(super) fn ask(
    ctx: &RequestContext,
    e: ErrorObject,
    state: impl FnOnce() -> Option<String>,
    sent: impl Fn(&str, Subscriber),
) -> Asked {
    let links = elicitations(&e);
    let url_mode =
        features::url_elicitation(ctx.revision()) && declares_url(ctx.client_capabilities());
    if url_mode && features::url_elicitation_error(ctx.revision()) {
        if let Some(host) = ctx.subscriber() {
            for id in links
                .iter()
                .filter_map(|l| l.get("elicitationId")?.as_str())
            {
                sent(id, host.clone());
            }
        }
        return Asked::Error(e);
    }
    if url_mode && features::input_required_results(ctx.revision()) && !links.is_empty() {
        let mut requests = Map::new();
        for (n, link) in links.iter().enumerate() {
            let mut params = link.clone();
            // The 2026 elicitation has no id: the retry's state says which one it was.
            params.remove("elicitationId");
            requests.insert(
                format!("gateway.consent.{n}"),
                json!({"method": "elicitation/create", "params": params}),
            );
        }
        let ir = InputRequiredResult {
            input_requests: Some(requests),
            request_state: state(),
            ..Default::default()
        };
        return Asked::InputRequired(ir);
    }
    Asked::Told(told(&e, &links))
}

/// What a host that cannot be sent to a URL reads: the message and each link.
fn told(e: &ErrorObject, links: &[Map<String, Value>]) -> String {
    let urls: Vec<&str> = links
        .iter()
        .filter_map(|l| l.get("url")?.as_str())
        .collect();
    match urls.as_slice() {
        [] => e.message.clone(),
        [one] => format!(
            "{} Open {one} in your browser to continue, then call again.",
            e.message
        ),
        many => format!(
            "{} Open each of these in your browser, then call again: {}",
            e.message,
            many.join(" ")
        ),
    }
}

/// The URL elicitations `e` carries (`data.elicitations`).
fn elicitations(e: &ErrorObject) -> Vec<Map<String, Value>> {
    e.data
        .as_ref()
        .and_then(|d| d.get("elicitations"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_object)
                .filter(|o| o.get("mode").and_then(Value::as_str) == Some("url"))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `capabilities` declare URL-mode elicitation (`elicitation.url`).
fn declares_url(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .elicitation
        .as_ref()
        .is_some_and(|e| e.contains_key("url"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn consent() -> ErrorObject {
        crate::credentials::Consent::new(
            "desk",
            "el-1".into(),
            "http://gw/connect/start?t=x".into(),
        )
        .to_error()
    }

    #[test]
    fn the_error_carries_one_url_elicitation_with_its_id() {
        let e = consent();
        assert!(needs_consent(&e));
        let links = elicitations(&e);
        assert_eq!(links.len(), 1);
        assert_eq!(links[0]["elicitationId"], "el-1");
        assert_eq!(links[0]["url"], "http://gw/connect/start?t=x");
    }

    #[test]
    fn a_host_without_url_mode_is_told_the_link_and_to_call_again() {
        let text = told(&consent(), &elicitations(&consent()));
        assert!(text.contains("http://gw/connect/start?t=x"), "{text}");
        assert!(text.contains("call again"), "{text}");
        assert!(text.contains("`desk`"), "{text}");
    }

    #[test]
    fn url_mode_is_what_the_capabilities_declare() {
        let caps = |v: Value| -> ClientCapabilities { serde_json::from_value(v).expect("caps") };
        assert!(declares_url(&caps(json!({"elicitation": {"url": {}}}))));
        assert!(!declares_url(&caps(json!({"elicitation": {}}))));
        assert!(!declares_url(&caps(json!({"elicitation": {"form": {}}}))));
        assert!(!declares_url(&caps(json!({}))));
    }
}
