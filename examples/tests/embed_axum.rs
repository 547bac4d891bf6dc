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

/// One raw HTTP/1.1 exchange with `addr`: the whole answer as text.
async fn exchange(addr: std::net::SocketAddr, request: String) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.write_all(request.as_bytes()).await.expect("write");
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_string(&mut out))
        .await
        .expect("answered in time")
        .expect("read");
    out
}

/// A legacy `initialize` POSTed to `path` with `Host: host` and, if given, `token`.
fn initialize(path: &str, host: &str, token: Option<&str>) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\n{auth}Content-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn the_edge_checks_work_as_layers_in_an_axum_app_that_routes_its_own_probes() {
    use mcp_server::auth::{ApiKey, ApiKeys, Principal};
    const KEY: &str = "key-0123456789abcdef";
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    let base = format!("http://{addr}");
    const BOB: &str = "key-bob-0123456789ab";
    let keys = ApiKeys::new()
        .with(ApiKey::new("k", KEY, Principal::new("alice")))
        .with(ApiKey::new("b", BOB, Principal::new("bob")));
    let (app, aggregator) = mcp_examples::guarded_app(keys, &format!("{base}/gateway/mcp"))
        .await
        .expect("app");
    tokio::spawn(async move { axum::serve(listener, app).await });
    let host = addr.to_string();

    // No token: refused by the authorization layer, with the challenge naming the metadata.
    let refused = exchange(addr, initialize("/gateway/mcp", &host, None)).await;
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    let challenge = refused
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("www-authenticate:"))
        .unwrap_or_default();
    assert!(
        challenge.contains("/.well-known/oauth-protected-resource/gateway/mcp"),
        "{refused}"
    );
    let metadata = exchange(
        addr,
        format!("GET /.well-known/oauth-protected-resource/gateway/mcp HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert!(
        metadata.starts_with("HTTP/1.1 200") && metadata.contains("/gateway/mcp"),
        "{metadata}"
    );
    // A foreign Host is refused by the guard, token or not.
    let rebound = exchange(addr, initialize("/gateway/mcp", "evil.example", Some(KEY))).await;
    assert!(rebound.starts_with("HTTP/1.1 403"), "{rebound}");
    // The metrics sit behind the same layers.
    let scrape = |token: Option<&str>| {
        let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
        format!("GET /metrics HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n")
    };
    assert!(exchange(addr, scrape(None))
        .await
        .starts_with("HTTP/1.1 401"));
    let metrics = exchange(addr, scrape(Some(KEY))).await;
    assert!(
        metrics.starts_with("HTTP/1.1 200") && metrics.contains("mcp_gateway_upstream_up"),
        "{metrics}"
    );
    // The probes answer anyone, readiness without details.
    let ready = exchange(
        addr,
        format!("GET /readyz HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert!(
        ready.starts_with("HTTP/1.1 200") && ready.ends_with("ready\n"),
        "{ready}"
    );

    // The endpoint serves the principal the layer let through: alice's legacy session is
    // hers, and bob, whose key is as good, cannot use it.
    let opened = exchange(addr, initialize("/gateway/mcp", &host, Some(KEY))).await;
    let session = opened
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .expect("a session");
    let ping = |token: &str| {
        let body = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
        format!(
            "POST /gateway/mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\
             Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-06-18\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let theirs = exchange(addr, ping(BOB)).await;
    assert!(theirs.starts_with("HTTP/1.1 404"), "{theirs}");
    let hers = exchange(addr, ping(KEY)).await;
    assert!(hers.starts_with("HTTP/1.1 200"), "{hers}");

    // With the key, a host calls a tool through the layers.
    let mut config = mcp_client::http::HttpConfig::new(format!("{base}/gateway/mcp"));
    config
        .headers
        .push(("Authorization".into(), format!("Bearer {KEY}")));
    let transport = mcp_client::http::HttpTransport::new(config).expect("transport");
    let client = Client::connect(transport, NoHandler, ClientOptions::default())
        .await
        .expect("the host connects with its key");
    let args = json!({"text": "through the layers"});
    let r = client
        .call_tool("echo__echo", args.as_object().cloned().unwrap_or_default())
        .await
        .expect("call");
    let text = serde_json::to_value(&r.result).expect("json");
    assert_eq!(text["content"][0]["text"], "through the layers", "{text}");
    client.close().await;
    aggregator.shutdown().await;
}
