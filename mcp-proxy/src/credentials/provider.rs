//! [`PrincipalAuth`]: the [`AuthProvider`] of one principal's connection to an upstream,
//! its tokens from the upstream's [`UpstreamCredentials`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mcp_client::auth::{AuthError, AuthProvider, Refused};
use mcp_server::auth::Principal;
use parking_lot::Mutex;

use super::{CredentialError, CredentialRequest, UpstreamCredentials, UpstreamToken};

/// How long before its end a token is not sent any more, so that a request in flight
/// does not reach the upstream with a token that just expired.
pub(crate) const SEND_MARGIN: Duration = Duration::from_secs(1);

/// One principal's credentials at one upstream: the token now in use, and the principal
/// as its latest request showed it (a host's token is renewed; the exchange needs the
/// current one).
pub(crate) struct PrincipalAuth {
    credentials: Arc<dyn UpstreamCredentials>,
    upstream: Arc<str>,
    resource: Arc<str>,
    state: Mutex<State>,
}

struct State {
    principal: Arc<Principal>,
    token: Option<UpstreamToken>,
}

impl PrincipalAuth {
    /// `principal`'s credentials at `upstream` (resource `resource`), from `credentials`.
    pub(crate) fn new(
        credentials: Arc<dyn UpstreamCredentials>,
        upstream: &str,
        resource: &str,
        principal: Arc<Principal>,
    ) -> Self {
        PrincipalAuth {
            credentials,
            upstream: upstream.into(),
            resource: resource.into(),
            state: Mutex::new(State {
                principal,
                token: None,
            }),
        }
    }

    /// Whether the token held is good to send now.
    pub(crate) fn ready(&self) -> bool {
        let state = self.state.lock();
        state
            .token
            .as_ref()
            .is_some_and(|t| t.good_at(Instant::now(), SEND_MARGIN))
    }

    /// Notes `principal` as its latest request shows it.
    pub(crate) fn note(&self, principal: &Arc<Principal>) {
        self.state.lock().principal = principal.clone();
    }

    /// A good token for `principal`'s next request (the principal as that request shows
    /// it), asked of the credentials when the one held is not good any more.
    pub(crate) async fn refresh(&self, principal: &Arc<Principal>) -> Result<(), CredentialError> {
        self.state.lock().principal = principal.clone();
        let request = CredentialRequest::new(principal, &self.upstream, &self.resource);
        let token = self.credentials.token(&request).await?;
        self.state.lock().token = Some(token);
        Ok(())
    }
}

#[async_trait]
impl AuthProvider for PrincipalAuth {
    fn access_token(&self) -> Option<String> {
        let state = self.state.lock();
        state.token.as_ref().map(|t| t.secret().to_owned())
    }

    async fn unauthorized(&self, refused: Refused) -> Result<(), AuthError> {
        let (principal, held) = {
            let state = self.state.lock();
            (state.principal.clone(), state.token.clone())
        };
        let request = CredentialRequest::new(&principal, &self.upstream, &self.resource);
        // Another request may have replaced the refused token already.
        let same = |t: &UpstreamToken| refused.token.as_deref() == Some(t.secret());
        if let Some(t) = held.as_ref().filter(|t| same(t)) {
            self.credentials.refused(&request, t).await;
        } else if held.is_some() {
            return Ok(());
        }
        let token = self
            .credentials
            .token(&request)
            .await
            .map_err(|e| match e {
                CredentialError::ConsentRequired(c) => {
                    AuthError::UserAction(Box::new(c.to_error()))
                }
                other => AuthError::NotCompleted(other.reason()),
            })?;
        if same(&token) {
            return Err(AuthError::NotCompleted(format!(
                "upstream `{}` refused the token its credentials give for this user",
                self.upstream
            )));
        }
        self.state.lock().token = Some(token);
        Ok(())
    }
}
