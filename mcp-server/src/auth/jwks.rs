//! Where token-signing keys come from: a JSON Web Key Set (RFC 7517), fixed or read from a
//! file that is read again when a token names a key it does not hold (key rotation).

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;

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

/// A JWKS file, read at start and again (at most every `min_reload`, 30 s by default)
/// when a token names a key id it does not hold, so rotated keys are picked up without a
/// restart. A file that becomes unreadable keeps the last good set.
pub struct JwksFile {
    path: PathBuf,
    min_reload: Duration,
    state: RwLock<(Arc<JwkSet>, Instant)>,
}

impl JwksFile {
    /// Reads the set at `path`.
    pub fn open(path: impl Into<PathBuf>) -> Result<JwksFile, JwksError> {
        let path = path.into();
        let set = read(&path)?;
        Ok(JwksFile {
            path,
            min_reload: Duration::from_secs(30),
            state: RwLock::new((Arc::new(set), Instant::now())),
        })
    }

    /// Reads the file again at most this often.
    pub fn min_reload(mut self, every: Duration) -> Self {
        self.min_reload = every;
        self
    }

    fn current(&self) -> (Arc<JwkSet>, Instant) {
        match self.state.read() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

fn read(path: &std::path::Path) -> Result<JwkSet, JwksError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| JwksError(format!("cannot read {}: {e}", path.display())))?;
    JwkSet::parse(&text)
}

#[async_trait]
impl KeySource for JwksFile {
    async fn keys(&self, kid: Option<&str>) -> Vec<VerifyingKey> {
        let (set, loaded) = self.current();
        let stale = kid.is_some_and(|k| !set.holds(k)) && loaded.elapsed() >= self.min_reload;
        if !stale {
            return set.matching(kid);
        }
        let path = self.path.clone();
        let fresh = tokio::task::spawn_blocking(move || read(&path)).await;
        let set = match fresh {
            Ok(Ok(fresh)) => Arc::new(fresh),
            Ok(Err(e)) => {
                tracing::warn!("keeping the last JWKS: {e}");
                set
            }
            Err(_) => set,
        };
        if let Ok(mut s) = self.state.write() {
            *s = (set.clone(), Instant::now());
        }
        set.matching(kid)
    }
}
