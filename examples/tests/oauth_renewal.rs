//! mcp-client's token renewal against an authorization server on 127.0.0.1: a token with
//! a refresh token is refreshed before it expires, without the user; a refresh token the
//! server no longer takes leads back to authorization; the store holds what was last had.

use std::sync::Arc;
use std::time::Duration;

use mcp_client::auth::{
    AuthProvider, ClientIdentity, FollowRedirects, MemoryStore, OAuth, OAuthOptions, Refused,
    TokenStore,
};
use mcp_examples::oauth_server::{AuthServerOptions, TestAuthorizationServer};

/// Whether the token becomes `want` within `limit` (renewal runs in the background and
/// says nothing: the token is the only sign).
async fn token_becomes(oauth: &OAuth, want: &str, limit: Duration) -> bool {
    mcp_examples::wait_until(limit, || {
        std::future::ready(oauth.access_token().as_deref() == Some(want))
    })
    .await
}

#[tokio::test]
async fn a_token_is_refreshed_before_it_expires_and_a_revoked_refresh_token_leads_back_to_authorization(
) {
    let server = TestAuthorizationServer::start(AuthServerOptions {
        expires_in: 2,
        own_resource: true,
    })
    .await
    .expect("start");
    let endpoint = format!("{}/mcp", server.issuer());
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

    // Half its two seconds on, the token is renewed by its refresh token, unasked (the
    // bound is what it was: 1.1 s, then 5 s of polling).
    assert!(
        token_becomes(&oauth, "access-2", Duration::from_millis(6100)).await,
        "refreshed ahead of expiry"
    );
    let kept = |store: &Arc<dyn TokenStore>| store.load(&endpoint).map(|t| t.access_token);
    assert_eq!(kept(&store).as_deref(), Some("access-2"));
    let seen = server.seen();
    assert_eq!(seen.grants, ["authorization_code ok", "refresh_token ok"]);
    assert_eq!(seen.authorizations, 1, "no user asked for the refresh");
    assert!(
        seen.resources.iter().all(|r| *r == endpoint),
        "{:?}",
        seen.resources
    );
    server.revoke_refresh_tokens();

    // The server refuses the token and no longer takes the refresh token: authorize again.
    oauth
        .unauthorized(Refused::new(&endpoint, None, Some("access-2".into())))
        .await
        .expect("authorized again");
    assert_eq!(oauth.access_token().as_deref(), Some("access-3"));
    let seen = server.seen();
    assert_eq!(
        seen.grants,
        [
            "authorization_code ok",
            "refresh_token ok",
            "refresh_token refused",
            "authorization_code ok"
        ]
    );
    assert_eq!(seen.authorizations, 2);
    assert_eq!(kept(&store).as_deref(), Some("access-3"));
}

#[tokio::test]
async fn a_client_pinned_to_one_authorization_server_sends_nothing_to_another() {
    let server = TestAuthorizationServer::start(AuthServerOptions {
        own_resource: true,
        ..AuthServerOptions::default()
    })
    .await
    .expect("start");
    let endpoint = format!("{}/mcp", server.issuer());
    let mut options = OAuthOptions::new("pinned", "http://127.0.0.1:9/callback");
    options.client = Some(ClientIdentity::with_secret("client-1", "secret-1"));
    options.authorization_server = Some("https://the-real-one.example".into());
    let oauth = OAuth::client_credentials(options);
    let refused = oauth
        .unauthorized(Refused::new(&endpoint, None, None))
        .await;
    assert!(
        matches!(
            refused,
            Err(mcp_client::auth::AuthError::UnexpectedIssuer { .. })
        ),
        "{refused:?}"
    );
    assert!(
        server.seen().grants.is_empty(),
        "no token request, no secret sent"
    );
}
