//! A record being filled in while its call is on its way ([`Pending`]), in storage the
//! [`AuditLog`] lends and takes back.
//!
//! Why lent: a call's record lives as long as the call, and a dozen calls are in flight at
//! once. Allocating its storage per call, even once, pushed the allocator's per-thread
//! cache past its bound at sixteen calls in flight, and every free of the gateway's threads
//! then took the slow path (a profile of 100,000 calls showed them in `_int_free` only when
//! auditing). Storage taken from a small pool and given back under the queue's lock costs
//! no allocation once warm.

use std::time::{Instant, SystemTime};

use super::queue::RecordParts;
use super::record::AuditOutcome;
use super::writer::AuditLog;

/// Storage kept for reuse at most: more than the calls a gateway has in flight at once.
pub(crate) const POOLED: usize = 256;
/// Text capacity beyond which storage is not kept for reuse (a call with large arguments
/// does not make the pool hold them).
const POOLED_TEXT: usize = 4096;

/// A text member of a pending record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field {
    Subject,
    Credential,
    Issuer,
    Session,
    Request,
    Trace,
    Name,
    Upstream,
    UpstreamName,
    Arguments,
}

const FIELDS: usize = 10;

/// Where a text sits in [`Storage::texts`]; `None` when the record has none.
type Span = Option<(u32, u32)>;

/// A pending record's storage: its texts in one string.
#[derive(Debug)]
pub(crate) struct Storage {
    time: SystemTime,
    start: Instant,
    method: &'static str,
    principal: bool,
    request_bytes: u64,
    texts: String,
    spans: [Span; FIELDS],
}

impl Storage {
    pub(crate) fn new() -> Box<Storage> {
        Box::new(Storage {
            time: SystemTime::UNIX_EPOCH,
            start: Instant::now(),
            method: "",
            principal: false,
            request_bytes: 0,
            texts: String::with_capacity(256),
            spans: [None; FIELDS],
        })
    }

    /// Whether it is worth keeping for another record.
    pub(crate) fn reusable(&self) -> bool {
        self.texts.capacity() <= POOLED_TEXT
    }

    fn text(&self, field: Field) -> Option<&str> {
        let (start, end) = self.spans[field as usize]?;
        self.texts.get(start as usize..end as usize)
    }
}

/// A record being filled in: begun when a request arrives ([`AuditLog::pending`]),
/// queued by [`Pending::finish`]. Dropped unfinished, nothing is recorded.
#[derive(Debug)]
pub(crate) struct Pending {
    log: AuditLog,
    storage: Option<Box<Storage>>,
}

impl AuditLog {
    /// A record of a call to `method` arriving now.
    pub(crate) fn pending(&self, method: &'static str) -> Pending {
        let mut storage = self.lend();
        storage.time = SystemTime::now();
        storage.start = Instant::now();
        storage.method = method;
        storage.principal = false;
        storage.request_bytes = 0;
        storage.texts.clear();
        storage.spans = [None; FIELDS];
        Pending {
            log: self.clone(),
            storage: Some(storage),
        }
    }
}

impl Pending {
    /// Sets `field` to what `write` appends (a text written more than once keeps the
    /// last). Texts past 4 GiB in all are left out.
    pub(crate) fn set_with(&mut self, field: Field, write: impl FnOnce(&mut String)) {
        let Some(s) = self.storage.as_mut() else {
            return;
        };
        let start = s.texts.len();
        write(&mut s.texts);
        let span = u32::try_from(start)
            .ok()
            .zip(u32::try_from(s.texts.len()).ok());
        if span.is_none() {
            s.texts.truncate(start);
        }
        s.spans[field as usize] = span;
    }

    /// Sets `field` to `text`.
    pub(crate) fn set(&mut self, field: Field, text: &str) {
        self.set_with(field, |t| t.push_str(text));
    }

    /// The record names a principal (`"principal":{…}`), whichever of its members are set.
    pub(crate) fn principal(&mut self) {
        if let Some(s) = self.storage.as_mut() {
            s.principal = true;
        }
    }

    /// The size of the host's request.
    pub(crate) fn request_bytes(&mut self, n: u64) {
        if let Some(s) = self.storage.as_mut() {
            s.request_bytes = n;
        }
    }

    /// The call ended as `outcome` (for the reason `kind`, if it failed, saying
    /// `message`), with an answer of `response_bytes`: the record is queued.
    pub(crate) fn finish(
        mut self,
        outcome: AuditOutcome,
        kind: Option<&str>,
        message: Option<&str>,
        response_bytes: u64,
    ) {
        let Some(s) = self.storage.take() else {
            return;
        };
        let mut parts = RecordParts::new(s.time, s.method);
        parts.principal = s.principal;
        parts.subject = s.text(Field::Subject);
        parts.credential = s.text(Field::Credential);
        parts.issuer = s.text(Field::Issuer);
        parts.session = s.text(Field::Session);
        parts.request = s.text(Field::Request);
        parts.trace = s.text(Field::Trace);
        parts.name = s.text(Field::Name);
        parts.upstream = s.text(Field::Upstream);
        parts.upstream_name = s.text(Field::UpstreamName);
        parts.outcome = outcome;
        parts.error_kind = kind;
        parts.error_message = message;
        parts.duration = s.start.elapsed();
        parts.request_bytes = s.request_bytes;
        parts.response_bytes = response_bytes;
        parts.arguments = s.text(Field::Arguments);
        self.log.record_parts(&parts.bounded());
        self.log.give_back(s);
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(storage) = self.storage.take() {
            self.log.give_back(storage);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{AuditOptions, MemorySink, Redaction};
    use serde_json::Value;

    #[test]
    fn a_pending_record_is_written_with_what_was_set_and_its_storage_reused() {
        let lines = MemorySink::new();
        let log = AuditLog::new(
            vec![Box::new(lines.clone())],
            Redaction::new(),
            AuditOptions::new(),
        );
        let mut p = log.pending("tools/call");
        p.principal();
        p.set(Field::Subject, "alice");
        p.set(Field::Name, "fs__read");
        p.set_with(Field::Request, |t| t.push_str("17"));
        p.set(Field::Arguments, r#"{"path":"/etc/motd","password":"x"}"#);
        p.request_bytes(36);
        p.finish(AuditOutcome::Error, Some("timeout"), Some("no answer"), 0);
        // Dropped unfinished: nothing written.
        let mut q = log.pending("prompts/get");
        q.set(Field::Name, "never");
        drop(q);
        let mut r = log.pending("resources/read");
        r.set(Field::Name, "file:///a");
        r.finish(AuditOutcome::Ok, None, None, 12);
        log.flush();
        let lines = lines.lines();
        assert_eq!(lines.len(), 2, "{lines:?}");
        let a: Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(a["principal"]["subject"], "alice");
        assert_eq!(a["name"], "fs__read");
        assert_eq!(a["request"], "17");
        assert_eq!(a["outcome"], "error");
        assert_eq!(a["errorKind"], "timeout");
        assert_eq!(a["errorMessage"], "no answer");
        assert_eq!(a["requestBytes"], 36);
        assert_eq!(a["arguments"]["password"], "[REDACTED]");
        assert_eq!(a["arguments"]["path"], "/etc/motd");
        let b: Value = serde_json::from_str(&lines[1]).unwrap();
        assert_eq!(b["method"], "resources/read");
        assert_eq!(b["name"], "file:///a");
        assert!(b.get("principal").is_none() && b.get("request").is_none());
        assert_eq!(log.pooled(), 1, "one storage, lent three times");
    }
}
