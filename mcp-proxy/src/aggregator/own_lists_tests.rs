//! `OwnLists` and `OwnSessions`: a host's own listings stand for it alone.
use super::*;

fn listing(tool: &str) -> Listing {
    let tool: Tool = serde_json::from_value(serde_json::json!(
        {"name": tool, "inputSchema": {"type": "object"}}
    ))
    .expect("tool");
    Listing {
        tools: vec![Exact::encode(tool).expect("encode")],
        ..Default::default()
    }
}

fn tool_of(lists: &OwnLists<u32>, host: u32, i: UpstreamId) -> Option<String> {
    Some(lists.get(host, i)?.tools.first()?.name.clone())
}

#[test]
fn a_hosts_own_listing_stands_for_it_alone_and_the_newest_session_wins() {
    let ids: Vec<UpstreamId> = [(), ()]
        .into_iter()
        .collect::<PerUpstream<()>>()
        .ids()
        .collect();
    let (a, b) = (ids[0], ids[1]);
    let lists = OwnLists::<u32>::default();
    assert!(!lists.has(Some(1), a) && lists.listings(Some(1)).is_none());
    let (old, new) = (lists.token(), lists.token());
    lists.set(1, a, new, listing("newer"));
    // A replaced session's follower, late: neither overwrites nor removes its successor's.
    lists.set(1, a, old, listing("older"));
    lists.remove(1, a, old);
    assert_eq!(tool_of(&lists, 1, a).as_deref(), Some("newer"));
    assert!(lists.has(Some(1), a));
    assert!(
        !lists.has(Some(1), b),
        "only the upstream it has a session of"
    );
    assert!(
        !lists.has(Some(2), a) && lists.listings(Some(2)).is_none(),
        "only that host"
    );
    assert!(
        !lists.has(None, a),
        "a request without a host session has none"
    );
    lists.remove(1, a, new);
    assert!(!lists.has(Some(1), a));
    assert!(
        lists.listings(Some(1)).is_none(),
        "the host sees the catalog again"
    );
    assert_eq!(lists.count.load(Ordering::SeqCst), 0);
}

use super::super::announcer::Heard;
use super::super::test_parts::{ids, in_process, parts, request};
use mcp_server::ListChanged;

/// A listing of tools named `tools` and resources at `uris`.
fn offering(tools: &[&str], uris: &[&str]) -> Listing {
    let resource = |uri: &&str| -> Exact<mcp_types::protocol::Resource> {
        let r =
            serde_json::from_value(serde_json::json!({"uri": uri, "name": uri})).expect("resource");
        Exact::encode(r).expect("encode")
    };
    Listing {
        tools: tools.iter().flat_map(|t| listing(t).tools).collect(),
        resources: uris.iter().map(resource).collect(),
        ..Default::default()
    }
}

/// `(exposed name, upstream, real name)` of the tools the host of `ctx` sees.
fn seen_by(own: &OwnSessions, ctx: &RequestContext) -> Vec<(String, UpstreamId, String)> {
    own.tool_entries_for(Some(ctx))
        .into_iter()
        .map(|(exposed, i, t)| (exposed, i, t.name.clone()))
        .collect()
}

#[tokio::test]
async fn without_sessions_of_its_own_a_host_sees_the_catalog() {
    let (pool, catalog) = parts(vec![
        in_process("alpha", vec![]),
        in_process("beta", vec![]),
    ]);
    let [a, b] = ids(2)[..] else { unreachable!() };
    catalog.set_listing(a, offering(&["echo"], &[]));
    catalog.set_listing(b, offering(&["add", "sub"], &[]));
    let own = OwnSessions::new(pool, catalog.clone(), Arc::default());
    let req = request().await;
    let seen = seen_by(&own, &req.ctx);
    let listed: Vec<_> = catalog
        .tool_entries()
        .into_iter()
        .map(|(exposed, i, t)| (exposed, i, t.name.clone()))
        .collect();
    assert_eq!(seen, listed);
    assert_eq!(seen.len(), 3);
    assert_eq!(own.tool_entries_for(None).len(), 3);
    for (exposed, i, name) in &seen {
        let route = own.host_route(&req.ctx, exposed).expect("routed");
        let theirs = catalog.route(exposed).expect("the catalog's route");
        assert!(Arc::ptr_eq(&route, &theirs), "the catalog's own route");
        assert_eq!(
            (route.upstream, route.tool.name.as_str()),
            (*i, name.as_str())
        );
    }
    assert!(own.host_route(&req.ctx, "echo-nowhere").is_none());
    let host = req.ctx.host_session().map(|h| h.id());
    assert!(host.is_some() && !own.has(host, a) && !own.has(host, b));
}

#[tokio::test]
async fn a_resource_nobody_listed_is_not_found() {
    let (pool, catalog) = parts(vec![
        in_process("alpha", vec![]),
        in_process("beta", vec![]),
    ]);
    let [_, b] = ids(2)[..] else { unreachable!() };
    catalog.set_listing(b, offering(&[], &["file:///b.txt"]));
    let own = OwnSessions::new(pool, catalog, Arc::default());
    let req = request().await;
    assert_eq!(own.owner_of_resource(&req.ctx, "file:///b.txt"), Ok(b));
    assert_eq!(own.resource_owner_for(&req.ctx, "file:///b.txt"), Some(b));
    let e = own
        .owner_of_resource(&req.ctx, "file:///nowhere.txt")
        .expect_err("nobody lists it");
    assert_eq!(e.code, mcp_types::codes::RESOURCE_NOT_FOUND);
    assert_eq!(
        e.data,
        Some(serde_json::json!({"uri": "file:///nowhere.txt"}))
    );
}

#[tokio::test]
async fn a_hosts_own_session_lists_for_that_host_alone_until_it_ends() {
    // The upstream's sessions list `mine`; the catalog, listed before, says `theirs`.
    let (pool, catalog) = parts(vec![in_process("alpha", vec!["mine"])]);
    let i = ids(1)[0];
    catalog.set_listing(i, offering(&["theirs"], &[]));
    let announcer = Arc::new(Announcer::default());
    let (tx, mut heard) = tokio::sync::mpsc::unbounded_channel();
    announcer.listen(Arc::new(move |what, who| {
        let _ = tx.send((what, who));
    }));
    let own = Arc::new(OwnSessions::new(pool.clone(), catalog, announcer));
    let (req, other) = (request().await, request().await);
    let host = req.ctx.host_session().expect("a host session").clone();
    let session = pool.open_shared(pool.get(i)).await.expect("a session");
    own.follow_own_session(i, host.clone(), session.clone());
    let limit = std::time::Duration::from_secs(5);
    let told = |heard: Result<Option<(ListChanged, Heard)>, _>| match heard {
        Ok(Some((ListChanged::Tools, Heard::Host(h)))) => h == host.id(),
        _ => false,
    };
    let next = tokio::time::timeout(limit, heard.recv()).await;
    assert!(told(next), "the host alone hears of its tools");
    assert!(own.has(Some(host.id()), i));
    let mine = seen_by(&own, &req.ctx);
    assert_eq!(mine.len(), 1);
    assert_eq!((mine[0].1, mine[0].2.as_str()), (i, "mine"));
    let route = own.host_route(&req.ctx, &mine[0].0).expect("its route");
    assert_eq!(route.tool.name, "mine");
    // Another host sees the catalog's.
    let theirs = seen_by(&own, &other.ctx);
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0].2, "theirs");
    assert!(own.host_route(&other.ctx, &mine[0].0).is_none());
    // The session ends: the host sees (and hears of) the catalog's again.
    session.close().await;
    let next = tokio::time::timeout(limit, heard.recv()).await;
    assert!(told(next), "told it sees the catalog again");
    assert!(!own.has(Some(host.id()), i));
    assert_eq!(seen_by(&own, &req.ctx), theirs);
}
