//! MCP authorization on a real HTTP server: JWT access tokens checked against a JWKS (RS256
//! and ES256), API keys, scopes, the protected resource metadata, legacy sessions bound to
//! the subject that opened them, and the principal as the handler sees it. The tokens are
//! made here with keys in `tests/data/auth` (test keys, never used elsewhere).

use std::net::SocketAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_server::auth::{
    ApiKey, ApiKeys, Authorization, JwkSet, JwtAuthenticator, JwtOptions, Principal,
    ProtectedResource,
};
use mcp_server::http::{bind, HttpOptions};
use mcp_server::{NoArgs, Outcome, RequestContext, Server, ToolRegistry};
use mcp_types::protocol::{CallToolResult, ContentBlock};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ISSUER: &str = "https://auth.example.com";
const RESOURCE: &str = "https://mcp.example.com/mcp";

fn data(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/auth/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Good claims, with `edit` applied.
fn claims(edit: impl FnOnce(&mut Value)) -> Value {
    let mut c = json!({
        "iss": ISSUER, "aud": RESOURCE, "sub": "alice",
        "exp": now() + 600, "nbf": now() - 10, "iat": now() - 10,
        "scope": "mcp:tools profile",
    });
    edit(&mut c);
    c
}

fn rs256(claims: &Value) -> String {
    sign(
        Algorithm::RS256,
        "rsa-1",
        &EncodingKey::from_rsa_pem(&data("rsa.pem")).expect("rsa key"),
        claims,
    )
}

fn es256(claims: &Value) -> String {
    sign(
        Algorithm::ES256,
        "ec-1",
        &EncodingKey::from_ec_pem(&data("ec.pem")).expect("ec key"),
        claims,
    )
}

fn sign(alg: Algorithm, kid: &str, key: &EncodingKey, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = Some(kid.into());
    jsonwebtoken::encode(&header, claims, key).expect("token")
}

fn b64(bytes: &[u8]) -> String {
    use std::fmt::Write;
    // Unpadded base64url, enough for hand-made token parts.
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, b| n << 8 | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            let _ = out.write_char(A[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

/// A server whose `whoami` tool answers with the principal the handler sees.
fn server() -> Server {
    let mut tools = ToolRegistry::new();
    tools.tool(
        "whoami",
        "Who the request is for.",
        |_: NoArgs, ctx: RequestContext| async move {
            let who = match ctx.principal() {
                Some(p) => format!("{} [{}]", p.subject, p.scopes.join(" ")),
                None => "nobody".into(),
            };
            Ok(Outcome::Complete(CallToolResult {
                content: vec![ContentBlock::text(who)],
                ..Default::default()
            }))
        },
    );
    Server::new(tools)
}

fn resource() -> ProtectedResource {
    ProtectedResource::new(RESOURCE)
        .expect("resource")
        .authorization_server(ISSUER)
        .scopes_supported(["mcp:tools"])
}

async fn start(auth: Authorization) -> SocketAddr {
    let options = HttpOptions::default().authorization(auth);
    let (addr, _task) = bind("127.0.0.1:0".parse().expect("address"), server(), options)
        .await
        .expect("bind");
    addr
}

async fn jwt_server() -> SocketAddr {
    let keys =
        JwkSet::parse(std::str::from_utf8(&data("jwks.json")).expect("utf-8")).expect("jwks");
    let jwt = JwtAuthenticator::new(keys, JwtOptions::new(ISSUER, RESOURCE));
    start(Authorization::new(jwt, resource()).require_scopes(["mcp:tools"])).await
}

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// One HTTP/1.1 request on a fresh connection, read to its end.
async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).await.expect("write");
    s.write_all(body.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.expect("read");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .expect("status");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked {
        unchunk(body)
    } else {
        body.to_owned()
    };
    Reply {
        status,
        headers,
        body,
    }
}

fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// A 2026-07-28 `tools/call` of `whoami`.
async fn call_modern(addr: SocketAddr, token: Option<&str>) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "whoami", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "whoami"),
    ];
    if let Some(a) = &auth {
        headers.push(("authorization", a));
    }
    request(addr, "POST", "/mcp", &headers, &body.to_string()).await
}

fn text_of(reply: &Reply) -> String {
    let v = reply.json();
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{v}"))
        .to_owned()
}

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
