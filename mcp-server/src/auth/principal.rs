//! The principal a request is made for.

use serde_json::{Map, Value};

/// Who a request is made for, as its credentials say: a subject, the scopes granted and,
/// for a token, its claims. The token itself is kept only when the authenticator was told
/// to keep it for token exchange ([`crate::auth::JwtOptions::keep_subject_token`]), and
/// then only as an opaque [`SubjectToken`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Principal {
    /// The subject: a JWT's `sub` (else its `client_id`), an API key's configured subject.
    pub subject: String,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// The name of the credential that let it in (an API key's name), if it has one.
    pub credential: Option<String>,
    /// A token's claims as it carried them; empty for API keys.
    pub claims: Map<String, Value>,
    /// The access token itself, for a gateway that exchanges it (RFC 8693), if kept.
    subject_token: Option<SubjectToken>,
}

/// A principal's own access token, kept so that a gateway can exchange it for a token of
/// an upstream (RFC 8693 `subject_token`): never printed (its `Debug` says only that it is
/// there), never compared by its text outside [`PartialEq`], never sent anywhere but to a
/// token endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct SubjectToken(std::sync::Arc<str>);

impl SubjectToken {
    /// `token` as a subject token.
    pub fn new(token: impl Into<std::sync::Arc<str>>) -> Self {
        SubjectToken(token.into())
    }

    /// The token's text, to send to a token endpoint and nowhere else.
    pub fn secret(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SubjectToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SubjectToken(..)")
    }
}

impl Principal {
    /// A principal with `subject` and no scopes or claims.
    pub fn new(subject: impl Into<String>) -> Self {
        Principal {
            subject: subject.into(),
            scopes: Vec::new(),
            credential: None,
            claims: Map::new(),
            subject_token: None,
        }
    }

    /// With `claims` as its token carried them.
    pub fn with_claims(mut self, claims: Map<String, Value>) -> Self {
        self.claims = claims;
        self
    }

    /// Keeping `token`, the access token it was authenticated by, for token exchange.
    pub fn with_subject_token(mut self, token: SubjectToken) -> Self {
        self.subject_token = Some(token);
        self
    }

    /// The access token it was authenticated by, if the authenticator kept it (see
    /// [`SubjectToken`]).
    pub fn subject_token(&self) -> Option<&SubjectToken> {
        self.subject_token.as_ref()
    }

    /// When its token expires (`exp`), if it says.
    pub fn expires_at(&self) -> Option<std::time::SystemTime> {
        let exp = self.claims.get("exp")?.as_u64()?;
        std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_secs(exp))
    }

    /// With `scopes` granted.
    pub fn with_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Named after the credential `name`.
    pub fn with_credential(mut self, name: impl Into<String>) -> Self {
        self.credential = Some(name.into());
        self
    }

    /// Who this is, as one key: subject, credential name and issuer together, since a
    /// JWT's `sub` and an API key's subject are names from different authorities and may
    /// be the same text.
    pub fn identity(&self) -> String {
        let issuer = self.issuer().unwrap_or_default();
        let credential = self.credential.as_deref().unwrap_or_default();
        format!("{}\u{0}{credential}\u{0}{issuer}", self.subject)
    }

    /// Who vouched for it: its token's `iss` claim; `None` for an API key's principal or
    /// one the server was given.
    pub fn issuer(&self) -> Option<&str> {
        self.claims.get("iss").and_then(Value::as_str)
    }

    /// Whether `scope` was granted.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

/// Who a request is made for, as 16 bytes to seal into an id (see [`crate::seal`]): a
/// digest of [`Principal::identity`], so that a token names its principal without
/// carrying who it is. Anonymous requests (no authorization) all share one digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PrincipalDigest(pub [u8; 16]);

impl PrincipalDigest {
    /// The digest of `principal` (`None`: anonymous).
    pub fn of(principal: Option<&Principal>) -> PrincipalDigest {
        let mut out = [0; 16];
        if let Some(p) = principal {
            let d = ring::digest::digest(&ring::digest::SHA256, p.identity().as_bytes());
            out.copy_from_slice(&d.as_ref()[..16]);
        }
        PrincipalDigest(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_differ_by_digest_and_anonymous_is_its_own() {
        let a = Principal::new("alice");
        let b = Principal::new("alice").with_credential("key-1");
        let anonymous = PrincipalDigest::of(None);
        assert_eq!(
            PrincipalDigest::of(Some(&a)),
            PrincipalDigest::of(Some(&a.clone()))
        );
        assert_ne!(PrincipalDigest::of(Some(&a)), PrincipalDigest::of(Some(&b)));
        assert_ne!(PrincipalDigest::of(Some(&a)), anonymous);
    }

    #[test]
    fn a_kept_subject_token_is_never_printed() {
        let p = Principal::new("alice").with_subject_token(SubjectToken::new("eyJ.secret.sig"));
        assert_eq!(
            p.subject_token().map(SubjectToken::secret),
            Some("eyJ.secret.sig")
        );
        let printed = format!("{p:?} {:?}", p.subject_token());
        assert!(!printed.contains("secret"), "{printed}");
        assert_eq!(p.identity(), Principal::new("alice").identity());
    }
}
