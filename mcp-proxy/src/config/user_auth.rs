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

use std::sync::Arc;

use crate::credentials::{PerUser, TokenExchangeCredentials};

use super::auth::secret;
use super::file::{self, UserAuthType};
use super::upstream_auth::{client, KeyFile};
use super::values::Choice;
use super::{join, Problem};

/// The [`PerUser`] of a server's `userAuth` (at `at`).
pub(super) fn user_auth(auth: file::UserAuth, at: &str) -> Result<PerUser, Problem> {
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
        resource,
        audience,
        scopes,
        max_users,
        idle_seconds,
    } = auth;
    let Some(Choice(UserAuthType::TokenExchange)) = kind else {
        return Err(problem("type", "required: \"tokenExchange\"".into()));
    };
    let issuer = issuer.ok_or_else(|| {
        problem(
            "issuer",
            "required: the authorization server that exchanges users' tokens".into(),
        )
    })?;
    let id = client_id.ok_or_else(|| {
        problem(
            "clientId",
            "required: the gateway's client at that server".into(),
        )
    })?;
    let secret = secret(client_secret, client_secret_env, at, "clientSecret")?;
    let key = private_key_file.map(|path| KeyFile {
        path,
        algorithm: signing_algorithm,
        key_id,
    });
    if secret.is_none() && key.is_none() {
        return Err(problem(
            "",
            "needs `clientSecret`, `clientSecretEnv` or `privateKeyFile`: the gateway authenticates its exchanges".into(),
        ));
    }
    let mut exchange = TokenExchangeCredentials::new(issuer, client(id, secret, key, at)?);
    if let Some(e) = token_endpoint {
        exchange = exchange.token_endpoint(e);
    }
    if let Some(r) = resource {
        exchange = exchange.resource(r);
    }
    if let Some(a) = audience {
        exchange = exchange.audience(a);
    }
    let scopes = scopes.unwrap_or_default();
    if !scopes.is_empty() {
        exchange = exchange.scope(scopes.join(" "));
    }
    let mut per_user = PerUser::new(Arc::new(exchange));
    if let Some(n) = max_users {
        per_user.max_principals = n.usize();
    }
    if let Some(s) = idle_seconds {
        per_user.idle_timeout = s.seconds();
    }
    Ok(per_user)
}
