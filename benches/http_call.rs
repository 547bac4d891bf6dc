//! A 2026-07-28 `tools/call` through the Streamable HTTP endpoint, in-process: the
//! request goes through header validation, the stateless session, the tool and the
//! response encoding, without sockets.

// criterion_group! and criterion_main! generate undocumented items.
#![allow(missing_docs)]

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion};
use http::Request;
use http_body_util::{BodyExt, Full};
use mcp_server::http::{HttpOptions, StreamableHttp};
use mcp_server::Server;
use serde_json::json;

fn bench(c: &mut Criterion) {
    let rt = mcp_benches::runtime();
    let http = StreamableHttp::new(
        Server::new(mcp_examples::echo_tools()),
        HttpOptions::default(),
    );
    let body = Bytes::from(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hello"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}})
        .to_string(),
    );
    c.bench_function("http_tools_call_2026_in_process", |b| {
        b.iter(|| {
            rt.block_on(async {
                let req = Request::builder()
                    .method("POST")
                    .uri("/mcp")
                    .header("host", "127.0.0.1")
                    .header("accept", "application/json, text/event-stream")
                    .header("content-type", "application/json")
                    .header("mcp-protocol-version", "2026-07-28")
                    .header("mcp-method", "tools/call")
                    .header("mcp-name", "echo")
                    .body(Full::new(body.clone()))
                    .expect("request");
                let resp = http.handle(req).await;
                assert!(resp.status().is_success());
                resp.into_body().collect().await.expect("body").to_bytes()
            })
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
