//! Newline-delimited JSON over a byte stream (the stdio transport).
//!
//! Reads parse each line where it lies in the read buffer when they can (no copy).
//! Writes never wait: a frame goes to the stream at once when nothing is ahead of it,
//! and a burst is gathered into one write ([`output`](super::output)).

use std::sync::Arc;

use async_trait::async_trait;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite};

use super::encode::{encode_line, split_line, SplitLine, LARGE_LINE_BYTES};
use super::hint::{Fault, LineHint};
use super::output::{note_more_ahead, Output};
use super::stop::Stop;
use super::{
    invalid_frame_error, oversized_error, CloseReason, CloseSlot, Closed, Incoming, Transport,
    TrySendError,
};
use crate::jsonrpc::Frame;

/// Default limit on one message: 16 MiB.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// Newline-delimited JSON-RPC over a byte stream, as the stdio transport specifies:
/// one message per line, no embedded newlines.
pub struct LineTransport<R, W> {
    reader: futures_util::lock::Mutex<(R, Vec<u8>)>,
    out: Arc<Output<W>>,
    max_message_bytes: usize,
    closed: Arc<CloseSlot>,
    shutdown: Stop,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// Wraps a reader and a writer, with the default message size limit.
    pub fn new(reader: R, writer: W) -> Self {
        let closed = Arc::new(CloseSlot::default());
        LineTransport {
            reader: futures_util::lock::Mutex::new((reader, Vec::new())),
            out: Output::new(writer, closed.clone()),
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            closed,
            shutdown: Stop::default(),
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

    /// [`Transport::recv`] as a plain method: a wrapper awaits it without boxing a second
    /// future for every message.
    pub async fn recv_frame(&self) -> Result<Incoming, Closed> {
        // One reader at a time; the read loop that is the only one takes it without waiting.
        let mut guard = match self.reader.try_lock() {
            Some(g) => g,
            None => self.reader.lock().await,
        };
        let (reader, buf) = &mut *guard;
        let limit = self.max_message_bytes;
        loop {
            if let Some(r) = self.closed.get() {
                return Err(Closed(r));
            }
            let Some(read) = self.shutdown.until(next_line(reader, buf, limit)).await else {
                return Err(Closed(self.closed.record(CloseReason::Closed)));
            };
            match read {
                Read::Got(incoming) => return Ok(incoming),
                Read::Blank => continue,
                Read::Eof => return Err(Closed(self.closed.record(CloseReason::PeerClosed))),
                Read::Failed(e) => {
                    return Err(Closed(self.closed.record(CloseReason::Io(e.to_string()))))
                }
            }
        }
    }

    fn closed_error(&self) -> Closed {
        Closed(self.closed.get().unwrap_or(CloseReason::Closed))
    }
}

impl<R, W> Drop for LineTransport<R, W> {
    fn drop(&mut self) {
        self.out.abandon();
    }
}

/// A read buffer grown past this is given back once its line is parsed.
const KEEP_READ_BYTES: usize = 4 * 1024 * 1024;

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
        let (chunk, done) = match memchr::memchr(b'\n', available) {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        if !too_long {
            if buf.len() + chunk.len() > limit {
                too_long = true;
                // Only the line's beginning is kept, for a look at what it was.
                let room = LineHint::LOOK.saturating_sub(buf.len()).min(chunk.len());
                buf.truncate(LineHint::LOOK);
                buf.extend_from_slice(&chunk[..room]);
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        let used = done.unwrap_or(available.len());
        note_more_ahead(available.len() > used);
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

/// What one line holds.
fn incoming(line: &[u8]) -> Option<Incoming> {
    let text = line.trim_ascii();
    if text.is_empty() {
        return None;
    }
    Some(match Frame::parse(text) {
        Ok(frame) => Incoming::Frame(frame),
        Err(e) => Incoming::Invalid {
            error: invalid_frame_error(&e),
            hint: Box::new(LineHint::read(text, Fault::of(&e, text))),
        },
    })
}

/// A complete line already in the read buffer, parsed where it lies; `None` when the
/// buffer holds no newline (then the line is gathered with [`read_line`]).
async fn buffered_line<R: AsyncBufRead + Unpin>(
    r: &mut R,
    limit: usize,
) -> std::io::Result<Option<Option<Incoming>>> {
    let available = r.fill_buf().await?;
    let Some(i) = memchr::memchr(b'\n', available) else {
        return Ok(None);
    };
    let got = if i > limit {
        Some(Incoming::Invalid {
            error: oversized_error(limit),
            hint: Box::new(LineHint::read(&available[..i], Fault::TooLong)),
        })
    } else {
        incoming(&available[..i])
    };
    note_more_ahead(available.len() > i + 1);
    r.consume(i + 1);
    Ok(Some(got))
}

/// What the next line gave.
enum Read {
    Got(Incoming),
    /// An empty line: skipped.
    Blank,
    Eof,
    Failed(std::io::Error),
}

async fn next_line<R: AsyncBufRead + Unpin>(r: &mut R, buf: &mut Vec<u8>, limit: usize) -> Read {
    match buffered_line(r, limit).await {
        Ok(Some(Some(got))) => return Read::Got(got),
        Ok(Some(None)) => return Read::Blank,
        Ok(None) => {}
        Err(e) => return Read::Failed(e),
    }
    let read = match read_line(r, buf, limit).await {
        Ok(Line::Eof) => Read::Eof,
        Ok(Line::TooLong) => Read::Got(Incoming::Invalid {
            error: oversized_error(limit),
            hint: Box::new(LineHint::read(buf, Fault::TooLong)),
        }),
        // A large line becomes its message: its payload keeps the buffer, which is not
        // copied (the reader starts a new one).
        Ok(Line::Complete) if buf.len() >= LARGE_LINE_BYTES => {
            match Frame::from_line(std::mem::take(buf)) {
                Ok(frame) => Read::Got(Incoming::Frame(frame)),
                Err(line) => {
                    *buf = line;
                    incoming(buf).map_or(Read::Blank, Read::Got)
                }
            }
        }
        Ok(Line::Complete) => incoming(buf).map_or(Read::Blank, Read::Got),
        Err(e) => Read::Failed(e),
    };
    // A line is parsed into a frame of its own: a buffer a large one grew is given back
    // rather than kept for the connection's life.
    if buf.capacity() > KEEP_READ_BYTES {
        *buf = Vec::new();
    }
    read
}

#[async_trait]
impl<R, W> Transport for LineTransport<R, W>
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    async fn send(&self, frame: Frame) -> Result<(), Closed> {
        // Queueing never waits.
        self.try_send(frame).map_err(|e| match e {
            TrySendError::Closed(c) => c,
            TrySendError::WouldWait(_) => self.closed_error(),
        })
    }

    fn frames(self: Arc<Self>) -> super::Frames {
        Box::pin(futures_util::stream::unfold(self, |t| async move {
            let frame = t.recv_frame().await;
            Some((frame, t))
        }))
    }

    fn try_send(&self, mut frame: Frame) -> Result<(), TrySendError> {
        if self.closed.get().is_some() {
            return Err(TrySendError::Closed(self.closed_error()));
        }
        let pushed = match split_line(&mut frame) {
            Some(SplitLine {
                head,
                payload,
                tail,
            }) => self.out.push_payload(head, payload, &tail),
            None => self.out.push(|buf| encode_line(&frame, buf)),
        };
        pushed.map_err(|()| TrySendError::Closed(self.closed_error()))
    }

    async fn recv(&self) -> Result<Incoming, Closed> {
        self.recv_frame().await
    }

    /// The limit this side reads with: a stdio peer is taken to read with the same.
    fn max_message_bytes(&self) -> Option<usize> {
        Some(self.max_message_bytes)
    }

    async fn close(&self) {
        self.closed.record(CloseReason::Closed);
        self.shutdown.set();
        self.out.close().await;
    }

    fn close_reason(&self) -> Option<CloseReason> {
        self.closed.get()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::frame;
    use super::*;
    use std::time::Duration;
    use tokio::io::AsyncWriteExt;

    const MIXED: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\nnot json\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{\"pad\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}}\n[]\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}";

    const MIXED_KINDS: [&str; 6] = [
        "frame 1",
        "invalid -32700",
        "invalid -32600",
        "invalid -32600",
        "frame 3",
        "closed closed by the peer",
    ];

    /// What one read gave, in a word or two.
    fn kind(read: &Result<Incoming, Closed>) -> String {
        match read {
            Ok(Incoming::Frame(f)) => format!(
                "frame {}",
                f.clone().into_messages()[0]
                    .id()
                    .map(|i| i.to_string())
                    .unwrap_or_default()
            ),
            Ok(Incoming::Invalid { error, .. }) => format!("invalid {}", error.code),
            Err(Closed(r)) => format!("closed {r}"),
        }
    }

    #[tokio::test]
    async fn lines_bad_json_and_oversized_messages_keep_the_stream_working() {
        let t = LineTransport::new(MIXED, tokio::io::sink()).with_max_message_bytes(80);
        let mut kinds = Vec::new();
        loop {
            let read = t.recv().await;
            kinds.push(kind(&read));
            if read.is_err() {
                break;
            }
        }
        assert_eq!(kinds, MIXED_KINDS);
    }

    #[tokio::test]
    async fn frames_gives_what_recv_gives_also_through_an_arc() {
        use futures_util::StreamExt;
        let t = LineTransport::new(MIXED, tokio::io::sink()).with_max_message_bytes(80);
        // As a read loop holds it: a shared transport behind a pointer to a `dyn` one.
        let shared: Arc<dyn Transport> = Arc::new(Arc::new(t));
        let mut frames = shared.frames();
        let mut kinds = Vec::new();
        while let Some(read) = frames.next().await {
            kinds.push(kind(&read));
            if read.is_err() {
                break;
            }
        }
        assert_eq!(kinds, MIXED_KINDS);
    }

    #[tokio::test]
    async fn a_long_line_arriving_in_pieces_is_read_whole() {
        let (mut w, r) = tokio::io::duplex(64);
        let t = LineTransport::new(
            tokio::io::BufReader::with_capacity(16, r),
            tokio::io::sink(),
        );
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}\n",
            "y".repeat(500)
        );
        let writer = tokio::spawn(async move {
            w.write_all(line.as_bytes()).await.expect("write");
        });
        let Ok(Incoming::Frame(f)) = t.recv().await else {
            panic!("a frame")
        };
        assert_eq!(
            f.into_messages()[0].id().map(|i| i.to_string()),
            Some("7".into())
        );
        writer.await.expect("writer");
    }

    #[tokio::test]
    async fn a_large_line_leaves_with_its_frame_and_a_buffer_grown_past_the_bound_is_given_back() {
        let line = |pad: usize| {
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}",
                "y".repeat(pad)
            )
        };
        // (line, the most the buffer may keep after it, the least)
        let cases = [
            // A large message takes the buffer it was read into.
            (line(KEEP_READ_BYTES / 2), 0, 0),
            // A batch is read from the buffer, which is kept within the bound ...
            (
                format!("[{}]", line(KEEP_READ_BYTES / 2)),
                usize::MAX,
                KEEP_READ_BYTES / 2,
            ),
            // ... and given back past it.
            (
                format!("[{}]", line(KEEP_READ_BYTES + 1)),
                KEEP_READ_BYTES,
                0,
            ),
            // A small line leaves the buffer as it was.
            (line(LARGE_LINE_BYTES / 2), usize::MAX, LARGE_LINE_BYTES / 2),
        ];
        let text: String = cases.iter().map(|(l, ..)| format!("{l}\n")).collect();
        // A reader buffer smaller than the lines, so each is gathered in `buf`.
        let mut r = tokio::io::BufReader::with_capacity(4096, text.as_bytes());
        let mut buf = Vec::new();
        for (i, (_, most, least)) in cases.iter().enumerate() {
            let Read::Got(Incoming::Frame(_)) = next_line(&mut r, &mut buf, usize::MAX).await
            else {
                panic!("line {i} is a frame")
            };
            let kept = buf.capacity();
            assert!(kept <= *most && kept >= *least, "line {i}: {kept}");
        }
    }

    #[tokio::test]
    async fn sends_one_compact_line_per_frame_with_payloads_exact() {
        let (client, mut server) = tokio::io::duplex(1024);
        let t = LineTransport::new(tokio::io::BufReader::new(tokio::io::empty()), client);
        let pretty = "{\n \"jsonrpc\": \"2.0\",\n \"id\": 1,\n \"result\": {\n  \"b\": [1.50,\n 123456789012345678901234567890],\r\n  \"a\": \"x y\"\n }\n}";
        t.send(frame(pretty)).await.expect("send");
        t.send(frame(r#"{"jsonrpc":"2.0","method":"n"}"#))
            .await
            .expect("send");
        let out = written(&t, &mut server).await;
        assert_eq!(
            out,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{  \"b\": [1.50, 123456789012345678901234567890],  \"a\": \"x y\" }}\n{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n"
        );
    }

    type Counted = LineTransport<
        tokio::io::BufReader<tokio::io::Empty>,
        CountingWriter<tokio::io::DuplexStream>,
    >;

    /// A transport writing into a counting pipe, the pipe's far end, and the count.
    fn counted() -> (
        Arc<Counted>,
        tokio::io::DuplexStream,
        Arc<std::sync::atomic::AtomicUsize>,
    ) {
        let (client, server) = tokio::io::duplex(1 << 20);
        let writes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let t = Arc::new(LineTransport::new(
            tokio::io::BufReader::new(tokio::io::empty()),
            CountingWriter {
                inner: client,
                writes: writes.clone(),
            },
        ));
        (t, server, writes)
    }

    /// A transport reading `lines` (one frame each), all there in its first read.
    fn reading(
        lines: &[String],
    ) -> LineTransport<tokio::io::BufReader<std::io::Cursor<Vec<u8>>>, tokio::io::Sink> {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        LineTransport::new(
            tokio::io::BufReader::new(std::io::Cursor::new(text.into_bytes())),
            tokio::io::sink(),
        )
    }

    /// What `source` gives, each frame sent on through `t` as soon as it is read.
    async fn relay_all<R, W>(source: &LineTransport<R, W>, t: &impl Transport, n: usize)
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        for _ in 0..n {
            match source.recv().await.expect("a frame") {
                Incoming::Frame(f) => t.try_send(f).expect("send"),
                Incoming::Invalid { error, .. } => panic!("invalid: {error:?}"),
            }
        }
    }

    #[tokio::test]
    async fn frames_read_in_one_burst_leave_in_two_writes() {
        let (t, mut server, writes) = counted();
        let count = || writes.load(std::sync::atomic::Ordering::SeqCst);
        let lines: Vec<String> = (0..51)
            .map(|i| format!(r#"{{"jsonrpc":"2.0","method":"n{i}"}}"#))
            .collect();
        relay_all(&reading(&lines), &*t, 51).await;
        assert_eq!(
            count(),
            1,
            "the first frame goes at once, the rest wait for this task to yield"
        );
        let out = written(&t, &mut server).await;
        assert_eq!(out.lines().collect::<Vec<_>>(), lines);
        assert_eq!(count(), 2, "50 gathered frames took {} writes", count() - 1);
    }

    #[tokio::test]
    async fn a_lone_frame_leaves_at_once_and_so_does_the_next() {
        let (t, mut server, writes) = counted();
        let count = || writes.load(std::sync::atomic::Ordering::SeqCst);
        let first = r#"{"jsonrpc":"2.0","method":"first"}"#.to_owned();
        relay_all(&reading(std::slice::from_ref(&first)), &*t, 1).await;
        assert_eq!(count(), 1, "written before the sender yields");
        // Nothing was left to gather: the next frame does not wait for a flushing task.
        t.try_send(frame(r#"{"jsonrpc":"2.0","method":"second"}"#))
            .expect("send");
        assert_eq!(count(), 2, "written before the sender yields");
        let out = written(&t, &mut server).await;
        assert_eq!(
            out,
            format!("{first}\n{{\"jsonrpc\":\"2.0\",\"method\":\"second\"}}\n")
        );
    }

    #[tokio::test]
    async fn a_transport_dropped_unclosed_still_writes_what_it_took_and_ends_the_stream() {
        let (client, mut server) = tokio::io::duplex(16);
        let t = LineTransport::new(tokio::io::BufReader::new(tokio::io::empty()), client);
        // Longer than the pipe holds: the rest waits in the flushing task.
        let line = format!(r#"{{"jsonrpc":"2.0","method":"{}"}}"#, "x".repeat(100));
        t.try_send(frame(&line)).expect("send");
        drop(t);
        let mut out = String::new();
        let read = tokio::io::AsyncReadExt::read_to_string(&mut server, &mut out);
        tokio::time::timeout(Duration::from_secs(5), read)
            .await
            .expect("the stream ends")
            .expect("read");
        assert_eq!(out, format!("{line}\n"));
    }

    /// Everything `t` wrote to the other end of its stream, once closed.
    async fn written<W>(
        t: &LineTransport<tokio::io::BufReader<tokio::io::Empty>, W>,
        server: &mut tokio::io::DuplexStream,
    ) -> String
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        t.close().await;
        let mut out = String::new();
        tokio::io::AsyncReadExt::read_to_string(server, &mut out)
            .await
            .expect("read");
        out
    }

    struct CountingWriter<W> {
        inner: W,
        writes: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl<W: AsyncWrite + Unpin> AsyncWrite for CountingWriter<W> {
        fn poll_write(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            self.writes
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
        }
        fn poll_flush(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::pin::Pin::new(&mut self.inner).poll_flush(cx)
        }
        fn poll_shutdown(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
        }
    }
}
