//! Keys fetched from the authorization server: its `jwks_uri` discovered from its RFC 8414
//! metadata, cached, fetched again when a token names an unknown key id (rotation), but at
//! most every `min_refetch`, so forged key ids cannot make every request a fetch.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_proxy::jwks::JwksUri;
use mcp_server::auth::{Authenticator, JwtAuthenticator, JwtOptions, Refusal};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const AUDIENCE: &str = "https://gw.example.com/mcp";

fn data(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../mcp-server/tests/data/auth/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The test JWKS with only the keys whose ids are in `kids`.
fn jwks(kids: &[&str]) -> String {
    let all: Value = serde_json::from_slice(&data("jwks.json")).expect("jwks");
    let keys: Vec<Value> = all["keys"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|k| k["kid"].as_str().is_some_and(|kid| kids.contains(&kid)))
        .cloned()
        .collect();
    json!({"keys": keys}).to_string()
}

/// An authorization server on 127.0.0.1: its metadata, and the JWKS `current` holds.
struct Issuer {
    base: String,
    current: Arc<Mutex<String>>,
    fetches: Arc<AtomicUsize>,
}

async fn issuer(first: String) -> Issuer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let current = Arc::new(Mutex::new(first));
    let fetches = Arc::new(AtomicUsize::new(0));
    let (jwks, count, me) = (current.clone(), fetches.clone(), base.clone());
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let mut buf = vec![0u8; 4096];
            let n = s.read(&mut buf).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).into_owned();
            let path = head.split(' ').nth(1).unwrap_or("").to_owned();
            let (status, body) = match path.as_str() {
                "/.well-known/oauth-authorization-server" => (
                    "200 OK",
                    json!({"issuer": me, "jwks_uri": format!("{me}/jwks")}).to_string(),
                ),
                "/jwks" => {
                    count.fetch_add(1, Ordering::SeqCst);
                    ("200 OK", jwks.lock().map(|j| j.clone()).unwrap_or_default())
                }
                _ => ("404 Not Found", String::new()),
            };
            let reply = format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = s.write_all(reply.as_bytes()).await;
        }
    });
    Issuer {
        base,
        current,
        fetches,
    }
}

fn token(issuer: &str, alg: Algorithm, kid: &str, pem: &str) -> String {
    let key = match alg {
        Algorithm::ES256 => EncodingKey::from_ec_pem(&data(pem)),
        _ => EncodingKey::from_rsa_pem(&data(pem)),
    }
    .expect("key");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut header = Header::new(alg);
    header.kid = Some(kid.into());
    let claims = json!({"iss": issuer, "aud": AUDIENCE, "sub": "alice", "exp": now + 600});
    jsonwebtoken::encode(&header, &claims, &key).expect("token")
}

fn request(token: &str) -> http::request::Parts {
    let (parts, ()) = http::Request::post("/mcp")
        .header("authorization", format!("Bearer {token}"))
        .body(())
        .expect("request")
        .into_parts();
    parts
}

#[tokio::test]
async fn keys_are_discovered_cached_and_rotated_at_a_bounded_rate() {
    let issuer = issuer(jwks(&["ec-1"])).await;
    let keys = JwksUri::discover(issuer.base.clone()).min_refetch(Duration::from_millis(300));
    let jwt = JwtAuthenticator::new(keys, JwtOptions::new(issuer.base.clone(), AUDIENCE));
    let es = token(&issuer.base, Algorithm::ES256, "ec-1", "ec.pem");
    let rs = token(&issuer.base, Algorithm::RS256, "rsa-1", "rsa.pem");

    let p = jwt
        .authenticate(&request(&es))
        .await
        .expect("a key of the first fetch");
    assert_eq!(p.subject, "alice");
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1);
    // The RSA key is not published yet: refused.
    assert!(matches!(
        jwt.authenticate(&request(&rs)).await,
        Err(Refusal::InvalidToken(_))
    ));
    // Published now; but a fetch was just made, and unknown key ids do not force another.
    if let Ok(mut j) = issuer.current.lock() {
        *j = jwks(&["ec-1", "rsa-1"]);
    }
    for _ in 0..20 {
        assert!(jwt.authenticate(&request(&rs)).await.is_err());
    }
    assert_eq!(
        issuer.fetches.load(Ordering::SeqCst),
        1,
        "forged or new key ids are rate limited"
    );
    // The refetch interval passing is the behaviour under test: the key set's rate limit
    // reads the real clock (std's Instant) and the issuer is real HTTP, so neither an event
    // nor paused time can stand in. 350 ms, just past the 300 ms interval.
    tokio::time::sleep(Duration::from_millis(350)).await;
    let p = jwt
        .authenticate(&request(&rs))
        .await
        .expect("the rotated key, fetched");
    assert_eq!(p.subject, "alice");
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 2);
    // Known keys are served from the cache.
    for _ in 0..20 {
        jwt.authenticate(&request(&es)).await.expect("cached");
    }
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_issuer_that_cannot_be_reached_refuses_tokens_without_a_fetch_per_request() {
    let keys = JwksUri::new("http://127.0.0.1:9/jwks").min_refetch(Duration::from_secs(60));
    let jwt = JwtAuthenticator::new(keys, JwtOptions::new("http://127.0.0.1:9", AUDIENCE));
    let rs = token("http://127.0.0.1:9", Algorithm::RS256, "rsa-1", "rsa.pem");
    let started = std::time::Instant::now();
    for _ in 0..50 {
        assert!(matches!(
            jwt.authenticate(&request(&rs)).await,
            Err(Refusal::InvalidToken(_))
        ));
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "one failed fetch, not fifty"
    );
}

/// The `Authorization` of a gateway file whose `gateway.auth.jwt` is `jwt` (issuer and
/// audience added).
fn configured(issuer: &str, jwt: Value) -> mcp_server::auth::Authorization {
    let mut jwt = jwt;
    jwt["issuer"] = json!(issuer);
    let text = json!({"mcpServers": {}, "gateway": {"auth": {"resource": AUDIENCE, "jwt": jwt}}});
    mcp_proxy::config::parse(&text.to_string(), "gateway.json")
        .unwrap_or_else(|e| panic!("{e}"))
        .authorization
        .expect("an authorization")
}

#[tokio::test]
async fn a_key_the_issuer_withdraws_is_refused_within_jwks_refresh_seconds() {
    let issuer = issuer(jwks(&["ec-1", "rsa-1"])).await;
    let auth = configured(
        &issuer.base,
        json!({"jwksUri": format!("{}/jwks", issuer.base), "jwksRefreshSeconds": 1}),
    );
    let (a, b) = (
        token(&issuer.base, Algorithm::ES256, "ec-1", "ec.pem"),
        token(&issuer.base, Algorithm::RS256, "rsa-1", "rsa.pem"),
    );
    auth.check(&request(&b)).await.expect("key B is published");
    // The keys in use were fetched by now.
    let fetched_by = tokio::time::Instant::now();
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1);

    if let Ok(mut j) = issuer.current.lock() {
        *j = jwks(&["ec-1"]);
    }
    tokio::time::sleep_until(fetched_by + Duration::from_secs(1)).await;
    assert!(
        matches!(
            auth.check(&request(&b)).await,
            Err(Refusal::InvalidToken(_))
        ),
        "a token of the withdrawn key is refused once the keys are a second old"
    );
    auth.check(&request(&a))
        .await
        .expect("key A, still published, still works");
}

#[tokio::test]
async fn a_failing_issuer_leaves_the_last_keys_in_force_until_max_stale() {
    let issuer = issuer(jwks(&["ec-1"])).await;
    let keys = JwksUri::new(format!("{}/jwks", issuer.base))
        .max_age(Duration::from_millis(100))
        .max_stale(Duration::from_secs(2));
    let jwt = JwtAuthenticator::new(keys, JwtOptions::new(issuer.base.clone(), AUDIENCE));
    let es = token(&issuer.base, Algorithm::ES256, "ec-1", "ec.pem");
    jwt.authenticate(&request(&es)).await.expect("fetched");
    let fetched_by = tokio::time::Instant::now();

    // The issuer now answers with something that is not a JWKS.
    if let Ok(mut j) = issuer.current.lock() {
        *j = "<html>maintenance</html>".into();
    }
    tokio::time::sleep_until(fetched_by + Duration::from_millis(100)).await;
    jwt.authenticate(&request(&es))
        .await
        .expect("a failed fetch keeps the last keys");
    assert_eq!(
        issuer.fetches.load(Ordering::SeqCst),
        2,
        "the old keys were fetched again, and that failed"
    );

    tokio::time::sleep_until(fetched_by + Duration::from_secs(2)).await;
    assert!(
        matches!(
            jwt.authenticate(&request(&es)).await,
            Err(Refusal::InvalidToken(_))
        ),
        "keys older than max_stale are not used"
    );
    let refused_by = tokio::time::Instant::now();

    // The issuer back: its keys are taken at the next fetch.
    if let Ok(mut j) = issuer.current.lock() {
        *j = jwks(&["ec-1"]);
    }
    tokio::time::sleep_until(refused_by + Duration::from_millis(100)).await;
    jwt.authenticate(&request(&es))
        .await
        .expect("fetched again once the issuer answers");
}

#[tokio::test]
async fn a_max_age_past_max_stale_still_fetches_before_the_keys_go_stale() {
    let issuer = issuer(jwks(&["ec-1"])).await;
    // An operator's refresh longer than the staleness bound: the keys must be fetched
    // again by the time they are too old to use, not only once `max_age` has passed.
    let keys = JwksUri::new(format!("{}/jwks", issuer.base))
        .max_age(Duration::from_secs(60))
        .max_stale(Duration::from_millis(300));
    let jwt = JwtAuthenticator::new(keys, JwtOptions::new(issuer.base.clone(), AUDIENCE));
    let es = token(&issuer.base, Algorithm::ES256, "ec-1", "ec.pem");
    jwt.authenticate(&request(&es)).await.expect("fetched");
    let fetched_by = tokio::time::Instant::now();
    tokio::time::sleep_until(fetched_by + Duration::from_millis(300)).await;
    jwt.authenticate(&request(&es))
        .await
        .expect("the issuer answers, so its keys are fetched again and the token passes");
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 2);
}

/// A JWKS file of its own, removed when dropped.
struct TempFile(std::path::PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tokio::test]
async fn a_key_removed_from_a_jwks_file_is_refused_within_jwks_refresh_seconds() {
    let file = TempFile(
        std::env::temp_dir().join(format!("gateway-jwks-refresh-{}.json", std::process::id())),
    );
    std::fs::write(&file.0, jwks(&["ec-1", "rsa-1"])).expect("write the JWKS");
    let issuer = "https://auth.example.com";
    let auth = configured(issuer, json!({"jwksFile": file.0, "jwksRefreshSeconds": 1}));
    let (a, b) = (
        token(issuer, Algorithm::ES256, "ec-1", "ec.pem"),
        token(issuer, Algorithm::RS256, "rsa-1", "rsa.pem"),
    );
    auth.check(&request(&b))
        .await
        .expect("key B is in the file");

    std::fs::write(&file.0, jwks(&["ec-1"])).expect("rewrite the JWKS");
    // The file was last read before it was rewritten.
    let written = tokio::time::Instant::now();
    tokio::time::sleep_until(written + Duration::from_secs(1)).await;
    assert!(
        matches!(
            auth.check(&request(&b)).await,
            Err(Refusal::InvalidToken(_))
        ),
        "a token of the removed key is refused a second after the change, not five"
    );
    auth.check(&request(&a)).await.expect("key A still works");
}
