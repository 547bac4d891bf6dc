//! JWT access tokens (RFC 9068 style) checked against a key source: signature, an
//! algorithm allow-list, issuer, audience (the resource's canonical URI, RFC 8707),
//! expiry and not-before with a small leeway.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};

use super::{bearer_token, Authenticator, KeySource, Principal, Refusal};

/// The asymmetric algorithms accepted unless told otherwise. No `HS*`: a verifier holding
/// only public keys must never accept a MAC, and `none` is never accepted at all.
const DEFAULT_ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// What a token must say to be accepted.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct JwtOptions {
    /// The `iss` tokens must carry.
    pub issuer: String,
    /// The `aud` tokens must name: this resource's canonical URI.
    pub audience: String,
    /// Clock skew allowed on `exp` and `nbf` (default 30 s).
    pub leeway: Duration,
    /// Keep each accepted token in its principal ([`Principal::subject_token`]) for a
    /// gateway that exchanges it upstream (RFC 8693). Off by default.
    pub keep_subject_token: bool,
    algorithms: Vec<Algorithm>,
}

/// An algorithm that may not verify access tokens here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("algorithm {0:?} is not accepted: use RS*, PS*, ES256, ES384 or EdDSA")]
pub struct RejectedAlgorithm(String);

impl JwtOptions {
    /// Tokens from `issuer` for `audience`.
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        JwtOptions {
            issuer: issuer.into(),
            audience: audience.into(),
            leeway: Duration::from_secs(30),
            keep_subject_token: false,
            algorithms: DEFAULT_ALGORITHMS.to_vec(),
        }
    }

    /// Accept only these algorithms (names as in a JWS header, such as `"ES256"`).
    pub fn algorithms<'a>(
        mut self,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, RejectedAlgorithm> {
        self.algorithms = names
            .into_iter()
            .map(|n| match n.parse::<Algorithm>() {
                Ok(a) if DEFAULT_ALGORITHMS.contains(&a) => Ok(a),
                _ => Err(RejectedAlgorithm(n.to_owned())),
            })
            .collect::<Result<_, _>>()?;
        Ok(self)
    }

    /// With `leeway` allowed on `exp` and `nbf`.
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// Keeping (or not) each accepted token in its principal, for token exchange.
    pub fn keep_subject_token(mut self, keep: bool) -> Self {
        self.keep_subject_token = keep;
        self
    }
}

/// Accepts `Authorization: Bearer <JWT>` signed by a key of its [`KeySource`].
pub struct JwtAuthenticator {
    keys: Arc<dyn KeySource>,
    options: JwtOptions,
}

impl JwtAuthenticator {
    /// Tokens signed by `keys` that meet `options`.
    pub fn new(keys: impl KeySource, options: JwtOptions) -> Self {
        JwtAuthenticator {
            keys: Arc::new(keys),
            options,
        }
    }

    fn validation(&self, alg: Algorithm) -> Validation {
        let mut v = Validation::new(alg);
        v.set_issuer(&[&self.options.issuer]);
        v.set_audience(&[&self.options.audience]);
        v.set_required_spec_claims(&["exp", "iss", "aud"]);
        v.leeway = self.options.leeway.as_secs();
        v.validate_nbf = true;
        v
    }

    /// The claims of `token`, verified.
    async fn claims(&self, token: &str) -> Result<Map<String, Value>, Refusal> {
        let invalid = |why: &str| Refusal::InvalidToken(why.to_owned());
        let header = jsonwebtoken::decode_header(token).map_err(|_| invalid("malformed token"))?;
        if !self.options.algorithms.contains(&header.alg) {
            return Err(invalid("signing algorithm not accepted"));
        }
        let validation = self.validation(header.alg);
        let keys = self.keys.keys(header.kid.as_deref()).await;
        for k in keys
            .iter()
            .filter(|k| k.alg.is_none_or(|a| a == header.alg))
        {
            match jsonwebtoken::decode::<Map<String, Value>>(token, &k.key, &validation) {
                Ok(data) => return Ok(data.claims),
                // Not this key: another may verify it.
                Err(e) if signature_problem(e.kind()) => continue,
                // The signature held (it is checked first) but the claims do not.
                Err(e) => return Err(invalid(claim_problem(e.kind()))),
            }
        }
        Err(invalid("no key verifies the signature"))
    }
}

/// Whether `kind` says the key did not verify the signature.
fn signature_problem(kind: &ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::InvalidSignature
            | ErrorKind::InvalidAlgorithm
            | ErrorKind::InvalidKeyFormat
            | ErrorKind::InvalidEcdsaKey
            | ErrorKind::InvalidRsaKey(_)
            | ErrorKind::Crypto(_)
    )
}

/// What is wrong with a signed token's claims, for `error_description`.
fn claim_problem(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::ExpiredSignature => "token expired",
        ErrorKind::ImmatureSignature => "token not yet valid",
        ErrorKind::InvalidIssuer => "token from another issuer",
        ErrorKind::InvalidAudience => "token for another audience",
        ErrorKind::MissingRequiredClaim(_) => "token lacks exp, iss or aud",
        _ => "malformed token",
    }
}

/// The scopes of a token: `scope` (space-separated, RFC 9068) or `scp` (an array or a
/// string, as some issuers write it).
fn scopes(claims: &Map<String, Value>) -> Vec<String> {
    let words = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    match claims.get("scope").or_else(|| claims.get("scp")) {
        Some(Value::String(s)) => words(s),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

#[async_trait]
impl Authenticator for JwtAuthenticator {
    async fn authenticate(&self, request: &http::request::Parts) -> Result<Principal, Refusal> {
        let token = bearer_token(&request.headers).ok_or(Refusal::Missing)?;
        let claims = self.claims(token).await?;
        let subject = ["sub", "client_id"]
            .iter()
            .find_map(|c| claims.get(*c).and_then(Value::as_str))
            .ok_or_else(|| Refusal::InvalidToken("token names no subject".into()))?
            .to_owned();
        let mut principal = Principal::new(subject)
            .with_scopes(scopes(&claims))
            .with_claims(claims);
        if self.options.keep_subject_token {
            principal = principal.with_subject_token(super::SubjectToken::new(token));
        }
        Ok(principal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetric_algorithms_cannot_be_allowed() {
        let o = JwtOptions::new("https://as", "https://rs/mcp");
        assert!(o.clone().algorithms(["ES256", "RS256"]).is_ok());
        assert!(o.clone().algorithms(["HS256"]).is_err());
        assert!(o.algorithms(["none"]).is_err());
    }

    #[test]
    fn scopes_are_read_from_scope_or_scp() {
        let m = |v: Value| v.as_object().cloned().unwrap_or_default();
        assert_eq!(scopes(&m(serde_json::json!({"scope": "a b"}))), ["a", "b"]);
        assert_eq!(scopes(&m(serde_json::json!({"scp": ["a"]}))), ["a"]);
        assert!(scopes(&m(serde_json::json!({}))).is_empty());
    }
}
