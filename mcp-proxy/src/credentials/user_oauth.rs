//! [`UserOAuthCredentials`]: each user's own grant at an upstream's authorization server,
//! given once through the connect pages ([`ConnectDesk`]), kept sealed, refreshed without
//! the user before it expires, and asked for again (a new consent) when there is none, the
//! refresh is refused (`invalid_grant`), or the upstream refuses the token.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mcp_client::auth::TokenError;
use mcp_server::Subscriber;

use super::cache::TokenCache;
use super::connect::{ConnectDesk, ConsentClient};
use super::grants::{grant_place, Grant};
use super::{CredentialError, CredentialRequest, UpstreamCredentials, UpstreamToken};

/// Most principals whose tokens are held in memory at once (the grants themselves stay
/// in the vault).
const MAX_PRINCIPALS: usize = 10_000;

/// One upstream's per-user grants (see the module's docs).
pub struct UserOAuthCredentials {
    desk: Arc<ConnectDesk>,
    upstream: String,
    cache: TokenCache,
}

impl std::fmt::Debug for UserOAuthCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserOAuthCredentials")
            .field("upstream", &self.upstream)
            .finish_non_exhaustive()
    }
}

impl UserOAuthCredentials {
    /// Users' grants for upstream `key` (its MCP endpoint `resource`), the gateway known
    /// to its authorization server (`issuer`, else discovered from the upstream's
    /// metadata) as `client` says, asking `scope`; consents given at `desk`'s pages.
    pub fn new(
        desk: Arc<ConnectDesk>,
        key: &str,
        resource: &str,
        client: ConsentClient,
        scope: Option<String>,
        issuer: Option<String>,
    ) -> Self {
        desk.register(key, resource, client, scope, issuer);
        UserOAuthCredentials {
            desk,
            upstream: key.to_owned(),
            cache: TokenCache::new(MAX_PRINCIPALS, Duration::from_secs(300)),
        }
    }

    /// The token of the grant at `place`: as kept while good, else refreshed; a new
    /// consent when there is none to be had.
    async fn kept_token(
        &self,
        request: &CredentialRequest<'_>,
        place: &str,
    ) -> Result<UpstreamToken, CredentialError> {
        let upstream = &self.upstream;
        let unavailable = |reason: String| CredentialError::Unavailable {
            upstream: upstream.clone(),
            reason,
        };
        let kept = self
            .desk
            .vault()
            .get(place)
            .await
            .map_err(|e| unavailable(e.to_string()))?;
        let grant = match kept {
            Some(g) if good(&g) => g,
            Some(Grant {
                refresh_token: Some(refresh),
                ..
            }) => match self.desk.refresh(upstream, &refresh).await {
                Ok(g) => {
                    self.desk
                        .vault()
                        .put(place, &g)
                        .await
                        .map_err(|e| unavailable(e.to_string()))?;
                    tracing::debug!(upstream = %upstream, "a user's grant was refreshed");
                    g
                }
                Err(TokenError::Refused { code, .. }) if code == "invalid_grant" => {
                    tracing::info!(upstream = %upstream, "a user's grant was refused at refresh: asking for consent again");
                    let _ = self.desk.vault().forget(place).await;
                    return Err(self.consent(request));
                }
                Err(e) => return Err(unavailable(e.to_string())),
            },
            _ => return Err(self.consent(request)),
        };
        Ok(UpstreamToken::new(
            grant.access_token.clone(),
            grant.expires_instant(),
        ))
    }

    fn consent(&self, request: &CredentialRequest<'_>) -> CredentialError {
        match self.desk.consent(request.principal, &self.upstream) {
            Ok(c) => CredentialError::ConsentRequired(Box::new(c)),
            Err(reason) => CredentialError::Unavailable {
                upstream: self.upstream.clone(),
                reason,
            },
        }
    }
}

/// Whether `grant`'s access token is good for a while yet: not within a tenth of its
/// life (at least a second, at most a minute) of its end.
fn good(grant: &Grant) -> bool {
    let Some(end) = grant.expires_instant() else {
        return true;
    };
    let left = end.saturating_duration_since(Instant::now());
    let life = grant.life().unwrap_or(left);
    left > (life / 10).clamp(Duration::from_secs(1), Duration::from_secs(60))
}

#[async_trait]
impl UpstreamCredentials for UserOAuthCredentials {
    async fn token(
        &self,
        request: &CredentialRequest<'_>,
    ) -> Result<UpstreamToken, CredentialError> {
        // Only a user an issuer names can log in to show who opens a link.
        if request.principal.claims.get("iss").is_none() {
            return Err(CredentialError::CannotConsent {
                upstream: self.upstream.clone(),
            });
        }
        let place = grant_place(request.principal, &self.upstream);
        self.cache
            .get_or_fetch(&place, None, || self.kept_token(request, &place))
            .await
    }

    async fn refused(&self, request: &CredentialRequest<'_>, token: &UpstreamToken) {
        let place = grant_place(request.principal, &self.upstream);
        self.cache.forget(&place, token).await;
        // The upstream refused it before its time: its next use refreshes it (or asks).
        if let Ok(Some(mut grant)) = self.desk.vault().get(&place).await {
            if grant.access_token == token.secret() {
                grant.expires_at = Some(0);
                let _ = self.desk.vault().put(&place, &grant).await;
            }
        }
    }

    async fn elicitation_completed(&self, elicitation_id: &str) {
        self.desk.mailbox.complete(elicitation_id).await;
    }

    fn elicitation_sent(&self, elicitation_id: &str, host: Subscriber) {
        self.desk
            .mailbox
            .watch(elicitation_id, host, self.desk.ticket_life());
    }
}
