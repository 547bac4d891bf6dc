//! Where token-signing keys come from: a JSON Web Key Set (RFC 7517), fixed or read from a
//! file that is read again once what was read is a few seconds old, so keys added to it
//! and, above all, keys removed from it take effect within a bound.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use parking_lot::RwLock;
use serde_json::Value;
use tokio::time::Instant;

/// One public key that may verify tokens.
#[derive(Clone)]
pub struct VerifyingKey {
    pub(crate) kid: Option<String>,
    /// The algorithm the key is bound to, if its JWK names one.
    pub(crate) alg: Option<Algorithm>,
    pub(crate) key: DecodingKey,
}

impl std::fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifyingKey")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

/// A source of the keys that sign access tokens. Implement it to fetch keys your way (an
/// issuer's `jwks_uri`, a secret store); it is asked on every request, so cache.
#[async_trait]
pub trait KeySource: Send + Sync + 'static {
    /// The keys that may have signed a token whose header names `kid` (every key when it
    /// names none).
    async fn keys(&self, kid: Option<&str>) -> Vec<VerifyingKey>;
}

/// A JWKS that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unusable JWKS: {0}")]
pub struct JwksError(String);

/// The signature keys of a JSON Web Key Set. Symmetric (`oct`) keys and keys marked for
/// encryption are left out: a public key set must never let a shared secret sign.
#[derive(Debug, Clone, Default)]
pub struct JwkSet {
    keys: Vec<VerifyingKey>,
}

impl JwkSet {
    /// Reads a JWKS document (`{"keys": [...]}`); keys it cannot use are skipped.
    pub fn parse(text: &str) -> Result<JwkSet, JwksError> {
        let doc: Value =
            serde_json::from_str(text).map_err(|e| JwksError(format!("not JSON: {e}")))?;
        let keys = doc
            .get("keys")
            .and_then(Value::as_array)
            .ok_or_else(|| JwksError("no `keys` array".into()))?;
        let keys: Vec<VerifyingKey> = keys.iter().filter_map(verifying_key).collect();
        if keys.is_empty() {
            return Err(JwksError("no usable signature key".into()));
        }
        Ok(JwkSet { keys })
    }

    /// How many keys it holds.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    fn matching(&self, kid: Option<&str>) -> Vec<VerifyingKey> {
        self.keys
            .iter()
            .filter(|k| kid.is_none() || k.kid.is_none() || k.kid.as_deref() == kid)
            .cloned()
            .collect()
    }

    /// Whether it holds a key with id `kid`.
    pub fn holds(&self, kid: &str) -> bool {
        self.keys.iter().any(|k| k.kid.as_deref() == Some(kid))
    }
}

fn verifying_key(jwk: &Value) -> Option<VerifyingKey> {
    let jwk: Jwk = serde_json::from_value(jwk.clone()).ok()?;
    if matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)) {
        return None;
    }
    if matches!(
        jwk.common.public_key_use,
        Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
    ) {
        return None;
    }
    let alg = match jwk.common.key_algorithm {
        None => None,
        Some(a) => Some(a.to_string().parse::<Algorithm>().ok()?),
    };
    Some(VerifyingKey {
        kid: jwk.common.key_id.clone(),
        alg,
        key: DecodingKey::from_jwk(&jwk).ok()?,
    })
}

#[async_trait]
impl KeySource for JwkSet {
    async fn keys(&self, kid: Option<&str>) -> Vec<VerifyingKey> {
        self.matching(kid)
    }
}

/// A JWKS file. Read at start; then, once what was read is `max_age` old (5 s by
/// default), read again by the next token's check, and parsed again only when its bytes
/// changed. So a key removed from the file (a compromised key withdrawn) is refused for
/// every token checked `max_age` or more after the file was written, and a key added is
/// used as soon, without a restart; a file that does not change costs one read per
/// `max_age` while tokens come, and nothing while none do.
///
/// A file that cannot be read (being replaced), or whose new text is not a usable JWKS
/// (half-written, emptied), leaves the last good set in force and logs a warning (once per
/// distinct text): a bad edit does not lock every client out. Fix the file to change the
/// keys again.
pub struct JwksFile {
    path: PathBuf,
    max_age: Duration,
    state: RwLock<Loaded>,
    /// One read at a time: the tokens that find the set old wait for it rather than each
    /// reading the file.
    checking: tokio::sync::Mutex<()>,
}

/// What was last read from a [`JwksFile`].
struct Loaded {
    /// The last good set.
    set: Arc<JwkSet>,
    /// The bytes last read, good or not, so unchanged text is not parsed (or warned of)
    /// again.
    bytes: Vec<u8>,
    /// When the file was last read (tokio's clock, so tests can pause it).
    checked: Instant,
}

impl JwksFile {
    /// Reads the set at `path`; it must be usable now.
    pub fn open(path: impl Into<PathBuf>) -> Result<JwksFile, JwksError> {
        let path = path.into();
        let bytes = std::fs::read(&path)
            .map_err(|e| JwksError(format!("cannot read {}: {e}", path.display())))?;
        let set = parse_bytes(&bytes)?;
        Ok(JwksFile {
            path,
            max_age: DEFAULT_FILE_MAX_AGE,
            state: RwLock::new(Loaded {
                set: Arc::new(set),
                bytes,
                checked: Instant::now(),
            }),
            checking: tokio::sync::Mutex::new(()),
        })
    }

    /// How old the keys in use may be (default 5 s): the bound within which a change to
    /// the file, a removed key above all, takes effect.
    pub fn max_age(mut self, age: Duration) -> Self {
        self.max_age = age;
        self
    }

    /// The set in force, if it was read less than `max_age` ago.
    fn fresh(&self) -> Option<Arc<JwkSet>> {
        let s = self.state.read();
        (s.checked.elapsed() < self.max_age).then(|| s.set.clone())
    }

    /// Reads the file again, takes its set if its text changed and parses, and gives the
    /// set in force.
    async fn check(&self) -> Arc<JwkSet> {
        let path = self.path.clone();
        let read = tokio::task::spawn_blocking(move || std::fs::read(&path)).await;
        let mut state = self.state.write();
        match read {
            Ok(Ok(bytes)) if bytes == state.bytes => {}
            Ok(Ok(bytes)) => {
                match parse_bytes(&bytes) {
                    Ok(set) => state.set = Arc::new(set),
                    Err(e) => {
                        tracing::warn!("{}: keeping the last good JWKS: {e}", self.path.display())
                    }
                }
                state.bytes = bytes;
            }
            Ok(Err(e)) => tracing::warn!(
                "cannot read {}: keeping the last good JWKS: {e}",
                self.path.display()
            ),
            // The read's task was cancelled (the runtime is shutting down).
            Err(_) => {}
        }
        state.checked = Instant::now();
        state.set.clone()
    }
}

/// How old a [`JwksFile`]'s keys may be unless told otherwise.
const DEFAULT_FILE_MAX_AGE: Duration = Duration::from_secs(5);

fn parse_bytes(bytes: &[u8]) -> Result<JwkSet, JwksError> {
    let text = std::str::from_utf8(bytes).map_err(|e| JwksError(format!("not UTF-8: {e}")))?;
    JwkSet::parse(text)
}

#[async_trait]
impl KeySource for JwksFile {
    async fn keys(&self, kid: Option<&str>) -> Vec<VerifyingKey> {
        if let Some(set) = self.fresh() {
            return set.matching(kid);
        }
        let _one = self.checking.lock().await;
        // Another token may have had the file read while this one waited.
        let set = match self.fresh() {
            Some(set) => set,
            None => self.check().await,
        };
        set.matching(kid)
    }
}
