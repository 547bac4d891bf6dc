//! Token-signing keys fetched from the authorization server: its `jwks_uri`, given or
//! discovered from its metadata (RFC 8414 and OpenID Connect discovery, in the MCP spec's
//! order), cached, and fetched again when the cache is `max_age` old (so a key the issuer
//! withdraws stops working within that bound) or a token names a key id the cache does
//! not hold (key rotation). Fetches are bounded in size and time, one at a time, and at
//! most every `min_refetch` (or `max_age`, if shorter), so neither a flood of forged key
//! ids nor an issuer that is down turns every request into a fetch. While fetches fail,
//! the last keys fetched serve until they are `max_stale` old; past that, tokens are
//! refused until a fetch succeeds (an issuer that cannot be heard cannot say a key was
//! withdrawn).

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mcp_client::auth::discovery::{secure, server_metadata_urls};
use mcp_client::fetch::{get_json, FetchError};
use mcp_server::auth::{JwkSet, KeySource, VerifyingKey};
use parking_lot::RwLock;
use serde_json::Value;

/// How old fetched keys may be unless told otherwise.
const DEFAULT_MAX_AGE: Duration = Duration::from_secs(60);

/// Largest JWKS or metadata document read.
const MAX_DOCUMENT: usize = 256 * 1024;

/// Where the keys are.
#[derive(Debug, Clone)]
enum Origin {
    /// A `jwks_uri`.
    Jwks(String),
    /// An issuer whose metadata names its `jwks_uri`.
    Issuer(String),
}

#[derive(Default)]
struct Cache {
    set: Option<(Arc<JwkSet>, Instant)>,
    last_attempt: Option<Instant>,
    /// The `jwks_uri` discovered from the issuer's metadata.
    discovered: Option<String>,
}

/// Keys fetched over HTTP(S); a [`KeySource`] for [`mcp_server::auth::JwtAuthenticator`].
///
/// A token is checked against keys fetched at most `max_age` ago (60 s by default) while
/// the issuer answers: the first token after that waits for a fetch (tokens arriving
/// while it runs are checked against the keys it replaces), so a key removed from the
/// issuer's set is refused within `max_age` plus one fetch (at most 10 s). A fetch that fails, or whose document is not a usable
/// JWKS, keeps the last set for at most `max_stale` (1 h by default) after it was fetched;
/// older, every token is refused until a fetch succeeds.
pub struct JwksUri {
    origin: Origin,
    min_refetch: Duration,
    max_age: Duration,
    max_stale: Duration,
    timeout: Duration,
    cache: RwLock<Cache>,
    fetching: tokio::sync::Mutex<()>,
}

impl JwksUri {
    /// The keys at `jwks_uri`.
    pub fn new(jwks_uri: impl Into<String>) -> Self {
        JwksUri::with_origin(Origin::Jwks(jwks_uri.into()))
    }

    /// The keys of `issuer`, its `jwks_uri` read from its metadata at first use.
    pub fn discover(issuer: impl Into<String>) -> Self {
        JwksUri::with_origin(Origin::Issuer(issuer.into()))
    }

    fn with_origin(origin: Origin) -> Self {
        JwksUri {
            origin,
            min_refetch: Duration::from_secs(30),
            max_age: DEFAULT_MAX_AGE,
            max_stale: Duration::from_secs(3600),
            timeout: Duration::from_secs(10),
            cache: RwLock::new(Cache::default()),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    /// Fetches at most this often (default 30 s), or every `max_age` if that is
    /// shorter: the rate a token naming an unknown key id, or an issuer that fails, can
    /// cause fetches at.
    pub fn min_refetch(mut self, every: Duration) -> Self {
        self.min_refetch = every;
        self
    }

    /// Fetches again once the keys are this old (default 60 s): the bound within which a
    /// key the issuer withdraws is refused, while the issuer answers.
    pub fn max_age(mut self, age: Duration) -> Self {
        self.max_age = age;
        self
    }

    /// While fetches fail, serves the last keys fetched until they are this old (default
    /// 1 h), then refuses every token until a fetch succeeds.
    pub fn max_stale(mut self, age: Duration) -> Self {
        self.max_stale = age;
        self
    }

    fn read<T>(&self, f: impl FnOnce(&Cache) -> T) -> T {
        f(&self.cache.read())
    }

    fn write(&self, f: impl FnOnce(&mut Cache)) {
        f(&mut self.cache.write())
    }

    /// Whether the cache should be fetched again for a token naming `kid`.
    fn wants_fetch(&self, kid: Option<&str>) -> bool {
        // A `max_age` shorter than `min_refetch` is the operator asking for that bound; and
        // keys are fetched again before they are too old to use (`max_stale`), whatever
        // `max_age` says, so that there is no stretch without usable keys.
        let fresh_for = self.max_age.min(self.max_stale);
        let gap = self.min_refetch.min(fresh_for);
        self.read(|c| {
            if c.last_attempt.is_some_and(|t| t.elapsed() < gap) {
                return false;
            }
            match &c.set {
                None => true,
                Some((set, at)) => at.elapsed() >= fresh_for || kid.is_some_and(|k| !set.holds(k)),
            }
        })
    }

    /// Whether no set is held, or the one held has no key `kid`.
    fn lacks(&self, kid: Option<&str>) -> bool {
        self.read(|c| match &c.set {
            None => true,
            Some((set, _)) => kid.is_some_and(|k| !set.holds(k)),
        })
    }

    /// The keys that may be used: the last set fetched, unless it is `max_stale` old.
    fn usable(&self) -> Option<Arc<JwkSet>> {
        self.read(|c| {
            c.set
                .as_ref()
                .filter(|(_, at)| at.elapsed() < self.max_stale)
                .map(|(set, _)| set.clone())
        })
    }

    async fn jwks_uri(&self) -> Result<String, FetchError> {
        let issuer = match &self.origin {
            Origin::Jwks(u) => return Ok(u.clone()),
            Origin::Issuer(i) => i.clone(),
        };
        if let Some(u) = self.read(|c| c.discovered.clone()) {
            return Ok(u);
        }
        if !secure(&issuer) {
            // Metadata read in the clear could name anyone's keys.
            return Err(FetchError::Url(format!(
                "{issuer}: metadata is read over https only (or from loopback)"
            )));
        }
        let mut last = None;
        for url in server_metadata_urls(&issuer) {
            match get_json(&url, MAX_DOCUMENT, self.timeout).await {
                Ok(doc) => match jwks_uri_of(&doc, &issuer) {
                    Some(u) => {
                        self.write(|c| c.discovered = Some(u.clone()));
                        return Ok(u);
                    }
                    None => {
                        last = Some(FetchError::Body {
                            url,
                            why: "no jwks_uri, or another issuer's metadata".into(),
                        })
                    }
                },
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or(FetchError::Url(issuer)))
    }

    async fn fetch(&self, kid: Option<&str>) {
        let _one = self.fetching.lock().await;
        // Another request may have fetched while this one waited.
        if !self.wants_fetch(kid) {
            return;
        }
        self.write(|c| c.last_attempt = Some(Instant::now()));
        let result = async {
            let url = self.jwks_uri().await?;
            if !secure(&url) {
                return Err(FetchError::Url(format!(
                    "{url}: keys are fetched over https only (or from loopback)"
                )));
            }
            let doc = get_json(&url, MAX_DOCUMENT, self.timeout).await?;
            JwkSet::parse(&doc.to_string()).map_err(|e| FetchError::Body {
                url,
                why: e.to_string(),
            })
        };
        match result.await {
            Ok(set) => self.write(|c| c.set = Some((Arc::new(set), Instant::now()))),
            Err(e) => tracing::warn!(
                "keeping the JWKS cached (if any, until it is {:?} old): {e}",
                self.max_stale
            ),
        }
    }
}

/// The `jwks_uri` of metadata that is `issuer`'s own: its `issuer` identical (RFC 8414
/// §3.3).
fn jwks_uri_of(doc: &Value, issuer: &str) -> Option<String> {
    let same = doc.get("issuer").and_then(Value::as_str) == Some(issuer);
    same.then(|| {
        doc.get("jwks_uri")
            .and_then(Value::as_str)
            .map(str::to_owned)
    })
    .flatten()
}

#[async_trait]
impl KeySource for JwksUri {
    async fn keys(&self, kid: Option<&str>) -> Vec<VerifyingKey> {
        if self.wants_fetch(kid) {
            self.fetch(kid).await;
        } else if self.lacks(kid) {
            // A fetch that may bring it is under way (a burst of tokens at a cold start):
            // wait for it, rather than refuse a token its keys would verify.
            drop(self.fetching.lock().await);
        }
        let Some(set) = self.usable() else {
            return Vec::new();
        };
        set.keys(kid).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_issuers_own_metadata_names_its_keys() {
        let doc = serde_json::json!({"issuer": "https://a", "jwks_uri": "https://a/jwks"});
        assert_eq!(
            jwks_uri_of(&doc, "https://a").as_deref(),
            Some("https://a/jwks")
        );
        assert_eq!(
            jwks_uri_of(&doc, "https://a/"),
            None,
            "identical, not alike"
        );
        assert_eq!(
            jwks_uri_of(&doc, "https://b"),
            None,
            "another issuer's metadata"
        );
    }
}
