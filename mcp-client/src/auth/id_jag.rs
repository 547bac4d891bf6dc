//! Enterprise-managed authorization (SEP-990): the user signed in to the enterprise's
//! identity provider once; for each MCP server the client trades that sign-in (an ID
//! token) at the identity provider for an Identity Assertion JWT Authorization Grant
//! (ID-JAG, by RFC 8693 token exchange) naming the server's authorization server and the
//! resource, and presents it there in a JWT bearer grant ([`super::OAuth::jwt_bearer`]).
//! The user is not asked again per server; the enterprise decides who may use what.

use async_trait::async_trait;
use serde_json::Value;

use super::grant_assertion::GrantAssertion;
use super::provider::AuthError;
use super::token::{post_token_request, ClientIdentity};

const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// An [`GrantAssertion`] that is an ID-JAG from the enterprise identity provider, for the
/// user whose ID token it holds.
#[derive(Clone)]
pub struct IdJagExchange {
    issuer: String,
    token_endpoint: String,
    client: ClientIdentity,
    id_token: String,
}

impl std::fmt::Debug for IdJagExchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdJagExchange")
            .field("issuer", &self.issuer)
            .field("token_endpoint", &self.token_endpoint)
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl IdJagExchange {
    /// Exchanges `id_token` at the identity provider `issuer`'s `token_endpoint`, as its
    /// client `client`.
    pub fn new(
        issuer: impl Into<String>,
        token_endpoint: impl Into<String>,
        client: ClientIdentity,
        id_token: impl Into<String>,
    ) -> Self {
        IdJagExchange {
            issuer: issuer.into(),
            token_endpoint: token_endpoint.into(),
            client,
            id_token: id_token.into(),
        }
    }
}

#[async_trait]
impl GrantAssertion for IdJagExchange {
    async fn assertion(&self, audience: &str, resource: &str) -> Result<String, AuthError> {
        let params = [
            ("grant_type", TOKEN_EXCHANGE),
            ("requested_token_type", ID_JAG),
            ("audience", audience),
            ("resource", resource),
            ("subject_token", self.id_token.as_str()),
            ("subject_token_type", ID_TOKEN),
        ];
        let body = post_token_request(
            &self.token_endpoint,
            &self.issuer,
            &self.client,
            &params,
            None,
        )
        .await?;
        let issued = body.get("issued_token_type").and_then(Value::as_str);
        if issued.is_some_and(|t| t != ID_JAG) {
            return Err(AuthError::NotCompleted(format!(
                "the identity provider issued a {issued:?}, not an ID-JAG"
            )));
        }
        body.get("access_token")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| AuthError::NotCompleted("the token exchange gave no token".into()))
    }
}
