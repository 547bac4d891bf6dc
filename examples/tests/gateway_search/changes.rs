//! Test 7: the catalog changes upstream, and the next searches show it.

use std::time::{Duration, Instant};

use mcp_client::Client;
use serde_json::{json, Value};

use super::common::redis::scratch;
use super::{call, config, gateway, host, legacy, search};

/// The tool the tests add, as the gateway names it, and a request it answers best.
const NEW: &str = "corpus__zeta__frobnicate_quux";
const QUERY: &str = "frobnicate the quux widgets";

/// [`NEW`] as the upstream lists it.
fn new_tool() -> Value {
    json!({"name": "zeta__frobnicate_quux", "title": "Frobnicate quux widgets",
        "description": "Frobnicates the quux widgets of a zeta reactor overnight.",
        "inputSchema": {"type": "object", "properties": {"widget": {"type": "string"}}}})
}

/// `host` has the upstream (2,021 tools) add [`NEW`] through its call going `via`
/// (said in the log), searches until it comes first (at most 10 s), and calls it.
async fn added_found_and_called(host: &Client, via: &str) {
    let edit = json!({"name": "corpus__catalog_edit", "arguments": {"add": [new_tool()]}});
    let (error, text) = call(host, "call_tool", edit).await.expect("edited");
    assert!(!error && text == "2022 tools", "{text}");
    let edited = Instant::now();
    let (found, searches) = searched_until(host, QUERY, |names| {
        names.first().map(String::as_str) == Some(NEW)
    })
    .await;
    eprintln!(
        "added through {via}: found first by search {searches} ({:?})",
        edited.elapsed()
    );
    assert!(found, "the tool added through {via} is found");
    let (error, text) = call(host, "call_tool", json!({"name": NEW, "arguments": {}}))
        .await
        .expect("call_tool");
    assert!(!error && text == "called zeta__frobnicate_quux", "{text}");
}

/// Searches until `cond` holds of the names found (at most 10 s): whether it came to,
/// and after how many searches.
async fn searched_until(
    host: &Client,
    query: &str,
    cond: impl Fn(&[String]) -> bool,
) -> (bool, u32) {
    let mut searches = 0;
    let held = mcp_examples::wait_until(Duration::from_secs(10), || {
        searches += 1;
        let cond = &cond;
        async move { cond(&search(host, query, 50, None).await.names) }
    })
    .await;
    (held, searches)
}

/// Test 7. The upstream (2,020 tools here) adds a tool, then removes one; a legacy host
/// searches. The upstream is `"session": "shared"`: the host's calls go on the
/// connection the catalog is listed from (with the default, pooled sessions, the edit
/// would be made in a pooled process of its own, whose list is not the catalog's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_added_upstream_is_found_and_one_removed_is_gone() {
    let dir = scratch("search-change");
    let (_gw, url) = gateway(&config(&dir, 2_000, Some("shared"), json!({})), &dir).await;
    let alice = host(&url, None, legacy()).await;
    let before = search(&alice, QUERY, 50, None).await;
    assert!(!before.names.iter().any(|n| n == NEW), "{:?}", before.names);
    added_found_and_called(&alice, "the upstream's own connection").await;

    let gone = "corpus__weather__forecast";
    let weather = "what will the weather be like in Paris tomorrow";
    let top = search(&alice, weather, 5, None).await;
    assert!(top.names.iter().any(|n| n == gone), "{:?}", top.names);
    let (error, text) = call(
        &alice,
        "call_tool",
        json!({"name": "corpus__catalog_edit", "arguments": {"remove": ["weather__forecast"]}}),
    )
    .await
    .expect("edited");
    assert!(!error && text == "2021 tools", "{text}");
    let edited = Instant::now();
    let (removed, searches) =
        searched_until(&alice, weather, |names| !names.iter().any(|n| n == gone)).await;
    eprintln!(
        "the removed tool was gone from search {searches} after the change ({:?})",
        edited.elapsed()
    );
    assert!(removed, "the removed tool is not found");
    // Still there: what was added, and the rest.
    let page = search(&alice, QUERY, 5, None).await;
    assert_eq!(page.names.first().map(String::as_str), Some(NEW));
    let (error, text) = call(&alice, "call_tool", json!({"name": gone, "arguments": {}}))
        .await
        .expect("call_tool answered");
    assert!(error, "a removed tool was called: {text}");
    alice.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Test 7 with the default, pooled sessions, and an upstream that keeps its list outside
/// its sessions (in a file, as one would in a database): the edit is made by a call on a
/// pooled session, which alone hears the upstream say its list changed; the gateway lists
/// the upstream again on its own connection, and the next searches find the new tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_change_heard_on_a_pooled_session_reaches_search() {
    let dir = scratch("search-pooled");
    let config = config(&dir, 2_000, Some("pooled kept"), json!({}));
    let (_gw, url) = gateway(&config, &dir).await;
    // The first host takes the connection the catalog is listed from; the second's calls
    // go on pooled sessions.
    let bob = host(&url, None, legacy()).await;
    let args = json!({"name": "corpus__weather__forecast", "arguments": {}});
    let (error, text) = call(&bob, "call_tool", args).await.expect("call_tool");
    assert!(!error, "{text}");
    let alice = host(&url, None, legacy()).await;
    added_found_and_called(&alice, "a pooled session").await;
    alice.close().await;
    bob.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Test 7, with an upstream that keeps a session per host (`"session": "per-host"`): the
/// tool a host's own upstream session adds is found by that host's searches (made over
/// its own listing), never by another host's; the one it removes is gone for it only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosts_own_upstream_session_changes_only_its_own_search() {
    let dir = scratch("search-own");
    let (_gw, url) = gateway(&config(&dir, 2_000, Some("per-host"), json!({})), &dir).await;
    let (a, b) = (
        host(&url, None, legacy()).await,
        host(&url, None, legacy()).await,
    );
    // Each opens its upstream session with a call.
    for h in [&a, &b] {
        let args = json!({"name": "corpus__weather__forecast", "arguments": {}});
        let (error, text) = call(h, "call_tool", args).await.expect("call_tool");
        assert!(!error, "{text}");
    }
    let (new, query) = (NEW, QUERY);
    let edit = json!({"name": "corpus__catalog_edit",
                      "arguments": {"add": [new_tool()], "remove": ["weather__forecast"]}});
    let (error, text) = call(&b, "call_tool", edit).await.expect("edited");
    assert!(!error && text == "2021 tools", "{text}");
    let edited = Instant::now();
    let (found, searches) = searched_until(&b, query, |names| {
        names.first().map(String::as_str) == Some(new)
    })
    .await;
    eprintln!(
        "b's own added tool found by its search {searches} ({:?})",
        edited.elapsed()
    );
    assert!(found, "b finds the tool its own session added");
    let weather = "what will the weather be like in Paris tomorrow";
    let gone = "corpus__weather__forecast";
    let b_weather = search(&b, weather, 50, None).await;
    assert!(
        !b_weather.names.iter().any(|n| n == gone),
        "removed from b's own listing: {:?}",
        b_weather.names
    );
    let a_query = search(&a, query, 50, None).await;
    assert!(
        !a_query.names.iter().any(|n| n == new),
        "a was shown b's own tool: {:?}",
        a_query.names
    );
    let a_weather = search(&a, weather, 5, None).await;
    assert!(
        a_weather.names.iter().any(|n| n == gone),
        "a still finds what only b's session removed: {:?}",
        a_weather.names
    );
    a.close().await;
    b.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}
