//! The principal a request is made for.

use serde_json::{Map, Value};

/// Who a request is made for, as its credentials say: a subject, the scopes granted and,
/// for a token, its claims (never the token itself).
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
}

impl Principal {
    /// A principal with `subject` and no scopes or claims.
    pub fn new(subject: impl Into<String>) -> Self {
        Principal {
            subject: subject.into(),
            scopes: Vec::new(),
            credential: None,
            claims: Map::new(),
        }
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
        let issuer = self
            .claims
            .get("iss")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let credential = self.credential.as_deref().unwrap_or_default();
        format!("{}\u{0}{credential}\u{0}{issuer}", self.subject)
    }

    /// Whether `scope` was granted.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}
