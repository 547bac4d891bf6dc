//! Test 4: three replicas sharing one Redis, and what a replica does while it is down.

use super::*;

/// Replica `n`'s configuration: the echo server, the API keys, `rateLimits` with alice's
/// principal at 10 a second (burst 1) and `when_down`, and the cluster's Redis under
/// `prefix`.
fn replica_config(
    dir: &Path,
    n: usize,
    prefix: &str,
    port: u16,
    when_down: &str,
    key: &Path,
    url_file: &Path,
) -> PathBuf {
    let extra = json!({
        "rateLimits": {"principal": {"perSecond": 10, "burst": 1}, "whenStoreDown": when_down},
        "cluster": {"replica": n, "keys": [{"name": "test", "secretFile": key}],
                    "redis": {"urlFile": url_file, "prefix": prefix},
                    "advertise": format!("http://127.0.0.1:{port}")}});
    config(dir, &format!("{prefix}-{n}"), extra)
}

/// Test 4. Three replicas sharing one Redis enforce one bucket: alice's calls, sent
/// round-robin to the three (a tight sequential loop, each call to the next replica,
/// by hand rather than through a proxy so that the spread is exact), get 10 a second over
/// 5 s, not 30. Then Redis stops: a replica with `whenStoreDown: open` lets calls through
/// past the limit; one with `closed` (another cluster, another prefix) refuses them,
/// saying the limit could not be checked; once Redis is back it serves again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_sharing_redis_hold_one_rate_and_a_store_down_is_open_or_closed() {
    let _turn = SERIAL.lock().await;
    let Some(program) = redis_server() else {
        return;
    };
    let dir = scratch("limits-cluster");
    let mut redis = Redis::start(&program, &dir, None).await;
    let url_file = dir.join("redis.url");
    std::fs::write(&url_file, redis.url(None)).expect("url file");
    let key = dir.join("cluster.key");
    std::fs::write(&key, "a test key of more than thirty-two bytes, shared").expect("key");
    let ports = free_ports(4);
    let mut replicas = Vec::new();
    for (i, port) in ports[..3].iter().enumerate() {
        let path = replica_config(&dir, i + 1, "lim", *port, "open", &key, &url_file);
        replicas.push(gateway(&path, &format!("127.0.0.1:{port}"), &dir).await);
    }
    let closed_path = replica_config(&dir, 1, "closed", ports[3], "closed", &key, &url_file);
    let closed = gateway(&closed_path, &format!("127.0.0.1:{}", ports[3]), &dir).await;
    let mut hosts = Vec::new();
    for r in &replicas {
        hosts.push(host(&r.url, ALICE, EraChoice::Modern).await);
    }

    let t0 = Instant::now();
    let run = Duration::from_secs(5);
    let (mut went, mut refused, mut failed) = ([0u32; 3], 0u32, Vec::new());
    let mut n = 0;
    while t0.elapsed() < run {
        match echo(&hosts[n % 3]).await {
            Called::Ok => went[n % 3] += 1,
            Called::Limited(_) => refused += 1,
            Called::Failed(e) => failed.push(e),
        }
        n += 1;
    }
    let seconds = t0.elapsed().as_secs_f64();
    let total: u32 = went.iter().sum();
    let expected = 10.0 * seconds + 1.0;
    eprintln!(
        "three replicas, {seconds:.2} s: {total} went (per replica {went:?}), {refused} refused, \
         {} failed; expected {expected:.1}",
        failed.len()
    );
    assert!(failed.is_empty(), "{failed:?}");
    assert!(
        went.iter().all(|w| *w > 0),
        "each replica let some through: {went:?}"
    );
    assert!(
        (f64::from(total) - expected).abs() <= 0.1 * expected,
        "{total} calls went in {seconds:.2} s: not within 10 % of {expected:.1}"
    );
    // The bucket is in Redis, under the cluster's prefix, until it is full again (100 ms
    // after the last token taken): looked at just after a call goes.
    let mut called = echo(&hosts[0]).await;
    for _ in 0..3 {
        let Called::Limited(e) = &called else { break };
        tokio::time::sleep(Duration::from_millis(retry_ms(e))).await;
        called = echo(&hosts[0]).await;
    }
    assert!(matches!(called, Called::Ok), "{called:?}");
    let buckets = redis.cli(&["KEYS", "lim:rate:*"]).await;
    eprintln!("buckets in Redis just after a call went: {buckets:?}");
    assert_eq!(buckets, ["lim:rate:principal:key:alice"]);

    // Redis stops.
    redis.kill().await;
    let open = &hosts[0];
    // The replica knows alice's bucket is empty until the time Redis last told it (at
    // most 100 ms): a call before then is refused without asking. After it, a call asks
    // Redis, finds it down, and goes.
    let first = Instant::now();
    let mut called = echo(open).await;
    for _ in 0..3 {
        let Called::Limited(e) = &called else { break };
        tokio::time::sleep(Duration::from_millis(retry_ms(e))).await;
        called = echo(open).await;
    }
    eprintln!(
        "open, first call with Redis down: {called:?} after {:?}",
        first.elapsed()
    );
    assert!(matches!(called, Called::Ok), "{called:?}");
    let started = Instant::now();
    let mut through = 0u32;
    for _ in 0..40 {
        match echo(open).await {
            Called::Ok => through += 1,
            other => panic!("open, Redis down: {other:?}"),
        }
    }
    let took = started.elapsed().as_secs_f64();
    eprintln!("open: 40 of 40 calls went in {took:.2} s with Redis down");
    assert!(
        f64::from(through) > 1.0 + 10.0 * took,
        "past the limit: {through} calls in {took:.2} s"
    );

    let refused_raw = post_2026(closed.port, ALICE, 1, "echo__echo", json!({"text": "x"})).await;
    eprintln!(
        "closed, Redis down, a raw 2026 POST: {}\n{}",
        refused_raw.head.lines().next().unwrap_or_default(),
        refused_raw.body
    );
    let error = &refused_raw.body["error"];
    assert_eq!(error["code"], -32603, "{}", refused_raw.body);
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(
            "Unavailable: the rate limit for principal key:alice could not be checked"
        ),
        "{message}"
    );
    let closed_host = host(&closed.url, ALICE, legacy()).await;
    for _ in 0..5 {
        match echo(&closed_host).await {
            Called::Failed(e) => assert!(e.contains("Unavailable"), "{e}"),
            other => panic!("closed, Redis down: {other:?}"),
        }
    }
    // A store that cannot answer is not the caller's doing: a JSON-RPC internal error, as
    // any failure to serve the call, never the rate limit's 429.
    assert_eq!(refused_raw.status, 200, "{}", refused_raw.head);
    // Counted, apart from the limits reached: the raw POST and the five calls.
    let metrics = get(closed.admin, "/metrics").await;
    let counted = metric(
        &metrics,
        "mcp_gateway_rate_limited_total{scope=\"store_unavailable\"}",
    );
    assert_eq!(counted, Some(6), "{metrics}");

    // Redis back (empty): the closed replica serves again within its pause (2 s) and a
    // store timeout.
    redis = Redis::start(&program, &dir, None).await;
    let back = mcp_examples::wait_until(Duration::from_secs(10), || async {
        matches!(echo(&closed_host).await, Called::Ok)
    })
    .await;
    assert!(back, "the closed replica serves once Redis is back");
    for h in hosts.into_iter().chain([closed_host]) {
        h.close().await;
    }
    drop((replicas, closed));
    redis.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}
