//! The gateway in front of an upstream that requires OAuth: a `url` server with `auth`
//! (client credentials here) is authorized when the gateway starts, its tools are served,
//! the token is kept in the token store (mode 0600) and used again after a restart
//! without asking the authorization server; the host's own credentials never go upstream.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use mcp_client::{Client, ClientOptions, NoHandler};
use mcp_examples::oauth_server::{AuthServerOptions, TestAuthorizationServer};
use mcp_server::auth::{ApiKey, ApiKeys, Authorization, Principal, ProtectedResource};
use mcp_server::http::{bind, HttpOptions};
use mcp_server::Server;
use serde_json::json;

mod common;
use common::{free_port, http_gateway, http_transport};

/// An MCP server on 127.0.0.1 that takes only the tokens the test authorization server
/// issues first (`access-1`, `access-2`), naming that server in its metadata.
async fn protected_upstream(issuer: &str) -> String {
    let url = format!("http://127.0.0.1:{}/mcp", free_port());
    let gateway = Principal::new("gateway").with_scopes(["mcp"]);
    let keys = ApiKeys::new()
        .with(ApiKey::new("first", "access-1", gateway.clone()))
        .with(ApiKey::new("second", "access-2", gateway));
    let resource = ProtectedResource::new(url.clone())
        .expect("resource")
        .authorization_server(issuer);
    let options = HttpOptions::default().authorization(Authorization::new(keys, resource));
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .expect("address");
    bind(addr, Server::new(mcp_examples::echo_tools()), options)
        .await
        .expect("bind");
    url
}

async fn tools_through(gateway_url: &str) -> Vec<String> {
    let host = Client::connect(
        http_transport(gateway_url),
        NoHandler,
        ClientOptions::default(),
    )
    .await
    .expect("host connects to the gateway");
    let tools = host.list_tools().await.expect("tools");
    host.close().await;
    tools.into_iter().map(|t| t.name).collect()
}

#[tokio::test]
async fn an_oauth_upstream_is_authorized_at_start_and_its_token_reused_after_a_restart() {
    let server = TestAuthorizationServer::start(AuthServerOptions::default())
        .await
        .expect("authorization server");
    let upstream = protected_upstream(server.issuer()).await;
    let dir = std::env::temp_dir().join(format!("mcp-upstream-oauth-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let store = dir.join("tokens");
    let config = dir.join("gateway.json");
    let body = json!({"mcpServers": {"up": {"url": upstream, "auth": {
        "type": "clientCredentials", "issuer": server.issuer(), "clientId": "gateway-client",
        "clientSecret": "gateway-secret", "tokenStore": store}}},
        "gateway": {"startupWaitMillis": 60000}});
    std::fs::write(&config, body.to_string()).expect("config");

    let (gateway, url) = http_gateway(&config).await;
    let tools = tools_through(&url).await;
    assert!(tools.iter().any(|t| t == "up__echo"), "{tools:?}");
    let seen = server.seen();
    assert_eq!(seen.grants, ["client_credentials ok"]);
    assert_eq!(seen.resources, [upstream.as_str()], "RFC 8707 resource");
    let basic = seen.client_auth[0].as_deref().unwrap_or_default();
    assert!(basic.starts_with("Basic "), "client_secret_basic: {basic}");
    let kept: Vec<_> = std::fs::read_dir(&store)
        .expect("store")
        .flatten()
        .collect();
    assert_eq!(kept.len(), 1, "one file for the one upstream");
    let mode = kept[0].metadata().expect("meta").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    drop(gateway);

    // Restarted, the gateway uses the token it kept: no new grant.
    let (_gateway, url) = http_gateway(&config).await;
    let tools = tools_through(&url).await;
    assert!(tools.iter().any(|t| t == "up__echo"), "{tools:?}");
    // Nor one later: 100 ms for a grant the gateway might still ask for, ended early by one.
    let granted_again = mcp_examples::wait_until(Duration::from_millis(100), || {
        std::future::ready(server.seen().grants.len() > 1)
    })
    .await;
    assert!(!granted_again, "{:?}", server.seen().grants);
    assert_eq!(server.seen().grants, ["client_credentials ok"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The user's side of the `oauth` type: the gateway prints the authorization URL; the
/// user's browser opens it and is sent back to the gateway's loopback redirect URI.
#[tokio::test]
async fn the_user_authorizes_an_oauth_upstream_through_the_printed_url_at_start() {
    use tokio::io::AsyncBufReadExt;
    let server = TestAuthorizationServer::start(AuthServerOptions::default())
        .await
        .expect("authorization server");
    let upstream = protected_upstream(server.issuer()).await;
    let dir = std::env::temp_dir().join(format!("mcp-upstream-user-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("gateway.json");
    let redirect = format!("http://127.0.0.1:{}/callback", free_port());
    let body = json!({"mcpServers": {"up": {"url": upstream, "auth": {
        "type": "oauth", "clientId": "gateway-user-client", "redirectUri": redirect}}}});
    std::fs::write(&config, body.to_string()).expect("config");
    let mut child = common::spawn_http_gateway(&config, std::process::Stdio::piped());
    let mut err = tokio::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut out = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let _gateway = common::Stopped(child);
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = err.next_line().await {
            if let Some(url) = line
                .trim()
                .strip_prefix(&format!("{}/authorize?", server.issuer()))
            {
                return Some(format!("{}/authorize?{url}", server.issuer()));
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .expect("the gateway printed the authorization URL");
    assert!(url.contains("client_id=gateway-user-client"), "{url}");
    // The browser: the authorization server sends it on to the gateway's redirect URI.
    let back = mcp_client::fetch::redirect_of(&url, Duration::from_secs(10))
        .await
        .expect("authorize")
        .expect("redirected");
    assert!(back.starts_with(&redirect), "{back}");
    let page = mcp_client::fetch::redirect_of(&back, Duration::from_secs(10)).await;
    assert!(
        page.is_ok(),
        "the gateway took the browser's return: {page:?}"
    );
    let served = tokio::time::timeout(Duration::from_secs(30), out.next_line())
        .await
        .expect("the gateway started serving")
        .ok()
        .flatten()
        .expect("a URL");
    let tools = tools_through(&served).await;
    assert!(tools.iter().any(|t| t == "up__echo"), "{tools:?}");
    assert_eq!(server.seen().grants, ["authorization_code ok"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_config_with_both_auth_and_an_authorization_header_is_refused() {
    let config = json!({"mcpServers": {"up": {"url": "https://example.com/mcp",
        "headers": {"Authorization": "Bearer x"},
        "auth": {"type": "clientCredentials", "issuer": "https://a", "clientId": "c", "clientSecret": "s"}}}});
    let e = mcp_proxy::config::parse(&config.to_string(), "c.json").err();
    let e = e.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        e.contains("mcpServers.up.auth") && e.contains("not both"),
        "{e}"
    );
    for (auth, says) in [
        (
            json!({"type": "clientCredentials", "clientSecret": "s"}),
            "clientId",
        ),
        (
            json!({"type": "clientCredentials", "clientId": "c", "clientSecret": "s"}),
            "issuer",
        ),
        (
            json!({"type": "clientCredentials", "issuer": "https://a", "clientId": "c"}),
            "needs `clientSecret`",
        ),
        (json!({"type": "magic"}), "is not \"oauth\""),
        (
            json!({"type": "oauth", "clientSecert": "s"}),
            "clientSecert",
        ),
    ] {
        let config =
            json!({"mcpServers": {"up": {"url": "https://example.com/mcp", "auth": auth}}});
        let e = mcp_proxy::config::parse(&config.to_string(), "c.json").err();
        let e = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains(says), "{auth}: {e}");
    }
}
