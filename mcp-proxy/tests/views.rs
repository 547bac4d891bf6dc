//! Per-principal views through the gateway over real HTTP with API keys: two hosts with
//! different principals see different tools from one gateway and cannot call each other's,
//! in both eras, also after an upstream's list changes; a host without a view sees
//! nothing; and no host credential reaches an upstream.

use std::sync::{Arc, Mutex};

use mcp_client::http::HttpConfig;
use mcp_client::{connect_http, Client, ClientOptions, EraChoice, NoHandler};
use mcp_proxy::policy::GlobFilter;
use mcp_proxy::views::{Audience, View, ViewRules};
use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig, UpstreamTransport};
use mcp_server::auth::{ApiKey, ApiKeys, Authorization, Principal, ProtectedResource};
use mcp_server::http::{bind, HttpOptions, StreamableHttp};
use mcp_server::{ListChanged, Outcome, RequestContext, Server, ServerHandler};
use mcp_types::protocol::TypedNotification;
use mcp_types::protocol::*;
use mcp_types::{ErrorObject, Revision};
use tokio::sync::broadcast::error::RecvError;

mod common;
use common::*;

const ALICE: &str = "alice-key-0123456789";
const BOB: &str = "bob-key-0123456789";
const CAROL: &str = "carol-key-0123456789";

/// An upstream whose tools are whatever `names` holds now.
#[derive(Clone)]
struct Shelf {
    names: Arc<Mutex<Vec<&'static str>>>,
}

#[async_trait::async_trait]
impl ServerHandler for Shelf {
    fn capabilities(&self) -> ServerCapabilities {
        changing_tools()
    }
    async fn list_tools(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        let names = self.names.lock().map(|n| n.clone()).unwrap_or_default();
        listing(names.into_iter().map(object_tool))
    }
    async fn call_tool(
        &self,
        _: &RequestContext,
        p: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        text_outcome(format!("ran {}", p.name))
    }
}

fn shelf(names: &[&'static str]) -> (Shelf, Server) {
    let s = Shelf {
        names: Arc::new(Mutex::new(names.to_vec())),
    };
    (s.clone(), Server::new(s))
}

fn views() -> ViewRules {
    let credential = |c: &str| Audience::credentials([c]);
    ViewRules::new()
        .rule(
            credential("alice"),
            View::new("alice").upstreams(["shop"]).tools(GlobFilter {
                allow: None,
                deny: vec!["shop__secret".into()],
            }),
        )
        .rule(
            credential("bob"),
            View::new("bob").upstreams(["bank", "web"]),
        )
}

fn api_keys() -> ApiKeys {
    ApiKeys::new()
        .with(ApiKey::new("alice", ALICE, Principal::new("alice")))
        .with(ApiKey::new("bob", BOB, Principal::new("bob")))
        .with(ApiKey::new("carol", CAROL, Principal::new("carol")))
}

/// The gateway on HTTP in front of `upstreams`, with the views above.
async fn gateway(upstreams: Vec<UpstreamConfig>) -> (Aggregator, String) {
    let options = AggregatorOptions::default().views(Arc::new(views()));
    let agg = Aggregator::start(upstreams, options).await.expect("start");
    let server = Server::new(agg.clone());
    agg.announce_through(server.clone());
    let resource = ProtectedResource::new("http://127.0.0.1/mcp").expect("resource");
    let http = HttpOptions::default().authorization(Authorization::new(api_keys(), resource));
    let (addr, _task) = bind("127.0.0.1:0".parse().expect("address"), server, http)
        .await
        .expect("bind");
    (agg, format!("http://{addr}/mcp"))
}

async fn host(
    url: &str,
    key: Option<&str>,
    era: EraChoice,
) -> Result<Client, mcp_client::ClientError> {
    let mut config = HttpConfig::new(url);
    if let Some(k) = key {
        config
            .headers
            .push(("Authorization".into(), format!("Bearer {k}")));
    }
    let options = ClientOptions::default().era(era);
    connect_http(config, NoHandler, options).await
}

async fn refused(c: &Client, name: &str) -> String {
    match c.call_tool(name, Default::default()).await {
        Err(e) => e.to_string(),
        Ok(r) => panic!("{name} was served: {}", text(&r.result)),
    }
}

const ERAS: [EraChoice; 2] = [EraChoice::Legacy(Revision::V2025_06_18), EraChoice::Modern];

#[tokio::test]
async fn each_principal_sees_and_calls_only_its_view_in_both_eras() {
    let (_shop, shop) = shelf(&["plain", "secret"]);
    let (bank_shelf, bank) = shelf(&["transfer"]);
    let upstreams = vec![
        UpstreamConfig::new("shop", UpstreamTransport::InProcess(shop)),
        UpstreamConfig::new("bank", UpstreamTransport::InProcess(bank.clone())),
    ];
    let (_agg, url) = gateway(upstreams).await;
    for era in ERAS {
        let alice = host(&url, Some(ALICE), era).await.expect("alice connects");
        let bob = host(&url, Some(BOB), era).await.expect("bob connects");
        assert_eq!(tool_names(&alice).await, ["shop__plain"], "{era:?}");
        assert_eq!(tool_names(&bob).await, ["bank__transfer"], "{era:?}");
        let ran = alice
            .call_tool("shop__plain", Default::default())
            .await
            .expect("call");
        assert_eq!(text(&ran.result), "ran plain");
        for (who, tool) in [
            (&alice, "bank__transfer"),
            (&alice, "shop__secret"),
            (&bob, "shop__plain"),
        ] {
            let e = refused(who, tool).await;
            assert!(
                e.contains(&format!("Unknown tool: {tool}")),
                "{era:?} {tool}: {e}"
            );
        }
    }
    // A list change upstream: bob's view grows, alice's stays, and only bob hears of it
    // (legacy hosts: the notification comes on their session).
    let legacy = EraChoice::Legacy(Revision::V2025_06_18);
    let (alice_l, bob_l) = (
        host(&url, Some(ALICE), legacy).await.expect("alice"),
        host(&url, Some(BOB), legacy).await.expect("bob"),
    );
    let (mut alice_hears, mut bob_hears) = (alice_l.notifications(), bob_l.notifications());
    if let Ok(mut n) = bank_shelf.names.lock() {
        n.push("audit");
    }
    bank.notify_list_changed(ListChanged::Tools);
    let heard = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        loop {
            if let Ok(TypedNotification::Bare(_)) = bob_hears.recv().await {
                return;
            }
        }
    })
    .await;
    assert!(
        heard.is_ok(),
        "bob's view reaches the bank: he hears of its change"
    );
    // Nothing to wait for but its absence: a window of 300 ms after bob heard, ended
    // early (and failed) by a change alice hears.
    let alice_heard = tokio::time::timeout(std::time::Duration::from_millis(300), async {
        loop {
            match alice_hears.recv().await {
                Ok(n @ TypedNotification::Bare(_)) => return n,
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => std::future::pending().await,
            }
        }
    })
    .await;
    assert!(
        alice_heard.is_err(),
        "alice must not hear of the bank's change: {alice_heard:?}"
    );
    let bob = host(&url, Some(BOB), EraChoice::Modern)
        .await
        .expect("bob connects");
    let two_seconds = std::time::Duration::from_secs(2);
    mcp_examples::wait_until(two_seconds, || async { tool_names(&bob).await.len() == 2 }).await;
    assert_eq!(tool_names(&bob).await, ["bank__audit", "bank__transfer"]);
    for era in ERAS {
        let alice = host(&url, Some(ALICE), era).await.expect("alice connects");
        assert_eq!(tool_names(&alice).await, ["shop__plain"], "{era:?}");
        assert!(refused(&alice, "bank__audit")
            .await
            .contains("Unknown tool"));
    }
}

#[tokio::test]
async fn no_view_sees_nothing_and_no_credential_is_refused() {
    let (_s, shop) = shelf(&["plain"]);
    let (_agg, url) = gateway(vec![UpstreamConfig::new(
        "shop",
        UpstreamTransport::InProcess(shop),
    )])
    .await;
    for era in ERAS {
        let carol = host(&url, Some(CAROL), era).await.expect("carol connects");
        assert!(tool_names(&carol).await.is_empty(), "{era:?}");
        assert!(refused(&carol, "shop__plain")
            .await
            .contains("Unknown tool"));
        assert!(
            host(&url, None, era).await.is_err(),
            "{era:?}: no token must not connect"
        );
        assert!(host(&url, Some("wrong-key-0123456789"), era).await.is_err());
    }
}

/// An HTTP upstream that notes every `Authorization` header it is sent.
async fn recording_upstream(seen: Arc<Mutex<Vec<String>>>) -> String {
    let (_s, server) = shelf(&["fetch"]);
    let http = StreamableHttp::new(server, HttpOptions::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (http, seen) = (http.clone(), seen.clone());
            let service =
                hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    if let Some(v) = req.headers().get("authorization") {
                        if let Ok(mut s) = seen.lock() {
                            s.push(v.to_str().unwrap_or("?").to_owned());
                        }
                    }
                    let http = http.clone();
                    async move { Ok::<_, std::convert::Infallible>(http.handle(req).await) }
                });
            let io = hyper_util::rt::TokioIo::new(stream);
            tokio::spawn(hyper::server::conn::http1::Builder::new().serve_connection(io, service));
        }
    });
    format!("http://{addr}/mcp")
}

#[tokio::test]
async fn a_hosts_credential_never_reaches_an_upstream() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let url = recording_upstream(seen.clone()).await;
    let mut web = mcp_client::http::HttpConfig::new(url);
    web.headers
        .push(("Authorization".into(), "Bearer upstream-own-token".into()));
    let (_agg, gw) = gateway(vec![UpstreamConfig::new(
        "web",
        UpstreamTransport::Http(web),
    )])
    .await;
    for era in ERAS {
        let bob = host(&gw, Some(BOB), era).await.expect("bob connects");
        let r = bob
            .call_tool("web__fetch", Default::default())
            .await
            .expect("call");
        assert_eq!(text(&r.result), "ran fetch");
    }
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert!(!seen.is_empty(), "the upstream was reached");
    assert!(
        seen.iter().all(|h| h == "Bearer upstream-own-token"),
        "{seen:?}"
    );
    assert!(!seen.iter().any(|h| h.contains(BOB)));
}
