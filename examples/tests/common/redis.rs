//! A Redis server of a test's own (Debian's `redis-server`), on a unix socket in a scratch
//! directory, without persistence; stopped when dropped. Shared by the tests that need a
//! real Redis (`mcp-proxy/tests/state_store.rs` includes this file too).

use std::path::{Path, PathBuf};
use std::time::Duration;

/// `program` from Debian's `package`, if installed (on `PATH`, or where Debian puts it);
/// with `MCP_INTEROP=required` a missing one fails the test, otherwise the test skips.
pub fn installed(program: &str, package: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/sbin")])
        .map(|d| d.join(program))
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var("MCP_INTEROP").as_deref() != Ok("required"),
            "{program} is not installed; run .ci/run or apt-get install {package}"
        );
        eprintln!("SKIPPED: {program} is not installed (apt-get install {package})");
    }
    found
}

/// `redis-server`, if installed (see [`installed`]).
pub fn redis_server() -> Option<PathBuf> {
    installed("redis-server", "redis-server")
}

/// A running Redis (see the module).
pub struct Redis {
    child: tokio::process::Child,
    /// Its socket.
    pub socket: PathBuf,
}

impl Redis {
    /// `program` on a socket in `dir`; with `password`, it requires one.
    pub async fn start(program: &Path, dir: &Path, password: Option<&str>) -> Redis {
        let socket = dir.join("redis.sock");
        let _ = std::fs::remove_file(&socket);
        let mut cmd = tokio::process::Command::new(program);
        cmd.args([
            "--port",
            "0",
            "--save",
            "",
            "--appendonly",
            "no",
            "--unixsocket",
        ])
        .arg(&socket)
        .args(["--unixsocketperm", "700", "--dir"])
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true);
        if let Some(p) = password {
            cmd.args(["--requirepass", p]);
        }
        let child = cmd.spawn().expect("redis-server starts");
        let up = mcp_examples::wait_until(Duration::from_secs(10), || async {
            tokio::net::UnixStream::connect(&socket).await.is_ok()
        })
        .await;
        assert!(up, "redis-server listens on its socket");
        Redis { child, socket }
    }

    /// `redis-cli` (from the same package) run against it: its output's lines.
    pub async fn cli(&self, args: &[&str]) -> Vec<String> {
        let out = tokio::process::Command::new("redis-cli")
            .arg("-s")
            .arg(&self.socket)
            .args(args)
            .output()
            .await
            .expect("redis-cli runs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Its URL, with `password` if given.
    pub fn url(&self, password: Option<&str>) -> String {
        let auth = password.map(|p| format!("?pass={p}")).unwrap_or_default();
        format!("redis+unix://{}{auth}", self.socket.display())
    }

    /// Stops it now.
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }

    /// Kills it, keeping the handle (to start another on its socket).
    pub async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }
}

/// A scratch directory for `tag`, this process's own.
pub fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-redis-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}
