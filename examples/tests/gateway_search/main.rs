//! Tool search on the dispatcher surface (`search_tools`), end to end: the gateway binary
//! over one stdio upstream (a short Python script, `UPSTREAM` below) that lists the
//! catalog of `mcp_examples::search_corpus` from a JSON file, in pages, and changes its
//! list when told to (`catalog_edit`), saying so with `notifications/tools/list_changed`.
//!
//! 5. over 10,020 tools, the twenty requests of `search_corpus::queries()` are answered
//!    exactly as the library ranks the catalog under the names the gateway gives it
//!    (`corpus__…`), and find their tools in the top five (at least the 11 of 20 the
//!    library's own test holds it to); `cursor` pages give the next results, without
//!    repeats, as one long page would;
//! 6. a principal whose view allows only some tools is never shown another, not even the
//!    best match for its request, and cannot call one;
//! 7. a tool the upstream adds is found by the next searches, and one it removes is gone;
//!    with an upstream session per host, for that host only; with pooled sessions, when
//!    the upstream keeps its list outside them (`changes.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use mcp_client::auth::{AuthError, AuthProvider, Refused};
use mcp_client::http::HttpConfig;
use mcp_client::{Client, ClientError, ClientOptions, EraChoice, NoHandler};
use mcp_examples::search_corpus::{catalog, queries};
use mcp_proxy::search::{Bm25, SearchDocument, ToolSearch};
use mcp_types::Revision;
use serde_json::{json, Value};

mod changes;
#[path = "../common/mod.rs"]
mod common;
use common::redis::scratch;
use common::{announced_url, example, Stopped};

const ALICE: &str = "alice-key-0123456789abcdef";
const BOB: &str = "bob-key-0123456789abcdef";

/// The upstream: `python3 UPSTREAM tools.json`. Lists the tools in the file 1,000 a page
/// (`nextCursor` an offset), answers a call to one of them with `called <name>`, and to
/// `catalog_edit` by adding the tools in `add`, removing those named in `remove`, and
/// saying its list changed. With a second argument `kept`, the list is kept in the file
/// (read at each request, written at each edit), as an upstream whose list lives in a
/// database shares it among its sessions; else each process has its own.
const UPSTREAM: &str = r#"
import json, sys
TOOLS = json.load(open(sys.argv[1]))
KEPT = sys.argv[2:] == ["kept"]
PAGE = 1000
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    i, m = msg.get("id"), msg.get("method")
    if i is None or m is None:
        continue
    p = msg.get("params") or {}
    if KEPT:
        TOOLS[:] = json.load(open(sys.argv[1]))
    if m == "initialize":
        send({"jsonrpc": "2.0", "id": i, "result": {"protocolVersion": "2025-06-18",
              "capabilities": {"tools": {"listChanged": True}},
              "serverInfo": {"name": "corpus", "version": "1"}}})
    elif m == "ping":
        send({"jsonrpc": "2.0", "id": i, "result": {}})
    elif m == "tools/list":
        start = int(p.get("cursor") or 0)
        page = {"tools": TOOLS[start:start + PAGE]}
        if start + PAGE < len(TOOLS):
            page["nextCursor"] = str(start + PAGE)
        send({"jsonrpc": "2.0", "id": i, "result": page})
    elif m == "tools/call":
        name, args = p.get("name"), p.get("arguments") or {}
        if name == "catalog_edit":
            gone = set(args.get("remove", []))
            TOOLS[:] = [t for t in TOOLS if t["name"] not in gone] + args.get("add", [])
            if KEPT:
                with open(sys.argv[1] + ".new", "w") as f:
                    json.dump(TOOLS, f)
                import os
                os.replace(sys.argv[1] + ".new", sys.argv[1])
            send({"jsonrpc": "2.0", "id": i, "result": {"content": [
                  {"type": "text", "text": "%d tools" % len(TOOLS)}]}})
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        elif any(t["name"] == name for t in TOOLS):
            send({"jsonrpc": "2.0", "id": i, "result": {"content": [
                  {"type": "text", "text": "called " + name}]}})
        else:
            send({"jsonrpc": "2.0", "id": i, "error": {"code": -32602,
                  "message": "Unknown tool: %s" % name}})
    else:
        send({"jsonrpc": "2.0", "id": i, "error": {"code": -32601, "message": "Method not found"}})
"#;

/// The tool `catalog_edit` of the upstream.
fn edit_tool() -> Value {
    json!({"name": "catalog_edit", "title": "Edit the test catalog",
           "description": "Adds and removes tools of this test upstream.",
           "inputSchema": {"type": "object", "properties": {
               "add": {"type": "array"}, "remove": {"type": "array"}}}})
}

/// A fixed API key as the bearer token.
struct Key(&'static str);

#[async_trait::async_trait]
impl AuthProvider for Key {
    fn access_token(&self) -> Option<String> {
        Some(self.0.to_owned())
    }
    async fn unauthorized(&self, _refused: Refused) -> Result<(), AuthError> {
        Err(AuthError::NotCompleted(
            "a fixed API key was refused".into(),
        ))
    }
}

/// In `dir`: the upstream's script, its tools (`catalog(distractors)`, and `catalog_edit`
/// when there is a `session` for it), and a configuration serving them as upstream
/// `corpus` on the dispatcher surface, with `gateway` members added from `extra`.
fn config(dir: &Path, distractors: usize, session: Option<&str>, extra: Value) -> PathBuf {
    let script = dir.join("upstream.py");
    std::fs::write(&script, UPSTREAM).expect("script");
    let mut tools = catalog(distractors);
    let mut server = json!({"command": "python3", "args": [script, dir.join("tools.json")]});
    if let Some(mode) = session {
        tools.push(edit_tool());
        let (mode, kept) = match mode.strip_suffix(" kept") {
            Some(mode) => (mode, true),
            None => (mode, false),
        };
        server["session"] = mode.into();
        if kept {
            server["args"] = json!([script, dir.join("tools.json"), "kept"]);
        }
    }
    let listing = dir.join("tools.json");
    std::fs::write(&listing, Value::Array(tools).to_string()).expect("tools");
    let mut text = json!({
        "mcpServers": {"corpus": server},
        // Names as long as the corpus's, prefixed, are kept whole.
        "gateway": {"startupWaitMillis": 60000, "surface": "dispatcher", "maxNameLength": 128}});
    if let Value::Object(members) = extra {
        for (k, v) in members {
            text["gateway"][k] = v;
        }
    }
    let path = dir.join("gateway.json");
    std::fs::write(&path, text.to_string()).expect("config");
    path
}

/// The gateway with `config` on a free port, its stderr in `dir/gateway.log`, once it
/// serves (its upstream listed): the process and its URL.
async fn gateway(config: &Path, dir: &Path) -> (Stopped, String) {
    let log = std::fs::File::create(dir.join("gateway.log")).expect("log file");
    let mut child = tokio::process::Command::new(example("gateway"))
        .arg("--config")
        .arg(config)
        .args(["--http", "127.0.0.1:0", "--drain", "1"])
        .stdout(std::process::Stdio::piped())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .expect("gateway");
    let url = announced_url(&mut child)
        .await
        .expect("the gateway started in time");
    (Stopped(child), url)
}

async fn host(url: &str, key: Option<&'static str>, era: EraChoice) -> Client {
    let mut config = HttpConfig::new(url);
    if let Some(k) = key {
        config = config.auth(Arc::new(Key(k)));
    }
    mcp_client::connect_http(config, NoHandler, ClientOptions::default().era(era))
        .await
        .expect("connects")
}

fn legacy() -> EraChoice {
    EraChoice::Legacy(Revision::V2025_11_25)
}

/// A call's result: whether it is an error result, and its first text.
async fn call(host: &Client, tool: &str, arguments: Value) -> Result<(bool, String), ClientError> {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object");
    };
    let called = host.call_tool(tool, arguments).await?;
    let result = serde_json::to_value(&called.result).expect("a result");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    Ok((called.result.is_error(), text.to_owned()))
}

/// One page of `search_tools`: the names found, and the next page's cursor.
struct Page {
    names: Vec<String>,
    tools: Vec<Value>,
    next: Option<String>,
}

async fn search(host: &Client, query: &str, limit: u64, cursor: Option<&str>) -> Page {
    let mut args = json!({"query": query, "limit": limit});
    if let Some(c) = cursor {
        args["cursor"] = c.into();
    }
    let (error, text) = call(host, "search_tools", args)
        .await
        .expect("search_tools answered");
    assert!(!error, "search_tools failed: {text}");
    let found: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let tools = found["tools"].as_array().cloned().unwrap_or_default();
    Page {
        names: tools
            .iter()
            .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
            .collect(),
        tools,
        next: found["nextCursor"].as_str().map(str::to_owned),
    }
}

/// How many of the twenty requests find their tool in the top five, at least: the floor
/// `mcp-proxy/tests/tool_search.rs` holds the library's default ranking to (its
/// `AT_LEAST_IN_TOP_FIVE`), which says why not all twenty.
const AT_LEAST_IN_TOP_FIVE: usize = 11;

/// Test 5. A 2026-07-28 host searching 10,020 tools: the gateway ranks them as the
/// library does over the names it exposes; at least 11 of the twenty requests find their
/// tool in the top five (all twenty are asked for, and logged); pages do not repeat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_ranks_as_the_library_does_and_pages_do_not_repeat() {
    let dir = scratch("search-rank");
    let (_gw, url) = gateway(&config(&dir, 10_000, None, json!({})), &dir).await;
    let alice = host(&url, None, EraChoice::Modern).await;
    let listed = alice.list_tools().await.expect("tools/list");
    let mut own: Vec<String> = listed.iter().map(|t| t.name.clone()).collect();
    own.sort();
    assert_eq!(
        own,
        ["call_tool", "describe_tool", "list_tools", "search_tools"]
    );

    // The library's own ranking of the same catalog under the names the gateway gives
    // it: what the gateway's search should answer, whatever the ranking's quality.
    let documents: Vec<SearchDocument> = catalog(10_000)
        .iter()
        .map(|t| {
            let mut d = SearchDocument::from_json(t).expect("a document");
            d.name = format!("corpus__{}", d.name);
            d
        })
        .collect();
    let library = Bm25::default().index(&documents);

    let started = Instant::now();
    let (mut misses, mut differ) = (Vec::new(), Vec::new());
    for (n, (query, want)) in queries().into_iter().enumerate() {
        let want = format!("corpus__{want}");
        let page = search(&alice, query, 5, None).await;
        let expected: Vec<String> = library
            .search(query, &|_| true, 5)
            .iter()
            .map(|h| documents[h.document].name.clone())
            .collect();
        if page.names != expected {
            differ.push((query, page.names.clone(), expected));
        }
        if n == 0 {
            eprintln!("first search (the index made): {:?}", started.elapsed());
        }
        let rank = page.names.iter().position(|n| *n == want);
        eprintln!(
            "{:>10}  {want:<40} {query:?}",
            rank.map_or("not in 5".to_owned(), |r| format!("rank {}", r + 1))
        );
        if rank.is_none() {
            misses.push((want.clone(), page.names.clone()));
        }
        let shown = page.tools.iter().find(|t| t["name"] == want.as_str());
        if let Some(t) = shown {
            assert_eq!(t["namespace"], "corpus", "{t}");
            assert!(
                t["title"].is_string() && t["description"].is_string(),
                "{t}"
            );
        }
        assert_eq!(page.names.len(), 5, "{query:?}: {:?}", page.names);
        assert_eq!(page.next.as_deref(), Some("5"), "{query:?}");
    }
    eprintln!("twenty searches in {:?}", started.elapsed());
    assert!(
        differ.is_empty(),
        "the gateway ranks otherwise than the library: {differ:?}"
    );

    // Pages of 7 by cursor are one page of 28 cut in four, with no name twice.
    for (query, _) in queries().into_iter().take(3) {
        let whole = search(&alice, query, 28, None).await;
        let mut paged = Vec::new();
        let mut cursor = None;
        for _ in 0..4 {
            let page = search(&alice, query, 7, cursor.as_deref()).await;
            assert_eq!(page.names.len(), 7, "{query:?}");
            paged.extend(page.names);
            cursor = page.next;
            assert!(cursor.is_some(), "{query:?}: more after {}", paged.len());
        }
        assert_eq!(paged, whole.names, "{query:?}");
        let mut distinct = paged.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), 28, "{query:?}: {paged:?}");
    }

    // A request matching a few tools: paged to its end, the last page says no more.
    let query = "frobnicate";
    let none = search(&alice, query, 5, None).await;
    assert!(
        none.names.is_empty() && none.next.is_none(),
        "{:?}",
        none.names
    );
    let query = "acknowledge the incident";
    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let page = search(&alice, query, 50, cursor.as_deref()).await;
        pages += 1;
        seen.extend(page.names);
        cursor = page.next;
        if cursor.is_none() || pages == 30 {
            break;
        }
    }
    let mut distinct = seen.clone();
    distinct.sort();
    distinct.dedup();
    eprintln!("{query:?}: {} results in {pages} pages", seen.len());
    assert_eq!(distinct.len(), seen.len(), "no repeats across pages");
    assert!(cursor.is_none(), "the pages end");

    // The dispatcher reaches the tool found.
    let (error, text) = call(
        &alice,
        "call_tool",
        json!({"name": "corpus__weather__forecast", "arguments": {"location": "Paris"}}),
    )
    .await
    .expect("call_tool");
    assert!(!error, "{text}");
    assert_eq!(text, "called weather__forecast");
    alice.close().await;
    let _ = std::fs::remove_dir_all(&dir);
    // Last, so that the rest is checked whatever it says: the ranking's quality
    // (`mcp_proxy::search` over `search_corpus`), which the gateway only carries (it
    // answers exactly as the library does, checked above). Not all twenty: the library's
    // own test (`mcp-proxy/tests/tool_search.rs`, `AT_LEAST_IN_TOP_FIVE`) holds the default
    // ranking to at least 11, nine requests sharing no telling word with their tool.
    let in_top_five = 20 - misses.len();
    eprintln!("{in_top_five} of 20 requests found their tool in the top five");
    assert!(
        in_top_five >= AT_LEAST_IN_TOP_FIVE,
        "{in_top_five} of 20 in the top five, fewer than the library's {AT_LEAST_IN_TOP_FIVE}; \
         not in the top five: {misses:?}"
    );
}

/// Whether `name` is one bob's view allows.
fn bobs(name: &str) -> bool {
    name.starts_with("corpus__weather__") || name.starts_with("corpus__maps__")
}

/// Test 6. Bob's view allows the weather and maps tools only; alice's, everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_limits_what_search_shows_and_what_can_be_called() {
    let dir = scratch("search-views");
    let extra = json!({
        "auth": {"resource": "http://127.0.0.1/mcp", "apiKeys": [
            {"name": "alice", "key": ALICE, "subject": "alice"},
            {"name": "bob", "key": BOB, "subject": "bob"}]},
        "views": [
            {"name": "all", "credentials": ["alice"], "surface": "dispatcher"},
            {"name": "outdoors", "credentials": ["bob"], "surface": "dispatcher",
             "allowTools": ["corpus__weather__*", "corpus__maps__*"]}]});
    let (_gw, url) = gateway(&config(&dir, 10_000, None, extra), &dir).await;
    let alice = host(&url, Some(ALICE), EraChoice::Modern).await;
    let bob = host(&url, Some(BOB), legacy()).await;

    let hidden = "corpus__github__create_issue";
    let query = "open a bug report in the repository about the login crash";
    let best = search(&alice, query, 5, None).await;
    assert_eq!(
        best.names.first().map(String::as_str),
        Some(hidden),
        "{:?}",
        best.names
    );

    // Every request, every page bob gets: only his view's tools, and they are found.
    let mut shown = 0;
    for (query, want) in queries() {
        let mut cursor = None;
        for _ in 0..3 {
            let page = search(&bob, query, 50, cursor.as_deref()).await;
            let others: Vec<&String> = page.names.iter().filter(|n| !bobs(n)).collect();
            assert!(others.is_empty(), "{query:?} showed bob {others:?}");
            shown += page.names.len();
            cursor = page.next;
            if cursor.is_none() {
                break;
            }
        }
        let want = format!("corpus__{want}");
        if bobs(&want) {
            let page = search(&bob, query, 5, None).await;
            assert!(page.names.contains(&want), "{query:?}: {:?}", page.names);
        }
    }
    eprintln!("bob was shown {shown} results, all his view's");
    let page = search(&bob, query, 50, None).await;
    assert!(!page.names.iter().any(|n| n == hidden), "{:?}", page.names);

    // Nor can he call it, describe it, or see it listed; alice can call it.
    let args = json!({"owner": "o", "repo": "r", "title": "t"});
    let (error, text) = call(
        &bob,
        "call_tool",
        json!({"name": hidden, "arguments": args.clone()}),
    )
    .await
    .expect("call_tool answered");
    eprintln!("bob's call_tool of {hidden}: error {error}, {text:?}");
    assert!(error, "bob called a tool his view hides: {text}");
    assert!(!text.contains("called"), "{text}");
    let direct = call(&bob, hidden, args.clone()).await;
    eprintln!("bob's tools/call of {hidden}: {direct:?}");
    assert!(
        !matches!(&direct, Ok((false, _))),
        "bob's direct call went: {direct:?}"
    );
    let (error, text) = call(&bob, "describe_tool", json!({"name": hidden}))
        .await
        .expect("describe_tool answered");
    assert!(error, "described to bob: {text}");
    let (_, listing) = call(&bob, "list_tools", json!({}))
        .await
        .expect("list_tools");
    assert!(!listing.contains(hidden), "listed to bob");
    assert!(listing.contains("corpus__weather__forecast"), "{listing}");
    let (error, text) = call(
        &alice,
        "call_tool",
        json!({"name": hidden, "arguments": args}),
    )
    .await
    .expect("call_tool");
    assert!(!error, "{text}");
    assert_eq!(text, "called github__create_issue");
    alice.close().await;
    bob.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}
