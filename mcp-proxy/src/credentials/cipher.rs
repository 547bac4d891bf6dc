//! [`GrantKeys`]: the AEAD keys users' upstream grants are kept under at rest
//! (AES-256-GCM, `ring`). The first key seals; every key opens, so keys rotate by putting
//! a new one first and dropping the old one once the records it sealed were rewritten or
//! expired. A record is bound to where it is kept (its store key is the associated data),
//! so a record copied to another user's place does not open there.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};

/// The version tag of a sealed record.
const TAG: &str = "g1";

/// The keys grants are sealed with.
pub struct GrantKeys {
    keys: Vec<(String, LessSafeKey)>,
    random: SystemRandom,
}

impl std::fmt::Debug for GrantKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.keys.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("GrantKeys").field("keys", &names).finish()
    }
}

/// Why keys could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GrantKeyError {
    /// None given.
    #[error("no key given")]
    Empty,
    /// One is not `name:secret` with a name of `[A-Za-z0-9_-]` and a secret of 32 bytes in
    /// base64url (or standard base64).
    #[error("key {0}: expected `name:secret`, the secret 32 bytes in base64")]
    Malformed(usize),
    /// Two share a name.
    #[error("two keys are named `{0}`")]
    Duplicate(String),
    /// The system gave no randomness to make one with.
    #[error("no system randomness")]
    NoRandomness,
}

/// Why a record did not seal or open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unopened {
    /// Not a record of this format.
    #[error("not a sealed grant")]
    Malformed,
    /// Sealed with a key not held.
    #[error("sealed with a key not held")]
    UnknownKey,
    /// Altered, or kept somewhere else than where it was sealed for.
    #[error("altered, or not sealed for this place")]
    Forged,
    /// The system gave no randomness for a nonce (sealing only).
    #[error("no system randomness to seal with")]
    NoRandomness,
}

impl GrantKeys {
    /// The keys of `text`: one `name:secret` per line or separated by commas, the first
    /// sealing.
    pub fn parse(text: &str) -> Result<GrantKeys, GrantKeyError> {
        let mut keys = Vec::new();
        for (n, item) in text
            .split([',', '\n'])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .enumerate()
        {
            let bad = || GrantKeyError::Malformed(n + 1);
            let (name, secret) = item.split_once(':').ok_or_else(bad)?;
            let valid_name = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !valid_name {
                return Err(bad());
            }
            let bytes = decode(secret.trim()).ok_or_else(bad)?;
            let secret: [u8; 32] = bytes.try_into().map_err(|_| bad())?;
            keys.push((name.to_owned(), secret));
        }
        GrantKeys::new(keys)
    }

    /// `keys` by name, the first sealing.
    pub fn new(keys: Vec<(String, [u8; 32])>) -> Result<GrantKeys, GrantKeyError> {
        if keys.is_empty() {
            return Err(GrantKeyError::Empty);
        }
        let mut made: Vec<(String, LessSafeKey)> = Vec::with_capacity(keys.len());
        for (name, secret) in keys {
            if made.iter().any(|(n, _)| *n == name) {
                return Err(GrantKeyError::Duplicate(name));
            }
            let key = UnboundKey::new(&AES_256_GCM, &secret).map_err(|_| GrantKeyError::Empty)?;
            made.push((name, LessSafeKey::new(key)));
        }
        Ok(GrantKeys {
            keys: made,
            random: SystemRandom::new(),
        })
    }

    /// One key made at random (grants then last as long as the process).
    pub fn random() -> Result<GrantKeys, GrantKeyError> {
        let mut secret = [0u8; 32];
        SystemRandom::new()
            .fill(&mut secret)
            .map_err(|_| GrantKeyError::NoRandomness)?;
        GrantKeys::new(vec![("random".into(), secret)])
    }

    /// `plain` sealed under the first key for the place `place`.
    pub(crate) fn seal(&self, place: &str, plain: &[u8]) -> Result<String, Unopened> {
        let (name, key) = &self.keys[0];
        let mut nonce = [0u8; NONCE_LEN];
        self.random
            .fill(&mut nonce)
            .map_err(|_| Unopened::NoRandomness)?;
        let mut sealed = plain.to_vec();
        key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(place.as_bytes()),
            &mut sealed,
        )
        .map_err(|_| Unopened::Malformed)?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        Ok(format!("{TAG}.{name}.{}", URL_SAFE_NO_PAD.encode(out)))
    }

    /// What `text` sealed for `place`.
    pub(crate) fn open(&self, place: &str, text: &str) -> Result<Vec<u8>, Unopened> {
        let mut parts = text.splitn(3, '.');
        let (Some(TAG), Some(name), Some(body)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(Unopened::Malformed);
        };
        let (_, key) = self
            .keys
            .iter()
            .find(|(n, _)| n == name)
            .ok_or(Unopened::UnknownKey)?;
        let mut bytes = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| Unopened::Malformed)?;
        if bytes.len() < NONCE_LEN {
            return Err(Unopened::Malformed);
        }
        let mut sealed = bytes.split_off(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(&bytes).map_err(|_| Unopened::Malformed)?;
        let plain = key
            .open_in_place(nonce, Aad::from(place.as_bytes()), &mut sealed)
            .map_err(|_| Unopened::Forged)?;
        Ok(plain.to_vec())
    }
}

/// `text` as base64url or standard base64, padded or not.
fn decode(text: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE};
    [URL_SAFE_NO_PAD, URL_SAFE, STANDARD, STANDARD_NO_PAD]
        .iter()
        .find_map(|e| e.decode(text).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str, byte: u8) -> String {
        format!("{name}:{}", URL_SAFE_NO_PAD.encode([byte; 32]))
    }

    #[test]
    fn a_record_opens_only_with_its_key_and_in_its_place() {
        let keys = GrantKeys::parse(&key("k1", 1)).expect("keys");
        let sealed = keys
            .seal("alice:desk", b"secret-token-text")
            .expect("sealed");
        assert!(!sealed.contains("secret-token-text"));
        assert_eq!(
            keys.open("alice:desk", &sealed).expect("opens"),
            b"secret-token-text"
        );
        assert_eq!(keys.open("bob:desk", &sealed), Err(Unopened::Forged));
        let other = GrantKeys::parse(&key("k1", 2)).expect("keys");
        assert_eq!(other.open("alice:desk", &sealed), Err(Unopened::Forged));
        let unnamed = GrantKeys::parse(&key("k2", 1)).expect("keys");
        assert_eq!(
            unnamed.open("alice:desk", &sealed),
            Err(Unopened::UnknownKey)
        );
        // Each byte altered: refused.
        for i in 0..sealed.len() {
            let mut bytes = sealed.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let altered = String::from_utf8(bytes).expect("ascii");
            assert!(keys.open("alice:desk", &altered).is_err(), "byte {i}");
        }
    }

    #[test]
    fn keys_rotate_the_first_sealing_and_every_one_opening() {
        let old = GrantKeys::parse(&key("old", 1)).expect("keys");
        let sealed = old.seal("p", b"grant").expect("sealed");
        let rotated =
            GrantKeys::parse(&format!("{},{}", key("new", 2), key("old", 1))).expect("keys");
        assert_eq!(rotated.open("p", &sealed).expect("old opens"), b"grant");
        assert!(rotated
            .seal("p", b"grant")
            .expect("sealed")
            .starts_with("g1.new."));
    }

    #[test]
    fn malformed_keys_are_refused_by_position() {
        assert_eq!(GrantKeys::parse("").err(), Some(GrantKeyError::Empty));
        assert_eq!(
            GrantKeys::parse("nocolon").err(),
            Some(GrantKeyError::Malformed(1))
        );
        let short = format!("{},k:{}", key("a", 1), URL_SAFE_NO_PAD.encode([0u8; 16]));
        assert_eq!(
            GrantKeys::parse(&short).err(),
            Some(GrantKeyError::Malformed(2))
        );
        let twice = format!("{},{}", key("a", 1), key("a", 2));
        assert_eq!(
            GrantKeys::parse(&twice).err(),
            Some(GrantKeyError::Duplicate("a".into()))
        );
        let debug = format!("{:?}", GrantKeys::parse(&key("a", 7)).expect("keys"));
        assert_eq!(debug, r#"GrantKeys { keys: ["a"] }"#);
    }
}
