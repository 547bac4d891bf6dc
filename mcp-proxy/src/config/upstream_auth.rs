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

use mcp_client::auth::{
    AssertionFile, AuthProvider, ClientIdentity, ClientKey, FileStore, LoopbackBrowser, OAuth,
    OAuthOptions, TokenStore,
};

use super::auth::secret;
use super::file::{self, UpstreamAuthType};
use super::values::Choice;
use super::{join, Problem};

/// The redirect URI of the `oauth` type when none is given.
pub const DEFAULT_REDIRECT_URI: &str = "http://127.0.0.1:8765/callback";

/// The provider for a server's `auth` (at `at`), the upstream being at `url`.
pub(super) fn upstream_auth(
    auth: file::UpstreamAuth,
    at: &str,
    url: &str,
) -> Result<Arc<dyn AuthProvider>, Problem> {
    let problem = |field: &str, problem: String| Problem::new(join(at, field), problem);
    let file::UpstreamAuth {
        kind,
        client_id,
        client_secret,
        client_secret_env,
        private_key_file,
        signing_algorithm,
        key_id,
        client_metadata_url,
        redirect_uri,
        scopes,
        token_store,
        token_file,
        dpop,
        issuer,
    } = auth;
    let Some(Choice(kind)) = kind else {
        let required = "required: \"oauth\", \"clientCredentials\" or \"workloadIdentity\"";
        return Err(problem("type", required.into()));
    };
    let mut options = OAuthOptions::new(
        "mcp-proxy gateway",
        redirect_uri.as_deref().unwrap_or(DEFAULT_REDIRECT_URI),
    );
    options.client = match client_id {
        None => None,
        Some(id) => {
            let secret = secret(client_secret, client_secret_env, at, "clientSecret")?;
            let key = private_key_file.map(|path| KeyFile {
                path,
                algorithm: signing_algorithm,
                key_id,
            });
            Some(client(id, secret, key, at)?)
        }
    };
    options.client_metadata_url = client_metadata_url;
    options.dpop = dpop.unwrap_or(false);
    options.authorization_server = issuer;
    let scopes = scopes.unwrap_or_default();
    options.scopes = (!scopes.is_empty()).then(|| scopes.join(" "));
    if let Some(dir) = token_store {
        let store =
            FileStore::new(&dir).map_err(|e| problem("tokenStore", format!("{dir}: {e}")))?;
        options.store = Some((Arc::new(store) as Arc<dyn TokenStore>, url.to_owned()));
    }
    Ok(Arc::new(provider(kind, options, token_file, at)?))
}

/// The provider of grant `kind` (of the `auth` at `at`), with what that grant requires.
fn provider(
    kind: UpstreamAuthType,
    options: OAuthOptions,
    token_file: Option<String>,
    at: &str,
) -> Result<OAuth, Problem> {
    let problem = |field: &str, problem: String| Problem::new(join(at, field), problem);
    let machine = |what: &str| {
        if options.client.is_none() {
            return Err(problem("clientId", format!("required for {what}")));
        }
        if options.authorization_server.is_none() {
            return Err(problem(
                "issuer",
                format!("required for {what}: the authorization server its credentials are for, so an upstream cannot send them elsewhere"),
            ));
        }
        Ok(())
    };
    Ok(match kind {
        UpstreamAuthType::OAuth => OAuth::new(options, LoopbackBrowser::default()),
        UpstreamAuthType::ClientCredentials => {
            machine("client credentials")?;
            let c = options.client.as_ref().map(|c| c.auth_method.as_str());
            if c == Some("none") {
                return Err(problem(
                    "",
                    "needs `clientSecret`, `clientSecretEnv` or `privateKeyFile`".into(),
                ));
            }
            OAuth::client_credentials(options)
        }
        UpstreamAuthType::WorkloadIdentity => {
            machine("workload identity")?;
            let file = token_file.ok_or_else(|| {
                problem(
                    "tokenFile",
                    "required: the file the platform keeps the workload's token in".into(),
                )
            })?;
            OAuth::jwt_bearer(options, AssertionFile(file.into()))
        }
    })
}

/// `privateKeyFile`, with the algorithm and key id its assertions are signed with.
pub(super) struct KeyFile {
    pub(super) path: String,
    pub(super) algorithm: Option<String>,
    pub(super) key_id: Option<String>,
}

/// The pre-registered client `id` (of the `auth` at `at`): with a secret, a signing key,
/// or neither (a public client).
pub(super) fn client(
    id: String,
    secret: Option<String>,
    key: Option<KeyFile>,
    at: &str,
) -> Result<ClientIdentity, Problem> {
    let at = join(at, "privateKeyFile");
    Ok(match (secret, key) {
        (Some(s), None) => ClientIdentity::with_secret(id, s),
        (None, Some(file)) => {
            let pem = std::fs::read_to_string(&file.path)
                .map_err(|e| Problem::new(at.clone(), format!("{}: {e}", file.path)))?;
            let alg = file.algorithm.unwrap_or_else(|| "ES256".into());
            let mut key = ClientKey::from_pem(&pem, &alg)
                .map_err(|e| Problem::new(at.clone(), e.to_string()))?;
            if let Some(kid) = file.key_id {
                key = key.with_key_id(kid);
            }
            ClientIdentity::private_key_jwt(id, key)
        }
        (None, None) => ClientIdentity::public(id),
        (Some(_), Some(_)) => return Err(Problem::new(at, "give a secret or a key, not both")),
    })
}
