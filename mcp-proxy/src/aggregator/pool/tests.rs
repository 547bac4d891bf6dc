//! The pool alone: its upstreams opened, named, shared with another pool, kept, failed.
use super::super::test_parts::{self, connect, ids, in_process, missing, parts, upstream};
use super::*;

#[tokio::test]
async fn an_upstream_never_connected_says_so_by_its_key() {
    let (pool, _) = parts(vec![in_process("alpha", vec!["echo"])]);
    let i = ids(1)[0];
    let status = pool.status();
    assert_eq!(status.len(), 1);
    assert_eq!(status[0].key, "alpha");
    assert!(!status[0].connected);
    assert!(status[0].revision.is_none() && status[0].last_error.is_none());
    match pool.shared(i) {
        Err(mcp_client::ClientError::Unavailable(why)) => {
            assert_eq!(why, "upstream `alpha` is unavailable: not connected")
        }
        other => panic!("not unavailable: {:?}", other.map(|c| c.revision())),
    }
    assert!(pool.revision(i).is_err());
}

#[tokio::test]
async fn a_stored_connection_is_the_shared_one_and_speaks_its_revision() {
    let (pool, _) = parts(vec![in_process("alpha", vec!["echo"])]);
    let i = ids(1)[0];
    let client = pool
        .open_shared(pool.get(i))
        .await
        .expect("the in-process upstream opens");
    // Opened is not stored: the keeper stores it once listed.
    assert!(pool.shared(i).is_err() && !pool.status()[0].connected);
    *pool.get(i).client.write() = Some(client.clone());
    assert!(pool.shared(i).expect("shared").same_connection(&client));
    assert_eq!(pool.revision(i).expect("revision"), client.revision());
    let status = &pool.status()[0];
    assert!(status.connected);
    assert_eq!(status.revision, Some(client.revision()));
    client.close().await;
}

#[tokio::test]
async fn ids_and_keys_name_the_same_upstreams() {
    let (pool, _) = parts(vec![
        in_process("alpha", vec![]),
        in_process("beta", vec![]),
    ]);
    let [a, b] = ids(2)[..] else { unreachable!() };
    assert_eq!(pool.id_of("alpha"), Some(a));
    assert_eq!(pool.id_of("beta"), Some(b));
    assert_eq!(pool.id_of("gamma"), None);
    assert_eq!(pool.key(a), "alpha");
    assert_eq!(pool.key(b), "beta");
    for (i, _) in pool.upstreams().iter_ids() {
        assert_eq!(pool.id_of(pool.key(i)), Some(i));
    }
}

#[tokio::test]
async fn only_here_is_what_the_other_pool_does_not_share() {
    let shared = upstream(in_process("shared", vec![]));
    let mine = upstream(in_process("mine", vec![]));
    // Same key as `mine`, but another upstream: not shared.
    let theirs = upstream(in_process("mine", vec![]));
    let here = test_parts::pool_of(vec![mine.clone(), shared.clone()]);
    let there = test_parts::pool_of(vec![shared.clone(), theirs.clone()]);
    let only = here.only_here(&there);
    assert_eq!(only.len(), 1);
    assert!(Arc::ptr_eq(&only[0], &mine));
    let only = there.only_here(&here);
    assert_eq!(only.len(), 1);
    assert!(Arc::ptr_eq(&only[0], &theirs));
    assert!(here.only_here(&here).is_empty());
}

#[tokio::test]
async fn a_pool_keeps_its_upstreams_until_stopped_or_handed_on() {
    let u = upstream(in_process("alpha", vec![]));
    let pool = test_parts::pool_of(vec![u.clone()]);
    assert!(pool.keeps(&u));
    // A reload's successor (another generation) takes it over.
    let successor = Pool::new(
        [u.clone()].into_iter().collect(),
        test_parts::settings(),
        Arc::default(),
        test_parts::GENERATION + 1,
    );
    assert!(!successor.keeps(&u), "not before it is handed over");
    successor.keep_all();
    assert!(successor.keeps(&u) && !pool.keeps(&u));
    successor.stop();
    assert!(!successor.keeps(&u));
}

#[tokio::test]
async fn an_upstream_that_cannot_start_reports_why_by_kind() {
    let (pool, _) = parts(vec![missing("gone")]);
    let i = ids(1)[0];
    let Err(e) = pool.open_shared(pool.get(i)).await else {
        panic!("a program that does not exist started");
    };
    assert_eq!(e.kind(), "unavailable");
    pool.failed(pool.get(i), e);
    let status = &pool.status()[0];
    assert!(!status.connected);
    let last = status.last_error.as_ref().expect("the failure is kept");
    assert_eq!(last.kind(), "unavailable");
    assert!(last.to_string().contains("cannot start"), "{last}");
    // A call to it is told why.
    match pool.shared(i) {
        Err(mcp_client::ClientError::Unavailable(why)) => {
            assert!(why.starts_with("upstream `gone` is unavailable: "), "{why}");
            assert!(why.contains("cannot start"), "{why}");
        }
        _ => panic!("not unavailable"),
    }
}

#[tokio::test]
async fn a_call_waits_for_its_upstreams_own_limit_else_the_gateways() {
    let mut slow = in_process("slow", vec![]);
    slow.call_timeout = Some(Duration::from_secs(90));
    let (pool, _) = parts(vec![slow, in_process("plain", vec![])]);
    let [s, p] = ids(2)[..] else { unreachable!() };
    assert_eq!(pool.call_timeout(s), Duration::from_secs(90));
    assert_eq!(pool.call_timeout(p), test_parts::settings().call_timeout);
}

#[tokio::test]
async fn the_first_listing_is_what_the_upstream_lists() {
    let (pool, _) = parts(vec![in_process("alpha", vec!["echo", "add"])]);
    let client = connect(&pool, ids(1)[0]).await;
    let listing = pool.first_listing(&client).await.expect("listed");
    let names: Vec<&str> = listing.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo", "add"]);
    pool.close_all().await;
    assert!(client.close_reason().is_some(), "closed by close_all");
    assert!(!pool.status()[0].connected);
}
