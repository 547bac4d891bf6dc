//! Gateway replicas in separate processes, for the end-to-end tests of a cluster: free
//! ports, the configuration of a replica that finds the others in Redis, and HAProxy in
//! front of them (Debian's package, round-robin, no stickiness, health checks on
//! `/readyz`, a request whose server refuses it retried on another).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::conformance::serve;
use super::example;
use super::redis::{installed, redis_server, scratch, Redis};

/// Free ports on 127.0.0.1, released for the processes to take.
pub fn free_ports(n: usize) -> Vec<u16> {
    let held: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind"))
        .collect();
    held.iter()
        .map(|l| l.local_addr().expect("addr").port())
        .collect()
}

/// HAProxy in front of `ports`, listening on `front`.
pub fn haproxy_config(dir: &Path, front: u16, ports: &[u16]) -> PathBuf {
    let servers: String = ports
        .iter()
        .enumerate()
        .map(|(i, p)| format!("  server g{i} 127.0.0.1:{p} check inter 500ms\n"))
        .collect();
    let text = format!(
        "global\n  maxconn 1024\n  stats socket {}/haproxy.sock mode 600 level user\ndefaults\n  mode http\n  timeout connect 2s\n  \
         timeout client 120s\n  timeout server 120s\nfrontend mcp\n  bind 127.0.0.1:{front}\n  \
         default_backend gateways\nbackend gateways\n  balance roundrobin\n  \
         option httpchk GET /readyz\n  http-check expect status 200\n  \
         timeout check 500ms\n  retries 3\n  option redispatch 1\n  \
         retry-on conn-failure empty-response\n{servers}",
        dir.display()
    );
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, text).expect("write haproxy.cfg");
    path
}

/// HAProxy (`program`) running the configuration at `cfg`, until dropped.
pub fn start_haproxy(program: &Path, cfg: &Path) -> tokio::process::Child {
    tokio::process::Command::new(program)
        .arg("-db")
        .arg("-f")
        .arg(cfg)
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("haproxy starts")
}

/// Whether `GET /readyz` on 127.0.0.1:`port` answers `200`.
pub async fn ready(port: u16) -> bool {
    get(port, "/readyz").await.starts_with("HTTP/1.1 200")
}

/// The whole response to `GET path` on 127.0.0.1:`port` (empty when it cannot be had).
pub async fn get(port: u16, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return String::new();
    };
    let ask = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    let mut answer = Vec::new();
    if s.write_all(ask.as_bytes()).await.is_err() || s.read_to_end(&mut answer).await.is_err() {
        return String::new();
    }
    String::from_utf8_lossy(&answer).into_owned()
}

/// Replica `n`'s configuration with the registry in Redis at the URL in `url_file`,
/// announcing `port`.
pub fn registry_config(dir: &Path, n: usize, key: &Path, url_file: &Path, port: u16) -> PathBuf {
    registry_config_paged(dir, n, key, url_file, port, None)
}

/// [`registry_config`], listing `page_size` items a page if given.
pub fn registry_config_paged(
    dir: &Path,
    n: usize,
    key: &Path,
    url_file: &Path,
    port: u16,
    page_size: Option<u32>,
) -> PathBuf {
    let mut text = serde_json::json!({
        "mcpServers": {"conformance": {
            "command": example("conformance-server"), "args": ["--stdio"], "namespace": ""}},
        "gateway": {"startupWaitMillis": 60000, "cluster": {
            "replica": n, "keys": [{"name": "test", "secretFile": key}],
            "redis": {"urlFile": url_file, "prefix": "e2e"},
            "advertise": format!("http://127.0.0.1:{port}")}}});
    if let Some(size) = page_size {
        text["gateway"]["pageSize"] = size.into();
    }
    let path = dir.join(format!("registry-{n}.json"));
    std::fs::write(&path, text.to_string()).expect("write config");
    path
}

/// The registry's TTL (`REGISTRY_TTL` in `mcp-proxy`).
pub const REGISTRY_TTL: Duration = Duration::from_secs(3);

/// Redis, three replicas on `ports`, and HAProxy on `front`.
pub struct Cluster {
    pub dir: PathBuf,
    pub redis: Redis,
    pub redis_program: PathBuf,
    pub key: PathBuf,
    pub url_file: PathBuf,
    pub ports: Vec<u16>,
    pub replicas: Vec<Option<tokio::process::Child>>,
    pub front: u16,
    pub _haproxy: tokio::process::Child,
    /// Items a page of a list, if not the default.
    pub page_size: Option<u32>,
}

impl Cluster {
    pub async fn start(tag: &str) -> Option<Cluster> {
        Cluster::start_paged(tag, None).await
    }

    /// [`Cluster::start`], each replica listing `page_size` items a page if given.
    pub async fn start_paged(tag: &str, page_size: Option<u32>) -> Option<Cluster> {
        let program = redis_server()?;
        let haproxy = installed("haproxy", "haproxy")?;
        let dir = scratch(tag);
        let redis = Redis::start(&program, &dir, None).await;
        let url_file = dir.join("redis.url");
        std::fs::write(&url_file, redis.url(None)).expect("url file");
        let key = dir.join("cluster.key");
        std::fs::write(&key, "a test key of more than thirty-two bytes, shared").expect("key");
        let all = free_ports(4);
        let (front, ports) = (all[0], all[1..].to_vec());
        let haproxy = start_haproxy(&haproxy, &haproxy_config(&dir, front, &ports));
        let mut cluster = Cluster {
            dir,
            redis,
            redis_program: program,
            key,
            url_file,
            replicas: vec![None, None, None],
            ports,
            front,
            _haproxy: haproxy,
            page_size,
        };
        for n in 1..=3 {
            cluster.start_replica(n).await;
        }
        let all_up = mcp_examples::wait_until(Duration::from_secs(10), || async {
            cluster.redis.cli(&["SCARD", "e2e:replicas"]).await == ["3"]
        })
        .await;
        assert!(all_up, "three replicas registered");
        let up = mcp_examples::wait_until(Duration::from_secs(10), || ready(front)).await;
        assert!(up, "haproxy serves the replicas' /readyz");
        Some(cluster)
    }

    /// Starts replica `n` (1-based), and waits until it serves.
    pub async fn start_replica(&mut self, n: usize) {
        let port = self.ports[n - 1];
        let (key, url_file) = (&self.key, &self.url_file);
        let path = registry_config_paged(&self.dir, n, key, url_file, port, self.page_size);
        let (path, listen) = (path.display().to_string(), format!("127.0.0.1:{port}"));
        let args = ["--config", path.as_str(), "--http", listen.as_str()];
        let (child, _url) = serve(&example("gateway"), &args).await;
        self.replicas[n - 1] = Some(child);
    }

    /// Kills replica `n` (`SIGKILL`) and waits for it to be gone.
    pub async fn kill(&mut self, n: usize) {
        if let Some(mut child) = self.replicas[n - 1].take() {
            child.kill().await.expect("killed");
        }
    }

    /// Stops replica `n` as an operator would (`SIGTERM`), and waits for it to exit.
    pub async fn terminate(&mut self, n: usize) {
        self.signal(n, "TERM").await;
        if let Some(mut child) = self.replicas[n - 1].take() {
            let exited = tokio::time::timeout(Duration::from_secs(30), child.wait()).await;
            assert!(exited.is_ok(), "replica {n} exits after SIGTERM");
        }
    }

    /// Sends `signal` (`STOP`, `CONT`, `TERM`) to replica `n`.
    pub async fn signal(&self, n: usize, signal: &str) {
        let pid = self.replicas[n - 1]
            .as_ref()
            .and_then(tokio::process::Child::id)
            .expect("running");
        let status = tokio::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .await
            .expect("kill runs");
        assert!(status.success(), "kill -{signal}");
    }

    /// Starts Redis again, empty (it keeps nothing on disk), on the same socket.
    pub async fn restart_redis(&mut self) {
        self.redis = Redis::start(&self.redis_program, &self.dir, None).await;
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.front)
    }

    /// The ids of the legacy sessions recorded in Redis.
    pub async fn sessions(&self) -> Vec<String> {
        let keys = self.redis.cli(&["KEYS", "e2e:session:*"]).await;
        keys.iter()
            .filter_map(|k| k.strip_prefix("e2e:session:"))
            .map(str::to_owned)
            .collect()
    }

    /// The id of the one legacy session recorded in Redis.
    pub async fn session_id(&self) -> String {
        let ids = self.sessions().await;
        assert_eq!(ids.len(), 1, "one session recorded: {ids:?}");
        ids[0].clone()
    }

    /// A field (`owner`, `epoch`, `record`) of session `id`'s record.
    pub async fn field(&self, id: &str, field: &str) -> String {
        let key = format!("e2e:session:{id}");
        let out = self.redis.cli(&["HGET", &key, field]).await;
        out.into_iter().next().unwrap_or_default()
    }

    /// The replica holding session `id`, by its record.
    pub async fn owner(&self, id: &str) -> usize {
        self.field(id, "owner").await.parse().expect("an owner")
    }

    pub async fn stop(self) {
        drop(self.replicas);
        self.redis.stop().await;
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Cluster {
    /// How many requests HAProxy has sent each replica so far, in the replicas' order
    /// (`show stat` on its stats socket: each server's `stot`, one per request in HTTP mode).
    pub async fn served(&self) -> Vec<u64> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::UnixStream::connect(self.dir.join("haproxy.sock"))
            .await
            .expect("haproxy's stats socket");
        s.write_all(b"show stat\n").await.expect("asked");
        let mut csv = String::new();
        s.read_to_string(&mut csv).await.expect("read");
        let mut lines = csv.lines();
        let header: Vec<&str> = lines
            .next()
            .unwrap_or_default()
            .trim_start_matches("# ")
            .split(',')
            .collect();
        let at = |name: &str| header.iter().position(|h| *h == name).expect(name);
        let (px, sv, stot) = (at("pxname"), at("svname"), at("stot"));
        let mut counts = vec![0; self.ports.len()];
        for line in lines {
            let cells: Vec<&str> = line.split(',').collect();
            if cells.get(px) != Some(&"gateways") {
                continue;
            }
            let server = cells.get(sv).and_then(|n| n.strip_prefix('g'));
            if let Some(i) = server.and_then(|n| n.parse::<usize>().ok()) {
                counts[i] = cells.get(stot).and_then(|c| c.parse().ok()).unwrap_or(0);
            }
        }
        counts
    }

    /// How many requests the live replicas have forwarded to another
    /// (`mcp_gateway_http_forwarded_total` in their `/metrics`).
    pub async fn forwarded(&self) -> u64 {
        let mut total = 0;
        for port in &self.ports {
            let metrics = get(*port, "/metrics").await;
            total += metrics
                .lines()
                .find_map(|l| l.strip_prefix("mcp_gateway_http_forwarded_total "))
                .and_then(|n| n.trim().parse::<u64>().ok())
                .unwrap_or(0);
        }
        total
    }
}
