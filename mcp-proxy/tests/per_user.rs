//! An upstream that acts as each user ([`PerUser`]), over real HTTP on both sides: each
//! principal's requests reach it on a connection of that principal alone, with that
//! principal's token from the upstream's credentials; the shared connection, with the
//! gateway's own token, only lists. A refused token is replaced, a refusal of the
//! credentials reaches the host as an error result naming the upstream, and a request
//! without a principal is refused.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mcp_client::http::HttpConfig;
use mcp_client::{connect_http, Client, ClientOptions, EraChoice, NoHandler};
use mcp_proxy::credentials::{
    CredentialError, CredentialRequest, PerUser, UpstreamCredentials, UpstreamToken,
};
use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig, UpstreamTransport};
use mcp_server::auth::{ApiKey, ApiKeys, Authorization, Principal, ProtectedResource};
use mcp_server::http::{bind, HttpOptions};
use mcp_server::{Outcome, RequestContext, Server, ServerHandler};
use mcp_types::protocol::*;
use mcp_types::ErrorObject;

mod common;
use common::*;

const ALICE: &str = "alice-key-0123456789";
const BOB: &str = "bob-key-0123456789";
const MALLORY: &str = "mallory-key-0123456789";

/// An upstream that answers each call with who called, and remembers it.
#[derive(Clone, Default)]
struct WhoAmI {
    calls: Arc<Mutex<Vec<String>>>,
    lists: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl ServerHandler for WhoAmI {
    fn capabilities(&self) -> ServerCapabilities {
        tools_only()
    }
    async fn list_tools(
        &self,
        ctx: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        let who = ctx
            .principal()
            .map(|p| p.subject.clone())
            .unwrap_or_default();
        self.lists.lock().expect("lists").push(who.clone());
        // Each user has a tool of their own: a listing that depends on the user's token.
        let mut tools = vec![object_tool("whoami")];
        if who != "gateway" {
            tools.push(object_tool(format!("only_{who}")));
        }
        listing(tools)
    }
    async fn call_tool(
        &self,
        ctx: &RequestContext,
        _: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        let who = ctx
            .principal()
            .map(|p| p.subject.clone())
            .unwrap_or_default();
        self.calls.lock().expect("calls").push(who.clone());
        text_outcome(who)
    }
}

/// The upstream on HTTP, taking `up-<subject>` tokens (and the gateway's own, `up-gw`).
async fn upstream(subjects: &[&str]) -> (WhoAmI, String) {
    let mut keys = ApiKeys::new().with(ApiKey::new(
        "gw",
        "up-gw-0123456789",
        Principal::new("gateway"),
    ));
    for s in subjects {
        keys = keys.with(ApiKey::new(
            *s,
            &format!("up-{s}-0123456789"),
            Principal::new(*s),
        ));
    }
    let who = WhoAmI::default();
    let resource = ProtectedResource::new("http://127.0.0.1/mcp").expect("resource");
    let http = HttpOptions::default().authorization(Authorization::new(keys, resource));
    let (addr, _task) = bind(
        "127.0.0.1:0".parse().expect("address"),
        Server::new(who.clone()),
        http,
    )
    .await
    .expect("bind");
    (who, format!("http://{addr}/mcp"))
}

/// Tokens by subject: `up-<subject>`; the first one given to `stale` is one the upstream
/// refuses; `mallory` is refused by the authorization server.
#[derive(Default)]
struct Tokens {
    asked: Mutex<BTreeMap<String, usize>>,
    refused: AtomicUsize,
    stale: Option<String>,
}

#[async_trait]
impl UpstreamCredentials for Tokens {
    async fn token(&self, r: &CredentialRequest<'_>) -> Result<UpstreamToken, CredentialError> {
        let who = r.principal.subject.clone();
        let n = {
            let mut asked = self.asked.lock().expect("asked");
            let n = asked.entry(who.clone()).or_default();
            *n += 1;
            *n
        };
        if who == "mallory" {
            return Err(CredentialError::Refused {
                upstream: r.upstream.into(),
                reason: "invalid_grant: mallory may not use this upstream".into(),
            });
        }
        if self.stale.as_deref() == Some(who.as_str()) && n == 1 {
            return Ok(UpstreamToken::new(format!("up-{who}-revoked"), None));
        }
        Ok(UpstreamToken::new(format!("up-{who}-0123456789"), None))
    }

    async fn refused(&self, _: &CredentialRequest<'_>, _: &UpstreamToken) {
        self.refused.fetch_add(1, Ordering::SeqCst);
    }
}

fn api_keys() -> ApiKeys {
    ApiKeys::new()
        .with(ApiKey::new("alice", ALICE, Principal::new("alice")))
        .with(ApiKey::new("bob", BOB, Principal::new("bob")))
        .with(ApiKey::new("mallory", MALLORY, Principal::new("mallory")))
}

/// The gateway on HTTP with API keys, in front of `url` acting as each user.
async fn gateway(url: &str, tokens: Arc<Tokens>) -> (Aggregator, String) {
    gateway_with(url, PerUser::new(tokens)).await
}

async fn gateway_with(url: &str, per_user: PerUser) -> (Aggregator, String) {
    let http = HttpConfig::new(url).headers(vec![(
        "Authorization".into(),
        "Bearer up-gw-0123456789".into(),
    )]);
    let upstream =
        UpstreamConfig::new("desk", UpstreamTransport::Http(http)).per_user(Some(per_user));
    let agg = Aggregator::start(vec![upstream], AggregatorOptions::default())
        .await
        .expect("start");
    let server = Server::new(agg.clone());
    let resource = ProtectedResource::new("http://127.0.0.1/mcp").expect("resource");
    let http = HttpOptions::default().authorization(Authorization::new(api_keys(), resource));
    let (addr, _task) = bind("127.0.0.1:0".parse().expect("address"), server, http)
        .await
        .expect("bind");
    (agg, format!("http://{addr}/mcp"))
}

async fn host_as(url: &str, key: &str, era: EraChoice) -> Client {
    let mut config = HttpConfig::new(url);
    config
        .headers
        .push(("Authorization".into(), format!("Bearer {key}")));
    connect_http(config, NoHandler, ClientOptions::default().era(era))
        .await
        .expect("host connects")
}

async fn whoami(host: &Client) -> CallToolResult {
    host.call_tool("desk__whoami", Default::default())
        .await
        .expect("answered")
        .result
}

#[tokio::test]
async fn each_principal_reaches_the_upstream_as_itself_and_no_other() {
    let (who, url) = upstream(&["alice", "bob"]).await;
    let tokens = Arc::new(Tokens::default());
    let (agg, gw) = gateway(&url, tokens.clone()).await;
    let hosts = [
        ("alice", host_as(&gw, ALICE, EraChoice::Modern).await),
        (
            "bob",
            host_as(
                &gw,
                BOB,
                EraChoice::Legacy(mcp_types::Revision::LATEST_LEGACY),
            )
            .await,
        ),
        (
            "alice",
            host_as(
                &gw,
                ALICE,
                EraChoice::Legacy(mcp_types::Revision::V2025_06_18),
            )
            .await,
        ),
        ("bob", host_as(&gw, BOB, EraChoice::Modern).await),
    ];
    assert_eq!(tool_names(&hosts[0].1).await, ["desk__whoami"]);
    let mut calls = tokio::task::JoinSet::new();
    for n in 0..200 {
        let (subject, host) = hosts[n % hosts.len()].clone();
        calls.spawn(async move { (subject, whoami(&host).await) });
    }
    while let Some(joined) = calls.join_next().await {
        let (subject, result) = joined.expect("call joined");
        assert_ne!(result.is_error, Some(true), "{}", text(&result));
        assert_eq!(text(&result), subject);
    }
    let served = who.calls.lock().expect("calls").clone();
    assert_eq!(served.len(), 200);
    assert_eq!(served.iter().filter(|s| *s == "alice").count(), 100);
    assert_eq!(served.iter().filter(|s| *s == "bob").count(), 100);
    // The catalog was listed as the gateway; each user's own connection as that user,
    // once per host session (or principal), not once per call.
    let lists = who.lists.lock().expect("lists").clone();
    assert!(lists.contains(&"gateway".to_owned()), "{lists:?}");
    assert!(lists.len() <= 1 + hosts.len() * 2, "{lists:?}");
    // One connection per principal, however many hosts it has.
    assert_eq!(agg.status()[0].principal_connections, 2);
    // Tokens are asked for when a connection has none good, not per call.
    let asked = tokens.asked.lock().expect("asked").clone();
    assert!(asked.values().all(|n| *n <= 2), "{asked:?}");
    agg.shutdown().await;
}

#[tokio::test]
async fn a_token_the_upstream_refuses_is_replaced_and_the_call_goes_through() {
    let (who, url) = upstream(&["alice"]).await;
    let tokens = Arc::new(Tokens {
        stale: Some("alice".into()),
        ..Default::default()
    });
    let (agg, gw) = gateway(&url, tokens.clone()).await;
    let alice = host_as(&gw, ALICE, EraChoice::Modern).await;
    let r = whoami(&alice).await;
    assert_eq!(text(&r), "alice", "{r:?}");
    assert_eq!(tokens.refused.load(Ordering::SeqCst), 1);
    assert_eq!(who.calls.lock().expect("calls").as_slice(), ["alice"]);
    agg.shutdown().await;
}

#[tokio::test]
async fn a_refusal_of_the_credentials_is_an_error_result_naming_the_upstream() {
    let (who, url) = upstream(&["alice"]).await;
    let tokens = Arc::new(Tokens::default());
    let (agg, gw) = gateway(&url, tokens).await;
    for era in [
        EraChoice::Modern,
        EraChoice::Legacy(mcp_types::Revision::LATEST_LEGACY),
    ] {
        let mallory = host_as(&gw, MALLORY, era).await;
        let r = whoami(&mallory).await;
        assert_eq!(r.is_error, Some(true));
        let said = text(&r);
        assert!(said.contains("upstream `desk`"), "{said}");
        assert!(said.contains("mallory may not use this upstream"), "{said}");
    }
    assert!(who.calls.lock().expect("calls").is_empty());
    assert_eq!(agg.status()[0].principal_connections, 0);
    agg.shutdown().await;
}

#[tokio::test]
async fn a_request_without_a_principal_is_refused() {
    let (who, url) = upstream(&["alice"]).await;
    let (agg, _) = gateway(&url, Arc::new(Tokens::default())).await;
    let (a, b) = mcp_types::transport::memory_pair(16);
    let server = Server::new(agg.clone());
    tokio::spawn(async move { server.serve(b).await });
    let local = Client::connect(a, NoHandler, ClientOptions::default())
        .await
        .expect("connects");
    let r = whoami(&local).await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).contains("acts as each signed-in user"),
        "{}",
        text(&r)
    );
    assert!(who.calls.lock().expect("calls").is_empty());
    agg.shutdown().await;
}

#[tokio::test]
async fn at_the_bound_the_principal_idle_longest_makes_room_and_an_idle_one_is_closed() {
    let (who, url) = upstream(&["alice", "bob"]).await;
    let per_user = PerUser::new(Arc::new(Tokens::default()))
        .max_principals(1)
        .idle_timeout(std::time::Duration::from_millis(300));
    let (agg, gw) = gateway_with(&url, per_user).await;
    let alice = host_as(&gw, ALICE, EraChoice::Modern).await;
    let bob = host_as(&gw, BOB, EraChoice::Modern).await;
    assert_eq!(text(&whoami(&alice).await), "alice");
    assert_eq!(agg.status()[0].principal_connections, 1);
    assert_eq!(text(&whoami(&bob).await), "bob");
    assert_eq!(
        agg.status()[0].principal_connections,
        1,
        "alice's made room"
    );
    assert_eq!(text(&whoami(&alice).await), "alice");
    assert_eq!(
        who.calls.lock().expect("calls").as_slice(),
        ["alice", "bob", "alice"]
    );
    // Idle past its timeout: closed, by the watcher, with nothing asked of it.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while agg.status()[0].principal_connections > 0 {
        assert!(tokio::time::Instant::now() < deadline, "never closed");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    agg.shutdown().await;
}

/// The tools `host` lists, once they include `want` (a listing follows a first call).
async fn tools_once(host: &Client, want: &str) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let names = tool_names(host).await;
        if names.iter().any(|n| n == want) || tokio::time::Instant::now() > deadline {
            return names;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn each_principal_sees_what_the_upstream_lists_for_it_and_only_that() {
    let (_who, url) = upstream(&["alice", "bob"]).await;
    let (agg, gw) = gateway(&url, Arc::new(Tokens::default())).await;
    let legacy = EraChoice::Legacy(mcp_types::Revision::LATEST_LEGACY);
    let alice = host_as(&gw, ALICE, legacy).await;
    let bob = host_as(&gw, BOB, EraChoice::Modern).await;
    // Before any request there, what the gateway's own identity listed.
    assert_eq!(tool_names(&alice).await, ["desk__whoami"]);
    assert_eq!(tool_names(&bob).await, ["desk__whoami"]);
    assert_eq!(text(&whoami(&alice).await), "alice");
    assert_eq!(text(&whoami(&bob).await), "bob");
    // Then what it lists for each: alice's through her host session, bob's (2026, no
    // session) through his principal.
    assert_eq!(
        tools_once(&alice, "desk__only_alice").await,
        ["desk__only_alice", "desk__whoami"]
    );
    assert_eq!(
        tools_once(&bob, "desk__only_bob").await,
        ["desk__only_bob", "desk__whoami"]
    );
    // A user's own tool is routed for that user, and is unknown to another.
    let own = alice
        .call_tool("desk__only_alice", Default::default())
        .await
        .expect("alice's own tool");
    assert_eq!(text(&own.result), "alice");
    let other = bob.call_tool("desk__only_alice", Default::default()).await;
    assert!(other.is_err(), "bob called alice's tool: {other:?}");
    agg.shutdown().await;
}
