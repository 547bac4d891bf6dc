//! Shared by the authorization tests: tokens made with the keys in `tests/data/auth`, a
//! server whose `whoami` tool says who the handler sees, and a raw HTTP/1.1 client.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_server::auth::{Authorization, JwkSet, JwtAuthenticator, JwtOptions, ProtectedResource};
use mcp_server::http::{bind, HttpOptions};
use mcp_server::{NoArgs, Outcome, RequestContext, Server, ToolRegistry};
use mcp_types::protocol::{CallToolResult, ContentBlock};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub const ISSUER: &str = "https://auth.example.com";
pub const RESOURCE: &str = "https://mcp.example.com/mcp";

pub fn data(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/auth/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Good claims, with `edit` applied.
pub fn claims(edit: impl FnOnce(&mut Value)) -> Value {
    let mut c = json!({
        "iss": ISSUER, "aud": RESOURCE, "sub": "alice",
        "exp": now() + 600, "nbf": now() - 10, "iat": now() - 10,
        "scope": "mcp:tools profile",
    });
    edit(&mut c);
    c
}

pub fn rs256(claims: &Value) -> String {
    sign(
        Algorithm::RS256,
        "rsa-1",
        &EncodingKey::from_rsa_pem(&data("rsa.pem")).expect("rsa key"),
        claims,
    )
}

pub fn es256(claims: &Value) -> String {
    sign(
        Algorithm::ES256,
        "ec-1",
        &EncodingKey::from_ec_pem(&data("ec.pem")).expect("ec key"),
        claims,
    )
}

pub fn sign(alg: Algorithm, kid: &str, key: &EncodingKey, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = Some(kid.into());
    jsonwebtoken::encode(&header, claims, key).expect("token")
}

pub fn b64(bytes: &[u8]) -> String {
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
pub fn server() -> Server {
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
    tools.tool(
        "request",
        "What the handler sees of the HTTP request.",
        |_: NoArgs, ctx: RequestContext| async move {
            let seen = match ctx.http_request() {
                Some(r) => format!(
                    "{} {} ua={} credentials={}",
                    r.method,
                    r.uri.path(),
                    r.headers
                        .get("user-agent")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("-"),
                    ["authorization", "cookie", "proxy-authorization"]
                        .iter()
                        .any(|h| r.headers.contains_key(*h))
                ),
                None => "no http".into(),
            };
            Ok(Outcome::Complete(CallToolResult {
                content: vec![ContentBlock::text(seen)],
                ..Default::default()
            }))
        },
    );
    Server::new(tools)
}

pub fn resource() -> ProtectedResource {
    ProtectedResource::new(RESOURCE)
        .expect("resource")
        .authorization_server(ISSUER)
        .scopes_supported(["mcp:tools"])
}

pub async fn start(auth: Authorization) -> SocketAddr {
    let options = HttpOptions::default().authorization(auth);
    let (addr, _task) = bind("127.0.0.1:0".parse().expect("address"), server(), options)
        .await
        .expect("bind");
    addr
}

pub async fn jwt_server() -> SocketAddr {
    let keys =
        JwkSet::parse(std::str::from_utf8(&data("jwks.json")).expect("utf-8")).expect("jwks");
    let jwt = JwtAuthenticator::new(keys, JwtOptions::new(ISSUER, RESOURCE));
    start(Authorization::new(jwt, resource()).require_scopes(["mcp:tools"])).await
}

pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// One HTTP/1.1 request on a fresh connection, read to its end.
pub async fn request(
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

pub fn unchunk(mut body: &str) -> String {
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
pub async fn call_modern(addr: SocketAddr, token: Option<&str>) -> Reply {
    call_modern_tool(addr, token, "whoami", &[]).await
}

/// A 2026-07-28 `tools/call` of `tool`, with `extra` headers.
pub async fn call_modern_tool(
    addr: SocketAddr,
    token: Option<&str>,
    tool: &str,
    extra: &[(&str, &str)],
) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", tool),
    ];
    headers.extend_from_slice(extra);
    if let Some(a) = &auth {
        headers.push(("authorization", a));
    }
    request(addr, "POST", "/mcp", &headers, &body.to_string()).await
}

pub fn text_of(reply: &Reply) -> String {
    let v = reply.json();
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{v}"))
        .to_owned()
}
