//! The gateway mounted in an axum application (`mcp_examples::embedded_app`): the
//! application's own route answers, a host calls a tool through `/gateway/mcp` behind the
//! tower layer, and the probes answer under the same prefix.

use std::time::Duration;

use mcp_client::{Client, ClientOptions, NoHandler};
use serde_json::json;

mod common;
use common::http_transport;

#[tokio::test]
async fn a_host_calls_a_tool_through_the_gateway_nested_in_an_axum_app() {
    let (app, aggregator) = mcp_examples::embedded_app().await.expect("app");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await });

    let client = Client::connect(
        http_transport(&format!("{base}/gateway/mcp")),
        NoHandler,
        ClientOptions::default(),
    )
    .await
    .expect("the host connects under the prefix");
    let args = json!({"text": "through axum"});
    let r = client
        .call_tool("echo__echo", args.as_object().cloned().unwrap_or_default())
        .await
        .expect("call");
    let text = serde_json::to_value(&r.result).expect("json");
    assert_eq!(text["content"][0]["text"], "through axum", "{text}");
    client.close().await;

    let ready = mcp_client::fetch::get_json(
        &format!("{base}/gateway/readyz"),
        65536,
        Duration::from_secs(5),
    )
    .await
    .expect("readyz");
    assert_eq!(ready["ready"], true);
    let own = mcp_client::fetch::redirect_of(&format!("{base}/"), Duration::from_secs(5)).await;
    assert!(
        matches!(own, Ok(None)),
        "the application's own route: {own:?}"
    );
    let missing =
        mcp_client::fetch::get_json(&format!("{base}/mcp"), 1024, Duration::from_secs(5)).await;
    assert!(missing.is_err(), "the gateway is only under its prefix");
    aggregator.shutdown().await;
}
