//! Authorization discovery against servers on 127.0.0.1: the challenge's metadata URL is
//! used when given, else the well-known URIs in the spec's order; authorization server
//! metadata is looked for in the spec's order, a document for another issuer is not used
//! (the next place is tried), and resource metadata for another resource is refused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mcp_client::auth::{discover, BearerChallenge, DiscoveryError};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A server answering fixed JSON documents by path (404 otherwise), noting each path asked.
struct Documents {
    base: String,
    asked: Arc<Mutex<Vec<String>>>,
}

async fn documents(make: impl FnOnce(&str) -> HashMap<String, Value>) -> Documents {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let docs = make(&base);
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let mut buf = vec![0u8; 4096];
            let n = s.read(&mut buf).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).into_owned();
            let path = head.split(' ').nth(1).unwrap_or("").to_owned();
            if let Ok(mut a) = log.lock() {
                a.push(path.clone());
            }
            let (status, body) = match docs.get(&path) {
                Some(d) => ("200 OK", d.to_string()),
                None => ("404 Not Found", "{}".to_owned()),
            };
            let reply = format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = s.write_all(reply.as_bytes()).await;
        }
    });
    Documents { base, asked }
}

fn asked(d: &Documents) -> Vec<String> {
    d.asked.lock().map(|a| a.clone()).unwrap_or_default()
}

#[tokio::test]
async fn well_known_uris_are_tried_in_order_and_issuers_checked() {
    let d = documents(|base| {
        HashMap::from([
            (
                "/.well-known/oauth-protected-resource/mcp".to_owned(),
                json!({"resource": format!("{base}/mcp"), "authorization_servers": [format!("{base}/tenant1")],
                       "scopes_supported": ["files:read"]}),
            ),
            // RFC 8414's place holds another issuer's document: it must not be used.
            (
                "/.well-known/oauth-authorization-server/tenant1".to_owned(),
                json!({"issuer": "https://honest.example", "token_endpoint": "https://honest.example/token"}),
            ),
            (
                "/.well-known/openid-configuration/tenant1".to_owned(),
                json!({"issuer": format!("{base}/tenant1"), "authorization_endpoint": format!("{base}/authorize"),
                       "token_endpoint": format!("{base}/token"), "code_challenge_methods_supported": ["S256"]}),
            ),
        ])
    })
    .await;
    let found = discover(&format!("{}/mcp", d.base), None)
        .await
        .expect("discovered");
    assert_eq!(
        found.resource.scopes_supported,
        Some(vec!["files:read".to_owned()])
    );
    assert_eq!(
        found.authorization_server.issuer,
        format!("{}/tenant1", d.base)
    );
    assert_eq!(
        found.authorization_server.token_endpoint,
        Some(format!("{}/token", d.base))
    );
    assert_eq!(
        asked(&d),
        [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-authorization-server/tenant1",
            "/.well-known/openid-configuration/tenant1",
        ]
    );
}

#[tokio::test]
async fn the_challenges_url_is_used_and_another_resources_metadata_refused() {
    let d = documents(|base| {
        HashMap::from([
            (
                "/meta/here".to_owned(),
                json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]}),
            ),
            (
                "/.well-known/oauth-authorization-server".to_owned(),
                json!({"issuer": base, "token_endpoint": format!("{base}/token")}),
            ),
            (
                "/.well-known/oauth-protected-resource/other".to_owned(),
                json!({"resource": "https://elsewhere.example/mcp", "authorization_servers": [base]}),
            ),
        ])
    })
    .await;
    let header = format!(
        r#"Bearer resource_metadata="{}/meta/here", scope="a b""#,
        d.base
    );
    let challenge = BearerChallenge::parse(&header).expect("challenge");
    let found = discover(&format!("{}/mcp", d.base), Some(&challenge))
        .await
        .expect("discovered");
    assert_eq!(found.authorization_server.issuer, d.base);
    assert_eq!(
        asked(&d)[0],
        "/meta/here",
        "the challenge's URL, not a well-known one"
    );
    match discover(&format!("{}/other", d.base), None).await {
        Err(DiscoveryError::WrongResource { named, .. }) => {
            assert_eq!(named, "https://elsewhere.example/mcp")
        }
        other => panic!("another resource's metadata was used: {other:?}"),
    }
    match discover(&format!("{}/nothing", d.base), None).await {
        Err(DiscoveryError::NoResourceMetadata { tried, .. }) => assert_eq!(tried.len(), 2),
        other => panic!("{other:?}"),
    }
}
