//! Token renewal against an authorization server on 127.0.0.1: a token with a refresh
//! token is refreshed before it expires, without the user; a refresh token the server no
//! longer takes leads back to authorization; the store holds what was last had.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::auth::{
    AuthProvider, ClientIdentity, FollowRedirects, MemoryStore, OAuth, OAuthOptions, Refused,
    TokenStore,
};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the authorization server saw, and whether it still takes refresh tokens.
#[derive(Default)]
struct Seen {
    /// `grant_type` of each token request, with `ok`/`refused`.
    grants: Vec<String>,
    authorizations: usize,
    revoked: bool,
    issued: usize,
    /// The `resource` of each token request.
    resources: Vec<String>,
}

fn decode(v: &str) -> String {
    let b = v.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("00");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn param(pairs: &str, name: &str) -> Option<String> {
    pairs.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == name).then(|| decode(v))
    })
}

/// Reads one HTTP/1.1 request: the request line and the body (by `content-length`).
async fn read_request(s: &mut tokio::net::TcpStream) -> Option<(String, String)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
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
        let length = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .unwrap_or(0usize);
        if buf.len() >= end + 4 + length {
            let line = head.lines().next().unwrap_or("").to_owned();
            return Some((line, text[end + 4..end + 4 + length].to_owned()));
        }
    }
}

async fn authorization_server(seen: Arc<Mutex<Seen>>, expires_in: u64) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let me = base.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let (seen, base) = (seen.clone(), me.clone());
            tokio::spawn(async move {
                let Some((line, body)) = read_request(&mut s).await else {
                    return;
                };
                let target = line.split(' ').nth(1).unwrap_or("").to_owned();
                let (path, query) = target.split_once('?').unwrap_or((&target, ""));
                let json_reply = |status: &str, v: serde_json::Value| {
                    let body = v.to_string();
                    format!("HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len())
                };
                let reply = match path {
                    "/.well-known/oauth-protected-resource/mcp" => json_reply(
                        "200 OK",
                        json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]}),
                    ),
                    "/.well-known/oauth-authorization-server" => json_reply(
                        "200 OK",
                        json!({"issuer": base, "authorization_endpoint": format!("{base}/authorize"),
                               "token_endpoint": format!("{base}/token"),
                               "code_challenge_methods_supported": ["S256"],
                               "grant_types_supported": ["authorization_code", "refresh_token"]}),
                    ),
                    "/authorize" => {
                        let n = seen
                            .lock()
                            .map(|mut s| {
                                s.authorizations += 1;
                                s.authorizations
                            })
                            .unwrap_or(0);
                        let back = format!(
                            "{}?code=code-{n}&state={}",
                            param(query, "redirect_uri").unwrap_or_default(),
                            param(query, "state").unwrap_or_default()
                        );
                        format!("HTTP/1.1 302 Found\r\nlocation: {back}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    }
                    "/token" => {
                        let grant = param(&body, "grant_type").unwrap_or_default();
                        let mut s = seen.lock().expect("seen");
                        s.resources
                            .push(param(&body, "resource").unwrap_or_default());
                        let refused = grant == "refresh_token"
                            && (s.revoked
                                || param(&body, "refresh_token").as_deref() != Some("refresh-1"));
                        s.grants.push(format!(
                            "{grant} {}",
                            if refused { "refused" } else { "ok" }
                        ));
                        if refused {
                            json_reply("400 Bad Request", json!({"error": "invalid_grant"}))
                        } else {
                            s.issued += 1;
                            let mut t = json!({"access_token": format!("access-{}", s.issued),
                                               "token_type": "Bearer", "expires_in": expires_in});
                            if grant == "authorization_code" {
                                t["refresh_token"] = json!("refresh-1");
                            }
                            json_reply("200 OK", t)
                        }
                    }
                    _ => json_reply("404 Not Found", json!({})),
                };
                let _ = s.write_all(reply.as_bytes()).await;
            });
        }
    });
    base
}

async fn token_becomes(oauth: &OAuth, want: &str) -> bool {
    for _ in 0..100 {
        if oauth.access_token().as_deref() == Some(want) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn a_token_is_refreshed_before_it_expires_and_a_revoked_refresh_token_leads_back_to_authorization(
) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let base = authorization_server(seen.clone(), 2).await;
    let endpoint = format!("{base}/mcp");
    let store: Arc<dyn TokenStore> = Arc::new(MemoryStore::default());
    let mut options = OAuthOptions::new("renewal test", "http://127.0.0.1:9/callback");
    options.client = Some(ClientIdentity::public("client-1"));
    options.store = Some((store.clone(), endpoint.clone()));
    let oauth = OAuth::new(options, FollowRedirects);

    oauth
        .unauthorized(Refused::new(&endpoint, None, None))
        .await
        .expect("authorized");
    assert_eq!(oauth.access_token().as_deref(), Some("access-1"));

    // Half its two seconds on, the token is renewed by its refresh token, unasked.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(
        token_becomes(&oauth, "access-2").await,
        "refreshed ahead of expiry"
    );
    assert_eq!(
        store.load(&endpoint).map(|t| t.access_token).as_deref(),
        Some("access-2")
    );
    {
        let mut s = seen.lock().expect("seen");
        assert_eq!(s.grants, ["authorization_code ok", "refresh_token ok"]);
        assert_eq!(s.authorizations, 1, "no user asked for the refresh");
        assert!(
            s.resources.iter().all(|r| *r == endpoint),
            "{:?}",
            s.resources
        );
        s.revoked = true;
    }

    // The server refuses the token and no longer takes the refresh token: authorize again.
    oauth
        .unauthorized(Refused::new(&endpoint, None, Some("access-2".into())))
        .await
        .expect("authorized again");
    assert_eq!(oauth.access_token().as_deref(), Some("access-3"));
    let s = seen.lock().expect("seen");
    assert_eq!(
        s.grants,
        [
            "authorization_code ok",
            "refresh_token ok",
            "refresh_token refused",
            "authorization_code ok"
        ]
    );
    assert_eq!(s.authorizations, 2);
    assert_eq!(
        store.load(&endpoint).map(|t| t.access_token).as_deref(),
        Some("access-3")
    );
}
