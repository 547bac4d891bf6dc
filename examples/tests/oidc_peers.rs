//! The real authorization servers the gateway's per-user upstream credentials are tested
//! against (`examples/interop/oidc/providers.mjs`: two `oidc-provider` instances, pinned in
//! `examples/interop/package.json`) and the scripted browser (`common::browser`) behave as
//! the gateway will need: users get JWT access tokens for the gateway, the gateway exchanges
//! them (RFC 8693) for upstream tokens of the same user, and the upstream's code flow gives
//! refresh tokens that refresh, rotate and can be revoked.
//!
//! With `MCP_INTEROP=required` (as `.ci/run` sets) a missing Node or `oidc-provider` fails
//! the tests; otherwise they are skipped with a note.

use mcp_client::auth::{request_token, ClientIdentity, ClientKey};
use serde_json::{json, Value};

mod common;
use common::browser::{
    form_post, http_client, jwt_claims, jwt_header, metadata, user_access_token, Browser,
    ACCESS_TOKEN_TYPE, SCOPE, TOKEN_EXCHANGE,
};
use common::free_port;
use common::providers::Providers;

const SECRET: &str = "gateway-secret: not & so secret";
const HOST_REDIRECT: &str = "http://127.0.0.1:9/cb";
const TTL: u64 = 300;

/// The two issuers, configured for a gateway and an upstream at free ports (nothing
/// listens on them: a resource is only a name here).
async fn providers() -> Option<Providers> {
    providers_with(json!({})).await
}

/// [`providers`], with `more` configuration.
async fn providers_with(more: Value) -> Option<Providers> {
    let gateway = format!("http://127.0.0.1:{}", free_port());
    let mut config = json!({
        "gatewayResource": format!("{gateway}/mcp"),
        "upstreamResource": format!("http://127.0.0.1:{}/mcp", free_port()),
        "hostRedirectUri": HOST_REDIRECT,
        "gatewayLoginRedirectUri": format!("{gateway}/login/callback"),
        "gatewayCallbackUri": format!("{gateway}/oauth/callback"),
        "gatewayClientSecret": SECRET,
        "deniedSubjects": ["mallory"],
        "accessTokenTtl": TTL,
    });
    if let (Some(config), Some(more)) = (config.as_object_mut(), more.as_object()) {
        config.extend(more.clone());
    }
    Providers::start(config).await
}

fn config<'a>(p: &'a Providers, key: &str) -> &'a str {
    p.config[key].as_str().expect("configured")
}

/// The "users" access token of `login` for the gateway (host-app's PKCE code flow).
async fn user_token(p: &Providers, login: &str) -> String {
    user_access_token(
        &p.users,
        "host-app",
        HOST_REDIRECT,
        config(p, "gatewayResource"),
        login,
    )
    .await
}

/// The gateway (client `gateway`, `client_secret_basic`) exchanging `subject_token` at
/// "upstream" with `extra` parameters: the status and the answer.
async fn exchange(p: &Providers, subject_token: &str, extra: &[(&str, &str)]) -> (u16, Value) {
    let token_endpoint = format!("{}/token", p.upstream);
    let mut params = vec![
        ("grant_type", TOKEN_EXCHANGE),
        ("subject_token", subject_token),
        ("subject_token_type", ACCESS_TOKEN_TYPE),
    ];
    params.extend_from_slice(extra);
    form_post(&token_endpoint, Some(("gateway", SECRET)), &params).await
}

fn audiences(claims: &Value) -> Vec<String> {
    match &claims["aud"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        other => panic!("no aud: {other}"),
    }
}

#[tokio::test]
async fn users_get_jwt_access_tokens_for_the_gateway_through_the_browser() {
    let Some(p) = providers().await else { return };
    let gateway = config(&p, "gatewayResource");
    for login in ["alice", "bob"] {
        let token = user_token(&p, login).await;
        let header = jwt_header(&token);
        assert_eq!(header["typ"], "at+jwt", "{header}");
        assert_eq!(header["alg"], "RS256", "{header}");
        let claims = jwt_claims(&token);
        assert_eq!(claims["iss"], p.users.as_str(), "{claims}");
        assert_eq!(claims["sub"], login, "{claims}");
        assert_eq!(audiences(&claims), [gateway], "{claims}");
        assert_eq!(claims["scope"], SCOPE, "{claims}");
        assert_eq!(claims["client_id"], "host-app", "{claims}");
        let lifetime = claims["exp"].as_u64().expect("exp") - claims["iat"].as_u64().expect("iat");
        assert_eq!(lifetime, TTL, "{claims}");
    }

    // The signing key is at the issuer's jwks_uri, as a verifier finds it.
    let jwks_uri = metadata(&p.users).await.raw["jwks_uri"]
        .as_str()
        .expect("jwks_uri")
        .to_owned();
    let jwks: Value = http_client()
        .get(&jwks_uri)
        .send()
        .await
        .expect("the JWKS")
        .json()
        .await
        .expect("JSON");
    let kid = jwt_header(&user_token(&p, "carol").await)["kid"].clone();
    assert!(
        jwks["keys"]
            .as_array()
            .expect("keys")
            .iter()
            .any(|k| k["kid"] == kid && k["kty"] == "RSA" && k.get("d").is_none()),
        "{jwks} has the public key {kid}"
    );

    // The same browser is logged in: a second authorization asks nothing more, and a
    // browser of another user is not.
    let alice = Browser::new_as("alice");
    let host = ClientIdentity::public("host-app");
    let first = alice
        .code_flow(&p.users, &host, HOST_REDIRECT, gateway, Some(SCOPE))
        .await
        .expect("alice's first token");
    let again = alice
        .code_flow(&p.users, &host, HOST_REDIRECT, gateway, Some(SCOPE))
        .await
        .expect("alice's second token");
    assert_eq!(jwt_claims(&first.access_token)["sub"], "alice");
    assert_eq!(jwt_claims(&again.access_token)["sub"], "alice");
    assert!(
        first.refresh_token.is_some(),
        "host-app gets a refresh token"
    );
}

#[tokio::test]
async fn the_gateway_exchanges_user_tokens_for_upstream_tokens_of_the_same_user() {
    let Some(p) = providers().await else { return };
    let upstream = config(&p, "upstreamResource").to_owned();
    let zero = p.exchanges().await;
    assert_eq!(zero["count"], 0, "{zero}");

    for login in ["alice", "bob"] {
        let user = user_token(&p, login).await;
        let (status, answer) = exchange(&p, &user, &[("resource", &upstream)]).await;
        assert_eq!(status, 200, "{login}'s exchange: {answer}");
        assert_eq!(answer["issued_token_type"], ACCESS_TOKEN_TYPE, "{answer}");
        assert_eq!(answer["token_type"], "Bearer", "{answer}");
        assert_eq!(answer["expires_in"], TTL, "{answer}");
        let token = answer["access_token"].as_str().expect("access_token");
        assert_eq!(jwt_header(token)["typ"], "at+jwt");
        let claims = jwt_claims(token);
        assert_eq!(claims["iss"], p.upstream.as_str(), "{claims}");
        assert_eq!(claims["sub"], login, "{claims}");
        assert_eq!(audiences(&claims), [upstream.as_str()], "{claims}");
        assert_eq!(claims["client_id"], "gateway", "{claims}");
        assert_eq!(claims["scope"], SCOPE, "{claims}");
        let lifetime = claims["exp"].as_u64().expect("exp") - claims["iat"].as_u64().expect("iat");
        assert_eq!(lifetime, TTL, "{claims}");
    }
    let counted = p.exchanges().await;
    assert_eq!(counted["count"], 2, "{counted}");
    assert_eq!(
        counted["bySubject"],
        json!({"alice": 1, "bob": 1}),
        "{counted}"
    );

    // `audience` names the same target; with neither, the upstream is the default.
    let alice = user_token(&p, "alice").await;
    let (status, answer) = exchange(&p, &alice, &[("audience", &upstream)]).await;
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = exchange(&p, &alice, &[]).await;
    assert_eq!(status, 200, "{answer}");
    let claims = jwt_claims(answer["access_token"].as_str().expect("access_token"));
    assert_eq!(audiences(&claims), [upstream.as_str()], "{claims}");

    // Refusals, none of them counted as an exchange.
    let refused = |(status, answer): (u16, Value), code: &str, why: &str| {
        assert_eq!(status, 400, "{answer}");
        assert_eq!(answer["error"], code, "{answer}");
        let description = answer["error_description"].as_str().unwrap_or_default();
        assert!(description.contains(why), "{answer} says {why:?}");
    };
    let mallory = user_token(&p, "mallory").await;
    refused(
        exchange(&p, &mallory, &[("resource", &upstream)]).await,
        "invalid_grant",
        "denied",
    );
    refused(
        exchange(&p, "not-a-token", &[("resource", &upstream)]).await,
        "invalid_grant",
        "not a JWT",
    );
    // A token from nowhere the upstream trusts: its own issuer's, for itself.
    let own = request_token(
        &metadata(&p.upstream).await,
        &ClientIdentity::with_secret("gateway", SECRET),
        &[
            ("grant_type", "client_credentials"),
            ("resource", &upstream),
        ],
    )
    .await
    .expect("a client credentials token")
    .access_token;
    refused(
        exchange(&p, &own, &[("resource", &upstream)]).await,
        "invalid_grant",
        "subject_token",
    );
    // Alice's token with its subject changed: the signature no longer holds.
    let forged = {
        let parts: Vec<&str> = alice.split('.').collect();
        let payload = base64url_encode(
            jwt_claims(&alice)
                .to_string()
                .replace("\"sub\":\"alice\"", "\"sub\":\"bob\"")
                .as_bytes(),
        );
        format!("{}.{payload}.{}", parts[0], parts[2])
    };
    assert_eq!(jwt_claims(&forged)["sub"], "bob");
    refused(
        exchange(&p, &forged, &[("resource", &upstream)]).await,
        "invalid_grant",
        "signature",
    );
    refused(
        exchange(&p, &alice, &[("resource", "http://127.0.0.1:1/other")]).await,
        "invalid_target",
        "",
    );
    let (status, answer) = exchange(
        &p,
        &alice,
        &[
            ("resource", &upstream),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token",
            ),
        ],
    )
    .await;
    assert_eq!(
        (status, &answer["error"]),
        (400, &json!("invalid_request")),
        "{answer}"
    );
    let (status, answer) = form_post(
        &format!("{}/token", p.upstream),
        Some(("gateway", "wrong secret")),
        &[
            ("grant_type", TOKEN_EXCHANGE),
            ("subject_token", &alice),
            ("subject_token_type", ACCESS_TOKEN_TYPE),
        ],
    )
    .await;
    assert_eq!(
        (status, &answer["error"]),
        (401, &json!("invalid_client")),
        "{answer}"
    );

    let counted = p.exchanges().await;
    assert_eq!(counted["count"], 4, "{counted}");
    assert_eq!(
        counted["bySubject"],
        json!({"alice": 3, "bob": 1}),
        "{counted}"
    );
    assert!(counted["refused"].as_u64() >= Some(5), "{counted}");
}

#[tokio::test]
async fn the_gateway_may_authenticate_to_the_upstream_with_private_key_jwt() {
    if Providers::available().is_none() {
        return;
    }
    let (pem, jwk) = common::providers::es256_key("gateway-key-1");
    let Some(p) = providers_with(json!({"gatewayJwks": {"keys": [jwk]}})).await else {
        return;
    };
    let upstream = config(&p, "upstreamResource").to_owned();
    let server = metadata(&p.upstream).await;
    let key = ClientKey::from_pem(&pem, "ES256")
        .expect("the key")
        .with_key_id("gateway-key-1");
    // `gateway` keeps its secret; `gateway-jwt` is the same gateway with a key.
    let gateway = ClientIdentity::private_key_jwt("gateway-jwt", key);

    let alice = user_token(&p, "alice").await;
    let exchanged = request_token(
        &server,
        &gateway,
        &[
            ("grant_type", TOKEN_EXCHANGE),
            ("subject_token", &alice),
            ("subject_token_type", ACCESS_TOKEN_TYPE),
            ("resource", &upstream),
        ],
    )
    .await
    .expect("exchanged with private_key_jwt");
    let claims = jwt_claims(&exchanged.access_token);
    assert_eq!(claims["sub"], "alice", "{claims}");
    assert_eq!(claims["client_id"], "gateway-jwt", "{claims}");
    assert_eq!(audiences(&claims), [upstream.as_str()], "{claims}");

    let own = request_token(
        &server,
        &gateway,
        &[
            ("grant_type", "client_credentials"),
            ("resource", &upstream),
        ],
    )
    .await
    .expect("client credentials with private_key_jwt");
    assert_eq!(jwt_claims(&own.access_token)["sub"], "gateway-jwt");

    // Another key does not pass for it.
    let (other, _) = common::providers::es256_key("gateway-key-1");
    let impostor = ClientIdentity::private_key_jwt(
        "gateway-jwt",
        ClientKey::from_pem(&other, "ES256")
            .expect("the key")
            .with_key_id("gateway-key-1"),
    );
    let refused = request_token(
        &server,
        &impostor,
        &[
            ("grant_type", "client_credentials"),
            ("resource", &upstream),
        ],
    )
    .await
    .expect_err("a key it does not know");
    assert!(refused.is_refusal("invalid_client"), "{refused}");
    assert_eq!(p.exchanges().await["count"], 1);
}

#[tokio::test]
async fn the_upstream_code_flow_gives_refresh_tokens_that_rotate_and_can_be_revoked() {
    let Some(p) = providers().await else { return };
    let upstream = config(&p, "upstreamResource").to_owned();
    let callback = config(&p, "gatewayCallbackUri").to_owned();
    let server = metadata(&p.upstream).await;
    let gateway = ClientIdentity::with_secret("gateway", SECRET);

    let token = Browser::new_as("alice")
        .code_flow(&p.upstream, &gateway, &callback, &upstream, Some(SCOPE))
        .await
        .expect("alice's upstream token");
    let claims = jwt_claims(&token.access_token);
    assert_eq!(claims["iss"], p.upstream.as_str(), "{claims}");
    assert_eq!(claims["sub"], "alice", "{claims}");
    assert_eq!(audiences(&claims), [upstream.as_str()], "{claims}");
    assert_eq!(claims["client_id"], "gateway", "{claims}");
    let first = token.refresh_token.expect("a refresh token");

    let refresh = |rt: String| {
        let (server, gateway, upstream) = (&server, &gateway, &upstream);
        async move {
            request_token(
                server,
                gateway,
                &[
                    ("grant_type", "refresh_token"),
                    ("refresh_token", &rt),
                    ("resource", upstream),
                ],
            )
            .await
        }
    };
    let renewed = refresh(first.clone()).await.expect("refreshed");
    let claims = jwt_claims(&renewed.access_token);
    assert_eq!(claims["sub"], "alice", "{claims}");
    assert_eq!(audiences(&claims), [upstream.as_str()], "{claims}");
    let second = renewed.refresh_token.expect("a rotated refresh token");
    assert_ne!(first, second, "the refresh token rotates");

    let revocation = server.raw["revocation_endpoint"]
        .as_str()
        .expect("revocation_endpoint")
        .to_owned();
    let (status, answer) = form_post(
        &revocation,
        Some(("gateway", SECRET)),
        &[("token", &second), ("token_type_hint", "refresh_token")],
    )
    .await;
    assert_eq!(status, 200, "revoked: {answer}");
    let refused = refresh(second).await.expect_err("a revoked refresh token");
    assert!(refused.is_refusal("invalid_grant"), "{refused}");

    // The introspection endpoint says the same.
    let introspection = server.raw["introspection_endpoint"]
        .as_str()
        .expect("introspection_endpoint")
        .to_owned();
    let (status, answer) = form_post(
        &introspection,
        Some(("gateway", SECRET)),
        &[("token", &first)],
    )
    .await;
    assert_eq!(
        (status, &answer["active"]),
        (200, &json!(false)),
        "{answer}"
    );
}

#[tokio::test]
async fn the_gateway_logs_users_in_with_openid_connect() {
    let Some(p) = providers().await else { return };
    let redirect = config(&p, "gatewayLoginRedirectUri").to_owned();
    let server = metadata(&p.users).await;
    let bob = Browser::new_as("bob");
    for client in [
        ClientIdentity::with_secret("gateway-login", SECRET),
        ClientIdentity::public("gateway-login-public"),
    ] {
        // Through our client's pieces, but the token request by hand: the ID token is not
        // something our client's token API shows.
        let request = mcp_client::auth::AuthorizationRequest::new(
            &server,
            &client.client_id,
            &redirect,
            &p.users,
            Some("openid profile"),
        )
        .expect("a request");
        // No resource for an OpenID Connect login (our request type always names one:
        // it is taken out), so the access token is one for userinfo.
        let mut url = reqwest::Url::parse(&request.url).expect("a URL");
        let kept: Vec<(String, String)> = url
            .query_pairs()
            .filter(|(k, _)| k != "resource")
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        url.query_pairs_mut().clear().extend_pairs(kept);
        let back = bob
            .authorize(url.as_str(), &redirect)
            .await
            .expect("redirected back");
        let code = request.code_from(&back, true).expect("a code");
        let mut params = vec![
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", redirect.as_str()),
            ("code_verifier", request.code_verifier()),
        ];
        let basic = match client.client_secret.as_deref() {
            Some(secret) => Some((client.client_id.as_str(), secret)),
            None => {
                params.push(("client_id", client.client_id.as_str()));
                None
            }
        };
        let (status, answer) = form_post(&format!("{}/token", p.users), basic, &params).await;
        assert_eq!(status, 200, "{}: {answer}", client.client_id);
        let id = jwt_claims(answer["id_token"].as_str().expect("an id_token"));
        assert_eq!(id["iss"], p.users.as_str(), "{id}");
        assert_eq!(id["sub"], "bob", "{id}");
        assert_eq!(id["aud"], client.client_id.as_str(), "{id}");
        // Its access token is for userinfo, which names bob.
        let access = answer["access_token"].as_str().expect("access_token");
        let me: Value = http_client()
            .get(format!("{}/me", p.users))
            .bearer_auth(access)
            .send()
            .await
            .expect("userinfo")
            .json()
            .await
            .expect("JSON");
        assert_eq!(me["sub"], "bob", "{me}");
        assert_eq!(me["preferred_username"], "bob", "{me}");
    }
}

fn base64url_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
        }
    }
    out
}
