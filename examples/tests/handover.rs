//! Legacy sessions outlive their replica, end to end: three gateway processes that find
//! each other in a real Redis (Debian's package, on a unix socket), behind a real HAProxy
//! (round-robin, no stickiness, health checks on `/readyz`), each with its own stdio
//! conformance server. A legacy host (our client, 2025-11-25) sets a log level and
//! subscribes, then:
//! - the replica holding its session is killed (`SIGKILL`), five times: the host's next
//!   call succeeds within a second under the same session id, with no new `initialize`,
//!   its log level still in force (the upstream logs only for a request naming one) and
//!   its subscription in the session's record;
//! - the replica holding its session is stopped (`SIGSTOP`): the session is served
//!   elsewhere within the registry's TTL and a second, and the stopped replica, resumed,
//!   no longer serves it (what it is sent for the session reaches the new holder).
//!
//! With `MCP_INTEROP=required` a missing HAProxy or Redis fails the test; otherwise it skips.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_client::http::HttpConfig;
use mcp_client::{CallOptions, Client, ClientOptions, EraChoice, NoHandler};
use mcp_types::protocol::{method, TypedNotification};
use mcp_types::Revision;
use serde_json::{json, Map};

mod common;
use common::cluster::{free_ports, get, haproxy_config, ready, registry_config};
use common::conformance::serve;
use common::example;
use common::redis::{installed, redis_server, scratch, Redis};

/// The registry's TTL (`REGISTRY_TTL` in `mcp-proxy`).
const REGISTRY_TTL: Duration = Duration::from_secs(3);

/// Redis, three replicas on `ports`, and HAProxy on `front`.
struct Cluster {
    dir: PathBuf,
    redis: Redis,
    redis_program: PathBuf,
    key: PathBuf,
    url_file: PathBuf,
    ports: Vec<u16>,
    replicas: Vec<Option<tokio::process::Child>>,
    front: u16,
    _haproxy: tokio::process::Child,
}

impl Cluster {
    async fn start(tag: &str) -> Option<Cluster> {
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
        let cfg = haproxy_config(&dir, front, &ports);
        let haproxy = tokio::process::Command::new(haproxy)
            .arg("-db")
            .arg("-f")
            .arg(&cfg)
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("haproxy starts");
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
    async fn start_replica(&mut self, n: usize) {
        let port = self.ports[n - 1];
        let path = registry_config(&self.dir, n, &self.key, &self.url_file, port);
        let (path, listen) = (path.display().to_string(), format!("127.0.0.1:{port}"));
        let args = ["--config", path.as_str(), "--http", listen.as_str()];
        let (child, _url) = serve(&example("gateway"), &args).await;
        self.replicas[n - 1] = Some(child);
    }

    /// Kills replica `n` (`SIGKILL`) and waits for it to be gone.
    async fn kill(&mut self, n: usize) {
        if let Some(mut child) = self.replicas[n - 1].take() {
            child.kill().await.expect("killed");
        }
    }

    /// Sends `signal` (`STOP`, `CONT`) to replica `n`.
    async fn signal(&self, n: usize, signal: &str) {
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
    async fn restart_redis(&mut self) {
        self.redis = Redis::start(&self.redis_program, &self.dir, None).await;
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.front)
    }

    /// The ids of the legacy sessions recorded in Redis.
    async fn sessions(&self) -> Vec<String> {
        let keys = self.redis.cli(&["KEYS", "e2e:session:*"]).await;
        keys.iter()
            .filter_map(|k| k.strip_prefix("e2e:session:"))
            .map(str::to_owned)
            .collect()
    }

    /// The id of the one legacy session recorded in Redis.
    async fn session_id(&self) -> String {
        let ids = self.sessions().await;
        assert_eq!(ids.len(), 1, "one session recorded: {ids:?}");
        ids[0].clone()
    }

    /// A field (`owner`, `epoch`, `record`) of session `id`'s record.
    async fn field(&self, id: &str, field: &str) -> String {
        let key = format!("e2e:session:{id}");
        let out = self.redis.cli(&["HGET", &key, field]).await;
        out.into_iter().next().unwrap_or_default()
    }

    /// The replica holding session `id`, by its record.
    async fn owner(&self, id: &str) -> usize {
        self.field(id, "owner").await.parse().expect("an owner")
    }

    async fn stop(self) {
        drop(self.replicas);
        self.redis.stop().await;
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A legacy host at `url`, counting the sessions it had to start again.
async fn legacy_host(url: &str, renewals: Arc<AtomicU64>) -> Client {
    let config = HttpConfig::new(url).on_session_renewed(Arc::new(move |_| {
        renewals.fetch_add(1, Ordering::SeqCst);
    }));
    let options = ClientOptions::default().era(EraChoice::Legacy(Revision::V2025_11_25));
    mcp_client::connect_http(config, NoHandler, options)
        .await
        .expect("connects")
}

/// Sets the host's log level and subscribes it to a resource; its session's record then
/// names both. The session's id.
async fn settle(cluster: &Cluster, host: &Client) -> String {
    let none = CallOptions::default();
    host.request(method::LOGGING_SET_LEVEL, json!({"level": "info"}), &none)
        .await
        .expect("level set");
    host.request(
        method::RESOURCES_SUBSCRIBE,
        json!({"uri": "test://static-text"}),
        &none,
    )
    .await
    .expect("subscribed");
    let recorded = mcp_examples::wait_until(Duration::from_secs(5), || async {
        let ids = cluster.sessions().await;
        let Some(id) = ids.first() else {
            return false;
        };
        let record = cluster.field(id, "record").await;
        record.contains("test://static-text") && record.contains("\"info\"")
    })
    .await;
    assert!(
        recorded,
        "the session's record names its level and subscription"
    );
    cluster.session_id().await
}

/// Calls the conformance server's tool that logs only for a request naming a level:
/// whether the host heard its line.
async fn logs(host: &Client) -> bool {
    let mut notes = host.notifications();
    host.call_tool("test_logging_tool", Map::new())
        .await
        .expect("called");
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match notes.recv().await {
                Ok(TypedNotification::Log(_)) => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
    })
    .await
    .unwrap_or(false)
}

#[tokio::test]
async fn a_killed_replicas_sessions_carry_on_elsewhere_within_a_second() {
    let Some(mut cluster) = Cluster::start("handover-kill").await else {
        return;
    };
    for trial in 0..5 {
        let renewals = Arc::new(AtomicU64::new(0));
        let host = legacy_host(&cluster.url(), renewals.clone()).await;
        let id = settle(&cluster, &host).await;
        assert!(logs(&host).await, "trial {trial}: the level, before");
        let owner = cluster.owner(&id).await;
        cluster.kill(owner).await;
        let killed = Instant::now();
        host.call_tool("test_simple_text", Map::new())
            .await
            .unwrap_or_else(|e| panic!("trial {trial}: the call after the kill: {e}"));
        let took = killed.elapsed();
        assert!(
            took < Duration::from_secs(1),
            "trial {trial}: served again after {took:?}"
        );
        assert_eq!(
            renewals.load(Ordering::SeqCst),
            0,
            "trial {trial}: no new initialize"
        );
        assert_eq!(
            cluster.session_id().await,
            id,
            "trial {trial}: the same session"
        );
        let holder = cluster.owner(&id).await;
        assert_ne!(holder, owner, "trial {trial}: held elsewhere now");
        assert!(logs(&host).await, "trial {trial}: the level survived");
        let record = cluster.field(&id, "record").await;
        assert!(
            record.contains("test://static-text"),
            "trial {trial}: the subscription survived: {record}"
        );
        // The session ends (DELETE), and the killed replica comes back for the next trial.
        host.close().await;
        let gone = mcp_examples::wait_until(Duration::from_secs(5), || async {
            cluster.sessions().await.is_empty()
        })
        .await;
        assert!(gone, "trial {trial}: the ended session's record goes");
        cluster.start_replica(owner).await;
    }
    cluster.stop().await;
}

#[tokio::test]
async fn a_stopped_replicas_sessions_are_served_elsewhere_and_not_by_it_once_resumed() {
    let Some(cluster) = Cluster::start("handover-stop").await else {
        return;
    };
    let renewals = Arc::new(AtomicU64::new(0));
    let host = legacy_host(&cluster.url(), renewals.clone()).await;
    let id = settle(&cluster, &host).await;
    let owner = cluster.owner(&id).await;
    cluster.signal(owner, "STOP").await;
    let stopped = Instant::now();
    // Calls sent meanwhile may wait on the stopped replica: each is given up after a
    // second, and the next one sent.
    let served = loop {
        let call = host.call_tool("test_simple_text", Map::new());
        if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(1), call).await {
            break stopped.elapsed();
        }
        assert!(
            stopped.elapsed() < Duration::from_secs(15),
            "never served while its replica was stopped"
        );
    };
    assert!(
        served < REGISTRY_TTL + Duration::from_secs(1) + Duration::from_secs(1),
        "served elsewhere after {served:?}"
    );
    let holder = cluster.owner(&id).await;
    assert_ne!(holder, owner, "held elsewhere now");
    cluster.signal(owner, "CONT").await;
    // Resumed, the old holder does not serve the session: a level set through it directly
    // reaches the new holder, whose record then says so.
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], cluster.ports[owner - 1]));
    let set = json!({"jsonrpc": "2.0", "id": 9, "method": "logging/setLevel",
        "params": {"level": "error"}});
    let s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let answer = raw_http::exchange(s, addr, "POST", Some(&id), "", &set).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let moved = mcp_examples::wait_until(Duration::from_secs(5), || async {
        cluster.field(&id, "record").await.contains("\"error\"")
    })
    .await;
    assert!(
        moved,
        "the new holder's record has the level set through the old one"
    );
    assert_eq!(cluster.owner(&id).await, holder, "still the new holder's");
    host.call_tool("test_simple_text", Map::new())
        .await
        .expect("the host carries on");
    assert_eq!(renewals.load(Ordering::SeqCst), 0, "no new initialize");
    drop(host);
    cluster.stop().await;
}

#[path = "../../mcp-server/tests/raw_http/mod.rs"]
#[allow(dead_code)]
mod raw_http;

/// Calls on `host` every 20 ms until `stop` is set: how many succeeded and failed.
async fn load(host: Arc<Client>, stop: Arc<AtomicBool>) -> (usize, usize) {
    let (mut ok, mut failed) = (0, 0);
    while !stop.load(Ordering::SeqCst) {
        match host.call_tool("test_simple_text", Map::new()).await {
            Ok(_) => ok += 1,
            Err(e) => {
                eprintln!("a call under load failed: {e}");
                failed += 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (ok, failed)
}

#[tokio::test]
async fn with_redis_down_live_owners_serve_on_and_a_session_to_move_starts_again() {
    let Some(mut cluster) = Cluster::start("handover-outage").await else {
        return;
    };
    let url = cluster.url();
    let legacy_renewals = Arc::new(AtomicU64::new(0));
    let legacy = Arc::new(legacy_host(&url, legacy_renewals.clone()).await);
    let id = settle(&cluster, &legacy).await;
    let owner = cluster.owner(&id).await;
    // A second legacy host whose session another replica holds: that one is killed
    // during the outage.
    let (moving, moving_renewals, doomed) = loop {
        let renewals = Arc::new(AtomicU64::new(0));
        let host = legacy_host(&url, renewals.clone()).await;
        host.call_tool("test_simple_text", Map::new())
            .await
            .expect("called");
        let before: Vec<String> = cluster.sessions().await;
        let mine = mcp_examples::wait_until(Duration::from_secs(5), || async {
            cluster.sessions().await.len() >= 2
        })
        .await;
        assert!(mine, "the second session is recorded: {before:?}");
        let other = cluster.sessions().await.into_iter().find(|s| *s != id);
        let other = other.expect("the second session");
        let held_by = cluster.owner(&other).await;
        if held_by != owner {
            break (host, renewals, held_by);
        }
        host.close().await;
    };
    let modern = Arc::new(
        mcp_client::connect_http(
            HttpConfig::new(&url),
            NoHandler,
            ClientOptions::default().era(EraChoice::Modern),
        )
        .await
        .expect("a 2026 host"),
    );

    cluster.redis.kill().await;
    let down = Instant::now();
    // The replica holding the second session goes too (before the load: a call running
    // on a replica killed fails, which is not the outage's doing).
    cluster.kill(doomed).await;
    let stop = Arc::new(AtomicBool::new(false));
    let loads = [
        tokio::spawn(load(legacy.clone(), stop.clone())),
        tokio::spawn(load(modern.clone(), stop.clone())),
    ];
    // The session to move cannot be taken over without the store: 404, and the host
    // starts a new session (a new `initialize`), which serves.
    moving
        .call_tool("test_simple_text", Map::new())
        .await
        .expect("served in a new session");
    assert_eq!(
        moving_renewals.load(Ordering::SeqCst),
        1,
        "initialized again"
    );
    // The replicas say the store is down, and stay ready.
    let port = cluster.ports[owner - 1];
    let said = mcp_examples::wait_until(Duration::from_secs(5), || async {
        let readiness = get(port, "/readyz").await;
        let metrics = get(port, "/metrics").await;
        readiness.starts_with("HTTP/1.1 200")
            && readiness.contains(r#""stateStore":{"reachable":false"#)
            && metrics.contains("mcp_gateway_state_store_up 0")
    })
    .await;
    assert!(
        said,
        "/readyz and /metrics say the store is down: {}",
        get(port, "/readyz").await
    );
    let outage = Duration::from_secs(10).saturating_sub(down.elapsed());
    tokio::time::sleep(outage).await;
    cluster.restart_redis().await;
    let back = Instant::now();
    // The records catch up: the live sessions' records are written again.
    let caught_up = mcp_examples::wait_until(Duration::from_secs(5), || async {
        cluster.sessions().await.contains(&id)
    })
    .await;
    assert!(
        caught_up,
        "the live session's record is back after {:?}",
        back.elapsed()
    );
    stop.store(true, Ordering::SeqCst);
    for l in loads {
        let (ok, failed) = l.await.expect("joined");
        assert!(ok > 100, "calls made under the outage: {ok}");
        assert_eq!(failed, 0, "calls failed during the outage ({ok} succeeded)");
    }
    assert_eq!(
        legacy_renewals.load(Ordering::SeqCst),
        0,
        "the live owner's session stayed"
    );
    cluster.stop().await;
}
