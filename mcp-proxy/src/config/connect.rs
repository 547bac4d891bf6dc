//! What a `userAuth` of type `oauth` needs beside it: `gateway.auth.login` (how the
//! connect pages log a browser's user in) and `gateway.grants` (where users' grants are
//! kept, and the keys that seal them).
//!
//! ```json
//! "gateway": {
//!   "auth": {"resource": "https://gw.example.com/mcp", "jwt": {"issuer": "https://idp"},
//!            "login": {"clientId": "gateway-login", "clientSecretEnv": "GW_LOGIN_SECRET"}},
//!   "grants": {"file": "/var/lib/gw/grants.json", "keysEnv": "GW_GRANT_KEYS"}
//! }
//! ```
//!
//! The connect pages are served on the gateway's HTTP listener under `/connect`, at the
//! origin of `gateway.auth.resource`; register `<origin>/connect/login` with the users'
//! issuer and `<origin>/connect/callback` with each upstream's authorization server.

use std::sync::Arc;

use mcp_server::auth::Authorization;

use crate::credentials::{
    ConnectDesk, ConnectLogin, FileGrants, GrantKeys, GrantStore, GrantVault, MemoryGrants,
    StoreGrants,
};

use super::auth::secret;
use super::file;
use super::upstream_auth::{client, KeyFile};
use super::{join, Problem};

/// The connect desk of a gateway whose users log in with `login` at its issuer
/// (`jwt_issuer` unless `login` names another), tokens checked by `authorization`, for
/// the gateway at `resource`; grants kept as `grants` says.
pub(super) fn desk(
    login: Option<file::Login>,
    grants: Option<file::Grants>,
    authorization: &Authorization,
    resource: &str,
    jwt_issuer: Option<String>,
    shared: Option<Arc<dyn crate::store::StateStore>>,
) -> Result<Arc<ConnectDesk>, Problem> {
    let at = "gateway.auth.login";
    let login = login.ok_or_else(|| {
        Problem::new(
            at,
            "required by a `userAuth` of type \"oauth\": the connect page logs the browser's user in here to check who opened the link",
        )
    })?;
    let file::Login {
        issuer,
        client_id,
        client_secret,
        client_secret_env,
        private_key_file,
        signing_algorithm,
        key_id,
        scopes,
    } = login;
    let issuer = issuer.or(jwt_issuer).ok_or_else(|| {
        Problem::new(
            join(at, "issuer"),
            "required: no `jwt.issuer` to default to",
        )
    })?;
    let id = client_id.ok_or_else(|| {
        Problem::new(
            join(at, "clientId"),
            "required: the gateway's client at the issuer",
        )
    })?;
    let secret = secret(client_secret, client_secret_env, at, "clientSecret")?;
    let key = private_key_file.map(|path| KeyFile {
        path,
        algorithm: signing_algorithm,
        key_id,
    });
    let mut login = ConnectLogin::new(
        issuer,
        client(id, secret, key, at)?,
        resource,
        authorization.clone(),
    );
    let scopes = scopes.unwrap_or_default();
    if !scopes.is_empty() {
        login = login.scope(scopes.join(" "));
    }
    let base = origin(resource).ok_or_else(|| {
        Problem::new(
            "gateway.auth.resource",
            "must be an absolute http(s) URL: the connect pages are served at its origin",
        )
    })?;
    Ok(ConnectDesk::new(base, vault(grants, shared)?, login))
}

/// The vault of `gateway.grants`: a file with keys; else, with replicas sharing a store
/// (`shared`), that store with keys; else memory with a key of its own.
fn vault(
    grants: Option<file::Grants>,
    shared: Option<Arc<dyn crate::store::StateStore>>,
) -> Result<GrantVault, Problem> {
    let at = "gateway.grants";
    let file::Grants {
        file,
        keys_env,
        keys_file,
    } = grants.unwrap_or(file::Grants {
        file: None,
        keys_env: None,
        keys_file: None,
    });
    let keys_text = match (keys_env, keys_file) {
        (Some(var), None) => Some(std::env::var(&var).map_err(|_| {
            Problem::new(
                join(at, "keysEnv"),
                format!("environment variable {var} is not set"),
            )
        })?),
        (None, Some(path)) => Some(
            std::fs::read_to_string(&path)
                .map_err(|e| Problem::new(join(at, "keysFile"), format!("{path}: {e}")))?,
        ),
        (None, None) => None,
        (Some(_), Some(_)) => {
            return Err(Problem::new(
                join(at, "keysEnv"),
                "give `keysEnv` or `keysFile`, not both",
            ))
        }
    };
    let keys = match keys_text {
        // Errors name the key's position, never its text.
        Some(text) => GrantKeys::parse(&text).map_err(|e| Problem::new(join(at, "keys"), e.to_string()))?,
        None if file.is_some() || shared.is_some() => {
            return Err(Problem::new(
                join(at, "keysEnv"),
                "required with `file` or `gateway.cluster.redis`: grants sealed under a key made at start could not be read after a restart, nor by another replica",
            ))
        }
        None => GrantKeys::random().map_err(|e| Problem::new(at, e.to_string()))?,
    };
    let store: Arc<dyn GrantStore> = match (file, shared) {
        (Some(path), _) => Arc::new(
            FileGrants::open(&path).map_err(|e| Problem::new(join(at, "file"), e.to_string()))?,
        ),
        (None, Some(store)) => Arc::new(StoreGrants::new(store)),
        (None, None) => {
            tracing::warn!("users' upstream grants are kept in memory only: they end with the process (set gateway.grants.file)");
            Arc::new(MemoryGrants::default())
        }
    };
    Ok(GrantVault::new(store, keys))
}

/// `scheme://authority` of an absolute http(s) URL.
fn origin(url: &str) -> Option<String> {
    let uri: http::Uri = url.parse().ok()?;
    let scheme = uri.scheme_str().filter(|s| *s == "http" || *s == "https")?;
    Some(format!("{scheme}://{}", uri.authority()?))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_origin_is_the_scheme_and_authority() {
        assert_eq!(
            super::origin("https://gw.example:8443/mcp").as_deref(),
            Some("https://gw.example:8443")
        );
        assert_eq!(super::origin("ftp://x/y"), None);
        assert_eq!(super::origin("/mcp"), None);
    }
}
