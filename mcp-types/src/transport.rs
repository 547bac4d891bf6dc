//! The one transport trait every client, server and proxy speaks through, plus
//! the implementations that need nothing but tokio: an in-memory duplex pair and
//! newline-delimited JSON over any byte stream (stdio).
//!
//! A transport moves [`Frame`]s. It does not answer anything itself: a line that is
//! not JSON, or over the size limit, comes out of [`Transport::recv`] as
//! [`Incoming::Invalid`] carrying the error answer the session should send, and the
//! transport keeps working.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::jsonrpc::{EnvelopeError, Frame};
use crate::{codes, ErrorObject};

/// Why a transport stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    /// This side called [`Transport::close`].
    Closed,
    /// The peer closed its end (end of stream).
    PeerClosed,
    /// The peer process exited.
    ProcessExited {
        /// Exit code, if it exited normally.
        code: Option<i32>,
    },
    /// An I/O error ended the stream.
    Io(String),
}

impl std::fmt::Display for CloseReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CloseReason::Closed => f.write_str("closed by this side"),
            CloseReason::PeerClosed => f.write_str("closed by the peer"),
            CloseReason::ProcessExited { code: Some(c) } => {
                write!(f, "peer process exited with status {c}")
            }
            CloseReason::ProcessExited { code: None } => f.write_str("peer process was killed"),
            CloseReason::Io(e) => write!(f, "I/O error: {e}"),
        }
    }
}

/// A transport that cannot carry any more messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("transport closed: {0}")]
pub struct Closed(pub CloseReason);

/// What one read from a transport yields.
#[derive(Debug)]
pub enum Incoming {
    /// A well-formed message or batch.
    Frame(Frame),
    /// Bytes that are not a JSON-RPC frame. Answer with `error` (id `null`) and carry on.
    Invalid {
        /// The error to answer with (`-32700` for bad JSON, `-32600` otherwise).
        error: ErrorObject,
    },
}

/// Moves JSON-RPC frames between two peers.
#[async_trait]
pub trait Transport: Send + Sync + 'static {
    /// Sends one frame.
    async fn send(&self, frame: &Frame) -> Result<(), Closed>;

    /// Waits for the next frame. `Err` once the transport is closed, with the reason.
    /// Only one task should call this at a time.
    async fn recv(&self) -> Result<Incoming, Closed>;

    /// Closes this side. Pending and later `recv`s return `Err(Closed(CloseReason::Closed))`.
    async fn close(&self);

    /// Why the transport closed, once it has.
    fn close_reason(&self) -> Option<CloseReason>;

    /// Whether this transport mirrors tool arguments into HTTP headers (Streamable HTTP,
    /// 2026-07-28): a client on it drops tools whose `x-mcp-header` annotations break the
    /// spec's constraints (TOOL-09).
    fn mirrors_tool_headers(&self) -> bool {
        false
    }

    /// The tools the server listed, for a transport that mirrors their arguments.
    fn tools_listed(&self, _tools: &[crate::protocol::Tool]) {}
}

#[async_trait]
impl<T: Transport + ?Sized> Transport for Arc<T> {
    async fn send(&self, frame: &Frame) -> Result<(), Closed> {
        (**self).send(frame).await
    }
    async fn recv(&self) -> Result<Incoming, Closed> {
        (**self).recv().await
    }
    async fn close(&self) {
        (**self).close().await
    }
    fn close_reason(&self) -> Option<CloseReason> {
        (**self).close_reason()
    }
    fn mirrors_tool_headers(&self) -> bool {
        (**self).mirrors_tool_headers()
    }
    fn tools_listed(&self, tools: &[crate::protocol::Tool]) {
        (**self).tools_listed(tools)
    }
}

#[async_trait]
impl<T: Transport + ?Sized> Transport for Box<T> {
    async fn send(&self, frame: &Frame) -> Result<(), Closed> {
        (**self).send(frame).await
    }
    async fn recv(&self) -> Result<Incoming, Closed> {
        (**self).recv().await
    }
    async fn close(&self) {
        (**self).close().await
    }
    fn close_reason(&self) -> Option<CloseReason> {
        (**self).close_reason()
    }
    fn mirrors_tool_headers(&self) -> bool {
        (**self).mirrors_tool_headers()
    }
    fn tools_listed(&self, tools: &[crate::protocol::Tool]) {
        (**self).tools_listed(tools)
    }
}

/// The error answer for bytes that did not parse as a frame.
pub fn invalid_frame_error(e: &EnvelopeError) -> ErrorObject {
    let message = match e {
        EnvelopeError::Parse(_) => "Parse error",
        EnvelopeError::Invalid(_) => "Invalid Request",
    };
    ErrorObject::new(e.code(), message).with_data(Value::String(e.to_string()))
}

/// The error answer for a message over the size limit.
pub fn oversized_error(limit: usize) -> ErrorObject {
    ErrorObject::new(codes::INVALID_REQUEST, "Invalid Request").with_data(Value::String(format!(
        "message exceeds the {limit}-byte limit"
    )))
}

/// Why a stream closed: the first reason recorded, refinable by a wrapper that knows more.
#[derive(Default)]
struct CloseSlot(Mutex<Option<CloseReason>>);

impl CloseSlot {
    fn record(&self, reason: CloseReason) -> CloseReason {
        match self.0.lock() {
            Ok(mut g) => g.get_or_insert(reason).clone(),
            Err(_) => reason,
        }
    }

    fn refine(&self, reason: CloseReason) -> CloseReason {
        match self.0.lock() {
            Ok(g) if *g == Some(CloseReason::Closed) => CloseReason::Closed,
            Ok(mut g) => {
                *g = Some(reason.clone());
                reason
            }
            Err(_) => reason,
        }
    }

    fn get(&self) -> Option<CloseReason> {
        self.0.lock().ok().and_then(|g| g.clone())
    }
}

/// One end of an in-memory duplex pair; see [`memory_pair`].
pub struct MemoryTransport {
    tx: Mutex<Option<mpsc::Sender<Frame>>>,
    rx: tokio::sync::Mutex<mpsc::Receiver<Frame>>,
    closed: CloseSlot,
    shutdown: tokio::sync::Notify,
}

/// Two connected in-memory transports: what one sends, the other receives. Frames are
/// moved, never encoded. `capacity` frames may wait in each direction.
pub fn memory_pair(capacity: usize) -> (MemoryTransport, MemoryTransport) {
    let (atx, brx) = mpsc::channel(capacity.max(1));
    let (btx, arx) = mpsc::channel(capacity.max(1));
    let end = |tx, rx| MemoryTransport {
        tx: Mutex::new(Some(tx)),
        rx: tokio::sync::Mutex::new(rx),
        closed: CloseSlot::default(),
        shutdown: tokio::sync::Notify::new(),
    };
    (end(atx, arx), end(btx, brx))
}

#[async_trait]
impl Transport for MemoryTransport {
    async fn send(&self, frame: &Frame) -> Result<(), Closed> {
        let tx = self.tx.lock().ok().and_then(|g| g.clone());
        let Some(tx) = tx else {
            return Err(Closed(self.close_reason().unwrap_or(CloseReason::Closed)));
        };
        tx.send(frame.clone())
            .await
            .map_err(|_| Closed(CloseReason::PeerClosed))
    }

    async fn recv(&self) -> Result<Incoming, Closed> {
        if let Some(r) = self.closed.get() {
            return Err(Closed(r));
        }
        let mut rx = self.rx.lock().await;
        tokio::select! {
            frame = rx.recv() => match frame {
                Some(f) => Ok(Incoming::Frame(f)),
                None => Err(Closed(self.closed.record(CloseReason::PeerClosed))),
            },
            () = self.shutdown.notified() => Err(Closed(self.closed.record(CloseReason::Closed))),
        }
    }

    async fn close(&self) {
        self.closed.record(CloseReason::Closed);
        if let Ok(mut g) = self.tx.lock() {
            g.take();
        }
        self.shutdown.notify_waiters();
    }

    fn close_reason(&self) -> Option<CloseReason> {
        self.closed.get()
    }
}

/// Default limit on one message: 16 MiB.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// Newline-delimited JSON-RPC over a byte stream, as the stdio transport specifies:
/// one message per line, no embedded newlines.
pub struct LineTransport<R, W> {
    reader: tokio::sync::Mutex<(R, Vec<u8>)>,
    writer: tokio::sync::Mutex<Option<W>>,
    max_message_bytes: usize,
    closed: CloseSlot,
    shutdown: tokio::sync::Notify,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// Wraps a reader and a writer, with the default message size limit.
    pub fn new(reader: R, writer: W) -> Self {
        LineTransport {
            reader: tokio::sync::Mutex::new((reader, Vec::new())),
            writer: tokio::sync::Mutex::new(Some(writer)),
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            closed: CloseSlot::default(),
            shutdown: tokio::sync::Notify::new(),
        }
    }

    /// Sets the largest message accepted; a longer line is answered as invalid and skipped.
    pub fn with_max_message_bytes(mut self, limit: usize) -> Self {
        self.max_message_bytes = limit;
        self
    }

    /// Replaces the recorded reason the stream ended with a more precise one (a wrapper
    /// that knows the peer process exited, say). A close by this side is never replaced.
    pub fn set_close_reason(&self, reason: CloseReason) -> CloseReason {
        self.closed.refine(reason)
    }
}

/// What reading one line gave.
enum Line {
    Complete,
    TooLong,
    Eof,
}

/// Reads one line into `buf` (without the newline), skipping the rest of a line longer than `limit`.
async fn read_line<R: AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<Line> {
    buf.clear();
    let mut too_long = false;
    loop {
        let available = r.fill_buf().await?;
        if available.is_empty() {
            return Ok(if buf.is_empty() && !too_long {
                Line::Eof
            } else if too_long {
                Line::TooLong
            } else {
                Line::Complete
            });
        }
        let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        if !too_long {
            if buf.len() + chunk.len() > limit {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        let used = done.unwrap_or(available.len());
        r.consume(used);
        if done.is_some() {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Complete
            });
        }
    }
}

#[async_trait]
impl<R, W> Transport for LineTransport<R, W>
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    async fn send(&self, frame: &Frame) -> Result<(), Closed> {
        let mut bytes = serde_json::to_vec(frame).unwrap_or_default();
        if bytes.contains(&b'\n') {
            // A raw payload that came pretty-printed (over HTTP, say): re-encode compactly.
            let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            bytes = serde_json::to_vec(&v).unwrap_or_default();
        }
        bytes.push(b'\n');
        let mut guard = self.writer.lock().await;
        let Some(w) = guard.as_mut() else {
            return Err(Closed(self.close_reason().unwrap_or(CloseReason::Closed)));
        };
        let res = async {
            w.write_all(&bytes).await?;
            w.flush().await
        }
        .await;
        res.map_err(|e| {
            let reason = match e.kind() {
                std::io::ErrorKind::BrokenPipe => CloseReason::PeerClosed,
                _ => CloseReason::Io(e.to_string()),
            };
            Closed(self.closed.record(reason))
        })
    }

    async fn recv(&self) -> Result<Incoming, Closed> {
        let mut guard = self.reader.lock().await;
        let (reader, buf) = &mut *guard;
        loop {
            if let Some(r) = self.closed.get() {
                return Err(Closed(r.clone()));
            }
            let line = tokio::select! {
                line = read_line(reader, buf, self.max_message_bytes) => line,
                () = self.shutdown.notified() => return Err(Closed(self.closed.record(CloseReason::Closed))),
            };
            match line {
                Ok(Line::Eof) => return Err(Closed(self.closed.record(CloseReason::PeerClosed))),
                Err(e) => return Err(Closed(self.closed.record(CloseReason::Io(e.to_string())))),
                Ok(Line::TooLong) => {
                    return Ok(Incoming::Invalid {
                        error: oversized_error(self.max_message_bytes),
                    })
                }
                Ok(Line::Complete) => {
                    let text = buf.trim_ascii();
                    if text.is_empty() {
                        continue;
                    }
                    return Ok(match Frame::parse(text) {
                        Ok(frame) => Incoming::Frame(frame),
                        Err(e) => Incoming::Invalid {
                            error: invalid_frame_error(&e),
                        },
                    });
                }
            }
        }
    }

    async fn close(&self) {
        self.closed.record(CloseReason::Closed);
        self.shutdown.notify_waiters();
        if let Some(mut w) = self.writer.lock().await.take() {
            let _ = w.shutdown().await;
        }
    }

    fn close_reason(&self) -> Option<CloseReason> {
        self.closed.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Message;

    fn frame(s: &str) -> Frame {
        Frame::parse(s.as_bytes()).expect("frame")
    }

    #[tokio::test]
    async fn memory_pair_moves_frames_and_reports_closing() {
        let (a, b) = memory_pair(4);
        a.send(&frame(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#))
            .await
            .expect("send");
        let Incoming::Frame(Frame::Single(Message::Request(r))) = b.recv().await.expect("recv")
        else {
            panic!("request")
        };
        assert_eq!(r.method, "ping");
        a.close().await;
        assert_eq!(b.recv().await.unwrap_err(), Closed(CloseReason::PeerClosed));
        assert_eq!(a.close_reason(), Some(CloseReason::Closed));
        assert!(a
            .send(&frame(r#"{"jsonrpc":"2.0","method":"x"}"#))
            .await
            .is_err());
    }

    #[tokio::test]
    async fn lines_bad_json_and_oversized_messages_keep_the_stream_working() {
        let input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\nnot json\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{\"pad\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}}\n[]\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}";
        let t = LineTransport::new(&input[..], tokio::io::sink()).with_max_message_bytes(80);
        let mut kinds = Vec::new();
        loop {
            match t.recv().await {
                Ok(Incoming::Frame(f)) => kinds.push(format!(
                    "frame {}",
                    f.into_messages()[0]
                        .id()
                        .map(|i| i.to_string())
                        .unwrap_or_default()
                )),
                Ok(Incoming::Invalid { error }) => kinds.push(format!("invalid {}", error.code)),
                Err(Closed(r)) => {
                    kinds.push(format!("closed {r}"));
                    break;
                }
            }
        }
        assert_eq!(
            kinds,
            [
                "frame 1",
                "invalid -32700",
                "invalid -32600",
                "invalid -32600",
                "frame 3",
                "closed closed by the peer"
            ]
        );
    }

    #[tokio::test]
    async fn sends_one_compact_line_per_frame() {
        let (client, mut server) = tokio::io::duplex(1024);
        let t = LineTransport::new(tokio::io::BufReader::new(tokio::io::empty()), client);
        let pretty =
            "{\n \"jsonrpc\": \"2.0\",\n \"id\": 1,\n \"result\": {\n  \"a\": [1,\n 2]\n }\n}";
        t.send(&frame(pretty)).await.expect("send");
        t.close().await;
        let mut out = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut server, &mut out)
            .await
            .expect("read");
        assert_eq!(
            out,
            "{\"id\":1,\"jsonrpc\":\"2.0\",\"result\":{\"a\":[1,2]}}\n"
        );
    }
}
