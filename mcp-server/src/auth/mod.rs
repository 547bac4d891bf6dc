//! Who is calling: MCP authorization on the server side (an OAuth 2.1 protected resource,
//! `basic/authorization` in 2025-03-26 and later).
//!
//! An [`Authenticator`] turns the credentials of an HTTP request into a [`Principal`] or a
//! [`Refusal`]; [`Authorization`] puts one in front of a
//! [`StreamableHttp`](crate::http::StreamableHttp) endpoint together with the scopes every
//! request needs and the endpoint's [`ProtectedResource`] metadata (RFC 9728), served at
//! `/.well-known/oauth-protected-resource` and named in every `401`'s
//! `WWW-Authenticate` header. A handler reads the principal from
//! [`RequestContext::principal`](crate::RequestContext::principal).
//!
//! Two authenticators come ready: [`JwtAuthenticator`] (JWT access tokens checked against
//! a JWKS: signature, algorithm allow-list, `iss`, `aud`, `exp`, `nbf`) and [`ApiKeys`]
//! (static bearer tokens compared in constant time). Credentials stop here: they are not
//! passed to the handler and not logged, and they are in the principal only when a
//! gateway asks to exchange them ([`JwtOptions::keep_subject_token`]).

mod api_keys;
mod jwks;
mod jwt;
mod principal;
mod resource;

use std::sync::Arc;

use async_trait::async_trait;

pub use api_keys::{ApiKey, ApiKeys};
pub use jwks::{JwkSet, JwksError, JwksFile, KeySource, VerifyingKey};
pub use jwt::{JwtAuthenticator, JwtOptions, RejectedAlgorithm};
pub use principal::{Principal, PrincipalDigest, SubjectToken};
pub use resource::{InvalidResource, ProtectedResource, METADATA_PATH};

/// Why a request's credentials were not accepted, as the spec's HTTP answers say it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// No credentials: `401`, and a `WWW-Authenticate` challenge pointing at the metadata.
    #[error("no credentials")]
    Missing,
    /// Credentials that are not valid here (bad signature, expired, another audience…):
    /// `401` with `error="invalid_token"`. The text says why without quoting the token.
    #[error("invalid token: {0}")]
    InvalidToken(String),
    /// Valid credentials without the scopes needed: `403` with
    /// `error="insufficient_scope"` and the scopes to ask for.
    #[error("insufficient scope: needs {}", .0.join(" "))]
    InsufficientScope(Vec<String>),
}

/// Turns one HTTP request's credentials into the principal making it.
///
/// Called for every request to the endpoint (the spec requires credentials on each), so
/// it should answer from memory; a key fetch belongs in a [`KeySource`] that caches.
#[async_trait]
pub trait Authenticator: Send + Sync + 'static {
    /// The principal behind `request`, or why there is none.
    async fn authenticate(&self, request: &http::request::Parts) -> Result<Principal, Refusal>;
}

/// The `Authorization: Bearer` token of a request, if it has one.
pub fn bearer_token(headers: &http::HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Several authenticators, tried in order: the first to accept a request decides. Refused
/// by all, the request hears the last refusal that is about its credentials (rather than
/// their absence).
#[derive(Clone, Default)]
pub struct FirstOf(Vec<Arc<dyn Authenticator>>);

impl FirstOf {
    /// No authenticators yet (refuses everyone as [`Refusal::Missing`]).
    pub fn new() -> Self {
        FirstOf::default()
    }

    /// With `a` tried after those already given.
    pub fn or(mut self, a: impl Authenticator) -> Self {
        self.0.push(Arc::new(a));
        self
    }
}

#[async_trait]
impl Authenticator for FirstOf {
    async fn authenticate(&self, request: &http::request::Parts) -> Result<Principal, Refusal> {
        let mut refusal = Refusal::Missing;
        for a in &self.0 {
            match a.authenticate(request).await {
                Ok(p) => return Ok(p),
                Err(Refusal::Missing) => {}
                Err(r) => refusal = r,
            }
        }
        Err(refusal)
    }
}

/// Authorization in front of an HTTP endpoint: who may call, with which scopes, and the
/// metadata that tells clients where to get a token.
#[derive(Clone)]
pub struct Authorization {
    pub(crate) authenticator: Arc<dyn Authenticator>,
    pub(crate) required_scopes: Vec<String>,
    pub(crate) resource: ProtectedResource,
}

impl std::fmt::Debug for Authorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorization")
            .field("required_scopes", &self.required_scopes)
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl Authorization {
    /// `authenticator` in front of the resource `resource` describes; no scopes needed.
    pub fn new(authenticator: impl Authenticator, resource: ProtectedResource) -> Self {
        Authorization {
            authenticator: Arc::new(authenticator),
            required_scopes: Vec::new(),
            resource,
        }
    }

    /// Scopes every request's principal must hold (`403 insufficient_scope` otherwise).
    pub fn require_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The resource's metadata.
    pub fn resource(&self) -> &ProtectedResource {
        &self.resource
    }

    /// The principal behind `request`, as the authenticator says, its scopes not checked
    /// (who it is, not what it may do here).
    pub async fn authenticate(&self, request: &http::request::Parts) -> Result<Principal, Refusal> {
        self.authenticator.authenticate(request).await
    }

    /// The principal behind `request`, its scopes checked.
    pub async fn check(&self, request: &http::request::Parts) -> Result<Principal, Refusal> {
        let principal = self.authenticator.authenticate(request).await?;
        let missing: Vec<String> = self
            .required_scopes
            .iter()
            .filter(|s| !principal.has_scope(s))
            .cloned()
            .collect();
        match missing.is_empty() {
            true => Ok(principal),
            false => Err(Refusal::InsufficientScope(self.required_scopes.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_read_from_the_authorization_header() {
        let mut h = http::HeaderMap::new();
        assert_eq!(bearer_token(&h), None);
        h.insert(
            http::header::AUTHORIZATION,
            "Bearer abc.def".parse().unwrap(),
        );
        assert_eq!(bearer_token(&h), Some("abc.def"));
        h.insert(http::header::AUTHORIZATION, "bearer  xyz ".parse().unwrap());
        assert_eq!(bearer_token(&h), Some("xyz"));
        h.insert(
            http::header::AUTHORIZATION,
            "Basic dXNlcg==".parse().unwrap(),
        );
        assert_eq!(bearer_token(&h), None);
        h.insert(http::header::AUTHORIZATION, "Bearer ".parse().unwrap());
        assert_eq!(bearer_token(&h), None);
    }
}
