//! An HTTP server's answers are bounded by `HttpConfig::max_message_bytes`: a JSON body or
//! an SSE event longer than it fails the request it answers, with an error naming the
//! limit, and the transport goes on serving the next request.

use std::io::{BufReader, Write};
use std::net::TcpListener;

use mcp_client::http::{HttpConfig, HttpTransport};
use mcp_types::transport::{Incoming, Transport};
use mcp_types::{Frame, Message, Request, RequestId};

mod common;
use common::read_request;

/// A server answering each POST with what `answer(n)` gives for its n-th request: a
/// content type and a body.
fn server(answer: fn(usize) -> (&'static str, Vec<u8>)) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        let mut n = 0;
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            // Only POSTs, which have bodies, are answered.
            while let Some((_, body)) = read_request(&mut reader) {
                if body.is_empty() {
                    break;
                }
                let (ct, reply) = answer(n);
                n += 1;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: {ct}\r\ncontent-length: {}\r\n\r\n",
                    reply.len()
                );
                let s = reader.get_mut();
                if s.write_all(head.as_bytes())
                    .and_then(|()| s.write_all(&reply))
                    .is_err()
                {
                    break;
                }
            }
        }
    });
    url
}

fn ping(id: i64) -> Frame {
    let request = Request::new(id, "ping", &serde_json::json!({})).expect("a request");
    Frame::Single(Message::Request(request))
}

async fn answer(t: &HttpTransport) -> Message {
    match tokio::time::timeout(std::time::Duration::from_secs(10), t.recv()).await {
        Ok(Ok(Incoming::Frame(Frame::Single(m)))) => m,
        other => panic!("no answer: {other:?}"),
    }
}

fn long_text() -> String {
    "x".repeat(4096)
}

fn small(id: usize) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{}}}}"#, id + 1).into_bytes()
}

/// `long` (a content type and a body answering request 1) refused past 1024 bytes, and
/// the next request answered.
async fn refused_then_served(url: String, what: &str) {
    let t = HttpTransport::new(HttpConfig::new(url).max_message_bytes(1024)).expect("transport");
    t.send(ping(1)).await.expect("send");
    match answer(&t).await {
        Message::Error(e) => {
            assert_eq!(e.id, Some(RequestId::from(1)));
            assert!(
                e.error.message.contains("longer than 1024 bytes"),
                "{what}: {}",
                e.error.message
            );
        }
        m => panic!("an error for the long {what}, not {m:?}"),
    }
    t.send(ping(2)).await.expect("send");
    assert!(matches!(answer(&t).await, Message::Response(r) if r.id == RequestId::from(2)));
}

#[tokio::test]
async fn a_json_answer_longer_than_the_limit_fails_its_request_only() {
    let url = server(|n| match n {
        0 => (
            "application/json",
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"t":"{}"}}}}"#,
                long_text()
            )
            .into_bytes(),
        ),
        n => ("application/json", small(n)),
    });
    refused_then_served(url, "JSON body").await;
}

#[tokio::test]
async fn an_sse_event_longer_than_the_limit_fails_its_request_only() {
    let url = server(|n| match n {
        0 => (
            "text/event-stream",
            format!(
                "data: {{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"t\":\"{}\"}}}}\n\n",
                long_text()
            )
            .into_bytes(),
        ),
        n => ("application/json", small(n)),
    });
    refused_then_served(url, "SSE event").await;
}
