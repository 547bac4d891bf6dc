//! MCP authorization on a real HTTP server: JWT access tokens checked against a JWKS (RS256
//! and ES256), API keys, scopes, the protected resource metadata, legacy sessions bound to
//! the subject that opened them, and the principal as the handler sees it. The tokens are
//! made here with keys in `tests/data/auth` (test keys, never used elsewhere).

use jsonwebtoken::{Algorithm, EncodingKey};
use mcp_server::auth::{ApiKey, ApiKeys, Authorization, Principal};
use mcp_server::http::{bind, HttpOptions};
use serde_json::json;

mod auth_common;
use auth_common::*;

#[tokio::test]
async fn no_token_is_401_with_a_challenge_naming_fetchable_metadata() {
    let addr = jwt_server().await;
    let r = call_modern(addr, None).await;
    assert_eq!(r.status, 401);
    let challenge = r.header("www-authenticate").expect("challenge");
    assert_eq!(
        challenge,
        r#"Bearer scope="mcp:tools", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp""#
    );
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let m = request(addr, "GET", path, &[], "").await;
        assert_eq!(m.status, 200, "{path}");
        assert_eq!(
            m.json(),
            json!({"resource": RESOURCE, "authorization_servers": [ISSUER],
                   "bearer_methods_supported": ["header"], "scopes_supported": ["mcp:tools"]})
        );
    }
}

#[tokio::test]
async fn good_rs256_and_es256_tokens_are_served_and_the_handler_sees_the_principal() {
    let addr = jwt_server().await;
    for token in [
        rs256(&claims(|_| {})),
        es256(&claims(|c| c["sub"] = json!("bob"))),
    ] {
        let r = call_modern(addr, Some(&token)).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let who = text_of(&r);
        assert!(
            who == "alice [mcp:tools profile]" || who == "bob [mcp:tools profile]",
            "{who}"
        );
    }
}

#[tokio::test]
async fn bad_tokens_are_401_invalid_token() {
    let addr = jwt_server().await;
    let good = rs256(&claims(|_| {}));
    let (head, rest) = good.split_once('.').unwrap();
    let (_, sig) = rest.split_once('.').unwrap();
    let forged_payload = b64(claims(|c| c["sub"] = json!("mallory"))
        .to_string()
        .as_bytes());
    let hmac = EncodingKey::from_secret(b"secret-secret-secret-secret-1234");
    let other = EncodingKey::from_rsa_pem(&data("rsa-other.pem")).expect("rsa key");
    let cases = [
        ("expired", rs256(&claims(|c| c["exp"] = json!(now() - 120)))),
        (
            "not yet valid",
            rs256(&claims(|c| c["nbf"] = json!(now() + 120))),
        ),
        (
            "wrong issuer",
            rs256(&claims(|c| c["iss"] = json!("https://evil.example.com"))),
        ),
        (
            "wrong audience",
            es256(&claims(|c| {
                c["aud"] = json!("https://other.example.com/mcp")
            })),
        ),
        (
            "no audience",
            rs256(&claims(|c| {
                c.as_object_mut().unwrap().remove("aud");
            })),
        ),
        (
            "alg none",
            format!(
                "{}.{}.",
                b64(br#"{"alg":"none","typ":"JWT"}"#),
                forged_payload
            ),
        ),
        ("tampered", format!("{head}.{forged_payload}.{sig}")),
        (
            "HS256 with the JWKS's symmetric key",
            sign(Algorithm::HS256, "hmac", &hmac, &claims(|_| {})),
        ),
        (
            "another key",
            sign(Algorithm::RS256, "rsa-1", &other, &claims(|_| {})),
        ),
        ("garbage", "not-a-jwt".to_owned()),
    ];
    for (what, token) in cases {
        let r = call_modern(addr, Some(&token)).await;
        assert_eq!(r.status, 401, "{what}: {}", r.body);
        let challenge = r.header("www-authenticate").unwrap_or_default();
        assert!(
            challenge.starts_with(r#"Bearer error="invalid_token""#),
            "{what}: {challenge}"
        );
        assert!(
            !r.body.contains(&token) && !challenge.contains(&token),
            "{what}: the token is echoed"
        );
    }
}

#[tokio::test]
async fn a_token_without_the_scope_is_403_insufficient_scope() {
    let addr = jwt_server().await;
    let r = call_modern(
        addr,
        Some(&es256(&claims(|c| c["scope"] = json!("profile")))),
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.body);
    let challenge = r.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.starts_with(r#"Bearer error="insufficient_scope", scope="mcp:tools""#),
        "{challenge}"
    );
}

#[tokio::test]
async fn api_keys_let_in_their_principals_only() {
    let keys = ApiKeys::new()
        .with(ApiKey::new(
            "ci",
            "key-ci-0123456789",
            Principal::new("ci-bot").with_scopes(["mcp:tools"]),
        ))
        .with(ApiKey::new(
            "ro",
            "key-ro-0123456789",
            Principal::new("reader"),
        ));
    let addr = start(Authorization::new(keys, resource()).require_scopes(["mcp:tools"])).await;
    let r = call_modern(addr, Some("key-ci-0123456789")).await;
    assert_eq!(
        (r.status, text_of(&r)),
        (200, "ci-bot [mcp:tools]".to_owned())
    );
    assert_eq!(
        call_modern(addr, Some("key-ci-012345678")).await.status,
        401
    );
    assert_eq!(call_modern(addr, None).await.status, 401);
    assert_eq!(
        call_modern(addr, Some("key-ro-0123456789")).await.status,
        403
    );
}

#[tokio::test]
async fn a_legacy_session_stays_with_the_subject_that_opened_it() {
    let addr = jwt_server().await;
    let alice = format!("Bearer {}", rs256(&claims(|_| {})));
    let bob = format!("Bearer {}", rs256(&claims(|c| c["sub"] = json!("bob"))));
    let base = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let mut h = base.to_vec();
    h.push(("authorization", &alice));
    let r = request(addr, "POST", "/mcp", &h, &init.to_string()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let session = r.header("mcp-session-id").expect("session id").to_owned();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "whoami", "arguments": {}}});
    let with = |who: &str| {
        let mut h = base.to_vec();
        h.push((
            "mcp-session-id",
            Box::leak(session.clone().into_boxed_str()),
        ));
        h.push(("mcp-protocol-version", "2025-06-18"));
        h.push(("authorization", Box::leak(who.to_owned().into_boxed_str())));
        h
    };
    let r = request(addr, "POST", "/mcp", &with(&alice), &call.to_string()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("alice [mcp:tools profile]"), "{}", r.body);
    // A token reissued with fewer scopes narrows what the session's requests carry.
    let narrower = format!(
        "Bearer {}",
        rs256(&claims(|c| c["scope"] = json!("mcp:tools")))
    );
    let r = request(addr, "POST", "/mcp", &with(&narrower), &call.to_string()).await;
    assert!(r.body.contains("alice [mcp:tools]"), "{}", r.body);
    let r = request(addr, "POST", "/mcp", &with(&bob), &call.to_string()).await;
    assert_eq!(
        r.status, 404,
        "another subject's token must not reach the session: {}",
        r.body
    );
    assert_eq!(
        request(addr, "DELETE", "/mcp", &with(&bob), "")
            .await
            .status,
        404
    );
    assert_eq!(
        request(addr, "DELETE", "/mcp", &with(&alice), "")
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn without_authorization_there_is_no_metadata_and_no_principal() {
    let (addr, _task) = bind(
        "127.0.0.1:0".parse().expect("address"),
        server(),
        HttpOptions::default(),
    )
    .await
    .expect("bind");
    assert_eq!(
        request(
            addr,
            "GET",
            "/.well-known/oauth-protected-resource",
            &[],
            ""
        )
        .await
        .status,
        404
    );
    let r = call_modern(addr, Some("anything")).await;
    assert_eq!((r.status, text_of(&r)), (200, "nobody".to_owned()));
}

#[tokio::test]
async fn the_handler_sees_the_http_request_without_its_credentials() {
    let addr = jwt_server().await;
    let token = rs256(&claims(|_| {}));
    let extra = [("user-agent", "sdk/1.0"), ("cookie", "session=secret")];
    let r = call_modern_tool(addr, Some(&token), "request", &extra).await;
    assert_eq!(text_of(&r), "POST /mcp ua=sdk/1.0 credentials=false");
}

/// Metrics name everything the endpoint serves: with tokens required they are not served,
/// to a token holder or anyone; without, they are.
#[tokio::test]
async fn metrics_are_not_served_where_tokens_are_required() {
    struct Names;
    impl mcp_server::http::Metrics for Names {
        fn render(&self) -> String {
            "every_upstream_and_tool 1\n".into()
        }
    }
    async fn get(addr: std::net::SocketAddr, token: Option<&str>) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
        let req = format!(
            "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n{auth}Connection: close\r\n\r\n",
            addr.port()
        );
        s.write_all(req.as_bytes()).await.expect("write");
        let mut out = String::new();
        s.read_to_string(&mut out).await.expect("read");
        out
    }
    let keys = ApiKeys::new().with(ApiKey::new(
        "ci",
        "key-ci-0123456789",
        Principal::new("ci-bot").with_scopes(["mcp:tools"]),
    ));
    let auth = Authorization::new(keys, resource()).require_scopes(["mcp:tools"]);
    let metrics: std::sync::Arc<dyn mcp_server::http::Metrics> = std::sync::Arc::new(Names);
    let protected = HttpOptions::default()
        .authorization(auth)
        .metrics(metrics.clone());
    let (addr, _task) = bind("127.0.0.1:0".parse().expect("address"), server(), protected)
        .await
        .expect("bind");
    for token in [Some("key-ci-0123456789"), None] {
        let answer = get(addr, token).await;
        assert!(!answer.contains("every_upstream_and_tool"), "{answer}");
    }
    let open = HttpOptions::default().metrics(metrics);
    let (addr, _task) = bind("127.0.0.1:0".parse().expect("address"), server(), open)
        .await
        .expect("bind");
    let answer = get(addr, None).await;
    assert!(
        answer.starts_with("HTTP/1.1 200") && answer.contains("every_upstream_and_tool"),
        "{answer}"
    );
}
