//! A `url` server's `auth`: how the gateway gets its own tokens for an upstream that
//! requires OAuth (the host's credentials are never sent upstream).
//!
//! ```json
//! "auth": {"type": "oauth", "clientId": "…", "scopes": ["files:read"],
//!          "redirectUri": "http://127.0.0.1:8765/callback", "tokenStore": "/var/lib/gw/tokens"}
//! "auth": {"type": "clientCredentials", "issuer": "https://auth.example.com", "clientId": "gw",
//!          "clientSecretEnv": "GW_SECRET"}
//! "auth": {"type": "clientCredentials", "issuer": "https://auth.example.com", "clientId": "gw",
//!          "privateKeyFile": "/etc/gw/key.pem", "signingAlgorithm": "ES256"}
//! "auth": {"type": "workloadIdentity", "issuer": "https://auth.example.com", "clientId": "gw",
//!          "tokenFile": "/var/run/secrets/token"}
//! ```
//!
//! `oauth` is the authorization code flow: at its first refusal the gateway prints the
//! authorization URL on standard error and takes the browser's return on the loopback
//! `redirectUri`; without `clientId` it registers itself (or uses `clientMetadataUrl`).
//! With `tokenStore` (a directory) tokens outlive a restart.

use std::sync::Arc;

use serde_json::Value;

use mcp_client::auth::{
    AssertionFile, AuthProvider, ClientIdentity, ClientKey, FileStore, LoopbackBrowser, OAuth,
    OAuthOptions, TokenStore,
};

use super::auth::secret;
use super::{keys, known_keys, Fields, Problem};

/// The redirect URI of the `oauth` type when none is given.
pub const DEFAULT_REDIRECT_URI: &str = "http://127.0.0.1:8765/callback";

/// The provider for `mcpServers.<key>.auth`, the upstream being at `url`.
pub(super) fn upstream_auth(
    v: &Value,
    at: &str,
    url: &str,
) -> Result<Arc<dyn AuthProvider>, Problem> {
    let at = format!("{at}.auth");
    let obj = v
        .as_object()
        .ok_or_else(|| Problem::new(at.clone(), "must be an object"))?;
    known_keys(obj, &keys::UPSTREAM_AUTH, &at)?;
    let f = Fields { obj, at };
    let kind = f.string("type")?.ok_or_else(|| {
        f.problem(
            "type",
            "required: \"oauth\", \"clientCredentials\" or \"workloadIdentity\"",
        )
    })?;
    let redirect = f.string("redirectUri")?;
    let mut options = OAuthOptions::new(
        "mcp-proxy gateway",
        redirect.as_deref().unwrap_or(DEFAULT_REDIRECT_URI),
    );
    options.client = client(&f)?;
    options.client_metadata_url = f.string("clientMetadataUrl")?;
    options.dpop = f.flag("dpop")?;
    options.authorization_server = f.string("issuer")?;
    let scopes = f.strings("scopes")?;
    options.scopes = (!scopes.is_empty()).then(|| scopes.join(" "));
    if let Some(dir) = f.string("tokenStore")? {
        let store =
            FileStore::new(&dir).map_err(|e| f.problem("tokenStore", format!("{dir}: {e}")))?;
        options.store = Some((Arc::new(store) as Arc<dyn TokenStore>, url.to_owned()));
    }
    let machine = |what: &str| {
        if options.client.is_none() {
            return Err(f.problem("clientId", format!("required for {what}")));
        }
        if options.authorization_server.is_none() {
            return Err(f.problem(
                "issuer",
                format!("required for {what}: the authorization server its credentials are for, so an upstream cannot send them elsewhere"),
            ));
        }
        Ok(())
    };
    Ok(Arc::new(match kind.as_str() {
        "oauth" => OAuth::new(options, LoopbackBrowser::default()),
        "clientCredentials" => {
            machine("client credentials")?;
            let c = options.client.as_ref().map(|c| c.auth_method.as_str());
            if c == Some("none") {
                return Err(f.problem(
                    "",
                    "needs `clientSecret`, `clientSecretEnv` or `privateKeyFile`",
                ));
            }
            OAuth::client_credentials(options)
        }
        "workloadIdentity" => {
            machine("workload identity")?;
            let file = f.string("tokenFile")?.ok_or_else(|| {
                f.problem(
                    "tokenFile",
                    "required: the file the platform keeps the workload's token in",
                )
            })?;
            OAuth::jwt_bearer(options, AssertionFile(file.into()))
        }
        other => {
            return Err(f.problem(
                "type",
                format!(
                    "{other:?} is not \"oauth\", \"clientCredentials\" or \"workloadIdentity\""
                ),
            ))
        }
    }))
}

/// The pre-registered client, if `clientId` is given: with a secret, a signing key, or
/// neither (a public client).
fn client(f: &Fields<'_>) -> Result<Option<ClientIdentity>, Problem> {
    let Some(id) = f.string("clientId")? else {
        return Ok(None);
    };
    let secret = secret(f, "clientSecret")?;
    let key = f.string("privateKeyFile")?;
    Ok(Some(match (secret, key) {
        (Some(s), None) => ClientIdentity::with_secret(id, s),
        (None, Some(path)) => {
            let pem = std::fs::read_to_string(&path)
                .map_err(|e| f.problem("privateKeyFile", format!("{path}: {e}")))?;
            let alg = f
                .string("signingAlgorithm")?
                .unwrap_or_else(|| "ES256".into());
            let mut key = ClientKey::from_pem(&pem, &alg)
                .map_err(|e| f.problem("privateKeyFile", e.to_string()))?;
            if let Some(kid) = f.string("keyId")? {
                key = key.with_key_id(kid);
            }
            ClientIdentity::private_key_jwt(id, key)
        }
        (None, None) => ClientIdentity::public(id),
        (Some(_), Some(_)) => {
            return Err(f.problem("privateKeyFile", "give a secret or a key, not both"))
        }
    }))
}
