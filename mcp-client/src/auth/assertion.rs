//! `private_key_jwt` (RFC 7523 §2.2, OpenID Connect Core §9): the client proves who it is
//! to the token endpoint with a short-lived JWT signed by its own key, so no secret ever
//! crosses the wire. Signing is `jsonwebtoken`'s (over `ring`), never ours.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;

use super::pkce::random_token;
use super::token::TokenError;

/// `client_assertion_type` for a JWT (RFC 7523 §2.2).
pub const JWT_BEARER_ASSERTION: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// How long an assertion is good for: it is used at once, and once.
const LIFETIME_SECS: u64 = 60;

/// A client's signing key for `private_key_jwt`. Only asymmetric algorithms are taken: a
/// shared secret is what `client_secret_*` is for.
#[derive(Clone)]
pub struct ClientKey {
    key: Arc<EncodingKey>,
    algorithm: Algorithm,
    key_id: Option<String>,
}

impl std::fmt::Debug for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientKey")
            .field("algorithm", &self.algorithm)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// Why a key could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientKeyError {
    /// The algorithm is not an asymmetric one `jsonwebtoken` signs with.
    #[error(
        "`{0}` is not a signing algorithm for private_key_jwt (RS*, PS*, ES256, ES384, EdDSA)"
    )]
    Algorithm(String),
    /// The PEM text is not a key of that algorithm's family.
    #[error("the private key is not a PEM key for {algorithm}: {reason}")]
    Pem {
        /// The algorithm asked for.
        algorithm: String,
        /// What `jsonwebtoken` said.
        reason: String,
    },
}

impl ClientKey {
    /// A key from its PEM text (PKCS#8, or PKCS#1 for RSA) for `algorithm` (`ES256`, …).
    pub fn from_pem(pem: &str, algorithm: &str) -> Result<Self, ClientKeyError> {
        let alg: Algorithm = algorithm
            .parse()
            .map_err(|_| ClientKeyError::Algorithm(algorithm.to_owned()))?;
        let bytes = pem.as_bytes();
        let key = match alg {
            Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(bytes),
            Algorithm::EdDSA => EncodingKey::from_ed_pem(bytes),
            Algorithm::RS256
            | Algorithm::RS384
            | Algorithm::RS512
            | Algorithm::PS256
            | Algorithm::PS384
            | Algorithm::PS512 => EncodingKey::from_rsa_pem(bytes),
            _ => return Err(ClientKeyError::Algorithm(algorithm.to_owned())),
        }
        .map_err(|e| ClientKeyError::Pem {
            algorithm: algorithm.to_owned(),
            reason: e.to_string(),
        })?;
        Ok(ClientKey {
            key: Arc::new(key),
            algorithm: alg,
            key_id: None,
        })
    }

    /// The same key, named `kid` in the assertion's header (for a server holding several).
    pub fn with_key_id(mut self, kid: impl Into<String>) -> Self {
        self.key_id = Some(kid.into());
        self
    }

    /// A fresh assertion that `client_id` is calling, for the server `audience` (its
    /// issuer identifier).
    pub(crate) fn assertion(&self, client_id: &str, audience: &str) -> Result<String, TokenError> {
        #[derive(Serialize)]
        struct Claims<'a> {
            iss: &'a str,
            sub: &'a str,
            aud: &'a str,
            iat: u64,
            exp: u64,
            jti: String,
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let jti = random_token(16).map_err(|e| TokenError::Transport(e.to_string()))?;
        let claims = Claims {
            iss: client_id,
            sub: client_id,
            aud: audience,
            iat: now,
            exp: now + LIFETIME_SECS,
            jti,
        };
        let mut header = Header::new(self.algorithm);
        header.kid = self.key_id.clone();
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|e| TokenError::Transport(format!("signing the client assertion: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A P-256 key made for this test only (openssl genpkey -algorithm EC
    // -pkeyopt ec_paramgen_curve:P-256), with its public half to check the signature.
    const PRIVATE: &str = include_str!("../../tests/data/client-es256.pem");
    const PUBLIC: &str = include_str!("../../tests/data/client-es256.pub.pem");

    #[test]
    fn an_assertion_names_the_client_and_the_server_and_expires_soon() {
        let key = ClientKey::from_pem(PRIVATE, "ES256")
            .expect("key")
            .with_key_id("k1");
        let jwt = key
            .assertion("client-1", "https://as.example")
            .expect("jwt");
        let header = jsonwebtoken::decode_header(&jwt).expect("header");
        assert_eq!(
            (header.alg, header.kid.as_deref()),
            (Algorithm::ES256, Some("k1"))
        );
        let mut v = jsonwebtoken::Validation::new(Algorithm::ES256);
        v.set_audience(&["https://as.example"]);
        v.set_required_spec_claims(&["exp", "aud", "iss", "sub"]);
        let public = jsonwebtoken::DecodingKey::from_ec_pem(PUBLIC.as_bytes()).expect("public");
        let claims = jsonwebtoken::decode::<serde_json::Value>(&jwt, &public, &v)
            .expect("verifies")
            .claims;
        assert_eq!(claims["iss"], "client-1");
        assert_eq!(claims["sub"], "client-1");
        let (iat, exp) = (claims["iat"].as_u64(), claims["exp"].as_u64());
        assert_eq!(exp.zip(iat).map(|(e, i)| e - i), Some(LIFETIME_SECS));
        let again = key
            .assertion("client-1", "https://as.example")
            .expect("jwt");
        let jti = |t: &str| {
            jsonwebtoken::decode::<serde_json::Value>(t, &public, &v)
                .map(|d| d.claims["jti"].clone())
        };
        assert_ne!(
            jti(&jwt).ok(),
            jti(&again).ok(),
            "each assertion is used once"
        );
    }

    #[test]
    fn symmetric_algorithms_and_wrong_keys_are_refused() {
        assert!(matches!(
            ClientKey::from_pem(PRIVATE, "HS256"),
            Err(ClientKeyError::Algorithm(_))
        ));
        assert!(matches!(
            ClientKey::from_pem(PRIVATE, "none"),
            Err(ClientKeyError::Algorithm(_))
        ));
        assert!(matches!(
            ClientKey::from_pem("not a key", "ES256"),
            Err(ClientKeyError::Pem { .. })
        ));
    }
}
