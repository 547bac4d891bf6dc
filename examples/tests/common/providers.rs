//! The real authorization servers the per-user tests run against: the two
//! `oidc-provider` instances of `examples/interop/oidc/providers.mjs` ([`Providers`]), and
//! a key for a client's `private_key_jwt` made by the same Node.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use super::browser::http_client;
use super::interop_dir;

/// A fresh ES256 key pair for a client's `private_key_jwt` (made by Node, which the
/// providers need anyway): the private key as PKCS#8 PEM (for
/// `mcp_client::auth::ClientKey::from_pem`) and the public JWK named `kid` (for
/// `gatewayJwks`).
pub fn es256_key(kid: &str) -> (String, Value) {
    let script = r#"
const { generateKeyPairSync } = require('node:crypto');
const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwk = { ...publicKey.export({ format: 'jwk' }), kid: process.argv[1], alg: 'ES256', use: 'sig' };
process.stdout.write(JSON.stringify({ pem: privateKey.export({ format: 'pem', type: 'pkcs8' }), jwk }));
"#;
    let out = std::process::Command::new("node")
        .args(["-e", script, kid])
        .output()
        .expect("node makes a key");
    assert!(
        out.status.success(),
        "node: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let made: Value = serde_json::from_slice(&out.stdout).expect("JSON from node");
    let pem = made["pem"].as_str().expect("a PEM").to_owned();
    (pem, made["jwk"].clone())
}

/// The two oidc-provider instances of `examples/interop/oidc/providers.mjs`, running
/// until dropped (killed then; their stdin closing stops them too).
pub struct Providers {
    /// The "users" issuer (`http://127.0.0.1:P`).
    pub users: String,
    /// The "upstream" issuer.
    pub upstream: String,
    /// The configuration they were started with.
    pub config: Value,
    child: tokio::process::Child,
    _stdin: tokio::process::ChildStdin,
    stderr: Arc<Mutex<String>>,
}

impl Providers {
    /// Whether the peers are installed: `None` (the test skips, with a note) when Node or
    /// `oidc-provider` is missing, unless `MCP_INTEROP=required`, when that fails the test.
    pub fn available() -> Option<()> {
        let package = interop_dir().join("node_modules/oidc-provider/package.json");
        let node = std::process::Command::new("node")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if package.exists() && node {
            return Some(());
        }
        let what = if node {
            format!("oidc-provider is not installed at {}", package.display())
        } else {
            "node is not on the PATH".to_owned()
        };
        let how = "run .ci/run, or: (cd examples/interop && npm ci)";
        assert!(
            std::env::var("MCP_INTEROP").as_deref() != Ok("required"),
            "{what}; {how}"
        );
        eprintln!("SKIPPED: {what}; {how}");
        None
    }

    /// Starts the providers with `config` (the JSON object `providers.mjs` documents) once
    /// both listen; `None` when they are not installed (see [`Providers::available`]).
    pub async fn start(config: Value) -> Option<Providers> {
        Providers::available()?;
        let mut child = tokio::process::Command::new("node")
            .arg("oidc/providers.mjs")
            .arg(config.to_string())
            .current_dir(interop_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start node oidc/providers.mjs");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = Arc::new(Mutex::new(String::new()));
        if let Some(err) = child.stderr.take() {
            let log = stderr.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(err).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Ok(mut l) = log.lock() {
                        l.push_str(&line);
                        l.push('\n');
                    }
                }
            });
        }
        let mut lines = BufReader::new(stdout).lines();
        let ready = tokio::time::timeout(Duration::from_secs(60), lines.next_line()).await;
        let line = match ready {
            Ok(Ok(Some(line))) => line,
            other => {
                let status = child.try_wait().ok().flatten();
                let log = stderr.lock().map(|l| l.clone()).unwrap_or_default();
                panic!("providers.mjs did not say it was ready ({other:?}, exit {status:?}); stderr:\n{log}");
            }
        };
        // Anything after the ready line (there should be nothing) is kept with stderr, and
        // the pipe stays open: a write to a closed stdout would kill the providers.
        let log = stderr.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Ok(mut l) = log.lock() {
                    l.push_str("stdout: ");
                    l.push_str(&line);
                    l.push('\n');
                }
            }
        });
        let ready: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("providers.mjs's ready line is not JSON ({e}): {line}"));
        let issuer = |k: &str| {
            ready[k]
                .as_str()
                .unwrap_or_else(|| panic!("no {k} in {ready}"))
                .to_owned()
        };
        Some(Providers {
            users: issuer("users"),
            upstream: issuer("upstream"),
            config,
            child,
            _stdin: stdin,
            stderr,
        })
    }

    /// The exchanges the "upstream" instance made so far:
    /// `{"count":N,"bySubject":{"alice":1,…},"refused":M}`.
    pub async fn exchanges(&self) -> Value {
        let url = format!("{}/_test/exchanges", self.upstream);
        http_client()
            .get(&url)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {url}: {e}"))
            .json()
            .await
            .unwrap_or_else(|e| panic!("GET {url}: {e}"))
    }

    /// Revokes every grant `sub` gave the upstream's clients, as an administrator would;
    /// how many there were.
    pub async fn revoke_grants(&self, sub: &str) -> u64 {
        let url = format!("{}/_test/revoke-grants?sub={sub}", self.upstream);
        let v: Value = http_client()
            .post(&url)
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {url}: {e}"))
            .json()
            .await
            .unwrap_or_else(|e| panic!("POST {url}: {e}"));
        v["revoked"]
            .as_u64()
            .unwrap_or_else(|| panic!("POST {url}: {v}"))
    }

    /// What the providers wrote to stderr so far (warnings, errors; never a token).
    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Whether the providers' process is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Providers {
    /// A failing test shows what the providers said (their process is killed after this).
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("providers.mjs stderr:\n{}", self.stderr());
        }
    }
}
