//! Reading Server-Sent Events from a byte stream, for the HTTP transports.

/// One event: its `event` name (`message` when absent), `data` lines joined by newlines,
/// and the `id` and `retry` fields if given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// `event:`; `None` means the default, `message`.
    pub event: Option<String>,
    /// `data:` lines, joined with `\n`.
    pub data: String,
    /// `id:`, if the event carried one.
    pub id: Option<String>,
    /// `retry:` in milliseconds, if the event carried one.
    pub retry: Option<u64>,
}

/// An event, or a line of one, longer than the parser's limit: a server that never ends
/// a line or an event would otherwise grow the reader's memory without end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an SSE event is longer than {limit} bytes")]
#[non_exhaustive]
pub struct SseTooLarge {
    /// The limit passed.
    pub limit: usize,
}

/// Turns chunks of an `text/event-stream` body into events, holding at most its limit
/// (default [`mcp_types::transport::DEFAULT_MAX_MESSAGE_BYTES`]) of an unfinished event.
#[derive(Debug)]
pub struct SseParser {
    buf: Vec<u8>,
    current: SseEvent,
    has_data: bool,
    limit: usize,
    /// A line or an event passed the limit: the stream is refused from then on.
    over: bool,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::with_limit(mcp_types::transport::DEFAULT_MAX_MESSAGE_BYTES)
    }
}

impl SseParser {
    /// A parser refusing an event (its unfinished line and its `data` so far) longer than
    /// `limit` bytes.
    pub fn with_limit(limit: usize) -> Self {
        SseParser {
            buf: Vec::new(),
            current: SseEvent::default(),
            has_data: false,
            limit,
            over: false,
        }
    }

    /// Feeds a chunk; returns the events it completed, or [`SseTooLarge`] once the event
    /// being read passes the limit (the stream is then of no further use). Linear in the
    /// bytes fed: each byte is searched once for a line end, and the lines read are
    /// removed in one step.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseTooLarge> {
        if !self.over {
            let events = self.lines(chunk);
            self.over |= self.buf.len().saturating_add(self.current.data.len()) > self.limit;
            if !self.over {
                return Ok(events);
            }
        }
        Err(SseTooLarge { limit: self.limit })
    }

    fn lines(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        // What was kept from the last chunk holds no line end: search only the new bytes.
        let mut search = self.buf.len();
        self.buf.extend_from_slice(chunk);
        let mut start = 0;
        let mut out = Vec::new();
        while let Some(off) = self.buf[search..].iter().position(|b| *b == b'\n') {
            let end = search + off;
            if end - start > self.limit {
                self.over = true;
                break;
            }
            let raw = &self.buf[start..end];
            let line = String::from_utf8_lossy(raw.strip_suffix(b"\r").unwrap_or(raw)).into_owned();
            start = end + 1;
            search = start;
            if line.is_empty() {
                let done = std::mem::take(&mut self.current);
                if self.has_data || done.id.is_some() || done.retry.is_some() {
                    out.push(done);
                }
                self.has_data = false;
                continue;
            }
            if line.starts_with(':') {
                continue; // a comment (keep-alive)
            }
            let (field, value) = line.split_once(':').map_or((line.as_str(), ""), |(f, v)| {
                (f, v.strip_prefix(' ').unwrap_or(v))
            });
            match field {
                "data" => {
                    if self.has_data {
                        self.current.data.push('\n');
                    }
                    self.current.data.push_str(value);
                    self.has_data = true;
                    if self.current.data.len() > self.limit {
                        self.over = true;
                        break;
                    }
                }
                "event" => self.current.event = Some(value.to_owned()),
                "id" => self.current.id = Some(value.to_owned()),
                "retry" => self.current.retry = value.trim().parse().ok(),
                _ => {}
            }
        }
        self.buf.drain(..start);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_with_comments_ids_and_retry() {
        let mut p = SseParser::default();
        assert_eq!(
            p.feed(b": keep-alive\n\nid: 1-1\nretry: 500\nda"),
            Ok(vec![])
        );
        let got = p
            .feed(
                b"ta: {\"a\":1}\r\ndata: x\n\nevent: endpoint\ndata: /message?s=1\n\nid: 7\ndata:\n\n",
            )
            .expect("within the limit");
        assert_eq!(
            got,
            [
                SseEvent {
                    event: None,
                    data: "{\"a\":1}\nx".into(),
                    id: Some("1-1".into()),
                    retry: Some(500)
                },
                SseEvent {
                    event: Some("endpoint".into()),
                    data: "/message?s=1".into(),
                    id: None,
                    retry: None
                },
                SseEvent {
                    event: None,
                    data: String::new(),
                    id: Some("7".into()),
                    retry: None
                },
            ]
        );
    }

    #[test]
    fn a_megabyte_of_line_ends_in_one_chunk_is_read_in_linear_time() {
        // Each line used to be drained from the front of the buffer, moving the rest:
        // 1 MiB of empty lines took 17 s (release), a stalled server's long line
        // was searched again from its start on every chunk.
        let started = std::time::Instant::now();
        let mut p = SseParser::default();
        let mut body = b"data: x\n\n".repeat(1 << 16);
        body.extend(std::iter::repeat_n(b'\n', 1 << 20));
        assert_eq!(p.feed(&body).map(|e| e.len()), Ok(1 << 16));
        for _ in 0..1024 {
            assert_eq!(p.feed(&[b'y'; 4096]), Ok(vec![]));
        }
        assert_eq!(p.feed(b"\n\n"), Ok(vec![]), "an unknown field is ignored");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn an_event_longer_than_the_limit_is_refused() {
        // A whole event in one chunk.
        let mut p = SseParser::with_limit(16);
        let long = format!("data: {}\n\n", "x".repeat(17));
        assert_eq!(p.feed(long.as_bytes()), Err(SseTooLarge { limit: 16 }));
        assert_eq!(
            p.feed(b"data: y\n\n"),
            Err(SseTooLarge { limit: 16 }),
            "refused for good"
        );
        // A line that never ends.
        let mut p = SseParser::with_limit(1024);
        assert_eq!(p.feed(&[b'x'; 1000]), Ok(vec![]));
        assert_eq!(p.feed(&[b'x'; 100]), Err(SseTooLarge { limit: 1024 }));
        // Short lines, one event that never ends.
        let mut p = SseParser::with_limit(1024);
        let mut refused = false;
        for _ in 0..200 {
            if p.feed(b"data: 0123456789\n").is_err() {
                refused = true;
                break;
            }
        }
        assert!(refused, "data lines of one event are bounded together");
        // Many events, each within the limit.
        let mut p = SseParser::with_limit(64);
        let events = (0..1000).try_fold(0, |n, _| {
            p.feed(b"data: 0123456789\n\n").map(|e| n + e.len())
        });
        assert_eq!(events, Ok(1000));
    }
}
