//! PKCE (RFC 7636) with `S256`, the only method MCP allows: a fresh random verifier per
//! authorization request and its challenge.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::rand::{SecureRandom, SystemRandom};

/// One authorization request's PKCE pair. The verifier stays with the client until the
/// token request; only the challenge goes to the authorization endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct Pkce {
    verifier: String,
    challenge: String,
}

impl std::fmt::Debug for Pkce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pkce")
            .field("challenge", &self.challenge)
            .finish_non_exhaustive()
    }
}

/// The system's random source failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no randomness available for PKCE")]
pub struct NoRandomness;

/// `n` random bytes as base64url without padding.
pub(crate) fn random_token(n: usize) -> Result<String, NoRandomness> {
    let mut bytes = vec![0u8; n];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| NoRandomness)?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

impl Pkce {
    /// A fresh pair: 32 random bytes as the verifier (43 characters, RFC 7636 §4.1).
    pub fn new() -> Result<Pkce, NoRandomness> {
        Ok(Pkce::from_verifier(random_token(32)?))
    }

    /// The pair of a given verifier.
    pub fn from_verifier(verifier: String) -> Pkce {
        let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
        Pkce {
            challenge: URL_SAFE_NO_PAD.encode(digest.as_ref()),
            verifier,
        }
    }

    /// `code_verifier`, for the token request.
    pub fn verifier(&self) -> &str {
        &self.verifier
    }

    /// `code_challenge`, for the authorization request (`code_challenge_method=S256`).
    pub fn challenge(&self) -> &str {
        &self.challenge
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfc_7636_example_and_fresh_pairs() {
        let p = Pkce::from_verifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".into());
        assert_eq!(p.challenge(), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        let (a, b) = (Pkce::new().expect("random"), Pkce::new().expect("random"));
        assert_eq!(a.verifier().len(), 43);
        assert_ne!(a.verifier(), b.verifier());
        assert!(
            !format!("{a:?}").contains(a.verifier()),
            "the verifier is not printed"
        );
    }
}
