//! The connect flows in progress, by the `state` of the authorization request each waits
//! on: sealed (the PKCE verifier is in it) and kept in the grant store's short-lived
//! records for ten minutes, so that the browser may come back to any replica; each taken
//! once.

use std::time::Duration;

use mcp_client::auth::AuthorizationRequest;
use serde::{Deserialize, Serialize};

use super::super::cipher::GrantKeys;
use super::super::grants::{GrantStoreError, GrantVault};
use super::ticket::Ticket;

/// How long a browser has to come back from an authorization server.
pub(crate) const FLOW_LIFE: Duration = Duration::from_secs(600);

/// What a flow is sealed for (the associated data).
const PLACE: &str = "connect-flow";

/// Where a flow is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Step {
    /// Sent to log in at the gateway's own issuer.
    Login,
    /// Identity checked; sent to the upstream's authorization server.
    Consent,
}

/// One connect flow, waiting for its browser to come back.
pub(crate) struct Flow {
    pub(crate) step: Step,
    pub(crate) ticket: Ticket,
    pub(crate) request: AuthorizationRequest,
    /// The cookie the browser that started it holds.
    pub(crate) browser: String,
}

/// A flow as it is kept.
#[derive(Serialize, Deserialize)]
struct Kept {
    step: Step,
    ticket: Ticket,
    issuer: String,
    redirect_uri: String,
    resource: String,
    state: String,
    verifier: String,
    browser: String,
}

impl Flow {
    pub(crate) fn new(
        step: Step,
        ticket: Ticket,
        request: AuthorizationRequest,
        browser: String,
    ) -> Self {
        Flow {
            step,
            ticket,
            request,
            browser,
        }
    }
}

/// Keeps `flow` until its browser comes back.
pub(crate) async fn put(vault: &GrantVault, flow: Flow) -> Result<(), GrantStoreError> {
    let r = &flow.request;
    let kept = Kept {
        step: flow.step,
        issuer: r.issuer.clone(),
        redirect_uri: r.redirect_uri.clone(),
        resource: r.resource.clone(),
        state: r.state().to_owned(),
        verifier: r.code_verifier().to_owned(),
        browser: flow.browser,
        ticket: flow.ticket,
    };
    let plain = serde_json::to_vec(&kept).map_err(|e| GrantStoreError(e.to_string()))?;
    let sealed = vault
        .keys()
        .seal(PLACE, &plain)
        .map_err(|e| GrantStoreError(e.to_string()))?;
    vault
        .store()
        .put_brief(&key(&kept.state), sealed, FLOW_LIFE)
        .await
}

/// The flow waiting on `state`, taken (a second return finds nothing).
pub(crate) async fn take(vault: &GrantVault, state: &str) -> Result<Option<Flow>, GrantStoreError> {
    let Some(sealed) = vault.store().take_brief(&key(state)).await? else {
        return Ok(None);
    };
    Ok(open(vault.keys(), &sealed).filter(|f| f.request.state() == state))
}

fn open(keys: &GrantKeys, sealed: &str) -> Option<Flow> {
    let plain = keys.open(PLACE, sealed).ok()?;
    let k: Kept = serde_json::from_slice(&plain).ok()?;
    let request =
        AuthorizationRequest::resume(k.issuer, k.redirect_uri, k.resource, k.state, k.verifier);
    Some(Flow::new(k.step, k.ticket, request, k.browser))
}

/// The record of the flow waiting on `state` (only characters a state is made of).
fn key(state: &str) -> String {
    let clean: String = state
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(128)
        .collect();
    format!("flow:{clean}")
}
