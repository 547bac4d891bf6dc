//! `gateway.auth`: who may use the gateway over HTTP.
//!
//! ```json
//! "auth": {"resource": "https://gw.example.com/mcp",
//!          "authorizationServers": ["https://auth.example.com"],
//!          "requiredScopes": ["mcp:tools"],
//!          "jwt": {"issuer": "https://auth.example.com", "jwksFile": "/etc/gw/jwks.json"},
//!          (or "jwksUri": "https://…/jwks", or neither: the issuer's metadata names it;
//!          "jwksRefreshSeconds": the keys' greatest age, default 5 for a file, 60 fetched)
//!          "apiKeys": [{"name": "ci", "keyEnv": "GW_CI_KEY", "subject": "ci-bot", "scopes": ["mcp:tools"]}]}
//! ```

use mcp_server::auth::{
    ApiKey, ApiKeys, Authorization, FirstOf, JwksFile, JwtAuthenticator, JwtOptions, Principal,
    ProtectedResource,
};

use super::file::{self, MIN_API_KEY_CHARS};
use super::{join, Problem};
use crate::jwks::JwksUri;

/// A secret given as `<field>` (`value`) or, better, named by `<field>Env` (`var`, an
/// environment variable) in the object at `at`: `None` when neither is there, an error
/// when both are or the variable is not set.
pub(super) fn secret(
    value: Option<String>,
    var: Option<String>,
    at: &str,
    field: &str,
) -> Result<Option<String>, Problem> {
    let env = format!("{field}Env");
    match (value, var) {
        (Some(s), None) => Ok(Some(s)),
        (None, Some(var)) => std::env::var(&var).map(Some).map_err(|_| {
            Problem::new(
                join(at, &env),
                format!("environment variable {var} is not set"),
            )
        }),
        (None, None) => Ok(None),
        (Some(_), Some(_)) => Err(Problem::new(
            join(at, &env),
            format!("give `{field}` or `{env}`, not both"),
        )),
    }
}

/// The `auth` object at `gateway.auth`; `keep_tokens`: the JWT authenticator keeps each
/// token in its principal, for an upstream that exchanges it.
pub(super) fn authorization(auth: file::Auth, keep_tokens: bool) -> Result<Authorization, Problem> {
    let at = "gateway.auth";
    let file::Auth {
        resource,
        authorization_servers,
        required_scopes,
        scopes_supported,
        jwt,
        api_keys: keys,
        // Read (and taken) by the connect pages: `connect.rs`.
        login: _,
    } = auth;
    let uri = resource.ok_or_else(|| {
        Problem::new(
            join(at, "resource"),
            "required: this gateway's canonical URL, the audience of its tokens",
        )
    })?;
    let required = required_scopes.unwrap_or_default();
    let supported = scopes_supported
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| required.clone());
    let mut resource = ProtectedResource::new(uri.clone())
        .map_err(|e| Problem::new(join(at, "resource"), e.to_string()))?
        .scopes_supported(supported);
    for issuer in authorization_servers.unwrap_or_default() {
        resource = resource.authorization_server(issuer);
    }
    let mut any = FirstOf::new();
    let mut configured = false;
    if let Some(keys) = keys {
        any = any.or(api_keys(keys)?);
        configured = true;
    }
    if let Some(jwt) = jwt {
        any = any.or(jwt_authenticator(jwt, &uri, keep_tokens)?);
        configured = true;
    }
    if !configured {
        return Err(Problem::new(at, "needs `jwt` or `apiKeys` (or both)"));
    }
    Ok(Authorization::new(any, resource).require_scopes(required))
}

fn jwt_authenticator(
    jwt: file::Jwt,
    resource: &str,
    keep_tokens: bool,
) -> Result<JwtAuthenticator, Problem> {
    let at = "gateway.auth.jwt";
    let problem = |field: &str, problem: String| Problem::new(join(at, field), problem);
    let file::Jwt {
        issuer,
        audience,
        jwks_file,
        jwks_uri,
        jwks_refresh_seconds,
        algorithms,
        leeway_seconds,
    } = jwt;
    let issuer =
        issuer.ok_or_else(|| problem("issuer", "required: the `iss` tokens carry".into()))?;
    let audience = audience.unwrap_or_else(|| resource.to_owned());
    let mut options = JwtOptions::new(issuer.clone(), audience).keep_subject_token(keep_tokens);
    let algorithms = algorithms.unwrap_or_default();
    if !algorithms.is_empty() {
        options = options
            .algorithms(algorithms.iter().map(String::as_str))
            .map_err(|e| problem("algorithms", e.to_string()))?;
    }
    if let Some(secs) = leeway_seconds {
        options = options.leeway(secs.seconds().min(std::time::Duration::from_secs(300)));
    }
    // Each source keeps its own default bound when none is given.
    let refresh = jwks_refresh_seconds.map(|s| s.seconds());
    let fetched = |keys: JwksUri| match refresh {
        Some(age) => keys.max_age(age),
        None => keys,
    };
    match (jwks_file, jwks_uri) {
        (Some(path), None) => {
            let mut keys = JwksFile::open(&path).map_err(|e| problem("jwksFile", e.to_string()))?;
            if let Some(age) = refresh {
                keys = keys.max_age(age);
            }
            Ok(JwtAuthenticator::new(keys, options))
        }
        (None, Some(uri)) => {
            if !mcp_client::auth::discovery::secure(&uri) {
                return Err(problem(
                    "jwksUri",
                    format!("{uri:?} must be https (or http to this machine)"),
                ));
            }
            Ok(JwtAuthenticator::new(fetched(JwksUri::new(uri)), options))
        }
        // The issuer's metadata names its keys.
        (None, None) => Ok(JwtAuthenticator::new(
            fetched(JwksUri::discover(issuer)),
            options,
        )),
        (Some(_), Some(_)) => Err(problem(
            "",
            "has both `jwksFile` and `jwksUri`; give one".into(),
        )),
    }
}

fn api_keys(entries: Vec<file::ApiKey>) -> Result<ApiKeys, Problem> {
    let mut keys = ApiKeys::new();
    for (n, entry) in entries.into_iter().enumerate() {
        let at = format!("gateway.auth.apiKeys[{n}]");
        let file::ApiKey {
            name,
            key,
            key_env,
            subject,
            scopes,
        } = entry;
        let name = name.ok_or_else(|| {
            Problem::new(
                join(&at, "name"),
                "required: names the key in logs and views",
            )
        })?;
        let secret = secret(key, key_env, &at, "key")?
            .ok_or_else(|| Problem::new(at.clone(), "needs `key` or `keyEnv` (one of them)"))?;
        if secret.len() < MIN_API_KEY_CHARS {
            return Err(Problem::new(
                join(&at, "key"),
                format!("must be at least {MIN_API_KEY_CHARS} characters"),
            ));
        }
        let subject = subject.unwrap_or_else(|| name.clone());
        let principal = Principal::new(subject).with_scopes(scopes.unwrap_or_default());
        keys = keys.with(ApiKey::new(name, &secret, principal));
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use crate::config::parse;

    fn jwks() -> String {
        format!(
            "{}/../mcp-server/tests/data/auth/jwks.json",
            env!("CARGO_MANIFEST_DIR")
        )
    }

    #[test]
    fn jwt_and_api_keys_make_one_authorization() {
        let text = format!(
            r#"{{"mcpServers": {{}}, "gateway": {{"auth": {{
                "resource": "https://gw.example.com/mcp",
                "authorizationServers": ["https://auth.example.com"],
                "requiredScopes": ["mcp:tools"],
                "jwt": {{"issuer": "https://auth.example.com", "jwksFile": {:?}, "algorithms": ["ES256"]}},
                "apiKeys": [{{"name": "ci", "key": "0123456789abcdef", "subject": "ci-bot"}}]}},
                "stdioSubject": "me"}}}}"#,
            jwks()
        );
        let g = parse(&text, "c.json").expect("valid");
        let auth = g.authorization.expect("authorization");
        assert_eq!(auth.resource().resource, "https://gw.example.com/mcp");
        assert_eq!(auth.resource().scopes_supported, ["mcp:tools"]);
        assert_eq!(g.local_principal.map(|p| p.subject).as_deref(), Some("me"));
    }

    #[test]
    fn auth_mistakes_name_the_key() {
        let jwks = jwks();
        for (bad, at) in [
            (r#"{"resource": "https://gw/mcp"}"#.to_owned(), "gateway.auth"),
            (r#"{"jwt": {}}"#.to_owned(), "gateway.auth.resource"),
            (
                r#"{"resource": "gw/mcp", "apiKeys": []}"#.to_owned(),
                "gateway.auth.resource",
            ),
            (
                r#"{"resource": "https://gw/mcp", "apiKeys": [{"name": "a", "key": "short"}]}"#
                    .to_owned(),
                "gateway.auth.apiKeys[0].key",
            ),
            (
                r#"{"resource": "https://gw/mcp", "apiKeys": [{"name": "a", "keyEnv": "MCP_PROXY_TEST_UNSET_VAR"}]}"#
                    .to_owned(),
                "gateway.auth.apiKeys[0].keyEnv",
            ),
            (
                format!(
                    r#"{{"resource": "https://gw/mcp", "jwt": {{"issuer": "i", "jwksFile": {jwks:?}, "algorithms": ["HS256"]}}}}"#
                ),
                "gateway.auth.jwt.algorithms",
            ),
            (
                r#"{"resource": "https://gw/mcp", "jwt": {"issuer": "i", "jwksFile": "/nonexistent.json"}}"#
                    .to_owned(),
                "gateway.auth.jwt.jwksFile",
            ),
            (
                r#"{"resource": "https://gw/mcp", "jwt": {"issuer": "i", "jwks": "x"}}"#.to_owned(),
                "gateway.auth.jwt.jwks",
            ),
            (
                format!(
                    r#"{{"resource": "https://gw/mcp", "jwt": {{"issuer": "i", "jwksFile": {jwks:?}, "jwksRefreshSeconds": 0}}}}"#
                ),
                "gateway.auth.jwt.jwksRefreshSeconds",
            ),
        ] {
            let text = format!(r#"{{"mcpServers": {{}}, "gateway": {{"auth": {bad}}}}}"#);
            let e = parse(&text, "c.json").expect_err(&bad);
            assert_eq!(e.location, at, "{bad}: {e}");
        }
    }
}
