//! No credential ever reaches the log, whatever the endpoint makes of it: good, expired or
//! short-scoped tokens, known or unknown API keys, logged at every level. A test binary
//! of its own: `tracing`'s per-thread subscriber sees only this test's lines only when
//! no other test runs beside it.

use mcp_server::auth::{ApiKey, ApiKeys, Authorization, Principal};
use serde_json::json;

mod auth_common;
use auth_common::*;

#[tokio::test]
async fn no_token_or_key_is_ever_logged() {
    let (lines, _log) = mcp_examples::LogCapture::start();
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
    let log = lines.text();
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
