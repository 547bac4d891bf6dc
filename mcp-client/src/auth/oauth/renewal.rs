//! Tokens renewed without the user: by the refresh token, else by the unattended grant
//! again; ahead of expiry in the background, and on a refusal before authorizing again.

use std::sync::Arc;
use std::time::Instant;

use super::{grant, Inner, State, RENEW_AHEAD, RENEW_EVERY};
use crate::auth::discovery::Discovery;
use crate::auth::provider::AuthError;

impl Inner {
    /// A new token by the refresh token, if there is one and the server still takes it
    /// (one it refuses is forgotten). `Ok(false)` when there is none.
    pub(super) async fn refresh(&self, found: &Discovery) -> Result<bool, AuthError> {
        let server = &found.authorization_server;
        let resource = found.resource.resource.as_str();
        let refresh = self.with_state(|s| s.token.as_ref().and_then(|t| t.refresh_token.clone()));
        let Some(refresh) = refresh else {
            return Ok(false);
        };
        let client = self.identity(server).await?;
        let dpop = self.dpop_for(server)?;
        match grant::refresh(server, &client, &refresh, resource, dpop.as_deref()).await {
            Ok(mut token) => {
                // RFC 6749 §6: a server may keep the refresh token it had issued.
                token.refresh_token.get_or_insert(refresh);
                self.keep(token, None);
                Ok(true)
            }
            // Only a refusal of the grant retires the refresh token (RFC 6749 §5.2); a
            // server that could not be reached, or failed, may take it later.
            Err(e) if e.is_refusal("invalid_grant") => {
                tracing::info!("the refresh token was refused ({e}); authorizing again");
                self.forget_refresh_token();
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// A new token without the user: by the refresh token, else by an unattended grant
    /// asking the scopes held. `Ok(false)` when neither applies.
    async fn renew(&self, found: &Discovery) -> Result<bool, AuthError> {
        if self.refresh(found).await? {
            return Ok(true);
        }
        if self.flow.unattended() {
            let scope = self.with_state(|s| s.scopes.clone());
            let token = self.grant(found, scope.as_deref()).await?;
            self.keep(token, scope);
            return Ok(true);
        }
        Ok(false)
    }

    fn forget_refresh_token(&self) {
        let kept = self.with_state(|s| {
            let t = s.token.as_mut()?;
            t.refresh_token = None;
            Some(t.clone())
        });
        if let Some((store, key)) = &self.options.store {
            store.remove(key);
            if let Some(t) = kept.filter(|t| !t.dpop) {
                store.save(key, &t);
            }
        }
    }

    /// Renews the token in the background if it expires soon and can be renewed.
    pub(super) fn renew_ahead(self: &Arc<Self>) {
        let due = self.with_state(|s| {
            let found = s.found.clone()?;
            let now = Instant::now();
            let rested = s.tried.is_none_or(|t| now >= t + RENEW_EVERY);
            (self.renewal_due(s) && rested && !s.renewing).then(|| {
                s.renewing = true;
                s.tried = Some(now);
                found
            })
        });
        let Some(found) = due else { return };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            self.with_state(|s| s.renewing = false);
            return;
        };
        let me = self.clone();
        rt.spawn(async move {
            /// Renew-ahead stays on whatever becomes of this task.
            struct Done(Arc<Inner>);
            impl Drop for Done {
                fn drop(&mut self) {
                    self.0.with_state(|s| s.renewing = false);
                }
            }
            let done = Done(me);
            let me = &done.0;
            let _one = me.one_at_a_time.lock().await;
            // A refusal may have renewed the token while this waited.
            if !me.with_state(|s| me.renewal_due(s)) {
                return;
            }
            if let Err(e) = me.renew(&found).await {
                tracing::info!("renewing the token ahead of its expiry failed: {e}");
            }
        });
    }

    /// Whether the token held expires soon (half its life, or the last minute, left) and
    /// can be renewed without the user.
    fn renewal_due(&self, s: &State) -> bool {
        let Some(t) = s.token.as_ref() else {
            return false;
        };
        let Some(at) = t.expires_at else { return false };
        let now = Instant::now();
        let life = at.saturating_duration_since(s.since.unwrap_or(now));
        let soon = at <= now + RENEW_AHEAD.min(life / 2);
        soon && (t.refresh_token.is_some() || self.flow.unattended())
    }
}
