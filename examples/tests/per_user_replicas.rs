//! Users' consent (`userAuth` of type `oauth`) across gateway replicas, end to end: three
//! gateway processes sharing a real Redis (`gateway.cluster.redis`, no `gateway.grants.file`:
//! grants, connect flows in progress and used links are kept there, sealed under
//! `gateway.grants.keysEnv`), behind a real HAProxy (round-robin, no stickiness), with the
//! two real `oidc-provider` authorization servers and an upstream that takes only the
//! upstream issuer's tokens and records whom each call was for.
//!
//! - Alice (our client, 2025-11-25, URL mode) gets `-32042`; her browser's
//!   `/connect/start`, `/connect/login` and `/connect/callback` land on different replicas
//!   (HAProxy's counts, step by step), and the flow completes.
//! - Bob (2026-07-28, URL mode) consents within his call (input required, then the retry).
//! - 90 calls of each, spread over the replicas: each served as its own user.
//! - Alice's link, used once, is refused by every replica.
//! - Redis holds no token text and no user name.
//! - The replica alice's browser finished on is killed: both users are still served.
//!
//! With `MCP_INTEROP=required` a missing HAProxy, Redis or `oidc-provider` fails the test;
//! otherwise it skips.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mcp_client::http::HttpConfig;
use mcp_client::{connect_http, Client, ClientError, ClientOptions, EraChoice};
use mcp_types::protocol::*;
use mcp_types::Revision;
use serde_json::json;

mod common;
use common::browser::{jwt_claims, user_access_token, Browser};
use common::cluster::{free_ports, haproxy_config, ready, start_haproxy};
use common::consent::{
    elicitation_url, recording_upstream, text, whoami, Opener, GRANT_KEYS, HOST_REDIRECT, SECRET,
};
use common::example;
use common::providers::Providers;
use common::redis::{installed, redis_server, scratch, Redis};

/// The replicas' key prefix in Redis.
const PREFIX: &str = "pu";
const REPLICAS: usize = 3;

/// Replica `n`'s configuration (1-based): the consent setup of `common::consent`, grants
/// sealed under `GW_GRANT_KEYS` and kept in the replicas' Redis.
#[allow(clippy::too_many_arguments)]
fn replica_config(
    dir: &Path,
    n: usize,
    port: u16,
    gateway_url: &str,
    upstream_url: &str,
    providers: &Providers,
    key: &Path,
    url_file: &Path,
) -> PathBuf {
    let desk = json!({
        "url": upstream_url,
        "auth": {"type": "clientCredentials", "issuer": providers.upstream, "clientId": "gateway",
                 "clientSecretEnv": "GW_SECRET", "scopes": ["mcp"]},
        "userAuth": {"type": "oauth", "issuer": providers.upstream, "clientId": "gateway",
                     "clientSecretEnv": "GW_SECRET", "scopes": ["mcp"]}
    });
    let config = json!({
        "mcpServers": {"desk": desk},
        "gateway": {
            "auth": {"resource": gateway_url, "jwt": {"issuer": providers.users},
                     "login": {"clientId": "gateway-login", "clientSecretEnv": "GW_SECRET",
                               "scopes": ["mcp"]}},
            "grants": {"keysEnv": "GW_GRANT_KEYS"},
            "cluster": {"replica": n, "keys": [{"name": "test", "secretFile": key}],
                        "redis": {"urlFile": url_file, "prefix": PREFIX},
                        "advertise": format!("http://127.0.0.1:{port}")}
        }
    });
    let path = dir.join(format!("replica-{n}.json"));
    std::fs::write(&path, config.to_string()).expect("config");
    path
}

/// The gateway program with `config` on 127.0.0.1:`port`, its stderr (at `info`) to `log`,
/// once it prints its URL.
async fn spawn_replica(config: &Path, port: u16, log: &Path) -> tokio::process::Child {
    let err = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("log");
    let mut child = tokio::process::Command::new(example("gateway"))
        .args([
            "--config",
            &config.display().to_string(),
            "--http",
            &format!("127.0.0.1:{port}"),
        ])
        .env("GW_SECRET", SECRET)
        .env("GW_GRANT_KEYS", GRANT_KEYS)
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(err)
        .kill_on_drop(true)
        .spawn()
        .expect("gateway");
    let url = common::announced_url(&mut child).await.unwrap_or_else(|| {
        let said = std::fs::read_to_string(log).unwrap_or_default();
        panic!("the replica on {port} did not start in time:\n{said}")
    });
    assert_eq!(url, format!("http://127.0.0.1:{port}/mcp"));
    child
}

/// Each replica's line in HAProxy's `show stat` (its stats socket in `dir`): how many
/// requests it was sent (`stot`, one per request in HTTP mode) and its status.
async fn stat(dir: &Path) -> Vec<(u64, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::UnixStream::connect(dir.join("haproxy.sock"))
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
    let (px, sv, stot, status) = (at("pxname"), at("svname"), at("stot"), at("status"));
    let mut out = vec![(0, String::new()); REPLICAS];
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        if cells.get(px) != Some(&"gateways") {
            continue;
        }
        let server = cells.get(sv).and_then(|n| n.strip_prefix('g'));
        if let Some(i) = server.and_then(|n| n.parse::<usize>().ok()) {
            out[i] = (
                cells.get(stot).and_then(|c| c.parse().ok()).unwrap_or(0),
                cells.get(status).map(|s| s.to_string()).unwrap_or_default(),
            );
        }
    }
    out
}

/// Requests HAProxy sent each replica so far.
async fn served(dir: &Path) -> Vec<u64> {
    stat(dir).await.into_iter().map(|(n, _)| n).collect()
}

/// The replica (1-based) holding the one legacy session in Redis.
async fn session_owner(redis: &Redis) -> usize {
    let mut owners = Vec::new();
    for k in redis.cli(&["KEYS", &format!("{PREFIX}:session:*")]).await {
        owners.extend(redis.cli(&["HGET", &k, "owner"]).await);
    }
    assert_eq!(owners.len(), 1, "one legacy session: {owners:?}");
    owners[0].parse().expect("an owner")
}

/// The replicas (1-based) HAProxy sent requests to since `before`.
async fn served_since(dir: &Path, before: &[u64]) -> BTreeSet<usize> {
    served(dir)
        .await
        .iter()
        .zip(before)
        .enumerate()
        .filter(|(_, (now, then))| now > then)
        .map(|(i, _)| i + 1)
        .collect()
}

/// A host of the user whose bearer `token` it sends, through `url`, in `era`, declaring
/// URL-mode elicitation; its elicitations opened in `browser`.
async fn host(url: &str, token: &str, era: EraChoice, browser: Arc<Browser>) -> Client {
    let mut config = HttpConfig::new(url);
    config
        .headers
        .push(("Authorization".into(), format!("Bearer {token}")));
    let caps = ClientCapabilities {
        elicitation: Some(serde_json::from_value(json!({"url": {}})).expect("caps")),
        ..Default::default()
    };
    let options = ClientOptions::default().era(era).capabilities(caps);
    tokio::time::timeout(
        Duration::from_secs(60),
        connect_http(config, Opener(browser), options),
    )
    .await
    .expect("the host connected in time")
    .expect("host connects")
}

/// `whoami`, given at most a minute.
async fn call(h: &Client) -> Result<CallToolResult, ClientError> {
    tokio::time::timeout(Duration::from_secs(60), whoami(h))
        .await
        .expect("answered within a minute")
}

/// The signature of a JWT (its last segment): a token's text that no other has.
fn signature(token: &str) -> &str {
    token.rsplit('.').next().expect("jwt")
}

#[tokio::test]
async fn consent_given_through_any_replica_is_every_replicas_and_a_link_is_used_once_at_all() {
    let (Some(redis_program), Some(haproxy)) = (redis_server(), installed("haproxy", "haproxy"))
    else {
        return;
    };
    let dir = scratch("per-user");
    let ports = free_ports(REPLICAS + 2);
    let (front, replica_ports, up_port) = (ports[0], ports[1..=REPLICAS].to_vec(), ports[4]);
    let base = format!("http://127.0.0.1:{front}");
    let gateway_url = format!("{base}/mcp");
    let upstream_url = format!("http://127.0.0.1:{up_port}/mcp");
    let Some(providers) = Providers::start(json!({
        "gatewayResource": gateway_url,
        "upstreamResource": upstream_url,
        "hostRedirectUri": HOST_REDIRECT,
        "gatewayLoginRedirectUri": format!("{base}/connect/login"),
        "gatewayCallbackUri": format!("{base}/connect/callback"),
        "gatewayClientSecret": SECRET,
        "accessTokenTtl": 300,
    }))
    .await
    else {
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };

    // The upstream: only the upstream issuer's tokens, for its own resource.
    let (calls, upstream_tokens) =
        recording_upstream(&providers.upstream, &upstream_url, up_port).await;

    // Redis, three replicas sharing it, HAProxy in front.
    let redis = Redis::start(&redis_program, &dir, None).await;
    let url_file = dir.join("redis.url");
    std::fs::write(&url_file, redis.url(None)).expect("url file");
    let key = dir.join("cluster.key");
    std::fs::write(&key, "a test key of more than thirty-two bytes, shared").expect("key");
    let logs: Vec<PathBuf> = (1..=REPLICAS)
        .map(|n| dir.join(format!("replica-{n}.log")))
        .collect();
    let mut replicas = Vec::new();
    for (i, port) in replica_ports.iter().enumerate() {
        let config = replica_config(
            &dir,
            i + 1,
            *port,
            &gateway_url,
            &upstream_url,
            &providers,
            &key,
            &url_file,
        );
        replicas.push(Some(spawn_replica(&config, *port, &logs[i]).await));
    }
    let _haproxy = start_haproxy(&haproxy, &haproxy_config(&dir, front, &replica_ports));
    let up = mcp_examples::wait_until(Duration::from_secs(10), || ready(front)).await;
    assert!(up, "haproxy serves the replicas' /readyz");
    let all_up = mcp_examples::wait_until(Duration::from_secs(10), || async {
        stat(&dir).await.iter().all(|(_, s)| s == "UP")
    })
    .await;
    assert!(
        all_up,
        "haproxy has every replica up: {:?}",
        stat(&dir).await
    );
    let registered = mcp_examples::wait_until(Duration::from_secs(10), || async {
        redis.cli(&["SCARD", &format!("{PREFIX}:replicas")]).await == ["3"]
    })
    .await;
    assert!(registered, "three replicas registered in Redis");

    let token_of = |login: &'static str| {
        let (users, url) = (providers.users.clone(), gateway_url.clone());
        async move { user_access_token(&users, "host-app", HOST_REDIRECT, &url, login).await }
    };
    let alice_token = token_of("alice").await;
    let bob_token = token_of("bob").await;
    let alice = Arc::new(Browser::new_as("alice"));
    let bob = Arc::new(Browser::new_as("bob"));

    // Alice, 2025-11-25 with URL mode: -32042, and a link to the gateway's own page.
    let a = host(
        &gateway_url,
        &alice_token,
        EraChoice::Legacy(Revision::V2025_11_25),
        alice.clone(),
    )
    .await;
    let mut notices = a.notifications();
    let e = match call(&a).await {
        Err(ClientError::Server(e)) => e,
        other => panic!("no elicitation: {other:?}"),
    };
    assert_eq!(e.code, -32042, "{e:?}");
    let (link, id) = elicitation_url(&e);
    assert!(
        link.starts_with(&format!("{base}/connect/start?t=")),
        "{link}"
    );

    // Her browser, step by step, through HAProxy: which replica served each page.
    let users_prefix = format!("{}/", providers.users);
    let upstream_prefix = format!("{}/", providers.upstream);
    let before = served(&dir).await;
    let at_users = alice.visit_until(&link, &[&users_prefix]).await;
    assert!(
        at_users.stopped,
        "{} {} {}",
        at_users.status, at_users.url, at_users.body
    );
    let start_by = served_since(&dir, &before).await;
    let back = alice
        .visit_until(&at_users.url, &[format!("{base}/connect/login")])
        .await;
    assert!(back.stopped, "{} {} {}", back.status, back.url, back.body);
    let before = served(&dir).await;
    let at_upstream = alice.visit_until(&back.url, &[&upstream_prefix]).await;
    assert!(
        at_upstream.stopped,
        "{} {} {}",
        at_upstream.status, at_upstream.url, at_upstream.body
    );
    let login_by = served_since(&dir, &before).await;
    let returned = alice
        .visit_until(&at_upstream.url, &[format!("{base}/connect/callback")])
        .await;
    assert!(
        returned.stopped,
        "{} {} {}",
        returned.status, returned.url, returned.body
    );
    // Her browser comes back to a replica other than the one holding her session: the
    // completion notice must cross (round-robin: the next request goes to the replica after
    // the one the last went to).
    let owner = session_owner(&redis).await;
    for _ in 0..REPLICAS {
        let before = served(&dir).await;
        let _ = common::cluster::get(front, "/healthz").await;
        let last = served_since(&dir, &before).await;
        if last.len() == 1 && last.iter().all(|n| n % REPLICAS + 1 != owner) {
            break;
        }
    }
    let before = served(&dir).await;
    let page = alice.visit(&returned.url).await;
    let callback_by = served_since(&dir, &before).await;
    assert!(
        page.body.contains("Connected"),
        "{} {}",
        page.status,
        page.body
    );
    eprintln!(
        "alice's flow: /connect/start served by {start_by:?}, /connect/login by {login_by:?}, \
         /connect/callback by {callback_by:?}"
    );
    let crossed: BTreeSet<usize> = start_by
        .iter()
        .chain(&login_by)
        .chain(&callback_by)
        .copied()
        .collect();
    assert!(
        crossed.len() > 1,
        "the flow's pages were all served by replica {crossed:?}"
    );
    // The replica that bound the grant says so in its log (and only one does).
    let linked: Vec<usize> = (1..=REPLICAS)
        .filter(|n| {
            std::fs::read_to_string(&logs[n - 1])
                .unwrap_or_default()
                .contains("a user linked their account")
        })
        .collect();
    assert_eq!(linked.len(), 1, "replicas that bound a grant: {linked:?}");
    let finished_on = linked[0];
    assert!(
        callback_by.contains(&finished_on),
        "bound on {finished_on}, callback served by {callback_by:?}"
    );
    // The completion notice (`notifications/elicitation/complete`) reaches alice's host,
    // held by another replica than the one her browser finished on.
    assert_ne!(owner, finished_on, "the flow finished where her session is");
    let notice = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match notices.recv().await {
                Ok(TypedNotification::ElicitationComplete(p)) => return Some(p.elicitation_id),
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                _ => {}
            }
        }
    })
    .await
    .ok()
    .flatten();
    assert_eq!(
        notice.as_deref(),
        Some(id.as_str()),
        "the completion notice"
    );
    assert_eq!(text(&call(&a).await.expect("served")), "alice");

    // Used once: refused by every replica (three visits, round-robin).
    let before = served(&dir).await;
    for visit in 0..REPLICAS {
        let again = alice.visit(&link).await;
        assert_eq!(again.status, 400, "visit {visit}: {}", again.body);
        assert!(
            again.body.contains("used already"),
            "visit {visit}: {}",
            again.body
        );
    }
    let refused_by = served_since(&dir, &before).await;
    eprintln!("the used link was refused by replicas {refused_by:?}");
    assert_eq!(
        refused_by.len(),
        REPLICAS,
        "the used link's visits reached replicas {refused_by:?}"
    );

    // Bob, 2026-07-28 with URL mode: input required, the browser, and the retry completes.
    let b = host(&gateway_url, &bob_token, EraChoice::Modern, bob.clone()).await;
    assert_eq!(text(&call(&b).await.expect("served after consent")), "bob");

    // 90 calls of each, at most 30 at once, spread over the replicas by HAProxy.
    let seen_before = calls.all().len();
    let served_before = served(&dir).await;
    let room = Arc::new(tokio::sync::Semaphore::new(30));
    let mut running = tokio::task::JoinSet::new();
    for n in 0..180 {
        let room = room.clone();
        let (who, h) = if n % 2 == 0 {
            ("alice", a.clone())
        } else {
            ("bob", b.clone())
        };
        running.spawn(async move {
            let _turn = room.acquire().await;
            (who, call(&h).await)
        });
    }
    while let Some(j) = running.join_next().await {
        let (who, r) = j.expect("joined");
        assert_eq!(text(&r.unwrap_or_else(|e| panic!("{who}: {e:?}"))), who);
    }
    let spread: Vec<u64> = served(&dir)
        .await
        .iter()
        .zip(&served_before)
        .map(|(now, then)| now - then)
        .collect();
    eprintln!("the 180 calls' requests by replica: {spread:?}");
    assert!(
        spread.iter().all(|n| *n > 0),
        "a replica served none: {spread:?}"
    );
    let seen = calls.all();
    let batch = &seen[seen_before..];
    assert_eq!(batch.len(), 180, "{batch:?}");
    for who in ["alice", "bob"] {
        let n = batch.iter().filter(|(sub, _)| sub == who).count();
        assert_eq!(n, 90, "calls the upstream served as {who}");
    }
    for (sub, aud) in &seen {
        assert!(sub == "alice" || sub == "bob", "served as {sub}");
        assert!(
            aud == &json!(upstream_url) || aud == &json!([upstream_url]),
            "{aud}"
        );
    }

    // No host token went upstream; what went upstream is the upstream issuer's.
    let shown = upstream_tokens.lock().expect("tokens").clone();
    assert!(!shown.is_empty());
    for t in [&alice_token, &bob_token] {
        assert!(!shown.contains(t), "a host token went upstream");
    }
    assert!(shown
        .iter()
        .all(|t| jwt_claims(t)["iss"] == json!(providers.upstream)));

    // Redis holds no token text and no user name: only sealed records.
    let keys = redis.cli(&["KEYS", &format!("{PREFIX}:*")]).await;
    let values: Vec<&String> = keys
        .iter()
        .filter(|k| k.starts_with(&format!("{PREFIX}:value:")))
        .collect();
    let grants = values
        .iter()
        .filter(|k| k.starts_with(&format!("{PREFIX}:value:grant:")))
        .count();
    assert_eq!(grants, 2, "a grant each for alice and bob: {keys:?}");
    let used = values
        .iter()
        .filter(|k| k.starts_with(&format!("{PREFIX}:value:connect:used:")))
        .count();
    assert!(used >= 2, "the used links are marked: {keys:?}");
    let flows = values
        .iter()
        .filter(|k| k.starts_with(&format!("{PREFIX}:value:connect:flow:")))
        .count();
    assert_eq!(flows, 0, "finished flows are taken: {keys:?}");
    let secrets: Vec<&str> = shown
        .iter()
        .chain([&alice_token, &bob_token])
        .map(|t| signature(t))
        .collect();
    for k in &values {
        let value = redis.cli(&["GET", k]).await.join("\n");
        assert!(!value.is_empty(), "{k} holds nothing");
        for s in &secrets {
            assert!(!value.contains(s), "a token in {k}");
        }
        for name in ["alice", "bob"] {
            assert!(!value.contains(name), "{name} in {k}");
            assert!(!k.contains(name), "{name} in the key {k}");
        }
    }
    // And no token in any replica's log.
    for (i, log) in logs.iter().enumerate() {
        let said = std::fs::read_to_string(log).expect("log");
        for s in &secrets {
            assert!(!said.contains(s), "a token in replica {}'s log", i + 1);
        }
    }

    // The replica alice's browser finished on is killed: both users are still served
    // (their grants are in Redis, HAProxy sends the rest to the others).
    let mut gone = replicas[finished_on - 1].take().expect("running");
    gone.kill().await.expect("killed");
    for _ in 0..10 {
        assert_eq!(
            text(&call(&a).await.expect("alice served after a kill")),
            "alice"
        );
        assert_eq!(
            text(&call(&b).await.expect("bob served after a kill")),
            "bob"
        );
    }
    let after = calls.all();
    assert_eq!(after.len(), seen.len() + 20);
    assert!(after.iter().all(|(sub, _)| sub == "alice" || sub == "bob"));

    drop((a, b));
    drop(replicas);
    redis.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}
