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

use std::time::Duration;

use serde_json::Value;

use mcp_server::auth::{
    ApiKey, ApiKeys, Authorization, FirstOf, JwksFile, JwtAuthenticator, JwtOptions, Principal,
    ProtectedResource,
};

use super::{keys, known_keys, Fields, Problem};
use crate::jwks::JwksUri;

/// A secret given as `<field>` or, better, named by `<field>Env` (an environment
/// variable): `None` when neither is there, an error when both are or the variable is
/// not set.
pub(super) fn secret(f: &Fields<'_>, field: &str) -> Result<Option<String>, Problem> {
    let env = format!("{field}Env");
    match (f.string(field)?, f.string(&env)?) {
        (Some(s), None) => Ok(Some(s)),
        (None, Some(var)) => std::env::var(&var)
            .map(Some)
            .map_err(|_| f.problem(&env, format!("environment variable {var} is not set"))),
        (None, None) => Ok(None),
        (Some(_), Some(_)) => Err(f.problem(&env, format!("give `{field}` or `{env}`, not both"))),
    }
}

/// The `auth` object at `gateway.auth`.
pub(super) fn authorization(v: &Value) -> Result<Authorization, Problem> {
    let at = "gateway.auth";
    let obj = v
        .as_object()
        .ok_or_else(|| Problem::new(at, "must be an object"))?;
    known_keys(obj, &keys::AUTH, at)?;
    let f = Fields { obj, at: at.into() };
    let uri = f.string("resource")?.ok_or_else(|| {
        f.problem(
            "resource",
            "required: this gateway's canonical URL, the audience of its tokens",
        )
    })?;
    let required = f.strings("requiredScopes")?;
    let mut supported = f.strings("scopesSupported")?;
    if supported.is_empty() {
        supported = required.clone();
    }
    let mut resource = ProtectedResource::new(uri.clone())
        .map_err(|e| f.problem("resource", e.to_string()))?
        .scopes_supported(supported);
    for issuer in f.strings("authorizationServers")? {
        resource = resource.authorization_server(issuer);
    }
    let mut any = FirstOf::new();
    let mut configured = false;
    if let Some(keys) = obj.get("apiKeys") {
        any = any.or(api_keys(keys)?);
        configured = true;
    }
    if let Some(jwt) = obj.get("jwt") {
        any = any.or(jwt_authenticator(jwt, &uri)?);
        configured = true;
    }
    if !configured {
        return Err(f.problem("", "needs `jwt` or `apiKeys` (or both)"));
    }
    Ok(Authorization::new(any, resource).require_scopes(required))
}

fn jwt_authenticator(v: &Value, resource: &str) -> Result<JwtAuthenticator, Problem> {
    let at = "gateway.auth.jwt";
    let obj = v
        .as_object()
        .ok_or_else(|| Problem::new(at, "must be an object"))?;
    known_keys(obj, &keys::JWT, at)?;
    let f = Fields { obj, at: at.into() };
    let issuer = f
        .string("issuer")?
        .ok_or_else(|| f.problem("issuer", "required: the `iss` tokens carry"))?;
    let audience = f.string("audience")?.unwrap_or_else(|| resource.to_owned());
    let mut options = JwtOptions::new(issuer.clone(), audience);
    let algorithms = f.strings("algorithms")?;
    if !algorithms.is_empty() {
        options = options
            .algorithms(algorithms.iter().map(String::as_str))
            .map_err(|e| f.problem("algorithms", e.to_string()))?;
    }
    if let Some(secs) = f.positive("leewaySeconds")? {
        options = options.leeway(Duration::from_secs(secs.min(300)));
    }
    // Each source keeps its own default bound when none is given.
    let refresh = f.positive("jwksRefreshSeconds")?.map(Duration::from_secs);
    let fetched = |keys: JwksUri| match refresh {
        Some(age) => keys.max_age(age),
        None => keys,
    };
    match (f.string("jwksFile")?, f.string("jwksUri")?) {
        (Some(path), None) => {
            let mut keys =
                JwksFile::open(&path).map_err(|e| f.problem("jwksFile", e.to_string()))?;
            if let Some(age) = refresh {
                keys = keys.max_age(age);
            }
            Ok(JwtAuthenticator::new(keys, options))
        }
        (None, Some(uri)) => {
            if !mcp_client::auth::discovery::secure(&uri) {
                return Err(f.problem(
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
        (Some(_), Some(_)) => Err(f.problem("", "has both `jwksFile` and `jwksUri`; give one")),
    }
}

fn api_keys(v: &Value) -> Result<ApiKeys, Problem> {
    let at = "gateway.auth.apiKeys";
    let entries = v
        .as_array()
        .ok_or_else(|| Problem::new(at, "must be an array of keys"))?;
    let mut keys = ApiKeys::new();
    for (n, entry) in entries.iter().enumerate() {
        let at = format!("{at}[{n}]");
        let obj = entry
            .as_object()
            .ok_or_else(|| Problem::new(at.clone(), "must be an object"))?;
        known_keys(obj, &keys::API_KEY, &at)?;
        let f = Fields { obj, at };
        let name = f
            .string("name")?
            .ok_or_else(|| f.problem("name", "required: names the key in logs and views"))?;
        let secret = secret(&f, "key")?
            .ok_or_else(|| f.problem("", "needs `key` or `keyEnv` (one of them)"))?;
        if secret.len() < 16 {
            return Err(f.problem("key", "must be at least 16 characters"));
        }
        let subject = f.string("subject")?.unwrap_or_else(|| name.clone());
        let principal = Principal::new(subject).with_scopes(f.strings("scopes")?);
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
