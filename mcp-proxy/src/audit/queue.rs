//! How records wait for the writer: packed one after another into one byte buffer, under
//! the queue's lock, and read back by the writer thread as borrowed [`RecordParts`].
//!
//! Bytes rather than a vector of records: a record of owned strings is a dozen heap blocks
//! made on the request's thread and freed on the writer's, and that traffic between two
//! threads' allocator caches cost the request path more than the writer's whole work (a
//! profile of 100,000 calls showed the gateway's threads in `free` only when auditing).
//! Packed, queueing a record is a copy into a buffer the writer swaps for an empty one of
//! the same capacity: nothing is allocated once warm, and the buffer's length is the exact
//! measure [`super::AuditOptions::queue_bytes`] bounds.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::record::AuditOutcome;

/// Longest `errorMessage` kept, in bytes: an upstream chooses its error text, and one
/// answering with megabytes must not make every audit line (or the queue) that long.
pub(crate) const MAX_ERROR_MESSAGE: usize = 4096;

/// A record's members, borrowed: what the request path queues and the writer writes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordParts<'a> {
    pub(crate) time: SystemTime,
    /// Whether a principal is named at all (`"principal":{}` when none of its members is).
    pub(crate) principal: bool,
    pub(crate) subject: Option<&'a str>,
    pub(crate) credential: Option<&'a str>,
    pub(crate) issuer: Option<&'a str>,
    pub(crate) session: Option<&'a str>,
    pub(crate) request: Option<&'a str>,
    pub(crate) trace: Option<&'a str>,
    pub(crate) method: &'a str,
    pub(crate) name: Option<&'a str>,
    pub(crate) upstream: Option<&'a str>,
    pub(crate) upstream_name: Option<&'a str>,
    pub(crate) outcome: AuditOutcome,
    pub(crate) error_kind: Option<&'a str>,
    pub(crate) error_message: Option<&'a str>,
    /// `error_message` was cut to [`MAX_ERROR_MESSAGE`].
    pub(crate) error_message_cut: bool,
    pub(crate) duration: Duration,
    pub(crate) request_bytes: u64,
    pub(crate) response_bytes: u64,
    /// The arguments' JSON text, exactly as the host sent it.
    pub(crate) arguments: Option<&'a str>,
}

impl<'a> RecordParts<'a> {
    /// A record of `method` at `time`, every other member empty.
    pub(crate) fn new(time: SystemTime, method: &'a str) -> RecordParts<'a> {
        RecordParts {
            time,
            principal: false,
            subject: None,
            credential: None,
            issuer: None,
            session: None,
            request: None,
            trace: None,
            method,
            name: None,
            upstream: None,
            upstream_name: None,
            outcome: AuditOutcome::Ok,
            error_kind: None,
            error_message: None,
            error_message_cut: false,
            duration: Duration::ZERO,
            request_bytes: 0,
            response_bytes: 0,
            arguments: None,
        }
    }

    /// The texts in their packed order.
    fn texts(&self) -> [Option<&'a str>; TEXTS] {
        [
            self.subject,
            self.credential,
            self.issuer,
            self.session,
            self.request,
            self.trace,
            Some(self.method),
            self.name,
            self.upstream,
            self.upstream_name,
            self.error_kind,
            self.error_message,
            self.arguments,
        ]
    }

    /// The error message cut to [`MAX_ERROR_MESSAGE`] at a character boundary, marked.
    pub(crate) fn bounded(mut self) -> RecordParts<'a> {
        if let Some(message) = self.error_message {
            let (kept, cut) = cut_at(message, MAX_ERROR_MESSAGE);
            self.error_message = Some(kept);
            self.error_message_cut |= cut;
        }
        self
    }
}

/// `s` cut to at most `max` bytes at a character boundary, and whether it was cut.
pub(crate) fn cut_at(s: &str, max: usize) -> (&str, bool) {
    if s.len() <= max {
        return (s, false);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    (&s[..end], true)
}

/// How many texts a record packs.
const TEXTS: usize = 13;
const PRINCIPAL: u16 = 1 << TEXTS;
const MESSAGE_CUT: u16 = 1 << (TEXTS + 1);
/// Time (i64 seconds, u32 nanoseconds), duration (u64, u32), two sizes, outcome, flags.
const HEADER: usize = 8 + 4 + 8 + 4 + 8 + 8 + 1 + 2;

/// The bytes [`pack`] adds for `parts` (already [`RecordParts::bounded`]).
pub(crate) fn packed_len(parts: &RecordParts<'_>) -> usize {
    HEADER
        + parts
            .texts()
            .iter()
            .flatten()
            .map(|t| 4 + t.len())
            .sum::<usize>()
}

/// Appends `parts` (already [`RecordParts::bounded`]) to `out`. Texts longer than 4 GiB
/// are not queued whole: a request that large never reaches the gateway's handlers.
pub(crate) fn pack(parts: &RecordParts<'_>, out: &mut Vec<u8>) {
    let (secs, nanos) = split_time(parts.time);
    out.extend_from_slice(&secs.to_le_bytes());
    out.extend_from_slice(&nanos.to_le_bytes());
    out.extend_from_slice(&parts.duration.as_secs().to_le_bytes());
    out.extend_from_slice(&parts.duration.subsec_nanos().to_le_bytes());
    out.extend_from_slice(&parts.request_bytes.to_le_bytes());
    out.extend_from_slice(&parts.response_bytes.to_le_bytes());
    out.push(parts.outcome.code());
    let texts = parts.texts();
    let mut flags = 0u16;
    for (i, t) in texts.iter().enumerate() {
        if t.is_some() {
            flags |= 1 << i;
        }
    }
    if parts.principal {
        flags |= PRINCIPAL;
    }
    if parts.error_message_cut {
        flags |= MESSAGE_CUT;
    }
    out.extend_from_slice(&flags.to_le_bytes());
    for t in texts.into_iter().flatten() {
        let len = u32::try_from(t.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&t.as_bytes()[..len as usize]);
    }
}

/// The records packed in a buffer, in order. Stops at the first that does not read back
/// (which [`pack`] never makes, but the writer must not panic on).
pub(crate) struct Packed<'a> {
    buf: &'a [u8],
}

impl<'a> Packed<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Packed<'a> {
        Packed { buf }
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.buf.len() < n {
            return None;
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Some(head)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    fn text(&mut self) -> Option<&'a str> {
        let len = u32::from_le_bytes(self.array()?) as usize;
        std::str::from_utf8(self.take(len)?).ok()
    }

    fn next_record(&mut self) -> Option<RecordParts<'a>> {
        let secs = i64::from_le_bytes(self.array()?);
        let nanos = u32::from_le_bytes(self.array()?);
        let duration_secs = u64::from_le_bytes(self.array()?);
        let duration_nanos = u32::from_le_bytes(self.array()?);
        let request_bytes = u64::from_le_bytes(self.array()?);
        let response_bytes = u64::from_le_bytes(self.array()?);
        let [outcome] = self.array()?;
        let flags = u16::from_le_bytes(self.array()?);
        let mut texts: [Option<&'a str>; TEXTS] = [None; TEXTS];
        for (i, t) in texts.iter_mut().enumerate() {
            if flags & (1 << i) != 0 {
                *t = Some(self.text()?);
            }
        }
        let [subject, credential, issuer, session, request, trace, method, name, upstream, upstream_name, error_kind, error_message, arguments] =
            texts;
        Some(RecordParts {
            time: join_time(secs, nanos),
            principal: flags & PRINCIPAL != 0,
            subject,
            credential,
            issuer,
            session,
            request,
            trace,
            method: method?,
            name,
            upstream,
            upstream_name,
            outcome: AuditOutcome::from_code(outcome),
            error_kind,
            error_message,
            error_message_cut: flags & MESSAGE_CUT != 0,
            duration: Duration::new(duration_secs, duration_nanos.min(999_999_999)),
            request_bytes,
            response_bytes,
            arguments,
        })
    }
}

impl<'a> Iterator for Packed<'a> {
    type Item = RecordParts<'a>;

    fn next(&mut self) -> Option<RecordParts<'a>> {
        if self.buf.is_empty() {
            return None;
        }
        let record = self.next_record();
        if record.is_none() {
            self.buf = &[];
        }
        record
    }
}

/// `time` as whole seconds since 1970 (floored, so negative before it) and nanoseconds.
fn split_time(time: SystemTime) -> (i64, u32) {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => (
            i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
            after.subsec_nanos(),
        ),
        Err(before) => {
            let d = before.duration();
            let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            match d.subsec_nanos() {
                0 => (-secs, 0),
                n => (-secs - 1, 1_000_000_000 - n),
            }
        }
    }
}

fn join_time(secs: i64, nanos: u32) -> SystemTime {
    let nanos = Duration::from_nanos(u64::from(nanos.min(999_999_999)));
    let time = if secs >= 0 {
        UNIX_EPOCH.checked_add(Duration::from_secs(secs.unsigned_abs()))
    } else {
        UNIX_EPOCH.checked_sub(Duration::from_secs(secs.unsigned_abs()))
    };
    time.and_then(|t| t.checked_add(nanos))
        .unwrap_or(UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_as_packed() {
        let mut a = RecordParts::new(UNIX_EPOCH + Duration::new(1_796_524_800, 123), "tools/call");
        a.principal = true;
        a.subject = Some("alice");
        a.issuer = Some("https://issuer.example");
        a.session = Some("7");
        a.request = Some("\"req-1\"");
        a.name = Some("fs__read");
        a.upstream = Some("fs");
        a.upstream_name = Some("read");
        a.outcome = AuditOutcome::IsError;
        a.error_kind = Some("upstream_error");
        a.duration = Duration::new(1, 5);
        a.request_bytes = 40;
        a.response_bytes = 512;
        a.arguments = Some(r#"{"path":"/etc/motd","é":1}"#);
        let mut b = RecordParts::new(UNIX_EPOCH - Duration::new(1, 1), "prompts/get");
        let long = "é".repeat(MAX_ERROR_MESSAGE);
        b.error_message = Some(&long);
        let b = b.bounded();
        let mut buf = Vec::new();
        pack(&a, &mut buf);
        assert_eq!(buf.len(), packed_len(&a));
        pack(&b, &mut buf);
        let read: Vec<RecordParts<'_>> = Packed::new(&buf).collect();
        assert_eq!(read.len(), 2);
        assert_eq!(format!("{:?}", read[0]), format!("{a:?}"));
        assert_eq!(format!("{:?}", read[1]), format!("{b:?}"));
        assert!(read[1].error_message_cut);
        assert_eq!(read[1].error_message.map(str::len), Some(MAX_ERROR_MESSAGE));
        assert_eq!(read[1].time, UNIX_EPOCH - Duration::new(1, 1));
    }

    #[test]
    fn a_torn_buffer_reads_what_is_whole_and_stops() {
        let mut buf = Vec::new();
        let a = RecordParts::new(SystemTime::now(), "tools/call");
        pack(&a, &mut buf);
        pack(&a, &mut buf);
        buf.truncate(buf.len() - 3);
        assert_eq!(Packed::new(&buf).count(), 1);
        assert_eq!(Packed::new(&[0xff; 7]).count(), 0);
    }
}
