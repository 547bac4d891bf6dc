//! The token endpoint (RFC 6749 §4.1.3, §5) and dynamic client registration (RFC 7591):
//! the client's identity, how it authenticates, and the tokens it gets.

use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Value};

use super::assertion::{ClientKey, JWT_BEARER_ASSERTION};
use super::discovery::AuthorizationServerMetadata;
use super::dpop::{DpopKey, NonceOf, DPOP, DPOP_NONCE};
use super::request::{form, form_encode};
use crate::fetch::post_json;

const MAX_DOCUMENT: usize = 256 * 1024;
const TIMEOUT: Duration = Duration::from_secs(15);

/// Who the client is to an authorization server.
#[derive(Clone)]
#[non_exhaustive]
pub struct ClientIdentity {
    /// `client_id` (pre-registered, registered, or a Client ID Metadata Document URL).
    pub client_id: String,
    /// Its secret, if it has one.
    pub client_secret: Option<String>,
    /// Its signing key, for `private_key_jwt`.
    pub key: Option<ClientKey>,
    /// How it authenticates at the token endpoint: `none`, `client_secret_basic`,
    /// `client_secret_post` or `private_key_jwt`.
    pub auth_method: String,
}

impl std::fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientIdentity")
            .field("client_id", &self.client_id)
            .field("auth_method", &self.auth_method)
            .finish_non_exhaustive()
    }
}

impl ClientIdentity {
    /// A public client (no secret; `none`).
    pub fn public(client_id: impl Into<String>) -> Self {
        ClientIdentity {
            client_id: client_id.into(),
            client_secret: None,
            key: None,
            auth_method: "none".into(),
        }
    }

    /// A client that signs its own assertions (`private_key_jwt`).
    pub fn private_key_jwt(client_id: impl Into<String>, key: ClientKey) -> Self {
        ClientIdentity {
            client_id: client_id.into(),
            client_secret: None,
            key: Some(key),
            auth_method: "private_key_jwt".into(),
        }
    }

    /// A confidential client with a secret, authenticating with `client_secret_basic`;
    /// see [`ClientIdentity::confidential`] to follow what a server lists.
    pub fn with_secret(client_id: impl Into<String>, secret: impl Into<String>) -> Self {
        ClientIdentity {
            client_id: client_id.into(),
            client_secret: Some(secret.into()),
            key: None,
            auth_method: "client_secret_basic".into(),
        }
    }

    /// A confidential client, authenticating the way `server` supports (Basic unless it
    /// lists only `client_secret_post`, RFC 8414 §2's default being Basic).
    pub fn confidential(
        client_id: impl Into<String>,
        secret: impl Into<String>,
        server: &AuthorizationServerMetadata,
    ) -> Self {
        let methods = server.token_endpoint_auth_methods_supported.as_deref();
        let post_only = methods.is_some_and(|m| {
            m.iter().any(|x| x == "client_secret_post")
                && !m.iter().any(|x| x == "client_secret_basic")
        });
        ClientIdentity {
            client_id: client_id.into(),
            client_secret: Some(secret.into()),
            key: None,
            auth_method: if post_only {
                "client_secret_post"
            } else {
                "client_secret_basic"
            }
            .into(),
        }
    }
}

/// Why the authorization server would not help.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The server has no endpoint for it.
    #[error("the authorization server has no {0}")]
    NoEndpoint(&'static str),
    /// It could not be reached or answered nonsense.
    #[error("{0}")]
    Transport(String),
    /// It said no (an OAuth error, RFC 6749 §5.2).
    #[error("{endpoint} refused: {error}")]
    Refused {
        /// Which endpoint.
        endpoint: &'static str,
        /// The OAuth error code (`error`: `invalid_grant`, `use_dpop_nonce`, …).
        code: String,
        /// `error` and `error_description`.
        error: String,
    },
}

impl TokenError {
    /// Whether the server refused with the OAuth error `code`.
    pub fn is_refusal(&self, code: &str) -> bool {
        matches!(self, TokenError::Refused { code: c, .. } if c == code)
    }
}

/// An access token, and what came with it.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Token {
    /// The access token.
    pub access_token: String,
    /// The refresh token, if any.
    pub refresh_token: Option<String>,
    /// When it expires, if said.
    pub expires_at: Option<Instant>,
    /// The scopes granted, if said.
    pub scope: Option<String>,
    /// Bound to this client's DPoP key (`token_type` `DPoP`): sent only with a proof.
    pub dpop: bool,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token")
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

/// The refusal `endpoint` answered with `v` (RFC 6749 §5.2).
fn refusal(endpoint: &'static str, v: &Value) -> TokenError {
    let code = v
        .get("error")
        .and_then(Value::as_str)
        .unwrap_or("unknown error");
    let error = match v.get("error_description").and_then(Value::as_str) {
        Some(d) => format!("{code}: {d}"),
        None => code.to_owned(),
    };
    TokenError::Refused {
        endpoint,
        code: code.to_owned(),
        error,
    }
}

/// POSTs `body` to the authorization server's `endpoint` (named for errors) with
/// `headers`: its JSON answer, or the OAuth error it refused with (and the headers, for a
/// caller that reads a `DPoP-Nonce`).
async fn post_to(
    (name, endpoint): (&'static str, &str),
    content_type: &str,
    body: String,
    headers: &[(&str, &str)],
) -> Result<Value, (TokenError, http::HeaderMap)> {
    let posted = post_json(endpoint, content_type, body, headers, MAX_DOCUMENT, TIMEOUT)
        .await
        .map_err(|e| (TokenError::Transport(e.to_string()), http::HeaderMap::new()))?;
    if !posted.status.is_success() {
        return Err((refusal(name, &posted.body), posted.headers));
    }
    Ok(posted.body)
}

/// A token request of `grant` (its own parameters in `params`) for `client`.
pub async fn request_token(
    server: &AuthorizationServerMetadata,
    client: &ClientIdentity,
    params: &[(&str, &str)],
) -> Result<Token, TokenError> {
    request_token_with(server, client, params, None).await
}

/// [`request_token`], asking for a token bound to `dpop` when given (RFC 9449 §5).
pub(crate) async fn request_token_with(
    server: &AuthorizationServerMetadata,
    client: &ClientIdentity,
    params: &[(&str, &str)],
    dpop: Option<&DpopKey>,
) -> Result<Token, TokenError> {
    let endpoint = server
        .token_endpoint
        .as_deref()
        .ok_or(TokenError::NoEndpoint("token endpoint"))?;
    let body = post_token_request(endpoint, &server.issuer, client, params, dpop).await?;
    Token::from_response_with(body, dpop.is_some(), &server.issuer)
}

impl Token {
    /// The token a successful token response (RFC 6749 §5.1) gives: a Bearer token.
    pub(crate) fn from_response(body: Value) -> Result<Token, TokenError> {
        Token::from_response_with(body, false, "")
    }

    /// The token of `body`, which may be DPoP-bound when one was asked for (`dpop`) of
    /// the server `issuer`.
    fn from_response_with(body: Value, dpop: bool, issuer: &str) -> Result<Token, TokenError> {
        let t: TokenResponse = serde_json::from_value(body)
            .map_err(|e| TokenError::Transport(format!("token response: {e}")))?;
        let kind = t.token_type.as_deref().unwrap_or("Bearer");
        let bound = dpop && kind.eq_ignore_ascii_case("dpop");
        if dpop && !bound {
            // RFC 9449 §5: a server may issue a Bearer token to a DPoP request.
            tracing::warn!("asked {issuer} for a DPoP-bound token, got a {kind} one");
        }
        if !bound && !kind.eq_ignore_ascii_case("bearer") {
            return Err(TokenError::Transport(format!(
                "token type {kind:?} is not Bearer"
            )));
        }
        Ok(Token {
            access_token: t.access_token,
            refresh_token: t.refresh_token,
            expires_at: t
                .expires_in
                .map(|s| Instant::now() + Duration::from_secs(s)),
            scope: t.scope,
            dpop: bound,
        })
    }
}

/// POSTs a token request (`params` and `client`'s authentication) to `endpoint` of the
/// server `issuer`: its JSON answer, or the OAuth error it refused with.
pub(crate) async fn post_token_request(
    endpoint: &str,
    issuer: &str,
    client: &ClientIdentity,
    params: &[(&str, &str)],
    dpop: Option<&DpopKey>,
) -> Result<Value, TokenError> {
    // A server that wants its nonce in the proof says so once (RFC 9449 §8).
    let mut nonce_given = false;
    loop {
        // Built again for a retry: an assertion is good for one request (its `jti`).
        let auth = client_authentication(client, issuer)?;
        let mut pairs: Vec<(&str, &str)> = params.to_vec();
        pairs.extend(auth.members.iter().map(|(k, v)| (*k, v.as_str())));
        let proof = dpop
            .map(|d| d.proof("POST", endpoint, None, NonceOf::AuthorizationServer))
            .transpose()?;
        let mut headers = Vec::new();
        if let Some(a) = &auth.header {
            headers.push(("authorization", a.as_str()));
        }
        if let Some(p) = &proof {
            headers.push((DPOP, p.as_str()));
        }
        let form_type = "application/x-www-form-urlencoded";
        let posted = post_to(
            ("token endpoint", endpoint),
            form_type,
            form(&pairs),
            &headers,
        );
        match posted.await {
            Ok(v) => return Ok(v),
            Err((e, h)) => {
                let wants_nonce = e.is_refusal("use_dpop_nonce");
                let nonce = h.get(DPOP_NONCE).and_then(|v| v.to_str().ok());
                match (dpop, nonce, wants_nonce && !nonce_given) {
                    (Some(d), Some(n), true) => {
                        d.keep_nonce(NonceOf::AuthorizationServer, n);
                        nonce_given = true;
                    }
                    _ => return Err(e),
                }
            }
        }
    }
}

/// What a client adds to a token request to say who it is.
struct ClientAuthentication {
    /// Form members (`client_id`, a secret, an assertion).
    members: Vec<(&'static str, String)>,
    /// The `Authorization` header (`client_secret_basic`).
    header: Option<String>,
}

/// How `client` authenticates to the token endpoint of `issuer`.
fn client_authentication(
    client: &ClientIdentity,
    issuer: &str,
) -> Result<ClientAuthentication, TokenError> {
    let id = || ("client_id", client.client_id.clone());
    let (members, header) = match (client.auth_method.as_str(), &client.client_secret) {
        ("private_key_jwt", _) => {
            let key = client.key.as_ref().ok_or_else(|| {
                TokenError::Transport("private_key_jwt without a signing key".into())
            })?;
            // RFC 7523 §3: the audience is the authorization server (its issuer).
            let assertion = key.assertion(&client.client_id, issuer)?;
            let members = vec![
                id(),
                ("client_assertion_type", JWT_BEARER_ASSERTION.to_owned()),
                ("client_assertion", assertion),
            ];
            (members, None)
        }
        ("client_secret_basic", Some(secret)) => {
            // RFC 6749 §2.3.1: each form-encoded, then joined and base64'd.
            let raw = format!("{}:{}", form_encode(&client.client_id), form_encode(secret));
            (Vec::new(), Some(format!("Basic {}", STANDARD.encode(raw))))
        }
        ("client_secret_post", Some(secret)) => {
            (vec![id(), ("client_secret", secret.clone())], None)
        }
        _ => (vec![id()], None),
    };
    Ok(ClientAuthentication { members, header })
}

/// Registers a public client for `redirect_uri` (RFC 7591) and says who it now is.
pub async fn register(
    server: &AuthorizationServerMetadata,
    client_name: &str,
    redirect_uri: &str,
) -> Result<ClientIdentity, TokenError> {
    let endpoint = server
        .registration_endpoint
        .as_deref()
        .ok_or(TokenError::NoEndpoint("registration endpoint"))?;
    // SEP-837: `native` for an app that takes its redirect on this machine, else `web`.
    let local = ["http://localhost", "http://127.0.0.1", "http://[::1]"]
        .iter()
        .any(|p| redirect_uri.starts_with(p));
    let metadata = json!({
        "client_name": client_name,
        "application_type": if local { "native" } else { "web" },
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let body = post_to(
        ("registration endpoint", endpoint),
        "application/json",
        metadata.to_string(),
        &[],
    )
    .await
    .map_err(|(e, _)| e)?;
    let id = body
        .get("client_id")
        .and_then(Value::as_str)
        .ok_or_else(|| TokenError::Transport("registration gave no client_id".into()))?;
    let secret = body.get("client_secret").and_then(Value::as_str);
    let method = body
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str);
    Ok(match (secret, method) {
        (Some(s), Some(m)) if m != "none" => ClientIdentity {
            client_id: id.to_owned(),
            client_secret: Some(s.to_owned()),
            key: None,
            auth_method: m.to_owned(),
        },
        (Some(s), None) => ClientIdentity::confidential(id, s, server),
        _ => ClientIdentity::public(id),
    })
}
