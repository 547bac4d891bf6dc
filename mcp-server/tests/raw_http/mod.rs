//! HTTP/1.1 by hand, for the tests of the legacy Streamable HTTP endpoint that need what a
//! client library hides (the session header, the status, the client's address): one
//! request on a connection of its own, its answer read to the end.

use std::net::SocketAddr;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What came back.
pub struct Answer {
    pub status: u16,
    /// The `Mcp-Session-Id` header, if any.
    pub session: Option<String>,
    /// The body as JSON (`null` when there is none, or it is not JSON).
    pub body: Value,
}

/// Sends `method /mcp` on `s` (connected to `addr`) with `Connection: close`: the
/// session's headers when `session` is given, the header lines in `extra` (each ending in
/// `\r\n`), and `body` (none when it is `null`).
pub async fn exchange(
    mut s: TcpStream,
    addr: SocketAddr,
    method: &str,
    session: Option<&str>,
    extra: &str,
    body: &Value,
) -> Answer {
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    let mut head = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json\r\nConnection: close\r\nContent-Length: {}\r\n{extra}",
        body.len()
    );
    if let Some(id) = session {
        head.push_str(&format!(
            "Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-06-18\r\n"
        ));
    }
    s.write_all(format!("{head}\r\n{body}").as_bytes())
        .await
        .expect("write");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.expect("read");
    let raw = String::from_utf8_lossy(&raw);
    let (head, body) = raw.split_once("\r\n\r\n").expect("a response");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    let session = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case("mcp-session-id")
            .then(|| v.trim().to_owned())
    });
    Answer {
        status,
        session,
        body: serde_json::from_str(body).unwrap_or(Value::Null),
    }
}

/// A 2025-06-18 `initialize` with id `id`.
pub fn initialize(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
}
