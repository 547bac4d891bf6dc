//! Token exchange (RFC 8693) for a resource: a gateway that was given a user's access
//! token trades it at an authorization server for a token of the same user whose audience
//! is one upstream (RFC 8707 `resource`), so that the user's own token never leaves the
//! gateway and the upstream sees the user, not the gateway.

use serde_json::Value;

use super::discovery::AuthorizationServerMetadata;
use super::token::{post_token_request, ClientIdentity, Token, TokenError};

/// `grant_type` of a token exchange (RFC 8693 §2.1).
pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// The token type of an OAuth access token (RFC 8693 §3): what is given and asked for.
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

/// Exchanges subject tokens at one authorization server, as one client, for tokens of
/// one resource.
#[derive(Clone)]
pub struct TokenExchange {
    server: AuthorizationServerMetadata,
    client: ClientIdentity,
    resource: String,
    audience: Option<String>,
    scope: Option<String>,
}

impl std::fmt::Debug for TokenExchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenExchange")
            .field("issuer", &self.server.issuer)
            .field("token_endpoint", &self.server.token_endpoint)
            .field("client", &self.client)
            .field("resource", &self.resource)
            .field("audience", &self.audience)
            .field("scope", &self.scope)
            .finish()
    }
}

impl TokenExchange {
    /// Exchanges at `server`'s token endpoint, authenticating as `client`, for tokens
    /// whose audience is `resource`.
    pub fn new(
        server: AuthorizationServerMetadata,
        client: ClientIdentity,
        resource: impl Into<String>,
    ) -> Self {
        TokenExchange {
            server,
            client,
            resource: resource.into(),
            audience: None,
            scope: None,
        }
    }

    /// Naming `audience` (RFC 8693 `audience`, a logical name the server knows) besides
    /// the resource.
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audience = Some(audience.into());
        self
    }

    /// Asking for `scope` (space-separated).
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// The resource the tokens are for.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The authorization server exchanged at.
    pub fn issuer(&self) -> &str {
        &self.server.issuer
    }

    /// Trades `subject_token` (an access token) for an access token of the resource.
    pub async fn exchange(&self, subject_token: &str) -> Result<Token, TokenError> {
        let endpoint = self
            .server
            .token_endpoint
            .as_deref()
            .ok_or(TokenError::NoEndpoint("token endpoint"))?;
        let mut params = vec![
            ("grant_type", TOKEN_EXCHANGE_GRANT),
            ("subject_token", subject_token),
            ("subject_token_type", ACCESS_TOKEN_TYPE),
            ("requested_token_type", ACCESS_TOKEN_TYPE),
            ("resource", self.resource.as_str()),
        ];
        if let Some(a) = &self.audience {
            params.push(("audience", a));
        }
        if let Some(s) = &self.scope {
            params.push(("scope", s));
        }
        let body =
            post_token_request(endpoint, &self.server.issuer, &self.client, &params, None).await?;
        let issued = body.get("issued_token_type").and_then(Value::as_str);
        if issued.is_some_and(|t| t != ACCESS_TOKEN_TYPE) {
            return Err(TokenError::Transport(format!(
                "the token exchange issued a {issued:?}, not an access token"
            )));
        }
        Token::from_response(body)
    }
}
