//! A request answered with an SSE stream that never ends: when the request times out (and
//! is cancelled), the transport drops the stream, so the server sees the connection close
//! instead of holding one per timed-out call.

use std::io::{BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use mcp_client::http::HttpConfig;
use mcp_client::{ClientError, ClientOptions, EraChoice, NoHandler};
use serde_json::{json, Value};

mod common;
use common::read_request;

/// A 2026-07-28 server whose `tools/call` answers open an SSE stream and send nothing
/// more; `closed` hears each time a client closes such a stream's connection.
fn server(closed: mpsc::Sender<()>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let closed = closed.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream);
                while let Some((_, body)) = read_request(&mut reader) {
                    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let s = reader.get_mut();
                    match message["method"].as_str() {
                        Some("server/discover") => {
                            let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                                "resultType": "complete",
                                "supportedVersions": ["2026-07-28"],
                                "capabilities": {"tools": {}},
                                "serverInfo": {"name": "stuck", "version": "1"}}})
                            .to_string();
                            let head = format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n", answer.len());
                            let _ = s
                                .write_all(head.as_bytes())
                                .and_then(|()| s.write_all(answer.as_bytes()));
                        }
                        Some("tools/call") => {
                            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                            let priming = "id: 1\ndata: \n\n";
                            let chunk = format!("{:x}\r\n{priming}\r\n", priming.len());
                            let _ = s
                                .write_all(head.as_bytes())
                                .and_then(|()| s.write_all(chunk.as_bytes()));
                            let _ = s.flush();
                            // Nothing more is sent: wait for the client to close.
                            let mut rest = [0u8; 1024];
                            while matches!(s.read(&mut rest), Ok(n) if n > 0) {}
                            let _ = closed.send(());
                            return;
                        }
                        _ => {
                            let _ =
                                s.write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n");
                        }
                    }
                }
            });
        }
    });
    url
}

#[tokio::test]
async fn a_timed_out_call_drops_its_sse_stream() {
    let (closed, stream_closed) = mpsc::channel();
    let url = server(closed);
    let options = ClientOptions::default()
        .era(EraChoice::Modern)
        .request_timeout(Some(Duration::from_millis(300)));
    let client = mcp_client::connect_http(HttpConfig::new(url), NoHandler, options)
        .await
        .expect("connects");
    let call = client.call_tool("wait", Default::default()).await;
    assert!(
        matches!(call, Err(ClientError::Timeout(_))),
        "the call times out: {call:?}"
    );
    let seen =
        tokio::task::spawn_blocking(move || stream_closed.recv_timeout(Duration::from_secs(10)))
            .await
            .expect("joined");
    assert!(
        seen.is_ok(),
        "the server saw the timed-out call's stream closed"
    );
}
