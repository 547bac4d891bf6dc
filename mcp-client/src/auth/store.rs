//! Where tokens are kept between runs: a [`TokenStore`], in memory or one file per server
//! (readable by this user only), so a restarted gateway does not authorize again.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::token::Token;

/// Keeps one token per key (a server's URL, say).
pub trait TokenStore: Send + Sync + 'static {
    /// The token kept under `key`.
    fn load(&self, key: &str) -> Option<Token>;
    /// Keeps `token` under `key`.
    fn save(&self, key: &str, token: &Token);
    /// Forgets what `key` holds (a refresh token the server no longer takes).
    fn remove(&self, key: &str);
}

/// Tokens for this process's lifetime.
#[derive(Default)]
pub struct MemoryStore(Mutex<HashMap<String, Token>>);

impl TokenStore for MemoryStore {
    fn load(&self, key: &str) -> Option<Token> {
        self.0.lock().get(key).cloned()
    }
    fn save(&self, key: &str, token: &Token) {
        self.0.lock().insert(key.to_owned(), token.clone());
    }
    fn remove(&self, key: &str) {
        self.0.lock().remove(key);
    }
}

/// One JSON file per key in a directory, created with mode `0600` (the directory `0700`):
/// tokens are credentials.
pub struct FileStore {
    dir: PathBuf,
}

#[derive(Serialize, Deserialize)]
struct Stored {
    key: String,
    access_token: String,
    refresh_token: Option<String>,
    /// Seconds since the epoch.
    expires_at: Option<u64>,
    scope: Option<String>,
}

impl FileStore {
    /// Tokens under `dir` (made if missing).
    pub fn new(dir: impl Into<PathBuf>) -> std::io::Result<FileStore> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(FileStore { dir })
    }

    /// The file of `key`: a digest, so no key can name a path.
    pub fn path_of(&self, key: &str) -> PathBuf {
        let d = ring::digest::digest(&ring::digest::SHA256, key.as_bytes());
        let name: String = d.as_ref()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        self.dir.join(format!("{name}.json"))
    }
}

fn to_unix(at: Instant) -> u64 {
    let left = at.saturating_duration_since(Instant::now());
    (SystemTime::now() + left)
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn from_unix(secs: u64) -> Instant {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    Instant::now() + Duration::from_secs(secs.saturating_sub(now))
}

impl TokenStore for FileStore {
    fn load(&self, key: &str) -> Option<Token> {
        let text = std::fs::read_to_string(self.path_of(key)).ok()?;
        let s: Stored = serde_json::from_str(&text).ok()?;
        // A digest collision, or a file moved by hand: not this key's.
        (s.key == key).then(|| Token {
            access_token: s.access_token,
            refresh_token: s.refresh_token,
            expires_at: s.expires_at.map(from_unix),
            scope: s.scope,
            dpop: false,
        })
    }

    fn save(&self, key: &str, token: &Token) {
        let stored = Stored {
            key: key.to_owned(),
            access_token: token.access_token.clone(),
            refresh_token: token.refresh_token.clone(),
            expires_at: token.expires_at.map(to_unix),
            scope: token.scope.clone(),
        };
        let Ok(text) = serde_json::to_string(&stored) else {
            return;
        };
        let path = self.path_of(key);
        let tmp = path.with_extension("tmp");
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let written = options
            .open(&tmp)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
            .and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), "cannot keep the token: {e}");
        }
    }

    fn remove(&self, key: &str) {
        let _ = std::fs::remove_file(self.path_of(key));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(expires_in: u64) -> Token {
        Token {
            access_token: "at".into(),
            refresh_token: Some("rt".into()),
            expires_at: Some(Instant::now() + Duration::from_secs(expires_in)),
            scope: Some("a b".into()),
            dpop: false,
        }
    }

    #[test]
    fn a_file_store_keeps_tokens_across_instances_readable_by_its_user_only() {
        let dir = std::env::temp_dir().join(format!("mcp-token-store-{}", std::process::id()));
        let store = FileStore::new(&dir).expect("store");
        store.save("https://a.example/mcp", &token(3600));
        let again = FileStore::new(&dir).expect("store");
        let t = again.load("https://a.example/mcp").expect("kept");
        assert_eq!(
            (t.access_token.as_str(), t.refresh_token.as_deref()),
            ("at", Some("rt"))
        );
        let left = t
            .expires_at
            .map(|e| e.saturating_duration_since(Instant::now()));
        assert!(
            left.is_some_and(|l| l > Duration::from_secs(3590)),
            "{left:?}"
        );
        assert!(again.load("https://b.example/mcp").is_none());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &std::path::Path| {
                std::fs::metadata(p)
                    .map(|m| m.permissions().mode() & 0o777)
                    .unwrap_or(0)
            };
            assert_eq!(mode(&again.path_of("https://a.example/mcp")), 0o600);
            assert_eq!(mode(&dir), 0o700);
        }
        again.remove("https://a.example/mcp");
        assert!(store.load("https://a.example/mcp").is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
