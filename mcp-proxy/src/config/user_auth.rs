//! A `url` server's `userAuth`: the upstream acts as each signed-in user, and each
//! user's tokens for it are had as this says.
//!
//! ```json
//! "userAuth": {"type": "tokenExchange", "issuer": "https://auth.example.com",
//!              "clientId": "gateway", "clientSecretEnv": "GW_EXCHANGE_SECRET",
//!              "scopes": ["tickets"], "maxUsers": 256, "idleSeconds": 600}
//! ```
//!
//! `tokenExchange` trades the user's own access token (the one `gateway.auth.jwt`
//! accepted) at `issuer`'s token endpoint for a token whose audience is the upstream
//! (RFC 8693, RFC 8707 `resource`: the server's `url` unless `resource` says otherwise);
//! the gateway authenticates as `clientId` with a secret or `privateKeyFile`.
//!
//! `oauth` asks each user's consent once, through a link to the gateway's connect page
//! (see `connect.rs` for `gateway.auth.login` and `gateway.grants`), at the upstream's
//! authorization server (`issuer`, else the one its metadata names), as client
//! `clientId`; the grant is kept sealed and refreshed without the user:
//!
//! ```json
//! "userAuth": {"type": "oauth", "clientId": "gateway", "clientSecretEnv": "GW_DESK_SECRET",
//!              "scopes": ["tickets"]}
//! ```

use std::sync::Arc;

use crate::credentials::{
    ConnectDesk, ConsentClient, PerUser, TokenExchangeCredentials, UpstreamCredentials,
    UserOAuthCredentials,
};

use super::auth::secret;
use super::file::{self, UserAuthType};
use super::upstream_auth::{client, KeyFile};
use super::values::Choice;
use super::{join, Problem};

/// The [`PerUser`] of a server's `userAuth` (at `at`), the server being `key` at `url`;
/// `desk`: the connect pages, for the `oauth` type.
pub(super) fn user_auth(
    auth: file::UserAuth,
    at: &str,
    key: &str,
    url: &str,
    desk: Option<&Arc<ConnectDesk>>,
) -> Result<PerUser, Problem> {
    let problem = |field: &str, problem: String| Problem::new(join(at, field), problem);
    let file::UserAuth {
        kind,
        issuer,
        token_endpoint,
        client_id,
        client_secret,
        client_secret_env,
        private_key_file,
        signing_algorithm,
        key_id,
        client_metadata_url,
        resource,
        audience,
        scopes,
        max_users,
        idle_seconds,
    } = auth;
    let Some(Choice(kind)) = kind else {
        return Err(problem(
            "type",
            "required: \"tokenExchange\" or \"oauth\"".into(),
        ));
    };
    let client_of = |id: Option<String>, secret: Option<String>, key: Option<KeyFile>| {
        let id = id.ok_or_else(|| {
            problem(
                "clientId",
                "required: the gateway's client at that server".into(),
            )
        })?;
        client(id, secret, key, at)
    };
    let secret = secret(client_secret, client_secret_env, at, "clientSecret")?;
    let key_file = private_key_file.map(|path| KeyFile {
        path,
        algorithm: signing_algorithm,
        key_id,
    });
    let scopes = scopes.unwrap_or_default();
    let scope = (!scopes.is_empty()).then(|| scopes.join(" "));
    let credentials: Arc<dyn UpstreamCredentials> = match kind {
        UserAuthType::OAuth => {
            let desk =
                desk.ok_or_else(|| problem("type", "\"oauth\" needs `gateway.auth.login`".into()))?;
            for (given, name) in [
                (token_endpoint.is_some(), "tokenEndpoint"),
                (audience.is_some(), "audience"),
                (resource.is_some(), "resource"),
            ] {
                if given {
                    return Err(problem(name, "is for \"tokenExchange\" only".into()));
                }
            }
            let client = match (client_id, client_metadata_url) {
                (Some(id), None) => {
                    ConsentClient::Registered(client_of(Some(id), secret, key_file)?)
                }
                (None, Some(url)) => ConsentClient::MetadataDocument(url),
                (None, None) => ConsentClient::Dynamic,
                (Some(_), Some(_)) => {
                    let why = "give `clientId` or `clientMetadataUrl`, not both";
                    return Err(problem("clientMetadataUrl", why.into()));
                }
            };
            Arc::new(UserOAuthCredentials::new(
                desk.clone(),
                key,
                url,
                client,
                scope,
                issuer,
            ))
        }
        UserAuthType::TokenExchange => {
            if client_metadata_url.is_some() {
                return Err(problem("clientMetadataUrl", "is for \"oauth\" only".into()));
            }
            let client = client_of(client_id, secret, key_file)?;
            exchange(
                issuer,
                token_endpoint,
                client,
                resource,
                audience,
                scope,
                at,
            )?
        }
    };
    let mut per_user = PerUser::new(credentials);
    if let Some(n) = max_users {
        per_user.max_principals = n.usize();
    }
    if let Some(s) = idle_seconds {
        per_user.idle_timeout = s.seconds();
    }
    Ok(per_user)
}

/// The `tokenExchange` credentials.
fn exchange(
    issuer: Option<String>,
    token_endpoint: Option<String>,
    client: mcp_client::auth::ClientIdentity,
    resource: Option<String>,
    audience: Option<String>,
    scope: Option<String>,
    at: &str,
) -> Result<Arc<dyn UpstreamCredentials>, Problem> {
    let problem = |field: &str, problem: String| Problem::new(join(at, field), problem);
    let issuer = issuer.ok_or_else(|| {
        problem(
            "issuer",
            "required: the authorization server that exchanges users' tokens".into(),
        )
    })?;
    if client.auth_method == "none" {
        return Err(problem(
            "",
            "needs `clientSecret`, `clientSecretEnv` or `privateKeyFile`: the gateway authenticates its exchanges".into(),
        ));
    }
    let mut exchange = TokenExchangeCredentials::new(issuer, client);
    if let Some(e) = token_endpoint {
        exchange = exchange.token_endpoint(e);
    }
    if let Some(r) = resource {
        exchange = exchange.resource(r);
    }
    if let Some(a) = audience {
        exchange = exchange.audience(a);
    }
    if let Some(s) = scope {
        exchange = exchange.scope(s);
    }
    Ok(Arc::new(exchange))
}
