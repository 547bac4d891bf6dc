//! No credential ever reaches the log, whatever the endpoint makes of it: good, expired or
//! short-scoped tokens, known or unknown API keys, logged at every level. A test binary
//! of its own: `tracing`'s per-thread subscriber sees only this test's lines only when
//! no other test runs beside it.

use mcp_server::auth::{ApiKey, ApiKeys, Authorization, Principal};
use serde_json::json;

mod auth_common;
use auth_common::*;

/// Log lines, kept.
#[derive(Clone, Default)]
struct Lines(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut l) = self.0.lock() {
            l.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn no_token_or_key_is_ever_logged() {
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::TRACE)
        .finish();
    let _log = tracing::subscriber::set_default(subscriber);
    let addr = jwt_server().await;
    let good = rs256(&claims(|_| {}));
    let expired = rs256(&claims(|c| c["exp"] = json!(now() - 120)));
    let short = es256(&claims(|c| c["scope"] = json!("profile")));
    for token in [&good, &expired, &short] {
        call_modern(addr, Some(token)).await;
    }
    let keys = ApiKeys::new().with(ApiKey::new("ci", "key-ci-0123456789", Principal::new("ci")));
    let keyed = start(Authorization::new(keys, resource())).await;
    for key in ["key-ci-0123456789", "key-wrong-0123456789"] {
        call_modern(keyed, Some(key)).await;
    }
    let log = String::from_utf8_lossy(&lines.0.lock().map(|l| l.clone()).unwrap_or_default())
        .into_owned();
    assert!(
        log.contains("request refused"),
        "the refusals are logged:\n{log}"
    );
    for secret in [
        good.as_str(),
        expired.as_str(),
        short.as_str(),
        "key-ci-0123456789",
        "key-wrong-0123456789",
    ] {
        // A JWT's signature alone is enough to recognise it.
        let tail = secret.rsplit('.').next().unwrap_or(secret);
        assert!(!log.contains(tail), "a credential reached the log:\n{log}");
    }
}
