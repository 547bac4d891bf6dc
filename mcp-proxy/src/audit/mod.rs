//! The audit trail: one tamper-evident record per host request that reaches a tool, prompt or resource.
//!
//! The request path fills an [`AuditRecord`] and hands it to [`AuditLog::record`], which
//! only queues it. A writer thread of its own redacts the arguments ([`Redaction`]: secrets
//! by member name or JSON pointer, plus a digest of the exact bytes the host sent), writes
//! each record as one JSON line, and chains the lines: each ends with its `seq`, the
//! previous line's `hash` as `prev`, and its own `hash`, the SHA-256 of the line's bytes up
//! to `,"hash":` followed by `}`.
//!
//! ```text
//! {"time":"2026-12-06T02:40:00.123Z","principal":{"subject":"alice"},"method":"tools/call","name":"fs/read","upstream":"fs","upstreamName":"read","outcome":"ok","durationMs":12.345,"requestBytes":80,"responseBytes":512,"arguments":{"path":"/etc/motd","token":"[REDACTED]"},"argumentsDigest":"sha256:…","seq":41,"prev":"…","hash":"…"}
//! ```
//!
//! A line with no `kind` is a call. Two other kinds are chained like calls:
//! `{"kind":"anchor","time":…,"previousFile":"audit.jsonl.1",…}` opens each file a
//! [`FileSink`] starts by rotation (its `prev` is the last hash of that file, named as it
//! was when rotated), and `{"kind":"gap","time":…,"dropped":N,…}` says N records were lost
//! (the queue was full, or a sink failed to take them) so the loss is reported rather than
//! a silent hole.
//!
//! [`verify`] checks a trail's files oldest first and says which line was altered, where
//! records were removed, which is out of order, or where the chain was rewritten.
//!
//! Each sink ([`FileSink`], [`StdoutSink`], [`MemorySink`] or one of the caller's
//! [`AuditSink`]) has a chain of its own; a file reopened after a restart continues its.

mod chain;
mod file;
mod member_names;
mod pending;
mod queue;
mod record;
mod redact;
mod sink;
mod time;
mod verify;
mod writer;

pub use chain::{Chain, GENESIS};
pub use file::{FileRotation, FileSink};
pub(crate) use pending::{Field, Pending};
pub use record::{AuditOutcome, AuditPrincipal, AuditRecord};
pub use redact::{
    Redaction, RedactionRule, DEFAULT_MAX_BYTES, DEFAULT_MEMBERS, REDACTED, TRUNCATED, UNREADABLE,
};
pub use sink::{AuditSink, MemorySink, Resume, StdoutSink};
pub use verify::{verify, Verified, VerifyError};
pub use writer::{AuditLog, AuditOptions};

#[cfg(test)]
mod tests;
