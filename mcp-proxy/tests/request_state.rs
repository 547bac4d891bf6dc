//! The gateway's own `requestState` (a legacy upstream's question parked for a 2026 host)
//! over real HTTP with API keys: it resumes the call only for the principal it was handed
//! to, only for the request it was handed for, and only once; anything else is refused
//! with `-32602`, and leaves the call parked for its own retry.

use mcp_client::http::HttpConfig;
use mcp_client::{
    connect_http, CallOptions, Client, ClientError, ClientOptions, EraChoice, NoHandler,
};
use mcp_proxy::{Aggregator, UpstreamConfig, UpstreamTransport};
use mcp_server::auth::{ApiKey, ApiKeys, Authorization, Principal, ProtectedResource};
use mcp_server::http::{bind, HttpOptions};
use mcp_server::Server;
use mcp_types::protocol::ClientCapabilities;
use mcp_types::Revision;
use serde_json::{json, Value};

mod common;
use common::greeted;

const ALICE: &str = "alice-key-0123456789";
const BOB: &str = "bob-key-0123456789";

/// The echo server's tools in 2025-06-18: `greet` asks its client for a name.
fn legacy_echo() -> UpstreamConfig {
    UpstreamConfig::new(
        "echo",
        UpstreamTransport::InProcess(Server::new(mcp_examples::echo_tools())),
    )
    .revision(Revision::V2025_06_18)
}

async fn gateway() -> (Aggregator, String) {
    let agg = Aggregator::start(vec![legacy_echo()], Default::default())
        .await
        .expect("start");
    let server = Server::new(agg.clone());
    let keys = ApiKeys::new()
        .with(ApiKey::new("alice", ALICE, Principal::new("alice")))
        .with(ApiKey::new("bob", BOB, Principal::new("bob")));
    let resource = ProtectedResource::new("http://127.0.0.1/mcp").expect("resource");
    let http = HttpOptions::default().authorization(Authorization::new(keys, resource));
    let (addr, _task) = bind("127.0.0.1:0".parse().expect("address"), server, http)
        .await
        .expect("bind");
    (agg, format!("http://{addr}/mcp"))
}

async fn host(url: &str, key: &str) -> Client {
    let mut config = HttpConfig::new(url);
    config
        .headers
        .push(("Authorization".into(), format!("Bearer {key}")));
    let options = ClientOptions::default()
        .era(EraChoice::Modern)
        .capabilities(ClientCapabilities {
            elicitation: Some(serde_json::Map::new()),
            ..Default::default()
        });
    connect_http(config, NoHandler, options)
        .await
        .expect("connects")
}

fn refused(r: Result<Value, ClientError>, what: &str) {
    match r {
        Err(ClientError::Server(e)) => assert_eq!(e.code, -32602, "{what}: {}", e.message),
        other => panic!("{what}: expected -32602, got {other:?}"),
    }
}

#[tokio::test]
async fn a_request_state_resumes_only_its_principals_own_request_once() {
    let (agg, url) = gateway().await;
    let alice = host(&url, ALICE).await;
    let bob = host(&url, BOB).await;
    let raw = CallOptions::default().return_input_required(true);
    let (state, key) = greeted(&alice).await;
    let retry = |tool: &str| {
        json!({"name": tool, "arguments": {}, "requestState": state,
               "inputResponses": {key.clone(): {"action": "accept", "content": {"name": "Grace"}}}})
    };

    refused(
        bob.request("tools/call", retry("echo__greet"), &raw).await,
        "another principal",
    );
    refused(
        alice.request("tools/call", retry("echo__echo"), &raw).await,
        "another tool",
    );
    let done = alice
        .request("tools/call", retry("echo__greet"), &raw)
        .await
        .expect("its own retry resumes the call");
    assert_eq!(done["content"][0]["text"], "Hello, Grace!", "{done}");
    refused(
        alice
            .request("tools/call", retry("echo__greet"), &raw)
            .await,
        "spent",
    );
    alice.close().await;
    bob.close().await;
    agg.shutdown().await;
}
