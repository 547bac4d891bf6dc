//! DPoP (RFC 9449; SEP-1932): tokens bound to a key only this client holds, so a token
//! that leaks is useless without it. The client makes a P-256 key when it first needs
//! one, proves it holds it at the token endpoint (the server binds the token to it), and
//! sends every request with `Authorization: DPoP <token>` and a fresh proof: a JWT over
//! the method, the URL and the token, signed with that key. A server may require its
//! nonce in the proofs (`use_dpop_nonce`); the nonces it gives are kept, the
//! authorization server's and the resource's apart. Signing is `jsonwebtoken`'s over
//! `ring`, and the key never leaves the process.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::jwk::{
    AlgorithmParameters, CommonParameters, EllipticCurve, EllipticCurveKeyParameters,
    EllipticCurveKeyType, Jwk,
};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use parking_lot::Mutex;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde::Serialize;

use super::pkce::random_token;
use super::token::TokenError;

/// The `DPoP` header.
pub const DPOP: &str = "dpop";
/// The `DPoP-Nonce` header.
pub const DPOP_NONCE: &str = "dpop-nonce";
/// The algorithm of the proofs.
const ALGORITHM: &str = "ES256";

/// Whose nonce a proof carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NonceOf {
    /// The authorization server's (token requests).
    AuthorizationServer,
    /// The resource's (MCP requests).
    Resource,
}

/// This client's DPoP key and the nonces servers gave it.
pub struct DpopKey {
    key: EncodingKey,
    jwk: Jwk,
    nonces: Mutex<[Option<String>; 2]>,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopKey").finish_non_exhaustive()
    }
}

impl DpopKey {
    /// A fresh P-256 key.
    pub fn generate() -> Result<Self, TokenError> {
        let fail = |what: &str| TokenError::Transport(format!("making a DPoP key: {what}"));
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| fail("no randomness"))?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|_| fail("the key does not load"))?;
        // An uncompressed point: 0x04, then x and y, 32 bytes each.
        let point = pair.public_key().as_ref();
        let (Some(x), Some(y)) = (point.get(1..33), point.get(33..65)) else {
            return Err(fail("the public key is not a P-256 point"));
        };
        let jwk = Jwk {
            common: CommonParameters::default(),
            algorithm: AlgorithmParameters::EllipticCurve(EllipticCurveKeyParameters {
                key_type: EllipticCurveKeyType::EC,
                curve: EllipticCurve::P256,
                x: URL_SAFE_NO_PAD.encode(x),
                y: URL_SAFE_NO_PAD.encode(y),
            }),
        };
        Ok(DpopKey {
            key: EncodingKey::from_ec_der(pkcs8.as_ref()),
            jwk,
            nonces: Mutex::new([None, None]),
        })
    }

    /// Whether an authorization server that signs with `algorithms` takes our proofs.
    pub(crate) fn supported_by(algorithms: Option<&[String]>) -> bool {
        algorithms.is_some_and(|a| a.iter().any(|x| x == ALGORITHM))
    }

    /// Keeps the nonce `of` gave.
    pub(crate) fn keep_nonce(&self, of: NonceOf, nonce: &str) {
        self.nonces.lock()[of as usize] = Some(nonce.to_owned());
    }

    fn nonce(&self, of: NonceOf) -> Option<String> {
        self.nonces.lock()[of as usize].clone()
    }

    /// A fresh proof for a `method` request to `url` (its query and fragment left out),
    /// for `token` when one is sent with it, with the nonce `of` gave, if any.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &str,
        token: Option<&str>,
        of: NonceOf,
    ) -> Result<String, TokenError> {
        #[derive(Serialize)]
        struct Claims {
            jti: String,
            htm: String,
            htu: String,
            iat: u64,
            #[serde(skip_serializing_if = "Option::is_none")]
            ath: Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            nonce: Option<String>,
        }
        let htu = url.split(['?', '#']).next().unwrap_or(url);
        let claims = Claims {
            jti: random_token(16).map_err(|e| TokenError::Transport(e.to_string()))?,
            htm: method.to_owned(),
            htu: htu.to_owned(),
            iat: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            ath: token.map(|t| {
                URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, t.as_bytes()))
            }),
            nonce: self.nonce(of),
        };
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".into());
        header.jwk = Some(self.jwk.clone());
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|e| TokenError::Transport(format!("signing a DPoP proof: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{decode, decode_header, DecodingKey, Validation};

    #[test]
    fn a_proof_is_signed_by_the_key_it_names_and_binds_method_url_token_and_nonce() {
        let key = DpopKey::generate().expect("key");
        key.keep_nonce(NonceOf::Resource, "n-1");
        let proof = key
            .proof(
                "POST",
                "https://rs.example/mcp?x=1#f",
                Some("tok"),
                NonceOf::Resource,
            )
            .expect("proof");
        let header = decode_header(&proof).expect("header");
        assert_eq!(header.typ.as_deref(), Some("dpop+jwt"));
        let jwk = header.jwk.expect("jwk");
        let public = DecodingKey::from_jwk(&jwk).expect("public key");
        let mut v = Validation::new(Algorithm::ES256);
        v.required_spec_claims.clear();
        v.validate_exp = false;
        let claims = decode::<serde_json::Value>(&proof, &public, &v)
            .expect("verifies")
            .claims;
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://rs.example/mcp");
        assert_eq!(claims["nonce"], "n-1");
        let ath = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, b"tok"));
        assert_eq!(claims["ath"], ath.as_str());
        let again = key
            .proof(
                "POST",
                "https://as.example/token",
                None,
                NonceOf::AuthorizationServer,
            )
            .expect("proof");
        let again = decode::<serde_json::Value>(&again, &public, &v)
            .expect("verifies")
            .claims;
        assert_ne!(again["jti"], claims["jti"], "fresh every time");
        assert!(again.get("ath").is_none() && again.get("nonce").is_none());
        let text = serde_json::to_string(&jwk).expect("jwk json");
        assert!(!text.contains("\"d\""), "no private part: {text}");
    }
}
