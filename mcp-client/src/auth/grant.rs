//! The grants a token is had by (RFC 6749 §4, §6): the authorization code with PKCE, the
//! client credentials grant, and the refresh token. Each is one token request; the
//! authorization code one first has the user authorize through the handler.

use super::discovery::AuthorizationServerMetadata;
use super::dpop::DpopKey;
use super::oauth::AuthorizationHandler;
use super::provider::AuthError;
use super::request::AuthorizationRequest;
use super::token::{request_token_with, ClientIdentity, Token, TokenError};

/// One run of the authorization code flow.
pub(crate) struct Code<'a> {
    pub(crate) server: &'a AuthorizationServerMetadata,
    pub(crate) client: &'a ClientIdentity,
    pub(crate) redirect_uri: &'a str,
    /// The resource (RFC 8707) the token is for.
    pub(crate) resource: &'a str,
    /// The key the token is to be bound to (DPoP), if any.
    pub(crate) dpop: Option<&'a DpopKey>,
}

impl Code<'_> {
    /// Has the user authorize `scope` through `handler`, checks what comes back, and
    /// trades the code for a token.
    pub(crate) async fn run(
        &self,
        handler: &dyn AuthorizationHandler,
        scope: Option<&str>,
    ) -> Result<Token, AuthError> {
        let request = AuthorizationRequest::new(
            self.server,
            &self.client.client_id,
            self.redirect_uri,
            self.resource,
            scope,
        )
        .map_err(|e| AuthError::NotCompleted(e.to_string()))?;
        let back = handler
            .authorize(&request.url, &request.redirect_uri)
            .await?;
        let iss_required = self.server.authorization_response_iss_parameter_supported == Some(true);
        let code = request.code_from(&back, iss_required)?;
        let params = [
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", self.redirect_uri),
            ("code_verifier", request.code_verifier()),
            ("resource", self.resource),
        ];
        Ok(request_token_with(self.server, self.client, &params, self.dpop).await?)
    }
}

/// The client credentials grant for `resource`, asking `scope`.
pub(crate) async fn client_credentials(
    server: &AuthorizationServerMetadata,
    client: &ClientIdentity,
    resource: &str,
    scope: Option<&str>,
    dpop: Option<&DpopKey>,
) -> Result<Token, TokenError> {
    let mut params = vec![("grant_type", "client_credentials"), ("resource", resource)];
    if let Some(scope) = scope {
        params.push(("scope", scope));
    }
    request_token_with(server, client, &params, dpop).await
}

/// `grant_type` of the JWT bearer grant (RFC 7523 §2.1).
pub const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// The JWT bearer grant (RFC 7523 §2.1; workload identity federation, SEP-1933): a JWT
/// the workload holds from its own identity provider is traded for a token, for
/// `resource`, asking `scope`.
pub(crate) async fn jwt_bearer(
    server: &AuthorizationServerMetadata,
    client: &ClientIdentity,
    assertion: &str,
    resource: &str,
    scope: Option<&str>,
    dpop: Option<&DpopKey>,
) -> Result<Token, TokenError> {
    let mut params = vec![
        ("grant_type", JWT_BEARER_GRANT),
        ("assertion", assertion),
        ("resource", resource),
    ];
    if let Some(scope) = scope {
        params.push(("scope", scope));
    }
    request_token_with(server, client, &params, dpop).await
}

/// A new access token for the refresh token `refresh` (RFC 6749 §6), for `resource`.
pub(crate) async fn refresh(
    server: &AuthorizationServerMetadata,
    client: &ClientIdentity,
    refresh: &str,
    resource: &str,
    dpop: Option<&DpopKey>,
) -> Result<Token, TokenError> {
    let params = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh),
        ("resource", resource),
    ];
    request_token_with(server, client, &params, dpop).await
}
