//! Static bearer tokens (API keys), each standing for a configured principal.

use async_trait::async_trait;
use ring::digest::{digest, SHA256};
use subtle::ConstantTimeEq;

use super::{bearer_token, Authenticator, Principal, Refusal};

/// One accepted key and who it stands for. Only a digest of the key is kept.
#[derive(Clone)]
pub struct ApiKey {
    digest: [u8; 32],
    principal: Principal,
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKey")
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

fn sha256(s: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(digest(&SHA256, s.as_bytes()).as_ref());
    out
}

impl ApiKey {
    /// `key` standing for `principal`; the principal's credential is named `name`.
    pub fn new(name: impl Into<String>, key: &str, principal: Principal) -> Self {
        ApiKey {
            digest: sha256(key),
            principal: principal.with_credential(name),
        }
    }
}

/// Accepts `Authorization: Bearer <key>` for any of its keys. Keys are compared by their
/// SHA-256 digests in constant time, every key each time, so neither a key's length nor
/// how much of it matched shows in the time an answer takes.
#[derive(Debug, Clone, Default)]
pub struct ApiKeys {
    keys: Vec<ApiKey>,
}

impl ApiKeys {
    /// No keys yet (refuses everyone).
    pub fn new() -> Self {
        ApiKeys::default()
    }

    /// With `key` accepted.
    pub fn with(mut self, key: ApiKey) -> Self {
        self.keys.push(key);
        self
    }

    /// How many keys it accepts.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether it accepts none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The principal `token` stands for.
    pub fn principal_for(&self, token: &str) -> Option<&Principal> {
        let presented = sha256(token);
        let mut found = None;
        for k in &self.keys {
            if bool::from(k.digest.ct_eq(&presented)) {
                found = Some(&k.principal);
            }
        }
        found
    }
}

#[async_trait]
impl Authenticator for ApiKeys {
    async fn authenticate(&self, request: &http::request::Parts) -> Result<Principal, Refusal> {
        let token = bearer_token(&request.headers).ok_or(Refusal::Missing)?;
        self.principal_for(token)
            .cloned()
            .ok_or_else(|| Refusal::InvalidToken("unknown API key".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_their_principals() {
        let keys = ApiKeys::new()
            .with(ApiKey::new(
                "ci",
                "k-1",
                Principal::new("ci-bot").with_scopes(["read"]),
            ))
            .with(ApiKey::new("alice", "k-2", Principal::new("alice")));
        let ci = keys.principal_for("k-1").expect("known key");
        assert_eq!(
            (ci.subject.as_str(), ci.credential.as_deref()),
            ("ci-bot", Some("ci"))
        );
        assert!(ci.has_scope("read"));
        assert_eq!(
            keys.principal_for("k-2").map(|p| p.subject.as_str()),
            Some("alice")
        );
        assert!(keys.principal_for("k-").is_none());
        assert!(keys.principal_for("k-10").is_none());
        assert!(ApiKeys::new().principal_for("").is_none());
    }
}
