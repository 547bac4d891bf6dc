//! The OAuth client an HTTP transport uses on a `401`: discovery, the client's identity
//! (pre-registered, a Client ID Metadata Document, or dynamic registration, in that
//! order), a grant (the authorization code flow with PKCE through an
//! [`AuthorizationHandler`], or client credentials), renewal (refresh tokens, ahead of
//! expiry and on a refusal), and step-up on `403 insufficient_scope`, with a retry limit.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use parking_lot::Mutex;

use super::discovery::{discover, AuthorizationServerMetadata, Discovery};
use super::dpop::{DpopKey, NonceOf};
use super::grant;
use super::grant_assertion::GrantAssertion;
use super::provider::{AuthError, AuthProvider, Credentials, Refused};
use super::request::select_scopes;
use super::store::TokenStore;
use super::token::{register, ClientIdentity, Token};
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
    /// Scopes to ask (space-separated) besides those the server's challenge or metadata
    /// name.
    pub scopes: Option<String>,
    /// The issuer of the one authorization server this client may use: discovery that
    /// leads anywhere else fails, so a resource cannot send the client (and its secret,
    /// its key's assertions, its workload token) to a server of its choosing. Set it
    /// whenever the client has credentials of its own; `None` takes whichever server the
    /// resource names.
    pub authorization_server: Option<String>,
    /// Ask for DPoP-bound tokens (RFC 9449) where the authorization server takes DPoP
    /// proofs: a leaked token is then useless without this process's key. Such tokens
    /// are not kept in the store (the key is not).
    pub dpop: bool,
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
            .field("scopes", &self.scopes)
            .field("authorization_server", &self.authorization_server)
            .field("dpop", &self.dpop)
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
            scopes: None,
            authorization_server: None,
            dpop: false,
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
    /// What the last discovery found: where tokens are renewed.
    found: Option<Arc<Discovery>>,
    /// The client registered at an authorization server (by issuer): a registration is
    /// good at that server only (SEP-2352).
    registered: Option<(String, ClientIdentity)>,
    /// A renewal is under way.
    renewing: bool,
    /// When the token held was had (or read from the store).
    since: Option<Instant>,
    /// When a renewal ahead of expiry was last begun: a failing one is not begun again
    /// for every request.
    tried: Option<Instant>,
    /// This client's DPoP key, once a server that takes DPoP was met.
    dpop: Option<Arc<DpopKey>>,
    /// The resource's nonce last sent in a proof, so that a second `use_dpop_nonce` with
    /// the same nonce is a refusal, not a loop.
    resource_nonce: Option<String>,
    /// Nonces taken since a request last succeeded.
    nonce_tries: usize,
}

/// How a token is had from the authorization server.
enum Flow {
    /// The authorization code flow with PKCE; the user's consent through the handler.
    Code(Box<dyn AuthorizationHandler>),
    /// The client credentials grant (the `oauth-client-credentials` extension): the
    /// client is its own principal, no user, no redirect.
    ClientCredentials,
    /// The JWT bearer grant with an assertion from elsewhere (workload identity
    /// federation, enterprise-managed authorization).
    JwtBearer(Box<dyn GrantAssertion>),
}

impl Flow {
    /// Whether a token is had without a user, so it can be renewed at any time.
    fn unattended(&self) -> bool {
        !matches!(self, Flow::Code(_))
    }
}

/// OAuth 2.1 for an HTTP transport, as an [`AuthProvider`]: the authorization code flow
/// with PKCE ([`OAuth::new`]) or the client credentials grant
/// ([`OAuth::client_credentials`]). Tokens with a refresh token are refreshed shortly
/// before they expire, and on a refusal before authorizing again; a client credentials
/// token is requested again the same way.
#[derive(Clone)]
pub struct OAuth {
    inner: Arc<Inner>,
}

struct Inner {
    options: OAuthOptions,
    flow: Flow,
    state: Mutex<State>,
    one_at_a_time: tokio::sync::Mutex<()>,
}

/// How long before its expiry a token is renewed, at most; a short-lived token is
/// renewed when half its life is left, so renewals never follow one another.
const RENEW_AHEAD: Duration = Duration::from_secs(60);

/// `use_dpop_nonce` answers taken in a row (each with a new nonce) before the refusal is
/// treated as any other.
const MAX_NONCE_TRIES: usize = 3;

/// The scope that asks an authorization server for a refresh token.
const OFFLINE_ACCESS: &str = "offline_access";

/// Renewals ahead of expiry are begun at most this often.
const RENEW_EVERY: Duration = Duration::from_secs(5);

impl OAuth {
    /// The authorization code flow with `options`, the user's consent through `handler`.
    pub fn new(options: OAuthOptions, handler: impl AuthorizationHandler) -> Self {
        Self::with_flow(options, Flow::Code(Box::new(handler)))
    }

    /// The client credentials grant, as the pre-registered `options.client` (with a
    /// secret or a signing key; without one, every authorization fails with
    /// [`AuthError::NoClientIdentity`]).
    pub fn client_credentials(options: OAuthOptions) -> Self {
        Self::with_flow(options, Flow::ClientCredentials)
    }

    /// The JWT bearer grant (RFC 7523 §2.1) with the assertion `source` gives, as
    /// `options.client`: workload identity federation (SEP-1933) with an
    /// [`super::AssertionFile`], enterprise-managed authorization (SEP-990) with an
    /// [`super::IdJagExchange`]. A refused grant is reported, not retried with another.
    pub fn jwt_bearer(options: OAuthOptions, source: impl GrantAssertion) -> Self {
        Self::with_flow(options, Flow::JwtBearer(Box::new(source)))
    }

    fn with_flow(options: OAuthOptions, flow: Flow) -> Self {
        OAuth {
            inner: Arc::new(Inner {
                options,
                flow,
                state: Mutex::new(State::default()),
                one_at_a_time: tokio::sync::Mutex::new(()),
            }),
        }
    }
}

impl Inner {
    fn with_state<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock())
    }

    async fn identity(
        &self,
        server: &AuthorizationServerMetadata,
    ) -> Result<ClientIdentity, AuthError> {
        if let Some(c) = &self.options.client {
            return Ok(c.clone());
        }
        let code_flow = matches!(self.flow, Flow::Code(_));
        if let (Some(url), Some(true), true) = (
            &self.options.client_metadata_url,
            server.client_id_metadata_document_supported,
            code_flow,
        ) {
            return Ok(ClientIdentity::public(url.clone()));
        }
        let known = self.with_state(|s| {
            s.registered
                .as_ref()
                .filter(|(issuer, _)| *issuer == server.issuer)
                .map(|(_, c)| c.clone())
        });
        if let Some(c) = known {
            return Ok(c);
        }
        if server.registration_endpoint.is_some() && code_flow {
            let c = register(
                server,
                &self.options.client_name,
                &self.options.redirect_uri,
            )
            .await?;
            self.with_state(|s| s.registered = Some((server.issuer.clone(), c.clone())));
            return Ok(c);
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
        let held = self.with_state(|s| s.scopes.clone()).filter(|_| step_up);
        let configured = self.options.scopes.as_deref();
        union([held.as_deref(), configured, wanted.as_deref()])
    }

    /// Keeps `token` (in the store too), with the scopes it was asked for.
    fn keep(&self, token: Token, asked: Option<String>) {
        if let (Some((store, key)), false) = (&self.options.store, token.dpop) {
            store.save(key, &token);
        }
        self.with_state(|s| {
            s.scopes = token.scope.clone().or(asked).or(s.scopes.take());
            s.token = Some(token);
            s.loaded = true;
            s.since = Some(Instant::now());
        });
    }

    /// The DPoP key to bind tokens of `server` to: made the first time a server that takes
    /// our proofs is met, when DPoP is asked for.
    fn dpop_for(
        &self,
        server: &AuthorizationServerMetadata,
    ) -> Result<Option<Arc<DpopKey>>, AuthError> {
        let wanted = self.options.dpop
            && DpopKey::supported_by(server.dpop_signing_alg_values_supported.as_deref());
        if !wanted {
            return Ok(None);
        }
        if let Some(k) = self.with_state(|s| s.dpop.clone()) {
            return Ok(Some(k));
        }
        let key = Arc::new(DpopKey::generate()?);
        Ok(Some(self.with_state(|s| s.dpop.get_or_insert(key).clone())))
    }

    /// A new token by this provider's grant, asking `scope`.
    async fn grant(&self, found: &Discovery, scope: Option<&str>) -> Result<Token, AuthError> {
        let server = &found.authorization_server;
        let resource = found.resource.resource.as_str();
        let client = self.identity(server).await?;
        let key = self.dpop_for(server)?;
        let dpop = key.as_deref();
        Ok(match &self.flow {
            Flow::ClientCredentials => {
                grant::client_credentials(server, &client, resource, scope, dpop).await?
            }
            Flow::JwtBearer(source) => {
                let assertion = source.assertion(&server.issuer, resource).await?;
                grant::jwt_bearer(server, &client, &assertion, resource, scope, dpop).await?
            }
            Flow::Code(handler) => {
                let redirect_uri = &self.options.redirect_uri;
                let code = grant::Code {
                    server,
                    client: &client,
                    redirect_uri,
                    resource,
                    dpop,
                };
                // A user's grant may outlive the access token: ask for a refresh token
                // where the server says how (`offline_access`, SEP-2207).
                let offline = server
                    .scopes_supported
                    .as_ref()
                    .is_some_and(|s| s.iter().any(|x| x == OFFLINE_ACCESS))
                    .then_some(OFFLINE_ACCESS);
                let scope = union([scope, offline]);
                code.run(handler.as_ref(), scope.as_deref()).await?
            }
        })
    }

    async fn authorize(&self, refused: Refused) -> Result<(), AuthError> {
        let challenge = refused.challenge.as_ref();
        let found = Arc::new(discover(&refused.endpoint, challenge).await?);
        let issuer = &found.authorization_server.issuer;
        if let Some(pinned) = self
            .options
            .authorization_server
            .as_ref()
            .filter(|p| *p != issuer)
        {
            return Err(AuthError::UnexpectedIssuer {
                expected: pinned.clone(),
                found: issuer.clone(),
            });
        }
        self.with_state(|s| s.found = Some(found.clone()));
        // A step-up needs a grant for more scopes; anything else may just be an expiry.
        if !refused.is_step_up() && self.refresh(&found).await? {
            return Ok(());
        }
        let scope = self.scopes(challenge, &found.resource);
        let token = self.grant(&found, scope.as_deref()).await?;
        self.keep(token, scope);
        Ok(())
    }
}

/// The scopes of every list given, each once, in order; `None` if there are none.
fn union<'a>(lists: impl IntoIterator<Item = Option<&'a str>>) -> Option<String> {
    let mut all: Vec<&str> = Vec::new();
    for scope in lists.into_iter().flatten().flat_map(str::split_whitespace) {
        if !all.contains(&scope) {
            all.push(scope);
        }
    }
    (!all.is_empty()).then(|| all.join(" "))
}

#[async_trait]
impl AuthProvider for OAuth {
    fn access_token(&self) -> Option<String> {
        let inner = &self.inner;
        let store = inner.options.store.clone();
        let live = inner.with_state(|s| {
            if !s.loaded {
                s.loaded = true;
                s.token = store.as_ref().and_then(|(st, key)| st.load(key));
                s.since = Some(Instant::now());
            }
            let live = s
                .token
                .as_ref()
                .filter(|t| t.expires_at.is_none_or(|at| at > Instant::now()));
            live.map(|t| t.access_token.clone())
        });
        inner.renew_ahead();
        live
    }

    fn credentials(&self, method: &str, url: &str) -> Option<Credentials> {
        let token = self.access_token()?;
        let key = self.inner.with_state(|s| {
            let bound = s.token.as_ref().is_some_and(|t| t.dpop);
            s.dpop.clone().filter(|_| bound)
        });
        let Some(key) = key else {
            return Some(Credentials::bearer(token));
        };
        match key.proof(method, url, Some(&token), NonceOf::Resource) {
            Ok(proof) => Some(Credentials::dpop(token, proof)),
            Err(e) => {
                tracing::warn!("no DPoP proof for {url}: {e}");
                None
            }
        }
    }

    fn accepted(&self, token: &str) {
        self.inner.with_state(|s| {
            if s.token.as_ref().is_some_and(|t| t.access_token == token) {
                s.attempts = 0;
                s.nonce_tries = 0;
            }
        });
    }

    async fn unauthorized(&self, refused: Refused) -> Result<(), AuthError> {
        let inner = &self.inner;
        let _one = inner.one_at_a_time.lock().await;
        // The resource wants its nonce in the proof (RFC 9449 §9): send again with it,
        // once per nonce.
        if let (true, Some(nonce)) = (refused.wants_dpop_nonce(), &refused.dpop_nonce) {
            let fresh = inner.with_state(|s| {
                // Only a proof can carry the nonce, and a server that wants a new one on
                // every answer gets a few tries, not a loop.
                let bound = s.token.as_ref().is_some_and(|t| t.dpop);
                let key = s
                    .dpop
                    .clone()
                    .filter(|_| bound && s.nonce_tries < MAX_NONCE_TRIES);
                match (key, s.resource_nonce.as_ref()) {
                    (Some(key), last) if last != Some(nonce) => {
                        key.keep_nonce(NonceOf::Resource, nonce);
                        s.resource_nonce = Some(nonce.clone());
                        s.nonce_tries += 1;
                        true
                    }
                    _ => false,
                }
            });
            if fresh {
                return Ok(());
            }
        }
        let renewed = self
            .access_token()
            .is_some_and(|now| Some(&now) != refused.token.as_ref());
        if renewed {
            return Ok(());
        }
        let attempts = inner.with_state(|s| {
            s.attempts += 1;
            s.attempts
        });
        if attempts > inner.options.max_attempts {
            return Err(AuthError::TooManyAttempts(inner.options.max_attempts));
        }
        inner.authorize(refused).await
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

mod renewal;
#[cfg(test)]
mod tests;
