//! The 2024-11-05 HTTP+SSE transport sends what its configuration says on every request,
//! the stream's GET and each message's POST: the configured headers, and an
//! `AuthProvider`'s token, renewed when the server refuses one. A server here answers
//! `401` to any request without `Authorization: Bearer good`.

use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use mcp_client::auth::{AuthError, AuthProvider, Refused};
use mcp_client::http::HttpConfig;
use mcp_client::http_sse::SseTransport;
use mcp_types::transport::{Incoming, Transport};
use mcp_types::{Frame, Message, Request, RequestId};

mod common;
use common::read_request;

/// An HTTP+SSE server requiring `Bearer good`; answers a request's id with `{}` on the
/// stream. Its URL.
fn server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let stream: Arc<Mutex<Option<TcpStream>>> = Arc::default();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let stream = stream.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn);
                while let Some((head, body)) = read_request(&mut reader) {
                    let authorized = head
                        .iter()
                        .any(|h| h.eq_ignore_ascii_case("authorization: Bearer good"));
                    let out = reader.get_mut();
                    if !authorized {
                        let _ = out.write_all(b"HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer\r\ncontent-length: 0\r\n\r\n");
                        continue;
                    }
                    if head[0].starts_with("GET") {
                        // Kept before the endpoint is told: the client may POST at once.
                        *stream.lock().expect("lock") = out.try_clone().ok();
                        let _ = out.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\nevent: endpoint\ndata: /message\n\n");
                        return;
                    }
                    let _ = out.write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n");
                    let msg: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
                    let answer =
                        serde_json::json!({"jsonrpc": "2.0", "id": msg["id"], "result": {}});
                    if let Some(s) = stream.lock().expect("lock").as_mut() {
                        let _ = write!(s, "data: {answer}\n\n");
                    }
                }
            });
        }
    });
    format!("{base}/sse")
}

/// Gives `stale` until told it was refused, then `good`.
#[derive(Default)]
struct Renewing {
    refusals: AtomicUsize,
}

#[async_trait::async_trait]
impl AuthProvider for Renewing {
    fn access_token(&self) -> Option<String> {
        Some(match self.refusals.load(Ordering::SeqCst) {
            0 => "stale".into(),
            _ => "good".into(),
        })
    }

    async fn unauthorized(&self, _refused: Refused) -> Result<(), AuthError> {
        self.refusals.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

async fn ping_answered(t: &SseTransport) {
    let request = Request::new(7, "ping", &serde_json::json!({})).expect("request");
    t.send(Frame::Single(Message::Request(request)))
        .await
        .expect("send");
    let got = tokio::time::timeout(std::time::Duration::from_secs(10), t.recv()).await;
    match got {
        Ok(Ok(Incoming::Frame(Frame::Single(Message::Response(r))))) => {
            assert_eq!(r.id, RequestId::from(7));
        }
        other => panic!("no answer: {other:?}"),
    }
}

#[tokio::test]
async fn the_auth_providers_token_goes_on_the_stream_and_every_post() {
    let provider = Arc::new(Renewing::default());
    let config = HttpConfig::new(server()).auth(provider.clone());
    let t = SseTransport::connect(config).await.expect("connects");
    assert_eq!(provider.refusals.load(Ordering::SeqCst), 1, "renewed once");
    ping_answered(&t).await;
    t.close().await;
}

#[tokio::test]
async fn configured_headers_go_on_every_post_too() {
    let config =
        HttpConfig::new(server()).headers(vec![("Authorization".into(), "Bearer good".into())]);
    let t = SseTransport::connect(config).await.expect("connects");
    ping_answered(&t).await;
    t.close().await;
}
