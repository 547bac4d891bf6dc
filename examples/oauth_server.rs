//! A small OAuth 2.1 authorization server on 127.0.0.1 for tests and demonstrations: it
//! grants at once (no user), issues `access-1`, `access-2`, … and notes every request,
//! so a test can say what a client asked for. Not for anything but loopback.
//!
//! It serves RFC 8414 metadata at `/.well-known/oauth-authorization-server`, `/authorize`
//! (straight back to the redirect URI with a code and the `state`), `/token`
//! (`authorization_code`, `refresh_token`, `client_credentials`), and, when told its
//! resource is at its own address, that resource's RFC 9728 metadata at
//! `/.well-known/oauth-protected-resource/mcp`.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server saw.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    /// Each token request: its `grant_type`, then ` ok` or ` refused`.
    pub grants: Vec<String>,
    /// Authorization requests made.
    pub authorizations: usize,
    /// The `resource` of each token request.
    pub resources: Vec<String>,
    /// Each token request's `Authorization` header, if any.
    pub client_auth: Vec<Option<String>>,
}

#[derive(Default)]
struct State {
    seen: Seen,
    revoked: bool,
    issued: usize,
}

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct AuthServerOptions {
    /// `expires_in` of every access token.
    pub expires_in: u64,
    /// Whether it serves, as well, the protected resource metadata of a resource at its
    /// own address (`{issuer}/mcp`), naming itself the authorization server: for a test
    /// whose client is told of a refusal without a real MCP server behind it.
    pub own_resource: bool,
}

impl Default for AuthServerOptions {
    fn default() -> Self {
        AuthServerOptions {
            expires_in: 3600,
            own_resource: false,
        }
    }
}

/// A running test authorization server.
#[derive(Clone)]
pub struct TestAuthorizationServer {
    base: String,
    state: Arc<Mutex<State>>,
}

impl TestAuthorizationServer {
    /// Starts one on a free port of 127.0.0.1.
    pub async fn start(options: AuthServerOptions) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let server = TestAuthorizationServer {
            base,
            state: Arc::default(),
        };
        let me = server.clone();
        tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                let (me, options) = (me.clone(), options.clone());
                tokio::spawn(async move { me.serve(s, &options).await });
            }
        });
        Ok(server)
    }

    /// Its issuer identifier (and base URL).
    pub fn issuer(&self) -> &str {
        &self.base
    }

    /// What it saw so far.
    pub fn seen(&self) -> Seen {
        self.state
            .lock()
            .map(|s| s.seen.clone())
            .unwrap_or_default()
    }

    /// From now on it refuses every refresh token.
    pub fn revoke_refresh_tokens(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.revoked = true;
        }
    }

    async fn serve(&self, mut s: TcpStream, options: &AuthServerOptions) {
        let Some(request) = read_request(&mut s).await else {
            return;
        };
        let base = &self.base;
        let target = request.target.clone();
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        let reply = match path {
            "/.well-known/oauth-protected-resource/mcp" if options.own_resource => json_reply(
                "200 OK",
                &json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]}),
            ),
            "/.well-known/oauth-authorization-server" => json_reply(
                "200 OK",
                &json!({"issuer": base, "authorization_endpoint": format!("{base}/authorize"),
                        "token_endpoint": format!("{base}/token"),
                        "code_challenge_methods_supported": ["S256"],
                        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
                        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"]}),
            ),
            "/authorize" => {
                let n = self.with_state(|s| {
                    s.seen.authorizations += 1;
                    s.seen.authorizations
                });
                let back = format!(
                    "{}?code=code-{n}&state={}",
                    param(query, "redirect_uri").unwrap_or_default(),
                    param(query, "state").unwrap_or_default()
                );
                format!("HTTP/1.1 302 Found\r\nlocation: {back}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            }
            "/token" => self.token(&request, options),
            _ => json_reply("404 Not Found", &json!({})),
        };
        let _ = s.write_all(reply.as_bytes()).await;
    }

    fn token(&self, request: &Request, options: &AuthServerOptions) -> String {
        let body = &request.body;
        let grant = param(body, "grant_type").unwrap_or_default();
        self.with_state(|s| {
            s.seen
                .resources
                .push(param(body, "resource").unwrap_or_default());
            s.seen.client_auth.push(request.authorization.clone());
            let refused = grant == "refresh_token"
                && (s.revoked || param(body, "refresh_token").as_deref() != Some("refresh-1"));
            let verdict = if refused { "refused" } else { "ok" };
            s.seen.grants.push(format!("{grant} {verdict}"));
            if refused {
                return json_reply("400 Bad Request", &json!({"error": "invalid_grant"}));
            }
            s.issued += 1;
            let mut t = json!({"access_token": format!("access-{}", s.issued),
                               "token_type": "Bearer", "expires_in": options.expires_in});
            if grant == "authorization_code" {
                t["refresh_token"] = json!("refresh-1");
            }
            json_reply("200 OK", &t)
        })
    }

    fn with_state<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        match self.state.lock() {
            Ok(mut s) => f(&mut s),
            Err(p) => f(&mut p.into_inner()),
        }
    }
}

struct Request {
    target: String,
    authorization: Option<String>,
    body: String,
}

fn json_reply(status: &str, v: &Value) -> String {
    let body = v.to_string();
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// `name`'s value in a form or query string, percent-decoded.
fn param(pairs: &str, name: &str) -> Option<String> {
    pairs.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == name).then(|| decode(v))
    })
}

fn decode(v: &str) -> String {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One HTTP/1.1 request: its target, `Authorization` header and body (by
/// `content-length`, 64 KiB at most).
async fn read_request(s: &mut TcpStream) -> Option<Request> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while buf.len() < 64 * 1024 {
        let n = s.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).into_owned();
        let Some(end) = text.find("\r\n\r\n") else {
            continue;
        };
        let head = &text[..end];
        let header = |name: &str| {
            head.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
            })
        };
        let length: usize = header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if buf.len() >= end + 4 + length {
            let line = head.lines().next().unwrap_or("");
            return Some(Request {
                target: line.split(' ').nth(1).unwrap_or("").to_owned(),
                authorization: header("authorization"),
                body: text.get(end + 4..end + 4 + length).unwrap_or("").to_owned(),
            });
        }
    }
    None
}
