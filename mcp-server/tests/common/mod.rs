//! What the server's line-level tests share: a server run over an in-memory stdio pair,
//! fed raw lines, with its answers read back.

use mcp_server::Server;
use mcp_types::transport::LineTransport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Sends each line to `server` (messages of at most `limit` bytes) and reads one answer
/// for every line that wants one: anything but a JSON object without an `id`. Ends the
/// input, and waits for the server to end.
pub async fn converse(server: Server, lines: &[String], limit: usize) -> Vec<Value> {
    let (client, end) = tokio::io::duplex(1 << 20);
    let (sr, sw) = tokio::io::split(end);
    let transport = LineTransport::new(BufReader::new(sr), sw).with_max_message_bytes(limit);
    let serving = tokio::spawn(async move { server.serve(transport).await });
    let (cr, mut cw) = tokio::io::split(client);
    let mut out = BufReader::new(cr).lines();
    let mut answers = Vec::new();
    for line in lines {
        cw.write_all(line.as_bytes()).await.expect("write");
        cw.write_all(b"\n").await.expect("write");
        let expects_answer = serde_json::from_str::<Value>(line)
            .map_or(true, |v| v.get("id").is_some() || v.is_array());
        if expects_answer {
            let got = tokio::time::timeout(std::time::Duration::from_secs(5), out.next_line())
                .await
                .expect("an answer, not silence")
                .expect("read")
                .expect("a line");
            answers.push(serde_json::from_str(&got).expect("answers are JSON"));
        }
    }
    cw.shutdown().await.expect("shutdown");
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), serving)
        .await
        .expect("server ends at end of input");
    answers
}
