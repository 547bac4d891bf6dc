//! [`TokenExchangeCredentials`]: each principal's own access token traded (RFC 8693) for
//! a token of the same principal whose audience is the upstream, cached per principal and
//! upstream until shortly before it expires. No user interaction.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use mcp_client::auth::{
    discovery, AuthorizationServerMetadata, ClientIdentity, TokenError, TokenExchange,
};
use tokio::sync::OnceCell;

use super::cache::TokenCache;
use super::{CredentialError, CredentialRequest, UpstreamCredentials, UpstreamToken};

/// Most principals whose exchanged tokens are kept at once (default).
const MAX_PRINCIPALS: usize = 10_000;

/// Longest a token whose response gave no `expires_in` is used (default).
const DEFAULT_LIFE: Duration = Duration::from_secs(300);

/// Trades each principal's access token at an authorization server's token endpoint for
/// one of the upstream's resource, the gateway authenticating as a client (a secret or
/// `private_key_jwt`, as its [`ClientIdentity`] says).
///
/// The principal's token must have been kept by the gateway's authenticator
/// ([`mcp_server::auth::JwtOptions::keep_subject_token`]); a principal without one (an API
/// key) gets [`CredentialError::NoSubjectToken`]. An exchanged token is never used past
/// the subject token's own `exp`.
pub struct TokenExchangeCredentials {
    issuer: String,
    token_endpoint: Option<String>,
    server: OnceCell<AuthorizationServerMetadata>,
    client: ClientIdentity,
    resource: Option<String>,
    audience: Option<String>,
    scope: Option<String>,
    cache: TokenCache,
    exchanges: AtomicU64,
}

impl std::fmt::Debug for TokenExchangeCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenExchangeCredentials")
            .field("issuer", &self.issuer)
            .field("token_endpoint", &self.token_endpoint)
            .field("client", &self.client)
            .field("resource", &self.resource)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

impl TokenExchangeCredentials {
    /// Exchanges at the authorization server `issuer` (its token endpoint discovered from
    /// its metadata at the first exchange), as `client`.
    pub fn new(issuer: impl Into<String>, client: ClientIdentity) -> Self {
        TokenExchangeCredentials {
            issuer: issuer.into(),
            token_endpoint: None,
            server: OnceCell::new(),
            client,
            resource: None,
            audience: None,
            scope: None,
            cache: TokenCache::new(MAX_PRINCIPALS, DEFAULT_LIFE),
            exchanges: AtomicU64::new(0),
        }
    }

    /// At `endpoint`, without discovery.
    pub fn token_endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.token_endpoint = Some(endpoint.into());
        self
    }

    /// For tokens of `resource` rather than the upstream's own URL.
    pub fn resource(mut self, resource: impl Into<String>) -> Self {
        self.resource = Some(resource.into());
        self
    }

    /// Naming `audience` (RFC 8693) as well.
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audience = Some(audience.into());
        self
    }

    /// Asking for `scope` (space-separated).
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// Keeping at most `max` principals' tokens (default 10,000; the least recently used
    /// goes first).
    pub fn max_principals(mut self, max: usize) -> Self {
        self.cache = TokenCache::new(max, DEFAULT_LIFE);
        self
    }

    /// How many exchanges were made (each one a request to the token endpoint).
    pub fn exchanges(&self) -> u64 {
        self.exchanges.load(Ordering::Relaxed)
    }

    /// The server's metadata: configured, else discovered once.
    async fn server(&self) -> Result<&AuthorizationServerMetadata, TokenError> {
        self.server
            .get_or_try_init(|| async {
                match &self.token_endpoint {
                    Some(e) => Ok(AuthorizationServerMetadata::with_token_endpoint(
                        self.issuer.clone(),
                        e.clone(),
                    )),
                    None => discovery::server_metadata(&self.issuer)
                        .await
                        .map_err(|e| TokenError::Transport(e.to_string())),
                }
            })
            .await
    }

    /// One exchange of `subject` for a token of `resource`.
    async fn exchange(&self, subject: &str, resource: &str) -> Result<UpstreamToken, TokenError> {
        let mut exchange =
            TokenExchange::new(self.server().await?.clone(), self.client.clone(), resource);
        if let Some(a) = &self.audience {
            exchange = exchange.audience(a.clone());
        }
        if let Some(s) = &self.scope {
            exchange = exchange.scope(s.clone());
        }
        self.exchanges.fetch_add(1, Ordering::Relaxed);
        let token = exchange.exchange(subject).await?;
        Ok(UpstreamToken::new(token.access_token, token.expires_at))
    }
}

#[async_trait]
impl UpstreamCredentials for TokenExchangeCredentials {
    async fn token(
        &self,
        request: &CredentialRequest<'_>,
    ) -> Result<UpstreamToken, CredentialError> {
        let upstream = request.upstream;
        let subject =
            request
                .principal
                .subject_token()
                .ok_or_else(|| CredentialError::NoSubjectToken {
                    upstream: upstream.into(),
                })?;
        let resource = self.resource.as_deref().unwrap_or(request.resource);
        let key = cache_key(request, resource);
        let cap = request.principal.expires_at().map(instant_of);
        self.cache
            .get_or_fetch(&key, cap, || async {
                self.exchange(subject.secret(), resource)
                    .await
                    .map_err(|e| refusal(upstream, e))
            })
            .await
    }

    async fn refused(&self, request: &CredentialRequest<'_>, token: &UpstreamToken) {
        let resource = self.resource.as_deref().unwrap_or(request.resource);
        self.cache
            .forget(&cache_key(request, resource), token)
            .await;
    }
}

/// One principal at one resource.
fn cache_key(request: &CredentialRequest<'_>, resource: &str) -> String {
    format!("{}\u{0}{resource}", request.principal.identity())
}

/// `at` on the monotonic clock (now, if it has passed).
fn instant_of(at: SystemTime) -> Instant {
    let left = at.duration_since(SystemTime::now()).unwrap_or_default();
    Instant::now() + left
}

/// What a failed exchange tells the host: the server's own OAuth error, or why it could
/// not be asked. Neither holds a token.
fn refusal(upstream: &str, e: TokenError) -> CredentialError {
    match e {
        TokenError::Refused { error, .. } => CredentialError::Refused {
            upstream: upstream.into(),
            reason: error,
        },
        other => CredentialError::Unavailable {
            upstream: upstream.into(),
            reason: other.to_string(),
        },
    }
}
