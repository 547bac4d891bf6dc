//! What an HTTP transport asks of whoever gets its tokens: the [`AuthProvider`] contract,
//! the [`Refused`] request it is told about, and why a token could not be had.

use async_trait::async_trait;

use super::discovery::DiscoveryError;
use super::request::RedirectError;
use super::token::TokenError;
use super::BearerChallenge;

/// Gets a token for an HTTP transport: asked for the current one before each request,
/// told when a request carrying one succeeds, and when the server refuses one.
///
/// Requests run concurrently, so a refusal may arrive for a token the provider has
/// already replaced: [`Refused::token`] says which token was refused, and a provider
/// should let the request go again with the new one rather than authorize twice.
#[async_trait]
pub trait AuthProvider: Send + Sync + 'static {
    /// The access token to send now, if any.
    fn access_token(&self) -> Option<String>;

    /// What to send with a `method` request to `url`: by default the access token as a
    /// Bearer token. A provider with DPoP-bound tokens sends them as `DPoP` with a proof.
    fn credentials(&self, method: &str, url: &str) -> Option<Credentials> {
        let _ = (method, url);
        self.access_token().map(Credentials::bearer)
    }

    /// A request (not a notification) carrying `token` got a success (`2xx`) answer.
    fn accepted(&self, token: &str) {
        let _ = token;
    }

    /// The server refused a request (`401`, or `403` with `insufficient_scope`): get a
    /// token it can be sent again with, or say why there is none.
    async fn unauthorized(&self, refused: Refused) -> Result<(), AuthError>;
}

/// The credentials of one request: its `Authorization` value and, for a DPoP-bound
/// token, the `DPoP` proof.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Credentials {
    /// The access token.
    pub token: String,
    /// The `Authorization` header's value (`Bearer …` or `DPoP …`).
    pub authorization: String,
    /// The `DPoP` header's value, if the token is DPoP-bound.
    pub proof: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("proof", &self.proof.is_some())
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// `token` as a Bearer token (RFC 6750).
    pub fn bearer(token: String) -> Self {
        Credentials {
            authorization: format!("Bearer {token}"),
            token,
            proof: None,
        }
    }

    /// `token` as a DPoP-bound token with its `proof` (RFC 9449 §7.1).
    pub fn dpop(token: String, proof: String) -> Self {
        Credentials {
            authorization: format!("DPoP {token}"),
            token,
            proof: Some(proof),
        }
    }
}

/// A request the server refused, as the transport tells its [`AuthProvider`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Refused {
    /// The MCP endpoint that refused.
    pub endpoint: String,
    /// Its `WWW-Authenticate: Bearer` challenge, if it sent one that parses.
    pub challenge: Option<BearerChallenge>,
    /// The access token the refused request carried, if any.
    pub token: Option<String>,
    /// The `DPoP-Nonce` the server sent with the refusal, if any.
    pub dpop_nonce: Option<String>,
}

impl Refused {
    /// The refusal of a request to `endpoint` that carried `token`.
    pub fn new(
        endpoint: impl Into<String>,
        challenge: Option<BearerChallenge>,
        token: Option<String>,
    ) -> Self {
        Refused {
            endpoint: endpoint.into(),
            challenge,
            token,
            dpop_nonce: None,
        }
    }

    /// The same, with the `DPoP-Nonce` the server sent.
    pub fn with_dpop_nonce(mut self, nonce: Option<String>) -> Self {
        self.dpop_nonce = nonce;
        self
    }

    /// Whether the server asks for its nonce in the proof (`use_dpop_nonce`) and sent one.
    pub fn wants_dpop_nonce(&self) -> bool {
        self.dpop_nonce.is_some()
            && self.challenge.as_ref().and_then(|c| c.error.as_deref()) == Some("use_dpop_nonce")
    }

    /// Whether this is a step-up: `403` with `error="insufficient_scope"`.
    pub fn is_step_up(&self) -> bool {
        self.challenge.as_ref().and_then(|c| c.error.as_deref()) == Some("insufficient_scope")
    }
}

/// Why no token could be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// Discovery failed.
    #[error("authorization discovery: {0}")]
    Discovery(#[from] DiscoveryError),
    /// The authorization server would not register, authorize or give a token.
    #[error("{0}")]
    Token(#[from] TokenError),
    /// The redirect back could not be used.
    #[error("{0}")]
    Redirect(#[from] RedirectError),
    /// The client has no way to be known to this authorization server.
    #[error("no client identity for {0}: no pre-registered client, no metadata document it takes, no registration endpoint")]
    NoClientIdentity(String),
    /// Asked again and again: the server keeps refusing the tokens it gives.
    #[error("gave up after {0} authorizations in a row")]
    TooManyAttempts(usize),
    /// The resource named an authorization server other than the one this client was
    /// configured for ([`super::OAuthOptions::authorization_server`]).
    #[error("the resource names authorization server {found}, not {expected}: not sending credentials there")]
    UnexpectedIssuer {
        /// The issuer configured.
        expected: String,
        /// The issuer discovery found.
        found: String,
    },
    /// The user (or the handler) did not complete the authorization.
    #[error("authorization not completed: {0}")]
    NotCompleted(String),
    /// No token until the user acts, as this JSON-RPC error tells the user's client (a
    /// URL-mode elicitation, `-32042`): the request fails with it as it is.
    #[error("{}", .0.message)]
    UserAction(Box<mcp_types::ErrorObject>),
}
