//! A request longer than the transport takes fails before it is written, and an error
//! answer without an id fails the request it can be tied to.

use std::sync::Arc;
use std::time::Duration;

use mcp_types::rpc::{Inbound, Peer, RpcError};
use mcp_types::transport::LineTransport;
use mcp_types::{Message, Notification, Request};
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

struct Nothing;

#[async_trait::async_trait]
impl Inbound for Nothing {
    async fn request(&self, _peer: &Peer, r: Request) -> Message {
        mcp_types::rpc::error_response(r.id, mcp_types::ErrorObject::new(-32601, "no"))
    }
    async fn notification(&self, _peer: &Peer, _n: Notification) {}
}

/// A peer whose transport takes messages of at most `limit` bytes, and the other end of
/// its stream: the lines it writes, and a writer for what it reads.
fn peer(
    limit: usize,
) -> (
    Peer,
    Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    tokio::io::WriteHalf<DuplexStream>,
) {
    let (a, b) = tokio::io::duplex(1 << 16);
    let (ar, aw) = tokio::io::split(a);
    let t = LineTransport::new(BufReader::new(ar), aw).with_max_message_bytes(limit);
    let (peer, _) = Peer::start(Arc::new(t), Arc::new(Nothing));
    let (br, bw) = tokio::io::split(b);
    (peer, BufReader::new(br).lines(), bw)
}

fn params(len: usize) -> Option<Box<RawValue>> {
    let text = format!(r#"{{"text":"{}"}}"#, "x".repeat(len));
    Some(RawValue::from_string(text).expect("json"))
}

#[tokio::test]
async fn a_request_over_the_limit_fails_before_it_is_written() {
    let (peer, mut lines, _w) = peer(200);
    let out = peer.request("tools/call", params(300), None).await;
    assert!(
        matches!(out, Err(RpcError::TooLarge { limit: 200, .. })),
        "{out:?}"
    );
    let fits = tokio::spawn({
        let peer = peer.clone();
        async move { peer.request("tools/call", params(50), None).await }
    });
    let first = lines.next_line().await.expect("read").expect("a line");
    assert!(
        first.contains(r#""id":2"#) && first.len() < 200,
        "only the one that fits: {first}"
    );
    fits.abort();
}

async fn answer(w: &mut tokio::io::WriteHalf<DuplexStream>, line: &str) {
    w.write_all(line.as_bytes()).await.expect("write");
    w.write_all(b"\n").await.expect("write");
}

const UNREADABLE: &str =
    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"cannot read that"}}"#;
const OTHER: &str = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"something"}}"#;

#[tokio::test]
async fn an_error_without_an_id_fails_the_only_request_waiting() {
    let (peer, mut lines, mut w) = peer(1 << 16);
    let call = tokio::spawn(async move { peer.request("ping", None, None).await });
    lines.next_line().await.expect("read");
    answer(&mut w, OTHER).await;
    let out = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("at once")
        .expect("task");
    assert!(
        matches!(&out, Err(RpcError::Error(e)) if e.message == "something"),
        "{out:?}"
    );
}

// Paused time: in-memory pipes only, so a timeout fires only once every task is idle.
#[tokio::test(start_paused = true)]
async fn among_several_only_an_unreadable_message_is_tied_to_the_last_written() {
    let (peer, mut lines, mut w) = peer(1 << 16);
    let mut first = tokio::spawn({
        let peer = peer.clone();
        async move { peer.request("ping", None, None).await }
    });
    lines.next_line().await.expect("read");
    let mut second = tokio::spawn({
        let peer = peer.clone();
        async move { peer.request("ping", None, None).await }
    });
    lines.next_line().await.expect("read");
    answer(&mut w, OTHER).await;
    // Fires once the peer has done all it will with `OTHER`, and no request has ended.
    let tied = tokio::time::timeout(Duration::from_millis(100), async {
        tokio::select! {
            _ = &mut first => "the first",
            _ = &mut second => "the second",
        }
    })
    .await;
    assert!(
        tied.is_err(),
        "an error of unknown cause is tied to nobody, not {tied:?}"
    );
    answer(&mut w, UNREADABLE).await;
    let out = tokio::time::timeout(Duration::from_secs(5), second)
        .await
        .expect("at once")
        .expect("task");
    assert!(
        matches!(&out, Err(RpcError::Error(e)) if e.code == -32700),
        "{out:?}"
    );
    assert!(
        !first.is_finished(),
        "the earlier one still waits for its answer"
    );
    answer(&mut w, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#).await;
    let out = tokio::time::timeout(Duration::from_secs(5), first)
        .await
        .expect("answered")
        .expect("task");
    assert!(out.is_ok(), "{out:?}");
}
