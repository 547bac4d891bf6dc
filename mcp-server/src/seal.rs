//! Sealed ids: what the gateway hands a peer to name state it keeps (a legacy session,
//! a parked request, a task, a list position), as a token only the holder of a key can
//! have made, so that any replica sharing the key can tell who owns the state and what
//! it was issued for, and nobody can forge, alter or move one.
//!
//! A token is base64url (no padding) of
//!
//! | bytes | what |
//! |---|---|
//! | 0 | format version (1) |
//! | 1 | [`Purpose`] |
//! | 2–5 | key id (derived from the key: which listed key opens it) |
//! | 6–7 | owning [`ReplicaId`], big-endian |
//! | 8 | flags, the issuer's |
//! | 9–20 | nonce (random) |
//! | 21– | the payload, AES-256-GCM sealed, and its 16-byte tag |
//!
//! Bytes 0–8 are in the clear (a replica reads the owner without opening) and
//! authenticated with the payload. Each purpose seals under its own key, derived by
//! HKDF-SHA256 from the configured secret, so a token of one purpose never opens as
//! another. The first [`SealKey`] of a [`Sealer`] seals; every listed key opens
//! (rotation). What a payload holds, and when it expires, is its issuer's to say.
//!
//! The same secrets, through a key derived for it alone, sign what one replica sends
//! another ([`Sealer::sign`], [`Sealer::verify`]: HMAC-SHA256), so that a replica takes a
//! forwarded request only from a replica of its own deployment.

use std::fmt;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use ring::hkdf::{KeyType, Salt, HKDF_SHA256};
use ring::rand::{SecureRandom, SystemRandom};

/// The longest token [`Sealer::open`] reads, in characters: anything longer is refused
/// before it is decoded (a task id carries its upstream's own task id, which can be long).
pub const MAX_TOKEN_LEN: usize = 1024;

/// The fewest secret bytes a [`SealKey`] takes.
pub const MIN_SECRET_LEN: usize = 32;

const VERSION: u8 = 1;
const KEY_ID_LEN: usize = 4;
const CLEAR_LEN: usize = 9;
const TAG_LEN: usize = 16;
const SALT: &[u8] = b"mcp-proxy sealed ids v1";

/// The wall clock in Unix seconds: what the times sealed into payloads, and a hop's, are
/// in (comparable across replicas, unlike a process's monotonic clock).
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

/// What a token names; each purpose has a key of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Purpose {
    /// A legacy HTTP session (`Mcp-Session-Id`).
    Session,
    /// A request parked until the host retries with it (`requestState`).
    RequestState,
    /// A task the gateway hands out.
    Task,
    /// A position in a list (`nextCursor`).
    Cursor,
}

impl Purpose {
    const ALL: [Purpose; 4] = [
        Purpose::Session,
        Purpose::RequestState,
        Purpose::Task,
        Purpose::Cursor,
    ];

    fn byte(self) -> u8 {
        match self {
            Purpose::Session => 1,
            Purpose::RequestState => 2,
            Purpose::Task => 3,
            Purpose::Cursor => 4,
        }
    }

    fn label(self) -> &'static [u8] {
        match self {
            Purpose::Session => b"session",
            Purpose::RequestState => b"request state",
            Purpose::Task => b"task",
            Purpose::Cursor => b"cursor",
        }
    }

    /// Its place in [`Purpose::ALL`].
    fn index(self) -> usize {
        usize::from(self.byte() - 1)
    }
}

/// Which replica of a gateway issued a token, and so holds what it names.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct ReplicaId(pub u16);

impl fmt::Display for ReplicaId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Why a [`SealKey`] or a [`Sealer`] cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The secret is shorter than [`MIN_SECRET_LEN`] bytes.
    #[error("a sealing key needs at least {MIN_SECRET_LEN} bytes of secret, got {0}")]
    TooShort(usize),
    /// No key was given.
    #[error("no sealing key was given")]
    None,
    /// Two listed keys derive the same key id (the same secret listed twice, most likely).
    #[error("sealing keys `{0}` and `{1}` have the same key id")]
    SameId(String, String),
    /// The system's random source failed.
    #[error("the system's random source failed")]
    Random,
}

/// Why a payload could not be sealed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// The system's random source failed to give a nonce.
    #[error("the system's random source failed")]
    Random,
    /// The payload is larger than the cipher takes.
    #[error("the payload is too large to seal")]
    TooLarge,
}

/// Why a token does not open. Each is a token this process cannot honour, and is
/// answered as an unknown id would be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// Longer than [`MAX_TOKEN_LEN`].
    #[error("longer than {MAX_TOKEN_LEN} characters")]
    TooLong,
    /// Not base64url.
    #[error("not base64url")]
    NotBase64,
    /// Too short to hold a sealed payload.
    #[error("truncated")]
    Truncated,
    /// A format this process does not read.
    #[error("unknown format version {0}")]
    Version(u8),
    /// Sealed for another purpose.
    #[error("sealed for another purpose")]
    Purpose,
    /// Sealed with a key that is not listed (another deployment's, or a retired one).
    #[error("sealed with a key that is not listed")]
    UnknownKey,
    /// The tag does not match: altered, or made without the key.
    #[error("altered or forged")]
    Forged,
}

/// A secret to seal with, and the id derived from it.
pub struct SealKey {
    name: String,
    id: [u8; KEY_ID_LEN],
    /// One key per purpose, in [`Purpose::ALL`]'s order.
    keys: Vec<LessSafeKey>,
    /// The key that signs what replicas send each other.
    signing: ring::hmac::Key,
}

impl fmt::Debug for SealKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SealKey")
            .field("name", &self.name)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

struct Len(usize);

impl KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

impl SealKey {
    /// The key `name` (how logs and errors call it; never its secret) of `secret`, at
    /// least [`MIN_SECRET_LEN`] bytes of it.
    pub fn new(name: impl Into<String>, secret: &[u8]) -> Result<SealKey, KeyError> {
        if secret.len() < MIN_SECRET_LEN {
            return Err(KeyError::TooShort(secret.len()));
        }
        let prk = Salt::new(HKDF_SHA256, SALT).extract(secret);
        let mut id = [0; KEY_ID_LEN];
        let info: [&[u8]; 1] = [b"key id"];
        prk.expand(&info, Len(KEY_ID_LEN))
            .and_then(|okm| okm.fill(&mut id))
            .map_err(|_| KeyError::Random)?;
        let mut keys = Vec::with_capacity(Purpose::ALL.len());
        for p in Purpose::ALL {
            let info = [p.label()];
            let okm = prk
                .expand(&info, &AES_256_GCM)
                .map_err(|_| KeyError::Random)?;
            keys.push(LessSafeKey::new(UnboundKey::from(okm)));
        }
        let info: [&[u8]; 1] = [b"replica hop"];
        let signing = prk
            .expand(&info, ring::hmac::HMAC_SHA256)
            .map_err(|_| KeyError::Random)?
            .into();
        Ok(SealKey {
            name: name.into(),
            id,
            keys,
            signing,
        })
    }

    /// A key of random secret, known to this process only.
    pub fn random(name: impl Into<String>) -> Result<SealKey, KeyError> {
        let mut secret = [0u8; 32];
        SystemRandom::new()
            .fill(&mut secret)
            .map_err(|_| KeyError::Random)?;
        SealKey::new(name, &secret)
    }

    /// How logs call it.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn aead(&self, p: Purpose) -> &LessSafeKey {
        &self.keys[p.index()]
    }
}

/// What a token says once opened.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Opened {
    /// The replica that issued it.
    pub replica: ReplicaId,
    /// Its issuer's flags.
    pub flags: u8,
    /// The payload, as sealed.
    pub payload: Vec<u8>,
    /// Whether a key other than the first opened it: reissue it under the first key when
    /// convenient.
    pub by_old_key: bool,
}

/// Seals and opens tokens: the first key seals, every key opens. Cheap to share
/// (`Arc` it); sealing and opening never block.
pub struct Sealer {
    keys: Vec<SealKey>,
    replica: ReplicaId,
    random: SystemRandom,
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.keys.iter().map(SealKey::name).collect();
        f.debug_struct("Sealer")
            .field("keys", &names)
            .field("replica", &self.replica)
            .finish()
    }
}

impl Sealer {
    /// A sealer for `replica` with `keys`, the first of which seals.
    pub fn new(keys: Vec<SealKey>, replica: ReplicaId) -> Result<Sealer, KeyError> {
        if keys.is_empty() {
            return Err(KeyError::None);
        }
        for (i, a) in keys.iter().enumerate() {
            if let Some(b) = keys[..i].iter().find(|b| b.id == a.id) {
                return Err(KeyError::SameId(b.name.clone(), a.name.clone()));
            }
        }
        Ok(Sealer {
            keys,
            replica,
            random: SystemRandom::new(),
        })
    }

    /// A sealer of one random key, for a gateway that is alone: its tokens open nowhere
    /// else, and not after a restart.
    pub fn random() -> Result<Sealer, KeyError> {
        Sealer::new(vec![SealKey::random("random")?], ReplicaId::default())
    }

    /// The replica this sealer seals for.
    pub fn replica(&self) -> ReplicaId {
        self.replica
    }

    /// The signature of `message` under the first key (base64url, 43 characters).
    pub fn sign(&self, message: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(ring::hmac::sign(&self.keys[0].signing, message))
    }

    /// Whether `signature` is one of [`Sealer::sign`]'s of `message` under a listed key,
    /// compared in constant time.
    pub fn verify(&self, message: &[u8], signature: &str) -> bool {
        let Ok(tag) = URL_SAFE_NO_PAD.decode(signature) else {
            return false;
        };
        self.keys
            .iter()
            .any(|k| ring::hmac::verify(&k.signing, message, &tag).is_ok())
    }

    /// `payload` sealed for `purpose` with `flags`, as a token of
    /// `(4 * (37 + payload.len())).div_ceil(3)` characters.
    pub fn seal(&self, purpose: Purpose, flags: u8, payload: &[u8]) -> Result<String, SealError> {
        let key = &self.keys[0];
        let mut bytes = Vec::with_capacity(CLEAR_LEN + NONCE_LEN + payload.len() + TAG_LEN);
        bytes.push(VERSION);
        bytes.push(purpose.byte());
        bytes.extend_from_slice(&key.id);
        bytes.extend_from_slice(&self.replica.0.to_be_bytes());
        bytes.push(flags);
        let mut nonce = [0u8; NONCE_LEN];
        self.random
            .fill(&mut nonce)
            .map_err(|_| SealError::Random)?;
        bytes.extend_from_slice(&nonce);
        let mut sealed = payload.to_vec();
        let aad = Aad::from(&bytes[..CLEAR_LEN]);
        key.aead(purpose)
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), aad, &mut sealed)
            .map_err(|_| SealError::TooLarge)?;
        bytes.extend_from_slice(&sealed);
        Ok(URL_SAFE_NO_PAD.encode(bytes))
    }

    /// The token `token`, opened as one of `purpose`.
    pub fn open(&self, purpose: Purpose, token: &str) -> Result<Opened, OpenError> {
        if token.len() > MAX_TOKEN_LEN {
            return Err(OpenError::TooLong);
        }
        let mut bytes = URL_SAFE_NO_PAD
            .decode(token)
            .map_err(|_| OpenError::NotBase64)?;
        if bytes.len() < CLEAR_LEN + NONCE_LEN + TAG_LEN {
            return Err(OpenError::Truncated);
        }
        if bytes[0] != VERSION {
            return Err(OpenError::Version(bytes[0]));
        }
        if bytes[1] != purpose.byte() {
            return Err(OpenError::Purpose);
        }
        let id = &bytes[2..2 + KEY_ID_LEN];
        let (at, key) = self
            .keys
            .iter()
            .enumerate()
            .find(|(_, k)| k.id == id)
            .ok_or(OpenError::UnknownKey)?;
        let replica = ReplicaId(u16::from_be_bytes([bytes[6], bytes[7]]));
        let flags = bytes[8];
        let (clear, rest) = bytes.split_at_mut(CLEAR_LEN);
        let (nonce, sealed) = rest.split_at_mut(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| OpenError::Truncated)?;
        let payload = key
            .aead(purpose)
            .open_in_place(nonce, Aad::from(&*clear), sealed)
            .map_err(|_| OpenError::Forged)?
            .to_vec();
        Ok(Opened {
            replica,
            flags,
            payload,
            by_old_key: at > 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str, fill: u8) -> SealKey {
        SealKey::new(name, &[fill; 32]).expect("a key")
    }

    fn sealer(keys: Vec<SealKey>, replica: u16) -> Sealer {
        Sealer::new(keys, ReplicaId(replica)).expect("a sealer")
    }

    #[test]
    fn a_token_opens_as_it_was_sealed_on_every_replica_with_the_key() {
        let a = sealer(vec![key("k1", 1)], 3);
        let b = sealer(vec![key("k1", 1)], 7);
        let t = a.seal(Purpose::Session, 0x5a, b"payload").expect("sealed");
        let opened = b.open(Purpose::Session, &t).expect("opens");
        assert_eq!(opened.replica, ReplicaId(3));
        assert_eq!(opened.flags, 0x5a);
        assert_eq!(opened.payload, b"payload");
        assert!(!opened.by_old_key);
        // Fresh nonces: the same payload never gives the same token.
        assert_ne!(
            t,
            a.seal(Purpose::Session, 0x5a, b"payload").expect("sealed")
        );
        assert_eq!(t.len(), (4 * (37 + 7usize)).div_ceil(3));
    }

    #[test]
    fn a_token_of_one_purpose_never_opens_as_another() {
        let s = sealer(vec![key("k1", 1)], 0);
        let t = s.seal(Purpose::RequestState, 0, b"x").expect("sealed");
        assert_eq!(s.open(Purpose::Task, &t), Err(OpenError::Purpose));
        // Relabelled in the clear, it no longer authenticates under the other key.
        let mut bytes = URL_SAFE_NO_PAD.decode(&t).expect("base64");
        bytes[1] = Purpose::Task.byte();
        let relabelled = URL_SAFE_NO_PAD.encode(&bytes);
        assert_eq!(s.open(Purpose::Task, &relabelled), Err(OpenError::Forged));
    }

    #[test]
    fn every_altered_byte_is_refused() {
        let s = sealer(vec![key("k1", 1)], 2);
        let t = s
            .seal(Purpose::Session, 0, b"sixteen bytes...")
            .expect("sealed");
        let bytes = URL_SAFE_NO_PAD.decode(&t).expect("base64");
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x01;
            let r = s.open(Purpose::Session, &URL_SAFE_NO_PAD.encode(&b));
            assert!(r.is_err(), "byte {i} altered and still opened");
        }
    }

    #[test]
    fn malformed_tokens_are_refused_without_panicking() {
        let s = sealer(vec![key("k1", 1)], 0);
        let t = s.seal(Purpose::Session, 0, b"abc").expect("sealed");
        assert_eq!(
            s.open(Purpose::Session, &t[..20]),
            Err(OpenError::Truncated)
        );
        assert_eq!(s.open(Purpose::Session, ""), Err(OpenError::Truncated));
        assert_eq!(
            s.open(Purpose::Session, "not base64!"),
            Err(OpenError::NotBase64)
        );
        assert_eq!(
            s.open(Purpose::Session, &"A".repeat(MAX_TOKEN_LEN + 1)),
            Err(OpenError::TooLong)
        );
        let mut bytes = URL_SAFE_NO_PAD.decode(&t).expect("base64");
        bytes[0] = 9;
        assert_eq!(
            s.open(Purpose::Session, &URL_SAFE_NO_PAD.encode(&bytes)),
            Err(OpenError::Version(9))
        );
    }

    #[test]
    fn the_first_key_seals_and_every_listed_key_opens() {
        let old = sealer(vec![key("old", 1)], 0);
        let rotated = sealer(vec![key("new", 2), key("old", 1)], 0);
        let retired = sealer(vec![key("new", 2)], 0);
        let t = old.seal(Purpose::Task, 0, b"t").expect("sealed");
        let opened = rotated.open(Purpose::Task, &t).expect("an old key opens");
        assert!(opened.by_old_key);
        assert_eq!(retired.open(Purpose::Task, &t), Err(OpenError::UnknownKey));
        let fresh = rotated.seal(Purpose::Task, 0, b"t").expect("sealed");
        assert!(retired.open(Purpose::Task, &fresh).is_ok());
        assert_eq!(old.open(Purpose::Task, &fresh), Err(OpenError::UnknownKey));
        // Another deployment's key, or a process's own random one, opens nothing here.
        let other = Sealer::random().expect("random");
        assert_eq!(
            other.open(Purpose::Task, &fresh),
            Err(OpenError::UnknownKey)
        );
    }

    #[test]
    fn a_signature_verifies_under_any_listed_key_and_nothing_else() {
        let old = sealer(vec![key("old", 1)], 0);
        let rotated = sealer(vec![key("new", 2), key("old", 1)], 1);
        let other = sealer(vec![key("other", 3)], 2);
        let sig = old.sign(b"message");
        assert_eq!(sig.len(), 43);
        assert!(rotated.verify(b"message", &sig));
        assert!(!rotated.verify(b"messages", &sig));
        assert!(!other.verify(b"message", &sig));
        assert!(!rotated.verify(b"message", "not base64!"));
        assert!(!rotated.verify(b"message", ""));
        // The signing key is its own: no sealed token's bytes sign anything.
        assert_ne!(rotated.sign(b"m"), old.sign(b"m"));
    }

    #[test]
    fn keys_are_checked_when_made() {
        assert_eq!(
            SealKey::new("short", &[0; 31]).map(|_| ()),
            Err(KeyError::TooShort(31))
        );
        assert_eq!(
            Sealer::new(Vec::new(), ReplicaId(0)).map(|_| ()),
            Err(KeyError::None)
        );
        assert_eq!(
            Sealer::new(vec![key("a", 1), key("b", 1)], ReplicaId(0)).map(|_| ()),
            Err(KeyError::SameId("a".into(), "b".into()))
        );
        // Debug output names keys, never their secrets.
        let s = sealer(vec![key("named", 1)], 0);
        assert!(format!("{s:?}").contains("named"));
    }
}
