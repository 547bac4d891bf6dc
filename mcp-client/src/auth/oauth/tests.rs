//! The provider's bookkeeping, without a server.
use super::*;
use crate::auth::MemoryStore;
use std::time::{Duration, Instant};

fn kept(expires_in: Duration) -> Token {
    Token {
        access_token: "kept-token".into(),
        refresh_token: None,
        expires_at: Some(Instant::now() + expires_in),
        scope: None,
        dpop: false,
    }
}

#[test]
fn a_kept_token_is_used_until_it_expires() {
    let store: Arc<dyn TokenStore> = Arc::new(MemoryStore::default());
    store.save("https://a.example/mcp", &kept(Duration::from_secs(60)));
    store.save("https://b.example/mcp", &kept(Duration::ZERO));
    let oauth = |key: &str| {
        let mut o = OAuthOptions::new("t", "http://localhost/cb");
        o.store = Some((store.clone(), key.to_owned()));
        OAuth::new(o, FollowRedirects)
    };
    assert_eq!(
        oauth("https://a.example/mcp").access_token().as_deref(),
        Some("kept-token")
    );
    assert_eq!(
        oauth("https://b.example/mcp").access_token(),
        None,
        "expired"
    );
    assert_eq!(oauth("https://c.example/mcp").access_token(), None);
}

fn holding(token: &str, attempts: usize) -> OAuth {
    let oauth = OAuth::new(
        OAuthOptions::new("t", "http://localhost/cb"),
        FollowRedirects,
    );
    oauth.inner.with_state(|s| {
        s.token = Some(Token {
            access_token: token.into(),
            ..kept(Duration::from_secs(60))
        });
        s.loaded = true;
        s.attempts = attempts;
    });
    oauth
}

fn refused(token: &str) -> Refused {
    Refused::new("http://127.0.0.1:1/mcp", None, Some(token.into()))
}

#[tokio::test]
async fn a_refusal_of_a_token_already_replaced_does_not_authorize_again() {
    let oauth = holding("new", 0);
    assert!(oauth.unauthorized(refused("old")).await.is_ok());
    assert_eq!(oauth.inner.with_state(|s| s.attempts), 0);
    let again = oauth.unauthorized(refused("new")).await;
    assert!(matches!(again, Err(AuthError::Discovery(_))), "{again:?}");
}

#[tokio::test]
async fn only_a_success_with_the_current_token_resets_the_retry_limit() {
    let oauth = holding("current", 3);
    oauth.accepted("stale");
    let r = oauth.unauthorized(refused("current")).await;
    assert!(matches!(r, Err(AuthError::TooManyAttempts(3))), "{r:?}");
    oauth.accepted("current");
    let r = oauth.unauthorized(refused("current")).await;
    assert!(matches!(r, Err(AuthError::Discovery(_))), "{r:?}");
}
