//! The OAuth client an HTTP transport uses on a `401`: discovery, the client's identity
//! (pre-registered, a Client ID Metadata Document, or dynamic registration, in that
//! order), the authorization code flow with PKCE through an [`AuthorizationHandler`],
//! the token request, and step-up on `403 insufficient_scope`, with a retry limit.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::discovery::discover;
use super::provider::{AuthError, AuthProvider, Refused};
use super::request::{select_scopes, AuthorizationRequest};
use super::store::TokenStore;
use super::token::{register, request_token, ClientIdentity, Token};
use super::BearerChallenge;

/// Where the user grants access: the authorization URL in, the URL the user-agent was
/// sent back to (the redirect URI with `code` and `state`) out.
#[async_trait]
pub trait AuthorizationHandler: Send + Sync + 'static {
    /// Has the user authorize at `url`, and returns where the authorization server sent
    /// the user-agent back (starting with `redirect_uri`).
    async fn authorize(&self, url: &str, redirect_uri: &str) -> Result<String, AuthError>;
}

/// What the client is, for every authorization server.
#[derive(Clone)]
#[non_exhaustive]
pub struct OAuthOptions {
    /// `client_name` for dynamic registration.
    pub client_name: String,
    /// The redirect URI.
    pub redirect_uri: String,
    /// A pre-registered client, used whenever given.
    pub client: Option<ClientIdentity>,
    /// The URL of this client's Client ID Metadata Document, used as its `client_id`
    /// where the server takes such documents.
    pub client_metadata_url: Option<String>,
    /// Authorizations in a row (without a request succeeding) before giving up.
    pub max_attempts: usize,
    /// Where tokens are kept between runs, and under which key (the server's URL, say):
    /// a kept token that has not expired is used without authorizing again.
    pub store: Option<(Arc<dyn TokenStore>, String)>,
}

impl std::fmt::Debug for OAuthOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthOptions")
            .field("client_name", &self.client_name)
            .field("redirect_uri", &self.redirect_uri)
            .field("client", &self.client)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("max_attempts", &self.max_attempts)
            .field("store", &self.store.as_ref().map(|(_, key)| key))
            .finish()
    }
}

impl OAuthOptions {
    /// A client named `client_name` whose redirect URI is `redirect_uri`.
    pub fn new(client_name: impl Into<String>, redirect_uri: impl Into<String>) -> Self {
        OAuthOptions {
            client_name: client_name.into(),
            redirect_uri: redirect_uri.into(),
            client: None,
            client_metadata_url: None,
            max_attempts: 3,
            store: None,
        }
    }
}

#[derive(Default)]
struct State {
    token: Option<Token>,
    /// Whether the store was read.
    loaded: bool,
    attempts: usize,
    /// Scopes granted or asked so far, kept across step-ups.
    scopes: Option<String>,
}

/// The authorization code flow with PKCE, as an [`AuthProvider`].
pub struct OAuth {
    options: OAuthOptions,
    handler: Box<dyn AuthorizationHandler>,
    state: Mutex<State>,
    one_at_a_time: tokio::sync::Mutex<()>,
}

impl OAuth {
    /// A provider with `options`, the user's consent through `handler`.
    pub fn new(options: OAuthOptions, handler: impl AuthorizationHandler) -> Self {
        OAuth {
            options,
            handler: Box::new(handler),
            state: Mutex::new(State::default()),
            one_at_a_time: tokio::sync::Mutex::new(()),
        }
    }

    fn with_state<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        match self.state.lock() {
            Ok(mut s) => f(&mut s),
            Err(p) => f(&mut p.into_inner()),
        }
    }

    async fn identity(
        &self,
        server: &super::AuthorizationServerMetadata,
    ) -> Result<ClientIdentity, AuthError> {
        if let Some(c) = &self.options.client {
            return Ok(c.clone());
        }
        if let (Some(url), Some(true)) = (
            &self.options.client_metadata_url,
            server.client_id_metadata_document_supported,
        ) {
            return Ok(ClientIdentity::public(url.clone()));
        }
        if server.registration_endpoint.is_some() {
            return Ok(register(
                server,
                &self.options.client_name,
                &self.options.redirect_uri,
            )
            .await?);
        }
        Err(AuthError::NoClientIdentity(server.issuer.clone()))
    }

    /// The scopes to ask: the challenge's (joined with those already held, on a step-up),
    /// else the resource's.
    fn scopes(
        &self,
        challenge: Option<&BearerChallenge>,
        resource: &super::ProtectedResourceMetadata,
    ) -> Option<String> {
        let wanted = select_scopes(challenge, resource);
        let step_up = challenge.and_then(|c| c.error.as_deref()) == Some("insufficient_scope");
        let held = self.with_state(|s| s.scopes.clone());
        match (step_up, held, wanted) {
            (true, Some(held), Some(more)) => {
                let mut all: Vec<&str> = held.split_whitespace().collect();
                for s in more.split_whitespace() {
                    if !all.contains(&s) {
                        all.push(s);
                    }
                }
                Some(all.join(" "))
            }
            (_, _, wanted) => wanted,
        }
    }
}

#[async_trait]
impl AuthProvider for OAuth {
    fn access_token(&self) -> Option<String> {
        let store = self.options.store.clone();
        self.with_state(|s| {
            if !s.loaded {
                s.loaded = true;
                s.token = store.as_ref().and_then(|(st, key)| st.load(key));
            }
            let live = s
                .token
                .as_ref()
                .filter(|t| t.expires_at.is_none_or(|at| at > std::time::Instant::now()));
            live.map(|t| t.access_token.clone())
        })
    }

    fn accepted(&self, token: &str) {
        self.with_state(|s| {
            if s.token.as_ref().is_some_and(|t| t.access_token == token) {
                s.attempts = 0;
            }
        });
    }

    async fn unauthorized(&self, refused: Refused) -> Result<(), AuthError> {
        let _one = self.one_at_a_time.lock().await;
        let renewed = self
            .access_token()
            .is_some_and(|now| Some(&now) != refused.token.as_ref());
        if renewed {
            return Ok(());
        }
        let attempts = self.with_state(|s| {
            s.attempts += 1;
            s.attempts
        });
        if attempts > self.options.max_attempts {
            return Err(AuthError::TooManyAttempts(self.options.max_attempts));
        }
        let endpoint = refused.endpoint.as_str();
        let challenge = refused.challenge;
        let found = discover(endpoint, challenge.as_ref()).await?;
        let server = &found.authorization_server;
        let client = self.identity(server).await?;
        let scope = self.scopes(challenge.as_ref(), &found.resource);
        let resource = found.resource.resource.clone();
        let request = AuthorizationRequest::new(
            server,
            &client.client_id,
            &self.options.redirect_uri,
            &resource,
            scope.as_deref(),
        )
        .map_err(|e| AuthError::NotCompleted(e.to_string()))?;
        let back = self
            .handler
            .authorize(&request.url, &request.redirect_uri)
            .await?;
        let iss_required = server.authorization_response_iss_parameter_supported == Some(true);
        let code = request.code_from(&back, iss_required)?;
        let token = request_token(
            server,
            &client,
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", &self.options.redirect_uri),
                ("code_verifier", request.code_verifier()),
                ("resource", &resource),
            ],
        )
        .await?;
        if let Some((store, key)) = &self.options.store {
            store.save(key, &token);
        }
        self.with_state(|s| {
            s.scopes = token.scope.clone().or(scope);
            s.token = Some(token);
            s.loaded = true;
        });
        Ok(())
    }
}

/// An [`AuthorizationHandler`] that needs no user: it fetches the authorization URL and
/// follows the server's redirects until one leads to the redirect URI. For servers that
/// grant without asking (tests, conformance, some machine flows).
#[derive(Debug, Clone, Copy, Default)]
pub struct FollowRedirects;

#[async_trait]
impl AuthorizationHandler for FollowRedirects {
    async fn authorize(&self, url: &str, redirect_uri: &str) -> Result<String, AuthError> {
        let mut at = url.to_owned();
        for _ in 0..8 {
            let location = crate::fetch::redirect_of(&at, std::time::Duration::from_secs(15))
                .await
                .map_err(|e| AuthError::NotCompleted(e.to_string()))?;
            let Some(next) = location else {
                return Err(AuthError::NotCompleted(format!("{at} did not redirect")));
            };
            if next.starts_with(redirect_uri) {
                return Ok(next);
            }
            at = next;
        }
        Err(AuthError::NotCompleted("too many redirects".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::MemoryStore;
    use std::time::{Duration, Instant};

    fn kept(expires_in: Duration) -> Token {
        Token {
            access_token: "kept-token".into(),
            refresh_token: None,
            expires_at: Some(Instant::now() + expires_in),
            scope: None,
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
        oauth.with_state(|s| {
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
        assert_eq!(oauth.with_state(|s| s.attempts), 0);
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
}
