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

/// Turns chunks of an `text/event-stream` body into events.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    current: SseEvent,
    has_data: bool,
}

impl SseParser {
    /// Feeds a chunk; returns the events it completed. Linear in the bytes fed: each
    /// byte is searched once for a line end, and the lines read are removed in one step.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        // What was kept from the last chunk holds no line end: search only the new bytes.
        let mut search = self.buf.len();
        self.buf.extend_from_slice(chunk);
        let mut start = 0;
        let mut out = Vec::new();
        while let Some(off) = self.buf[search..].iter().position(|b| *b == b'\n') {
            let end = search + off;
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
        assert!(p
            .feed(b": keep-alive\n\nid: 1-1\nretry: 500\nda")
            .is_empty());
        let got = p.feed(
            b"ta: {\"a\":1}\r\ndata: x\n\nevent: endpoint\ndata: /message?s=1\n\nid: 7\ndata:\n\n",
        );
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
        assert_eq!(p.feed(&body).len(), 1 << 16);
        for _ in 0..1024 {
            assert!(p.feed(&[b'y'; 4096]).is_empty());
        }
        assert_eq!(p.feed(b"\n\n").len(), 0, "an unknown field is ignored");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }
}
