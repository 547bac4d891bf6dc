//! A `JwksFile` follows its file within its documented bound (5 s by default): a key
//! removed from the file is refused for tokens checked 5 s after the change, on tokio's
//! paused clock, while the keys left go on working; a half-written file keeps the last
//! good set; the file mended, its keys are taken again.

use std::path::PathBuf;
use std::time::Duration;

use mcp_server::auth::{Authenticator, JwksFile, JwtAuthenticator, JwtOptions, Refusal};
use serde_json::{json, Value};

mod auth_common;
use auth_common::*;

/// The bound `JwksFile` documents when not told otherwise.
const DEFAULT_MAX_AGE: Duration = Duration::from_secs(5);

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

/// A file of its own in the system's temporary folder, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, text: &str) -> Self {
        let path = std::env::temp_dir().join(format!("{name}-{}.json", std::process::id()));
        std::fs::write(&path, text).expect("write the JWKS");
        TempFile(path)
    }

    fn write(&self, text: &str) {
        std::fs::write(&self.0, text).expect("rewrite the JWKS");
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn request(token: &str) -> http::request::Parts {
    let (parts, ()) = http::Request::post("/mcp")
        .header("authorization", format!("Bearer {token}"))
        .body(())
        .expect("request")
        .into_parts();
    parts
}

#[tokio::test(start_paused = true)]
async fn a_key_removed_from_the_file_is_refused_within_the_default_bound() {
    let file = TempFile::new("jwks-file-removal", &jwks(&["rsa-1", "ec-1"]));
    let keys = JwksFile::open(&file.0).expect("a usable JWKS");
    let jwt = JwtAuthenticator::new(keys, JwtOptions::new(ISSUER, RESOURCE));
    let (a, b) = (es256(&claims(|_| {})), rs256(&claims(|_| {})));
    jwt.authenticate(&request(&b))
        .await
        .expect("key B is in the file");

    // Key B withdrawn.
    file.write(&jwks(&["ec-1"]));
    tokio::time::advance(DEFAULT_MAX_AGE).await;
    assert!(
        matches!(
            jwt.authenticate(&request(&b)).await,
            Err(Refusal::InvalidToken(_))
        ),
        "a token of the removed key is refused once the bound has passed"
    );
    jwt.authenticate(&request(&a))
        .await
        .expect("key A, still in the file, still works");

    // Half-written: the last good set stays in force.
    file.write(r#"{"keys": [{"kty": "RSA", "#);
    tokio::time::advance(DEFAULT_MAX_AGE).await;
    jwt.authenticate(&request(&a))
        .await
        .expect("a file that does not parse keeps the last good set");
    assert!(jwt.authenticate(&request(&b)).await.is_err());

    // Mended, with key B back.
    file.write(&jwks(&["rsa-1", "ec-1"]));
    tokio::time::advance(DEFAULT_MAX_AGE).await;
    jwt.authenticate(&request(&b))
        .await
        .expect("the mended file's keys are taken");
}

#[tokio::test(start_paused = true)]
async fn a_configured_bound_is_the_one_kept() {
    let file = TempFile::new("jwks-file-bound", &jwks(&["rsa-1", "ec-1"]));
    let keys = JwksFile::open(&file.0)
        .expect("a usable JWKS")
        .max_age(Duration::from_secs(1));
    let jwt = JwtAuthenticator::new(keys, JwtOptions::new(ISSUER, RESOURCE));
    let b = rs256(&claims(|_| {}));
    jwt.authenticate(&request(&b)).await.expect("key B");
    file.write(&jwks(&["ec-1"]));
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(matches!(
        jwt.authenticate(&request(&b)).await,
        Err(Refusal::InvalidToken(_))
    ));
}
