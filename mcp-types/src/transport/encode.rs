//! A frame as one line of JSON, written whole into a buffer or around its large payload.

use serde_json::value::RawValue;

use crate::jsonrpc::Frame;

/// Appends `frame` to `buf` as one line. Raw payloads are written as they came; one that
/// came pretty-printed (over HTTP, say) holds newlines only as whitespace between tokens
/// (JSON strings cannot contain a raw newline), so dropping them keeps every value exact.
pub(super) fn encode_line(frame: &Frame, buf: &mut Vec<u8>) {
    let start = buf.len();
    frame.write_to(buf);
    if memchr::memchr2(b'\n', b'\r', &buf[start..]).is_some() {
        let mut i = start;
        buf.retain(|b| {
            let keep = i < start || (*b != b'\n' && *b != b'\r');
            i += 1;
            keep
        });
    }
    buf.push(b'\n');
}

/// A single message's line written around its large payload, which is not copied.
pub(super) struct SplitLine {
    /// What comes before the payload.
    pub(super) head: Vec<u8>,
    /// The payload, as the message held it.
    pub(super) payload: Box<RawValue>,
    /// What follows the payload, with the line's end.
    pub(super) tail: Vec<u8>,
}

/// `frame` as a [`SplitLine`], its payload taken out of it, when it is one message whose
/// payload is at least [`LARGE_LINE_BYTES`] long and holds no raw newline (which
/// [`encode_line`] drops); else `None`, and `frame` is left as it was. Borrowed, so that
/// the common small frame is neither moved nor scanned twice.
pub(super) fn split_line(frame: &mut Frame) -> Option<SplitLine> {
    let Frame::Single(message) = frame else {
        return None;
    };
    let large = message.payload().is_some_and(|p| {
        let text = p.get().as_bytes();
        text.len() >= LARGE_LINE_BYTES && memchr::memchr2(b'\n', b'\r', text).is_none()
    });
    if !large {
        return None;
    }
    let mut head = Vec::new();
    let mut at = 0;
    message.write_around(&mut head, |out, _| at = out.len());
    let payload = message.take_payload()?;
    let mut tail = head.split_off(at);
    tail.push(b'\n');
    Some(SplitLine {
        head,
        payload,
        tail,
    })
}

/// A line at least this long is large: read into a frame that keeps its buffer
/// ([`Frame::from_line`]); and a payload this long is written without being copied.
pub(super) const LARGE_LINE_BYTES: usize = 64 * 1024;

#[cfg(test)]
mod tests {
    use super::super::testing::frame;
    use super::super::{LineTransport, Transport};
    use super::*;
    use tokio::io::AsyncBufReadExt;

    fn large(kind: &str, n: usize) -> String {
        let pad = "y".repeat(n);
        match kind {
            "request" => format!(
                r#"{{"jsonrpc":"2.0","id":"r-1","method":"tools/call","params":{{"name":"a","arguments":{{"t":"{pad}","n":1.50}}}}}}"#
            ),
            "notification" => {
                format!(r#"{{"jsonrpc":"2.0","method":"n","params":{{"t":"{pad}"}}}}"#)
            }
            _ => format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"t":"{pad}","n":1e400}}}}"#),
        }
    }

    #[test]
    fn a_large_payload_is_written_around_as_the_whole_line_and_not_copied() {
        for kind in ["request", "notification", "response"] {
            let text = large(kind, LARGE_LINE_BYTES);
            let mut f = frame(&text);
            let mut whole = Vec::new();
            encode_line(&f, &mut whole);
            let Frame::Single(m) = &f else {
                panic!("one message")
            };
            let at = m.payload().map(|p| p.get().as_ptr());
            let Some(split) = split_line(&mut f) else {
                panic!("{kind}: split")
            };
            assert_eq!(Some(split.payload.get().as_ptr()), at, "{kind}: moved");
            let joined = [&split.head[..], split.payload.get().as_bytes(), &split.tail].concat();
            assert_eq!(joined, whole, "{kind}");
        }
    }

    #[test]
    fn small_pretty_and_batched_frames_are_written_whole() {
        let small = large("response", 10);
        let pretty = large("response", LARGE_LINE_BYTES).replace(r#","n""#, ",\n\"n\"");
        let batch = format!("[{}]", large("response", LARGE_LINE_BYTES));
        for text in [small, pretty, batch] {
            let mut f = frame(&text);
            assert!(split_line(&mut f).is_none(), "{}", &text[..40]);
            assert_eq!(f, frame(&text), "left as it was");
        }
    }

    /// Lines written around large payloads and whole lines, sent faster than the peer
    /// reads, arrive whole and in order.
    #[tokio::test]
    async fn large_and_small_lines_keep_their_order_when_the_peer_is_slow() {
        let (client, server) = tokio::io::duplex(4096);
        let t = LineTransport::new(tokio::io::BufReader::new(tokio::io::empty()), client);
        let sent: Vec<String> = (0..6)
            .map(|i| match i % 3 {
                0 => large("request", LARGE_LINE_BYTES + i),
                1 => large("response", 3),
                _ => large("notification", 2 * LARGE_LINE_BYTES),
            })
            .collect();
        for text in &sent {
            t.send(frame(text)).await.expect("send");
        }
        let mut lines = tokio::io::BufReader::new(server).lines();
        for text in &sent {
            let got = lines.next_line().await.expect("read").expect("a line");
            assert_eq!(&got, text);
        }
        t.close().await;
        assert_eq!(lines.next_line().await.expect("read"), None);
    }
}
