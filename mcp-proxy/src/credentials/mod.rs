//! Per-user upstream credentials: an upstream that acts as each signed-in user is called
//! with a token of that user, never with the gateway's own identity and never with the
//! host's token itself.
//!
//! [`UpstreamCredentials`] is the one trait: given who is calling and which upstream, a
//! token to send there, or why there is none. [`TokenExchangeCredentials`] is the ready
//! implementation that trades the host's own access token for one whose audience is the
//! upstream (RFC 8693); a Vault, a cloud secret manager or an embedder's own store stands
//! behind the same trait. Tokens are secrets: [`UpstreamToken`]'s `Debug` never shows one,
//! and no error here carries one.

mod cache;
mod cipher;
mod connect;
mod exchange;
mod grants;
mod mailbox;
mod provider;
mod user_oauth;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mcp_server::auth::Principal;

pub use cipher::{GrantKeyError, GrantKeys};
pub use connect::{ConnectDesk, ConnectLogin, ConsentClient, CONNECT_PATH};
pub use exchange::TokenExchangeCredentials;
pub use grants::{
    grant_place, FileGrants, GrantStore, GrantStoreError, GrantVault, MemoryGrants, StoreGrants,
};
pub use mailbox::ElicitationMailbox;
pub(crate) use provider::PrincipalAuth;
pub use user_oauth::UserOAuthCredentials;

/// Who a token is asked for and where it goes.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct CredentialRequest<'a> {
    /// The principal calling (from the gateway's own authorization).
    pub principal: &'a Principal,
    /// The upstream's configuration key.
    pub upstream: &'a str,
    /// The upstream's resource URI (its MCP endpoint), the audience the token must have.
    pub resource: &'a str,
}

impl<'a> CredentialRequest<'a> {
    /// A token for `principal` at `upstream`, whose resource is `resource`.
    pub fn new(principal: &'a Principal, upstream: &'a str, resource: &'a str) -> Self {
        CredentialRequest {
            principal,
            upstream,
            resource,
        }
    }
}

/// An access token for one principal at one upstream.
#[derive(Clone, PartialEq, Eq)]
pub struct UpstreamToken {
    secret: std::sync::Arc<str>,
    expires_at: Option<Instant>,
}

impl std::fmt::Debug for UpstreamToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamToken")
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

impl UpstreamToken {
    /// `token`, good until `expires_at` if it says.
    pub fn new(token: impl Into<std::sync::Arc<str>>, expires_at: Option<Instant>) -> Self {
        UpstreamToken {
            secret: token.into(),
            expires_at,
        }
    }

    /// The token's text, for the upstream's `Authorization` header and nowhere else.
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// When it expires, if known.
    pub fn expires_at(&self) -> Option<Instant> {
        self.expires_at
    }

    /// Whether it is still good at `now`, with `margin` to spare.
    pub fn good_at(&self, now: Instant, margin: std::time::Duration) -> bool {
        self.expires_at.is_none_or(|e| e > now + margin)
    }
}

/// Why a principal has no token for an upstream. The text is for the host's user: it
/// names the upstream and the reason, never a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialError {
    /// The request carries no signed-in user (no `gateway.auth`, or a stdio host).
    #[error("upstream `{upstream}` acts as each signed-in user, and this request has none")]
    NoPrincipal {
        /// The upstream's key.
        upstream: String,
    },
    /// The user signed in with a credential that cannot be exchanged (an API key).
    #[error("upstream `{upstream}` acts as each signed-in user through token exchange, and this user signed in without an access token to exchange")]
    NoSubjectToken {
        /// The upstream's key.
        upstream: String,
    },
    /// The user cannot give consent in a browser: they were not signed in by the
    /// gateway's issuer (an API key, or a local stdio user), so no login could show that
    /// whoever opens a consent link is them.
    #[error("upstream `{upstream}` acts as each user by the user's own consent, given in a browser by a user of the gateway's issuer; this user signed in otherwise (an API key, or a local user) and cannot give it")]
    CannotConsent {
        /// The upstream's key.
        upstream: String,
    },
    /// The authorization server refused (its OAuth error and description).
    #[error("the authorization server refused a token for upstream `{upstream}`: {reason}")]
    Refused {
        /// The upstream's key.
        upstream: String,
        /// What the server said.
        reason: String,
    },
    /// The authorization server could not be reached or answered nonsense.
    #[error("no token for upstream `{upstream}`: {reason}")]
    Unavailable {
        /// The upstream's key.
        upstream: String,
        /// Why.
        reason: String,
    },
    /// The user must consent first, at a page of the gateway's own (a URL-mode
    /// elicitation); the request is answered the way its host can be asked.
    #[error("{}", .0.message)]
    ConsentRequired(Box<Consent>),
}

impl CredentialError {
    /// What went wrong, without the upstream's name: for a message that names it already
    /// ("upstream `x` failed: …", as a host is told).
    pub(crate) fn reason(&self) -> String {
        match self {
            CredentialError::NoPrincipal { .. } => {
                "it acts as each signed-in user, and this request has none".into()
            }
            CredentialError::NoSubjectToken { .. } => "it acts as each signed-in user through token exchange, and this user signed in without an access token to exchange".into(),
            CredentialError::CannotConsent { .. } => "it acts as each user by the user's own consent, given in a browser by a user of the gateway's issuer; this user signed in otherwise (an API key, or a local user) and cannot give it".into(),
            CredentialError::Refused { reason, .. } => {
                format!("the authorization server refused a token: {reason}")
            }
            CredentialError::Unavailable { reason, .. } => format!("no token: {reason}"),
            CredentialError::ConsentRequired(c) => c.message.clone(),
        }
    }
}

/// A consent the user must give before an upstream can be reached as them: where to go,
/// and what to tell them. The URL is the gateway's own connect page (never the upstream's
/// authorization endpoint), and carries nothing sensitive.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Consent {
    /// The upstream's key.
    pub upstream: String,
    /// The elicitation's id (2025-11-25 `elicitationId`).
    pub elicitation_id: String,
    /// The connect page.
    pub url: String,
    /// What the user is told.
    pub message: String,
}

impl Consent {
    /// A consent to `upstream` at `url`, under `elicitation_id`.
    pub fn new(upstream: &str, elicitation_id: String, url: String) -> Self {
        Consent {
            message: format!(
                "Upstream `{upstream}` acts as you: open this link, sign in, and allow the gateway to use it on your behalf; then try again."
            ),
            upstream: upstream.to_owned(),
            elicitation_id,
            url,
        }
    }

    /// The `-32042` (`URLElicitationRequiredError`) error that carries it.
    pub fn to_error(&self) -> mcp_types::ErrorObject {
        let elicitation = serde_json::json!({
            "mode": "url",
            "elicitationId": self.elicitation_id,
            "url": self.url,
            "message": self.message,
        });
        mcp_types::ErrorObject::new(
            mcp_types::codes::URL_ELICITATION_REQUIRED,
            self.message.clone(),
        )
        .with_data(serde_json::json!({"elicitations": [elicitation]}))
    }
}

/// Where the tokens a principal's requests to an upstream carry come from.
///
/// Asked before each request goes on a principal's connection that has no good token,
/// so it should answer from its own cache while the token it gave is still good; told
/// when the upstream refuses a token it gave, so that it gets another rather than give
/// the same one again.
#[async_trait]
pub trait UpstreamCredentials: Send + Sync + 'static {
    /// A token for `request`'s principal at its upstream.
    async fn token(
        &self,
        request: &CredentialRequest<'_>,
    ) -> Result<UpstreamToken, CredentialError>;

    /// The upstream refused `token` (`401`): it is not to be given again.
    async fn refused(&self, request: &CredentialRequest<'_>, token: &UpstreamToken) {
        let _ = (request, token);
    }

    /// The consent `elicitation_id` (of a [`CredentialError::ConsentRequired`] it gave)
    /// was sent to `host` as a URL-mode elicitation: tell it when that completes
    /// (`notifications/elicitation/complete`). By default nobody is told.
    fn elicitation_sent(&self, elicitation_id: &str, host: mcp_server::Subscriber) {
        let _ = (elicitation_id, host);
    }

    /// Another replica completed elicitation `elicitation_id` (its host may be one this
    /// replica was told of by [`UpstreamCredentials::elicitation_sent`]). By default
    /// nothing is done.
    async fn elicitation_completed(&self, elicitation_id: &str) {
        let _ = elicitation_id;
    }
}

/// How an upstream acts as each user: where each principal's tokens come from, and the
/// bounds on the connections opened for principals.
///
/// With it, every request a host makes of the upstream (a call, a read, a prompt, a
/// completion, a subscription, a task) goes on a connection of the host's principal alone,
/// carrying that principal's token; the upstream's shared connection, with the gateway's
/// own credentials, only lists what it offers and hears its notices. A request without a
/// principal is refused.
#[derive(Clone)]
#[non_exhaustive]
pub struct PerUser {
    /// Where each principal's tokens come from.
    pub credentials: Arc<dyn UpstreamCredentials>,
    /// Most principals with a connection open at once (default 256): at the bound the
    /// one idle longest is closed for a new one; when none is idle, the new one is
    /// refused.
    pub max_principals: usize,
    /// How long a principal's connection is kept without requests (default 10 minutes).
    pub idle_timeout: Duration,
}

impl std::fmt::Debug for PerUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerUser")
            .field("max_principals", &self.max_principals)
            .field("idle_timeout", &self.idle_timeout)
            .finish_non_exhaustive()
    }
}

impl PerUser {
    /// Each principal's tokens from `credentials`, with the default bounds.
    pub fn new(credentials: Arc<dyn UpstreamCredentials>) -> Self {
        PerUser {
            credentials,
            max_principals: 256,
            idle_timeout: Duration::from_secs(600),
        }
    }
}

mcp_types::setters! {
    PerUser {
        /// Sets [`PerUser::max_principals`].
        max_principals: usize;
        /// Sets [`PerUser::idle_timeout`].
        idle_timeout: Duration;
    }
}
