//! Users' upstream grants (the tokens a user's consent gave the gateway for one
//! upstream), kept sealed ([`GrantKeys`]) in a [`GrantStore`]: in memory, in a file that
//! outlives a restart ([`FileGrants`]), or wherever an embedder keeps secrets. Each grant
//! is kept under its place: the principal's digest (never its name) and the upstream's
//! key. A record that does not open (another key, altered, moved) is treated as absent,
//! and said so in the log.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use mcp_server::auth::{Principal, PrincipalDigest};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::cipher::GrantKeys;

/// Why a grant store failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("grant store: {0}")]
pub struct GrantStoreError(pub String);

/// Where sealed grants are kept, by place, and the connect pages' short-lived records (a
/// flow in progress, a used link): with replicas, in a store they share, so that a browser
/// may come back to any of them. Only sealed text passes through it.
#[async_trait]
pub trait GrantStore: Send + Sync + 'static {
    /// The record at `place`, if any.
    async fn get(&self, place: &str) -> Result<Option<String>, GrantStoreError>;
    /// Keeps `sealed` at `place`, replacing what was there.
    async fn put(&self, place: &str, sealed: String) -> Result<(), GrantStoreError>;
    /// Forgets the record at `place`; whether there was one.
    async fn remove(&self, place: &str) -> Result<bool, GrantStoreError>;
    /// Keeps the short-lived `value` under `key` for `ttl`.
    async fn put_brief(
        &self,
        key: &str,
        value: String,
        ttl: Duration,
    ) -> Result<(), GrantStoreError>;
    /// Keeps a mark under `key` for `ttl` unless one is there: whether it was kept.
    async fn mark_once(&self, key: &str, ttl: Duration) -> Result<bool, GrantStoreError>;
    /// The short-lived value under `key`, removed as it is read.
    async fn take_brief(&self, key: &str) -> Result<Option<String>, GrantStoreError>;
}

/// Short-lived records kept in this process, bounded.
#[derive(Debug, Default)]
struct Brief(Mutex<BTreeMap<String, (String, std::time::Instant)>>);

/// Most short-lived records kept at once; past it the spent go, then the oldest.
const MAX_BRIEF: usize = 100_000;

impl Brief {
    fn put(&self, key: &str, value: String, ttl: Duration, only_new: bool) -> bool {
        let mut held = self.0.lock();
        let now = std::time::Instant::now();
        if only_new && held.get(key).is_some_and(|(_, until)| *until > now) {
            return false;
        }
        if held.len() >= MAX_BRIEF {
            held.retain(|_, (_, until)| *until > now);
        }
        if held.len() >= MAX_BRIEF {
            let oldest = held
                .iter()
                .min_by_key(|(_, (_, u))| *u)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                held.remove(&k);
            }
        }
        held.insert(key.to_owned(), (value, now + ttl));
        true
    }

    fn take(&self, key: &str) -> Option<String> {
        let (value, until) = self.0.lock().remove(key)?;
        (until > std::time::Instant::now()).then_some(value)
    }
}

/// Grants kept in this process only (they end with it).
#[derive(Debug, Default)]
pub struct MemoryGrants {
    records: Mutex<BTreeMap<String, String>>,
    brief: Brief,
}

#[async_trait]
impl GrantStore for MemoryGrants {
    async fn get(&self, place: &str) -> Result<Option<String>, GrantStoreError> {
        Ok(self.records.lock().get(place).cloned())
    }
    async fn put(&self, place: &str, sealed: String) -> Result<(), GrantStoreError> {
        self.records.lock().insert(place.to_owned(), sealed);
        Ok(())
    }
    async fn remove(&self, place: &str) -> Result<bool, GrantStoreError> {
        Ok(self.records.lock().remove(place).is_some())
    }
    async fn put_brief(
        &self,
        key: &str,
        value: String,
        ttl: Duration,
    ) -> Result<(), GrantStoreError> {
        self.brief.put(key, value, ttl, false);
        Ok(())
    }
    async fn mark_once(&self, key: &str, ttl: Duration) -> Result<bool, GrantStoreError> {
        Ok(self.brief.put(key, String::new(), ttl, true))
    }
    async fn take_brief(&self, key: &str) -> Result<Option<String>, GrantStoreError> {
        Ok(self.brief.take(key))
    }
}

/// Grants, flows and marks in the replicas' [`StateStore`](crate::store::StateStore),
/// which every replica reaches: a user's grant is every replica's, and a browser may come
/// back from an authorization server to any replica. A grant not used for `idle` (default
/// 30 days) lapses there, and its user is asked again.
pub struct StoreGrants {
    store: Arc<dyn crate::store::StateStore>,
    idle: Duration,
}

impl std::fmt::Debug for StoreGrants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreGrants")
            .field("idle", &self.idle)
            .finish_non_exhaustive()
    }
}

impl StoreGrants {
    /// Grants in `store`.
    pub fn new(store: Arc<dyn crate::store::StateStore>) -> Self {
        StoreGrants {
            store,
            idle: Duration::from_secs(30 * 24 * 3600),
        }
    }

    /// A grant lapses after `idle` without use.
    pub fn idle(mut self, idle: Duration) -> Self {
        self.idle = idle;
        self
    }
}

fn store_error(e: crate::store::StoreError) -> GrantStoreError {
    GrantStoreError(e.to_string())
}

#[async_trait]
impl GrantStore for StoreGrants {
    async fn get(&self, place: &str) -> Result<Option<String>, GrantStoreError> {
        self.store
            .value(&format!("grant:{place}"))
            .await
            .map_err(store_error)
    }
    async fn put(&self, place: &str, sealed: String) -> Result<(), GrantStoreError> {
        let key = format!("grant:{place}");
        self.store
            .put_value(&key, &sealed, Some(self.idle))
            .await
            .map_err(store_error)
    }
    async fn remove(&self, place: &str) -> Result<bool, GrantStoreError> {
        self.store
            .remove_value(&format!("grant:{place}"))
            .await
            .map_err(store_error)
    }
    async fn put_brief(
        &self,
        key: &str,
        value: String,
        ttl: Duration,
    ) -> Result<(), GrantStoreError> {
        self.store
            .put_value(&format!("connect:{key}"), &value, Some(ttl))
            .await
            .map_err(store_error)
    }
    async fn mark_once(&self, key: &str, ttl: Duration) -> Result<bool, GrantStoreError> {
        self.store
            .put_value_once(&format!("connect:{key}"), "1", ttl)
            .await
            .map_err(store_error)
    }
    async fn take_brief(&self, key: &str) -> Result<Option<String>, GrantStoreError> {
        self.store
            .take_value(&format!("connect:{key}"))
            .await
            .map_err(store_error)
    }
}

/// Grants kept in one JSON file (mode 0600 on Unix), read at each use and rewritten whole
/// on each change (written beside it, then renamed over it), so that another process (the
/// `--forget-grant` command) may change it while the gateway runs. A file that is not such
/// a document is treated as empty, and said so in the log; it is replaced at the next
/// change.
#[derive(Debug)]
pub struct FileGrants {
    path: PathBuf,
    /// One change at a time in this process.
    writing: tokio::sync::Mutex<()>,
    /// Flows and marks: this process's only.
    brief: Brief,
}

impl FileGrants {
    /// The grants in `path` (made at the first change if it does not exist); `Err` if
    /// it cannot be read.
    pub fn open(path: impl Into<PathBuf>) -> Result<FileGrants, GrantStoreError> {
        let grants = FileGrants {
            path: path.into(),
            writing: tokio::sync::Mutex::new(()),
            brief: Brief::default(),
        };
        read_records(&grants.path)?;
        Ok(grants)
    }

    /// The records in the file now, read off the async threads.
    async fn read(&self) -> Result<BTreeMap<String, String>, GrantStoreError> {
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || read_records(&path))
            .await
            .map_err(|e| GrantStoreError(e.to_string()))?
    }

    async fn write(&self, records: &BTreeMap<String, String>) -> Result<(), GrantStoreError> {
        let text =
            serde_json::to_vec_pretty(records).map_err(|e| GrantStoreError(e.to_string()))?;
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || write_private(&path, &text))
            .await
            .map_err(|e| GrantStoreError(e.to_string()))?
            .map_err(|e| GrantStoreError(format!("{}: {e}", self.path.display())))
    }
}

/// The records in the file at `path` (none when it does not exist; none, logged, when it
/// is not such a document).
fn read_records(path: &std::path::Path) -> Result<BTreeMap<String, String>, GrantStoreError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            tracing::error!(file = %path.display(), "grant file unreadable ({e}): treated as empty");
            BTreeMap::new()
        })),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(e) => Err(GrantStoreError(format!("{}: {e}", path.display()))),
    }
}

/// `text` into `path` by way of a file beside it, readable by its owner only.
fn write_private(path: &std::path::Path, text: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut beside = path.as_os_str().to_owned();
    beside.push(format!(".{}.new", std::process::id()));
    let beside = PathBuf::from(beside);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut f = options.open(&beside)?;
    f.write_all(text)?;
    f.sync_all()?;
    std::fs::rename(&beside, path)
}

#[async_trait]
impl GrantStore for FileGrants {
    async fn get(&self, place: &str) -> Result<Option<String>, GrantStoreError> {
        Ok(self.read().await?.remove(place))
    }
    async fn put(&self, place: &str, sealed: String) -> Result<(), GrantStoreError> {
        let _one = self.writing.lock().await;
        let mut records = self.read().await?;
        records.insert(place.to_owned(), sealed);
        self.write(&records).await
    }
    async fn remove(&self, place: &str) -> Result<bool, GrantStoreError> {
        let _one = self.writing.lock().await;
        let mut records = self.read().await?;
        let had = records.remove(place).is_some();
        if had {
            self.write(&records).await?;
        }
        Ok(had)
    }
    async fn put_brief(
        &self,
        key: &str,
        value: String,
        ttl: Duration,
    ) -> Result<(), GrantStoreError> {
        self.brief.put(key, value, ttl, false);
        Ok(())
    }
    async fn mark_once(&self, key: &str, ttl: Duration) -> Result<bool, GrantStoreError> {
        Ok(self.brief.put(key, String::new(), ttl, true))
    }
    async fn take_brief(&self, key: &str) -> Result<Option<String>, GrantStoreError> {
        Ok(self.brief.take(key))
    }
}

/// What a user's consent gave the gateway for one upstream.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Grant {
    pub(crate) access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) refresh_token: Option<String>,
    /// Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expires_at: Option<u64>,
    /// When it was obtained, Unix seconds.
    #[serde(default)]
    pub(crate) obtained_at: u64,
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("refresh_token", &self.refresh_token.is_some())
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

impl Grant {
    /// The grant `token` gives.
    pub(crate) fn of(token: &mcp_client::auth::Token) -> Grant {
        let now = SystemTime::now();
        let expires_at = token.expires_at.map(|at| {
            let left = at.saturating_duration_since(std::time::Instant::now());
            unix(now + left)
        });
        Grant {
            access_token: token.access_token.clone(),
            refresh_token: token.refresh_token.clone(),
            expires_at,
            obtained_at: unix(now),
        }
    }

    /// How long its access token was good for when obtained, if it says.
    pub(crate) fn life(&self) -> Option<Duration> {
        let end = self.expires_at?;
        Some(Duration::from_secs(end.saturating_sub(self.obtained_at)))
    }

    /// When its access token expires, on the monotonic clock.
    pub(crate) fn expires_instant(&self) -> Option<std::time::Instant> {
        let at = UNIX_EPOCH + Duration::from_secs(self.expires_at?);
        let left = at.duration_since(SystemTime::now()).unwrap_or_default();
        Some(std::time::Instant::now() + left)
    }
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The place of `principal`'s grant for `upstream`: its digest, never its name.
pub fn grant_place(principal: &Principal, upstream: &str) -> String {
    let digest = PrincipalDigest::of(Some(principal)).0;
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}:{upstream}")
}

/// Grants sealed under keys in a store.
#[derive(Clone)]
pub struct GrantVault {
    store: Arc<dyn GrantStore>,
    keys: Arc<GrantKeys>,
}

impl std::fmt::Debug for GrantVault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrantVault")
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl GrantVault {
    /// Grants in `store`, sealed under `keys`.
    pub fn new(store: Arc<dyn GrantStore>, keys: GrantKeys) -> Self {
        GrantVault {
            store,
            keys: Arc::new(keys),
        }
    }

    /// The grant at `place`, if one opens there.
    pub(crate) async fn get(&self, place: &str) -> Result<Option<Grant>, GrantStoreError> {
        let Some(sealed) = self.store.get(place).await? else {
            return Ok(None);
        };
        let opened = self.keys.open(place, &sealed).map_err(|e| e.to_string());
        match opened.and_then(|plain| serde_json::from_slice(&plain).map_err(|e| e.to_string())) {
            Ok(grant) => Ok(Some(grant)),
            Err(why) => {
                tracing::warn!(place = %place_label(place), "a kept grant does not open ({why}): treated as absent");
                Ok(None)
            }
        }
    }

    /// Keeps `grant` at `place`.
    pub(crate) async fn put(&self, place: &str, grant: &Grant) -> Result<(), GrantStoreError> {
        let plain = serde_json::to_vec(grant).map_err(|e| GrantStoreError(e.to_string()))?;
        let sealed = self
            .keys
            .seal(place, &plain)
            .map_err(|e| GrantStoreError(e.to_string()))?;
        self.store.put(place, sealed).await
    }

    /// What is sealed at `place` (a record of the gateway's own, not a grant), if it opens.
    pub(crate) async fn get_raw(&self, place: &str) -> Result<Option<Vec<u8>>, GrantStoreError> {
        let Some(sealed) = self.store.get(place).await? else {
            return Ok(None);
        };
        Ok(self.keys.open(place, &sealed).ok())
    }

    /// Seals `bytes` at `place`.
    pub(crate) async fn put_raw(&self, place: &str, bytes: &[u8]) -> Result<(), GrantStoreError> {
        let sealed = self
            .keys
            .seal(place, bytes)
            .map_err(|e| GrantStoreError(e.to_string()))?;
        self.store.put(place, sealed).await
    }

    /// The store it keeps records in.
    pub(crate) fn store(&self) -> &Arc<dyn GrantStore> {
        &self.store
    }

    /// The keys it seals with.
    pub(crate) fn keys(&self) -> &GrantKeys {
        &self.keys
    }

    /// Forgets the grant at `place`; whether there was one.
    pub async fn forget(&self, place: &str) -> Result<bool, GrantStoreError> {
        self.store.remove(place).await
    }
}

/// What a log may say of a place: the upstream, not the principal's digest.
fn place_label(place: &str) -> &str {
    place.split_once(':').map_or("", |(_, upstream)| upstream)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(byte: u8) -> GrantKeys {
        GrantKeys::new(vec![("k".into(), [byte; 32])]).expect("keys")
    }

    fn grant() -> Grant {
        Grant {
            access_token: "access-SECRET-1".into(),
            refresh_token: Some("refresh-SECRET-2".into()),
            expires_at: Some(4_000_000_000),
            obtained_at: 3_999_999_000,
        }
    }

    #[tokio::test]
    async fn a_file_of_grants_holds_no_token_text_and_outlives_its_vault() {
        let dir = std::env::temp_dir().join(format!("grants-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("grants.json");
        let _ = std::fs::remove_file(&path);
        let place = grant_place(&Principal::new("alice"), "desk");
        let vault = GrantVault::new(Arc::new(FileGrants::open(&path).expect("open")), keys(1));
        vault.put(&place, &grant()).await.expect("put");
        let text = std::fs::read_to_string(&path).expect("file");
        assert!(
            !text.contains("SECRET") && !text.contains("alice"),
            "{text}"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // Read again, as after a restart; another key reads nothing.
        let again = GrantVault::new(Arc::new(FileGrants::open(&path).expect("open")), keys(1));
        assert_eq!(again.get(&place).await.expect("get"), Some(grant()));
        let other = GrantVault::new(Arc::new(FileGrants::open(&path).expect("open")), keys(2));
        assert_eq!(other.get(&place).await.expect("get"), None);
        // A record moved to another user's place does not open there.
        let bob = grant_place(&Principal::new("bob"), "desk");
        let store = FileGrants::open(&path).expect("open");
        let sealed = store.get(&place).await.expect("get").expect("record");
        store.put(&bob, sealed).await.expect("put");
        let moved = GrantVault::new(Arc::new(store), keys(1));
        assert_eq!(moved.get(&bob).await.expect("get"), None);
        // A file altered into nonsense: empty.
        std::fs::write(&path, b"{not json").expect("write");
        let broken = GrantVault::new(Arc::new(FileGrants::open(&path).expect("open")), keys(1));
        assert_eq!(broken.get(&place).await.expect("get"), None);
        // Read at each use: another process's change is seen at once.
        assert!(!vault.forget(&place).await.expect("nothing to forget"));
        vault.put(&place, &grant()).await.expect("put");
        let elsewhere = GrantVault::new(Arc::new(FileGrants::open(&path).expect("open")), keys(1));
        assert!(elsewhere.forget(&place).await.expect("forget"));
        assert_eq!(vault.get(&place).await.expect("get"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_place_names_the_upstream_and_not_the_principal() {
        let a = grant_place(&Principal::new("alice"), "desk");
        assert!(a.ends_with(":desk") && !a.contains("alice"));
        assert_ne!(a, grant_place(&Principal::new("bob"), "desk"));
        assert_eq!(place_label(&a), "desk");
        let printed = format!("{:?}", grant());
        assert!(!printed.contains("SECRET"), "{printed}");
    }
}
