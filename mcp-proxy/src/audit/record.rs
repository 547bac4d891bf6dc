//! One audited call, and how it is written: hand-written JSON with a fixed member order, so
//! the bytes a line's hash covers do not depend on a serializer's choices, and writing can
//! never fail or panic.

use std::time::{Duration, SystemTime};

use serde_json::value::RawValue;
use serde_json::Value;

use super::queue::RecordParts;
use super::time::{rfc3339_millis, write_rfc3339_millis};

/// Who made a call, as the gateway's authentication established it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditPrincipal {
    /// The subject (a token's `sub`, or the principal an API key maps to).
    pub subject: Option<String>,
    /// The configured name of the API key used, never the key itself.
    pub credential: Option<String>,
    /// The issuer of the token the subject came from.
    pub issuer: Option<String>,
}

impl AuditPrincipal {
    /// A principal with no member set.
    pub fn new() -> AuditPrincipal {
        AuditPrincipal::default()
    }

    /// With `subject` set.
    pub fn subject(mut self, subject: impl Into<String>) -> Self {
        self.subject = Some(subject.into());
        self
    }

    /// With `credential` (an API key's configured name) set.
    pub fn credential(mut self, credential: impl Into<String>) -> Self {
        self.credential = Some(credential.into());
        self
    }

    /// With `issuer` set.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }
}

/// How a call ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AuditOutcome {
    /// A result.
    #[default]
    Ok,
    /// A result with `isError: true`.
    IsError,
    /// A JSON-RPC error answer.
    Error,
    /// The gateway refused the call itself.
    Refused,
    /// The upstream asked the host for input before it would answer.
    InputRequired,
    /// The call became a task.
    Task,
}

impl AuditOutcome {
    /// The name written in the record's `outcome`.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditOutcome::Ok => "ok",
            AuditOutcome::IsError => "is_error",
            AuditOutcome::Error => "error",
            AuditOutcome::Refused => "refused",
            AuditOutcome::InputRequired => "input_required",
            AuditOutcome::Task => "task",
        }
    }

    /// Its number in the queue's packing.
    pub(crate) fn code(self) -> u8 {
        match self {
            AuditOutcome::Ok => 0,
            AuditOutcome::IsError => 1,
            AuditOutcome::Error => 2,
            AuditOutcome::Refused => 3,
            AuditOutcome::InputRequired => 4,
            AuditOutcome::Task => 5,
        }
    }

    /// The outcome numbered `code` by [`AuditOutcome::code`].
    pub(crate) fn from_code(code: u8) -> AuditOutcome {
        match code {
            1 => AuditOutcome::IsError,
            2 => AuditOutcome::Error,
            3 => AuditOutcome::Refused,
            4 => AuditOutcome::InputRequired,
            5 => AuditOutcome::Task,
            _ => AuditOutcome::Ok,
        }
    }
}

/// One audited host request (`tools/call`, `prompts/get`, `resources/read`). Members are
/// written in declaration order, with camelCase names; `None` members are left out.
///
/// Its `Debug` shows the arguments' length only: they are unredacted.
#[derive(Clone)]
#[non_exhaustive]
pub struct AuditRecord {
    /// When the request arrived; written as RFC 3339 UTC with milliseconds.
    pub time: SystemTime,
    /// Who made it.
    pub principal: Option<AuditPrincipal>,
    /// The host's session id.
    pub session: Option<String>,
    /// The host's JSON-RPC id, as text.
    pub request: Option<String>,
    /// The W3C trace id.
    pub trace: Option<String>,
    /// The method (`tools/call`, `prompts/get`, `resources/read`).
    pub method: String,
    /// The tool or prompt name, or resource URI, the host used.
    pub name: Option<String>,
    /// The upstream's key.
    pub upstream: Option<String>,
    /// The name the upstream knows the tool or prompt by.
    pub upstream_name: Option<String>,
    /// How the call ended.
    pub outcome: AuditOutcome,
    /// Why it failed, as a short stable word (`unknown_tool`, `rate_limited`, `timeout`…).
    pub error_kind: Option<String>,
    /// The error's text (written at most 4 KiB long).
    pub error_message: Option<String>,
    /// How long the call took; written as `durationMs` with 3 decimals.
    pub duration: Duration,
    /// Size of the host's request.
    pub request_bytes: u64,
    /// Size of the answer.
    pub response_bytes: u64,
    /// The arguments exactly as the host sent them, unredacted: the writer thread redacts
    /// and digests them, so recording a call never parses them.
    pub arguments: Option<Box<RawValue>>,
}

impl AuditRecord {
    /// A record of a call to `method` made now; every other member empty or zero.
    pub fn new(method: impl Into<String>) -> AuditRecord {
        AuditRecord {
            time: SystemTime::now(),
            principal: None,
            session: None,
            request: None,
            trace: None,
            method: method.into(),
            name: None,
            upstream: None,
            upstream_name: None,
            outcome: AuditOutcome::Ok,
            error_kind: None,
            error_message: None,
            duration: Duration::ZERO,
            request_bytes: 0,
            response_bytes: 0,
            arguments: None,
        }
    }

    /// The record's members, borrowed.
    pub(crate) fn parts(&self) -> RecordParts<'_> {
        let mut parts = RecordParts::new(self.time, &self.method);
        if let Some(p) = &self.principal {
            parts.principal = true;
            parts.subject = p.subject.as_deref();
            parts.credential = p.credential.as_deref();
            parts.issuer = p.issuer.as_deref();
        }
        parts.session = self.session.as_deref();
        parts.request = self.request.as_deref();
        parts.trace = self.trace.as_deref();
        parts.name = self.name.as_deref();
        parts.upstream = self.upstream.as_deref();
        parts.upstream_name = self.upstream_name.as_deref();
        parts.outcome = self.outcome;
        parts.error_kind = self.error_kind.as_deref();
        parts.error_message = self.error_message.as_deref();
        parts.duration = self.duration;
        parts.request_bytes = self.request_bytes;
        parts.response_bytes = self.response_bytes;
        parts.arguments = self.arguments.as_deref().map(RawValue::get);
        parts.bounded()
    }

    /// Writes the record as [`write_body`] does.
    #[cfg(test)]
    pub(crate) fn write_body(&self, out: &mut Vec<u8>, arguments: Option<(Written<'_>, &str)>) {
        write_body(&self.parts(), out, arguments);
    }
}

/// Writes a record as a JSON object without its closing brace (the chain adds `seq`,
/// `prev` and `hash`), with the arguments already redacted and digested.
pub(crate) fn write_body(
    parts: &RecordParts<'_>,
    out: &mut Vec<u8>,
    arguments: Option<(Written<'_>, &str)>,
) {
    let mut obj = Object::open(out);
    obj.key("time");
    write_rfc3339_millis(obj.out, parts.time);
    if parts.principal {
        obj.key("principal");
        let mut inner = Object::open(obj.out);
        inner.opt_str("subject", parts.subject);
        inner.opt_str("credential", parts.credential);
        inner.opt_str("issuer", parts.issuer);
        inner.out.push(b'}');
    }
    obj.opt_str("session", parts.session);
    obj.opt_str("request", parts.request);
    obj.opt_str("trace", parts.trace);
    obj.str("method", parts.method);
    obj.opt_str("name", parts.name);
    obj.opt_str("upstream", parts.upstream);
    obj.opt_str("upstreamName", parts.upstream_name);
    obj.str("outcome", parts.outcome.as_str());
    obj.opt_str("errorKind", parts.error_kind);
    if let Some(message) = parts.error_message {
        let (kept, cut) = super::queue::cut_at(message, super::queue::MAX_ERROR_MESSAGE);
        obj.key("errorMessage");
        let marker = if cut || parts.error_message_cut {
            TRUNCATED_MARK
        } else {
            ""
        };
        json_str_then(obj.out, kept, marker);
    }
    let micros = parts.duration.as_micros();
    obj.key("durationMs");
    push_u128(obj.out, micros / 1000);
    obj.out.push(b'.');
    let frac = (micros % 1000) as u32;
    obj.out.extend_from_slice(&[
        b'0' + (frac / 100) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ]);
    obj.key("requestBytes");
    push_u128(obj.out, u128::from(parts.request_bytes));
    obj.key("responseBytes");
    push_u128(obj.out, u128::from(parts.response_bytes));
    if let Some((written, digest)) = arguments {
        obj.key("arguments");
        match written {
            Written::AsSent(text) => obj.out.extend_from_slice(text.as_bytes()),
            Written::Value(value) => {
                let start = obj.out.len();
                if serde_json::to_writer(&mut *obj.out, value).is_err() {
                    obj.out.truncate(start);
                    json_str(obj.out, super::redact::UNREADABLE);
                }
            }
        }
        obj.str("argumentsDigest", digest);
    }
}

/// What ends an error message cut to its bound.
const TRUNCATED_MARK: &str = "…[TRUNCATED]";

/// `n` in decimal.
pub(crate) fn push_u128(out: &mut Vec<u8>, mut n: u128) {
    let mut digits = [0u8; 39];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// A record's arguments as written: as the host sent them, or redacted.
#[derive(Clone, Copy)]
pub(crate) enum Written<'a> {
    /// The host's text, on one line, with nothing to redact.
    AsSent(&'a str),
    /// What redaction made of them.
    Value(&'a Value),
}

impl std::fmt::Debug for AuditRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let arguments = self
            .arguments
            .as_ref()
            .map(|raw| format!("<{} bytes, unredacted>", raw.get().len()));
        f.debug_struct("AuditRecord")
            .field("time", &self.time)
            .field("principal", &self.principal)
            .field("session", &self.session)
            .field("request", &self.request)
            .field("trace", &self.trace)
            .field("method", &self.method)
            .field("name", &self.name)
            .field("upstream", &self.upstream)
            .field("upstream_name", &self.upstream_name)
            .field("outcome", &self.outcome)
            .field("error_kind", &self.error_kind)
            .field("error_message", &self.error_message)
            .field("duration", &self.duration)
            .field("request_bytes", &self.request_bytes)
            .field("response_bytes", &self.response_bytes)
            .field("arguments", &arguments)
            .finish()
    }
}

/// The body of an anchor: the first line of a file started by rotation (or after a torn
/// tail was set aside), chained on the last line of `previous_file`.
pub(crate) fn anchor_body(time: SystemTime, previous_file: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(96);
    let mut obj = Object::open(&mut out);
    obj.str("kind", "anchor");
    obj.str("time", &rfc3339_millis(time));
    obj.str("previousFile", previous_file);
    out
}

/// The body of a gap: `dropped` records were lost before this line.
pub(crate) fn gap_body(time: SystemTime, dropped: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(80);
    let mut obj = Object::open(&mut out);
    obj.str("kind", "gap");
    obj.str("time", &rfc3339_millis(time));
    obj.raw("dropped", dropped.to_string().as_bytes());
    out
}

/// A JSON object being written, left open.
struct Object<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Object<'a> {
    fn open(out: &'a mut Vec<u8>) -> Object<'a> {
        out.push(b'{');
        Object { out, first: true }
    }

    fn key(&mut self, key: &str) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        // Keys are this file's own ASCII names: nothing to escape.
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    fn str(&mut self, key: &str, value: &str) {
        self.key(key);
        json_str(self.out, value);
    }

    fn opt_str(&mut self, key: &str, value: Option<&str>) {
        if let Some(value) = value {
            self.str(key, value);
        }
    }

    fn raw(&mut self, key: &str, value: &[u8]) {
        self.key(key);
        self.out.extend_from_slice(value);
    }
}

/// `s` as a JSON string. Control characters are escaped, so a written line never holds a
/// raw newline (one line, one record).
fn json_str(out: &mut Vec<u8>, s: &str) {
    json_str_then(out, s, "");
}

/// Whether `bytes` hold a control character, `"` or `\\`: sixteen bytes at a time without
/// a branch per byte, so that the check compiles to vector instructions.
fn needs_escape(bytes: &[u8]) -> bool {
    let special = |b: u8| (b < 0x20) | (b == b'"') | (b == b'\\');
    let mut chunks = bytes.chunks_exact(16);
    for chunk in &mut chunks {
        if chunk.iter().fold(false, |m, &b| m | special(b)) {
            return true;
        }
    }
    chunks.remainder().iter().any(|&b| special(b))
}

/// `s` then `tail` (which needs no escaping) as one JSON string.
fn json_str_then(out: &mut Vec<u8>, s: &str, tail: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
    // Most text has nothing to escape: one check the compiler vectorises, one copy.
    if !needs_escape(bytes) {
        out.extend_from_slice(bytes);
        out.extend_from_slice(tail.as_bytes());
        out.push(b'"');
        return;
    }
    let mut plain = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[plain..i]);
        plain = i + 1;
        if escape.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.extend_from_slice(escape);
        }
    }
    out.extend_from_slice(&bytes[plain..]);
    out.extend_from_slice(tail.as_bytes());
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn at(secs: u64, millis: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(secs * 1000 + millis)
    }

    fn body(record: &AuditRecord, arguments: Option<(&Value, &str)>) -> String {
        let mut out = Vec::new();
        record.write_body(&mut out, arguments.map(|(v, d)| (Written::Value(v), d)));
        out.push(b'}');
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn members_are_written_in_order_camel_case_and_none_left_out() {
        let mut record = AuditRecord::new("tools/call");
        record.time = at(1_796_524_800, 123);
        record.principal = Some(AuditPrincipal::new().subject("alice").credential("ci-key"));
        record.session = Some("s1".into());
        record.request = Some("7".into());
        record.trace = Some("4bf92f3577b34da6a3ce929d0e0e4736".into());
        record.name = Some("fs/read".into());
        record.upstream = Some("fs".into());
        record.upstream_name = Some("read".into());
        record.outcome = AuditOutcome::IsError;
        record.error_kind = Some("upstream_error".into());
        record.error_message = Some("line\n\"two\"\u{1}".into());
        record.duration = Duration::from_micros(12_345);
        record.request_bytes = 10;
        record.response_bytes = 20;
        let args = serde_json::json!({"path": "/tmp"});
        let text = body(&record, Some((&args, "sha256:00")));
        assert_eq!(
            text,
            concat!(
                r#"{"time":"2026-12-06T02:40:00.123Z","principal":{"subject":"alice","credential":"ci-key"},"#,
                r#""session":"s1","request":"7","trace":"4bf92f3577b34da6a3ce929d0e0e4736","#,
                r#""method":"tools/call","name":"fs/read","upstream":"fs","upstreamName":"read","#,
                r#""outcome":"is_error","errorKind":"upstream_error","errorMessage":"line\n\"two\"\u0001","#,
                r#""durationMs":12.345,"requestBytes":10,"responseBytes":20,"#,
                r#""arguments":{"path":"/tmp"},"argumentsDigest":"sha256:00"}"#
            )
        );
        let parsed: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed["errorMessage"], "line\n\"two\"\u{1}");

        let bare = body(&AuditRecord::new("prompts/get"), None);
        assert!(bare.ends_with(
            r#""method":"prompts/get","outcome":"ok","durationMs":0.000,"requestBytes":0,"responseBytes":0}"#
        ));
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them_wherever_the_character_falls() {
        let base = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ";
        for special in ['"', '\\', '\n', '\u{1}', '\u{1f}', 'é'] {
            for at in [0, 1, 15, 16, 17, 31, 32, 40, base.len()] {
                let mut s = base.to_owned();
                s.insert(at, special);
                let mut out = Vec::new();
                json_str(&mut out, &s);
                let expected = serde_json::to_string(&s).unwrap();
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    expected,
                    "{special:?} at {at}"
                );
            }
        }
    }

    #[test]
    fn debug_does_not_show_the_arguments() {
        let mut record = AuditRecord::new("tools/call");
        record.arguments = Some(RawValue::from_string(r#"{"password":"p1"}"#.into()).unwrap());
        let debug = format!("{record:?}");
        assert!(!debug.contains("p1"), "{debug}");
        assert!(debug.contains("<17 bytes, unredacted>"), "{debug}");
    }

    #[test]
    fn outcomes_are_snake_case() {
        let all = [
            (AuditOutcome::Ok, "ok"),
            (AuditOutcome::IsError, "is_error"),
            (AuditOutcome::Error, "error"),
            (AuditOutcome::Refused, "refused"),
            (AuditOutcome::InputRequired, "input_required"),
            (AuditOutcome::Task, "task"),
        ];
        for (outcome, name) in all {
            assert_eq!(outcome.as_str(), name);
        }
    }

    #[test]
    fn long_error_messages_are_cut_at_a_character_boundary() {
        let mut record = AuditRecord::new("tools/call");
        record.error_message = Some("é".repeat(5000));
        let parsed: Value = serde_json::from_str(&body(&record, None)).unwrap();
        let message = parsed["errorMessage"].as_str().unwrap();
        assert!(message.len() <= crate::audit::queue::MAX_ERROR_MESSAGE + "…[TRUNCATED]".len());
        assert!(message.ends_with("…[TRUNCATED]"));
    }

    #[test]
    fn anchor_and_gap_bodies_lead_with_their_kind() {
        let mut anchor = anchor_body(at(0, 0), "audit.jsonl.1");
        anchor.push(b'}');
        assert_eq!(
            String::from_utf8(anchor).unwrap(),
            r#"{"kind":"anchor","time":"1970-01-01T00:00:00.000Z","previousFile":"audit.jsonl.1"}"#
        );
        let mut gap = gap_body(at(0, 0), 3);
        gap.push(b'}');
        assert_eq!(
            String::from_utf8(gap).unwrap(),
            r#"{"kind":"gap","time":"1970-01-01T00:00:00.000Z","dropped":3}"#
        );
    }
}
