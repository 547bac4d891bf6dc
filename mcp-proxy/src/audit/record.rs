//! One audited call, and how it is written: hand-written JSON with a fixed member order, so
//! the bytes a line's hash covers do not depend on a serializer's choices, and writing can
//! never fail or panic.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::value::RawValue;
use serde_json::Value;

/// Longest `errorMessage` written, in bytes: an upstream chooses its error text, and one
/// answering with megabytes must not make every audit line that long.
const MAX_ERROR_MESSAGE: usize = 4096;

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

    /// Writes the record as a JSON object without its closing brace (the chain adds
    /// `seq`, `prev` and `hash`), with the arguments already redacted and digested.
    pub(crate) fn write_body(&self, out: &mut Vec<u8>, arguments: Option<(Written<'_>, &str)>) {
        let mut obj = Object::open(out);
        obj.str("time", &rfc3339_millis(self.time));
        if let Some(principal) = &self.principal {
            obj.key("principal");
            let mut inner = Object::open(obj.out);
            inner.opt_str("subject", principal.subject.as_deref());
            inner.opt_str("credential", principal.credential.as_deref());
            inner.opt_str("issuer", principal.issuer.as_deref());
            inner.out.push(b'}');
        }
        obj.opt_str("session", self.session.as_deref());
        obj.opt_str("request", self.request.as_deref());
        obj.opt_str("trace", self.trace.as_deref());
        obj.str("method", &self.method);
        obj.opt_str("name", self.name.as_deref());
        obj.opt_str("upstream", self.upstream.as_deref());
        obj.opt_str("upstreamName", self.upstream_name.as_deref());
        obj.str("outcome", self.outcome.as_str());
        obj.opt_str("errorKind", self.error_kind.as_deref());
        if let Some(message) = &self.error_message {
            obj.str("errorMessage", &bounded(message, MAX_ERROR_MESSAGE));
        }
        let micros = self.duration.as_micros();
        let duration = format!("{}.{:03}", micros / 1000, micros % 1000);
        obj.raw("durationMs", duration.as_bytes());
        obj.raw("requestBytes", self.request_bytes.to_string().as_bytes());
        obj.raw("responseBytes", self.response_bytes.to_string().as_bytes());
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
        json_str(self.out, key);
        self.out.push(b':');
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
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
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
    out.push(b'"');
}

/// `s` cut to at most `max` bytes at a character boundary, marked when cut.
fn bounded(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if s.len() <= max {
        return s.into();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…[TRUNCATED]", &s[..end]).into()
}

/// `time` as RFC 3339 UTC with milliseconds: `2026-12-06T02:40:00.123Z`.
pub(crate) fn rfc3339_millis(time: SystemTime) -> String {
    let millis: i64 = match time.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
        // Before 1970 (a clock set wrong): floor, so -1 ms is 23:59:59.999 the day before.
        Err(before) => {
            let d = before.duration();
            let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
            let partial = i64::from(d.subsec_nanos() % 1_000_000 != 0);
            -(ms.saturating_add(partial))
        }
    };
    let days = millis.div_euclid(86_400_000);
    let in_day = millis.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`): eras of 400 years, years starting in March so the leap day is last.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days.saturating_add(719_468);
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    // Both are in range by construction (1..=31, 1..=12).
    (
        year,
        u32::try_from(month).unwrap_or(1),
        u32::try_from(day).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn times_are_rfc3339_utc_with_milliseconds() {
        assert_eq!(rfc3339_millis(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339_millis(at(951_782_400, 0)),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(
            rfc3339_millis(at(951_868_799, 999)),
            "2000-02-29T23:59:59.999Z"
        );
        assert_eq!(
            rfc3339_millis(at(951_868_800, 0)),
            "2000-03-01T00:00:00.000Z"
        );
        assert_eq!(
            rfc3339_millis(at(1_709_210_096, 789)),
            "2024-02-29T12:34:56.789Z"
        );
        assert_eq!(
            rfc3339_millis(at(1_796_524_800, 123)),
            "2026-12-06T02:40:00.123Z"
        );
        assert_eq!(
            rfc3339_millis(at(4_107_542_400, 0)),
            "2100-03-01T00:00:00.000Z"
        );
        assert_eq!(
            rfc3339_millis(at(1_735_689_599, 0)),
            "2024-12-31T23:59:59.000Z"
        );
        let before = UNIX_EPOCH - Duration::from_millis(1);
        assert_eq!(rfc3339_millis(before), "1969-12-31T23:59:59.999Z");
        let sub_milli = UNIX_EPOCH + Duration::from_micros(1_999);
        assert_eq!(rfc3339_millis(sub_milli), "1970-01-01T00:00:00.001Z");
    }

    #[test]
    fn civil_from_days_matches_known_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(-719_468), (0, 3, 1));
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
        assert!(message.len() <= MAX_ERROR_MESSAGE + "…[TRUNCATED]".len());
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
