//! Not part of the API: the checks the fuzz targets (`fuzz/fuzz_targets/*.rs`) run on each
//! input, here so that `tests/fuzz_regressions.rs` runs the kept corpus through exactly
//! the same code in `cargo test`. This is the lowest crate that reaches every parser the
//! targets cover. Each check panics when a property fails; otherwise it returns.
//!
//! Inputs that pick something (a pair of revisions, a method, a mode) do it with their
//! first bytes, the rest is the text under test, so the fuzzer's mutations of one never
//! disturb the other.

use std::borrow::Cow;
use std::collections::HashSet;

use mcp_client::sse::{SseEvent, SseParser};
use mcp_revisions::shapes::ObjectShape;
use mcp_revisions::{DowngradePolicy, TranslateError, Translator};
use mcp_types::protocol::{method, peek_result_type, TypedNotification, TypedRequest, TypedResult};
use mcp_types::raw::RawObject;
use mcp_types::{codes, headers, meta, Frame, Message, Request, Revision};
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use serde_json::Value;

/// A target's check of one input: returns, or panics saying which property failed.
pub type Check = fn(&[u8]);

/// Every target: its name (the file under `fuzz/fuzz_targets/`, the folder under
/// `fuzz/corpus/` and `fuzz/regressions/`) and its check.
pub const TARGETS: [(&str, Check); 6] = [
    ("frame", frame),
    ("typed", typed),
    ("translate", translate),
    ("sse", sse),
    ("headers", headers),
    ("config", config),
];

/// Every method name the crates know, requests and notifications, for the targets that
/// choose one by a byte. Index `METHODS.len()` (and beyond, modulo) is a vendor method.
pub const METHODS: [&str; 35] = [
    method::INITIALIZE,
    method::INITIALIZED,
    method::PING,
    method::DISCOVER,
    method::SUBSCRIPTIONS_LISTEN,
    method::SUBSCRIPTIONS_ACKNOWLEDGED,
    method::TOOLS_LIST,
    method::TOOLS_CALL,
    method::TOOLS_LIST_CHANGED,
    method::PROMPTS_LIST,
    method::PROMPTS_GET,
    method::PROMPTS_LIST_CHANGED,
    method::RESOURCES_LIST,
    method::RESOURCES_TEMPLATES_LIST,
    method::RESOURCES_READ,
    method::RESOURCES_SUBSCRIBE,
    method::RESOURCES_UNSUBSCRIBE,
    method::RESOURCES_LIST_CHANGED,
    method::RESOURCES_UPDATED,
    method::COMPLETION_COMPLETE,
    method::LOGGING_SET_LEVEL,
    method::LOGGING_MESSAGE,
    method::SAMPLING_CREATE_MESSAGE,
    method::ELICITATION_CREATE,
    method::ELICITATION_COMPLETE,
    method::ROOTS_LIST,
    method::ROOTS_LIST_CHANGED,
    method::PROGRESS,
    method::CANCELLED,
    method::TASKS_GET,
    method::TASKS_RESULT,
    method::TASKS_LIST,
    method::TASKS_CANCEL,
    method::TASKS_UPDATE,
    method::TASKS_STATUS,
];

/// The method a selector byte names (see [`METHODS`]).
fn pick_method(b: u8) -> &'static str {
    // One more than the table: a method no revision defines.
    METHODS
        .get(usize::from(b) % (METHODS.len() + 1))
        .copied()
        .unwrap_or("vendor/x")
}

fn is_json(text: &[u8]) -> bool {
    serde_json::from_slice::<IgnoredAny>(text).is_ok()
}

/// `frame`: one line of the line transport (stdio), as `LineTransport` reads it
/// (`Frame::parse` of the trimmed line). A parse error is `-32700` or `-32600`; a frame
/// is written back (`write_to`) exactly as the serializer writes it, the line transport's
/// newline dropping keeps it the same frame, and what is written reads back to itself.
pub fn frame(data: &[u8]) {
    let line = data.trim_ascii();
    let frame = match Frame::parse(line) {
        Ok(f) => f,
        Err(e) => {
            let code = e.code();
            assert!(
                code == codes::PARSE_ERROR || code == codes::INVALID_REQUEST,
                "unexpected code {code}"
            );
            return;
        }
    };
    let mut written = Vec::new();
    frame.write_to(&mut written);
    let serialized = serde_json::to_vec(&frame).expect("a parsed frame serializes");
    assert_eq!(
        String::from_utf8_lossy(&written),
        String::from_utf8_lossy(&serialized),
        "write_to differs from the serializer"
    );
    // What the line transport sends: raw newlines can only be whitespace in JSON text.
    let one_line: Vec<u8> = written
        .iter()
        .copied()
        .filter(|b| *b != b'\n' && *b != b'\r')
        .collect();
    let again = Frame::parse(&one_line).expect("a written frame parses");
    let mut rewritten = Vec::new();
    again.write_to(&mut rewritten);
    assert_eq!(
        String::from_utf8_lossy(&rewritten),
        String::from_utf8_lossy(&one_line),
        "a written frame does not read back to itself"
    );
    for m in again.into_messages() {
        let _ = (m.method(), m.params(), m.id());
        let bytes = m.to_bytes();
        assert!(is_json(&bytes), "to_bytes wrote invalid JSON");
    }
}

/// Re-encodes a decoded payload and decodes it again: the same value must come back.
fn same_after_reencoding<T: PartialEq + std::fmt::Debug>(
    decoded: &T,
    encoded: Value,
    decode: impl Fn(&RawValue) -> Option<T>,
) {
    let raw = serde_json::value::to_raw_value(&encoded).expect("a Value encodes");
    let again = decode(&raw).unwrap_or_else(|| panic!("re-encoded {raw} does not decode"));
    assert_eq!(*decoded, again, "decoding is not stable through {raw}");
}

/// `typed`: byte 0 picks a method, the rest is a JSON payload. It is decoded as that
/// method's request params, notification params and result (typed decoding is by method,
/// the same for every revision: what a revision may carry is `mcp-revisions`' data), and
/// whatever decodes re-encodes to a payload that decodes to the same value.
pub fn typed(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let method = pick_method(sel);
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let Ok(raw) = serde_json::from_str::<Box<RawValue>>(text) else {
        return;
    };
    let _ = TypedRequest::decode(method, None);
    let _ = TypedNotification::decode(method, None);
    if let Ok(t) = TypedRequest::decode(method, Some(&raw)) {
        same_after_reencoding(&t, t.to_value(), |r| {
            TypedRequest::decode(method, Some(r)).ok()
        });
    }
    if let Ok(t) = TypedNotification::decode(method, Some(&raw)) {
        same_after_reencoding(&t, t.to_value(), |r| {
            TypedNotification::decode(method, Some(r)).ok()
        });
    }
    if let Ok(t) = TypedResult::decode(method, &raw) {
        same_after_reencoding(&t, t.to_value(), |r| TypedResult::decode(method, r).ok());
    }
    if let Ok(t) = TypedResult::decode_task_created(method, &raw) {
        same_after_reencoding(&t, t.to_value(), |r| {
            TypedResult::decode_task_created(method, r).ok()
        });
    }
    let _ = peek_result_type(&raw);
}

/// The default policy, claiming its `adjust` acts on anything: no shortcut, a full walk.
struct FullWalk;

impl DowngradePolicy for FullWalk {
    fn adjust(&self, _: &ObjectShape, _: &mut RawObject<'_>, _: Revision, _: Revision) -> bool {
        false
    }

    fn adjusts_objects(&self) -> bool {
        true
    }
}

/// A translation's outcome as text: the output (checked to be JSON), or the error.
fn outcome(r: Result<Cow<'_, RawValue>, TranslateError>) -> String {
    match r {
        Ok(out) => {
            assert!(
                is_json(out.get().as_bytes()),
                "translation wrote invalid JSON: {}",
                out.get()
            );
            out.get().to_owned()
        }
        Err(e) => format!("error: {e}"),
    }
}

fn message_outcome(r: Result<Message, TranslateError>) -> String {
    match r {
        Ok(m) => {
            let bytes = m.to_bytes();
            let back = Message::parse(&bytes).unwrap_or_else(|e| {
                panic!(
                    "a translated message does not parse ({e}): {}",
                    String::from_utf8_lossy(&bytes)
                )
            });
            assert_eq!(back.to_bytes(), bytes, "a translated message is not stable");
            String::from_utf8_lossy(&bytes).into_owned()
        }
        Err(e) => format!("error: {e}"),
    }
}

/// `translate`: byte 0 picks the ordered pair of revisions (`from`, `to`: all 25; for
/// `from == to` the canonical translator, which walks anyway), byte 1 what to translate
/// (params, a result, a request with these params, a whole message), byte 2 the method
/// (for a message, the method a response answers); the rest is the JSON. Never a panic;
/// every output is JSON (a message reads back to itself); the shortcut (untriggered
/// subtrees kept unread) gives exactly what the full walk gives.
pub fn translate(data: &[u8]) {
    let [pair, kind, sel, rest @ ..] = data else {
        return;
    };
    let from = Revision::ALL[usize::from(*pair) % 5];
    let to = Revision::ALL[usize::from(*pair) / 5 % 5];
    let method = pick_method(*sel);
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let translator = |full: bool| {
        let t = if from == to {
            Translator::canonical_to(to)
        } else {
            Translator::new(from, to)
        };
        if full {
            t.with_policy(&FullWalk)
        } else {
            t
        }
    };
    let (fast, full) = (translator(false), translator(true));
    match kind % 4 {
        0 | 1 => {
            let Ok(raw) = serde_json::from_str::<Box<RawValue>>(text) else {
                return;
            };
            let run = |t: &Translator<'_>| {
                if kind % 4 == 0 {
                    outcome(t.params_raw(method, &raw))
                } else {
                    outcome(t.result_raw(method, &raw))
                }
            };
            assert_eq!(run(&fast), run(&full), "shortcut and full walk differ");
        }
        k => {
            let msg = if k == 2 {
                let Ok(raw) = serde_json::from_str::<Box<RawValue>>(text) else {
                    return;
                };
                let Ok(name) = serde_json::to_string(method) else {
                    return;
                };
                let line = format!(r#"{{"jsonrpc":"2.0","id":1,"method":{name},"params":{raw}}}"#);
                Message::parse(line.as_bytes())
            } else {
                Message::parse(text.as_bytes())
            };
            let Ok(msg) = msg else {
                return;
            };
            let a = message_outcome(fast.message(&msg, Some(method)));
            let b = message_outcome(full.message(&msg, Some(method)));
            assert_eq!(a, b, "shortcut and full walk differ");
        }
    }
}

/// `sse`: byte 0 sets a chunk size (1 to 64), the rest is an `text/event-stream` body.
/// Fed whole or in chunks of that size, the parser gives the same events.
pub fn sse(data: &[u8]) {
    let Some((&size, body)) = data.split_first() else {
        return;
    };
    // No limit here: the events, not the bound, are under test.
    let whole = SseParser::with_limit(usize::MAX)
        .feed(body)
        .unwrap_or_default();
    let mut parser = SseParser::with_limit(usize::MAX);
    let mut pieces: Vec<SseEvent> = Vec::new();
    for chunk in body.chunks(usize::from(size % 64) + 1) {
        pieces.extend(parser.feed(chunk).unwrap_or_default());
    }
    assert_eq!(whole, pieces, "chunking changed the events");
    for e in &whole {
        assert!(
            !e.data.contains('\r') || body.contains(&b'\r'),
            "a CR that was not in the body"
        );
    }
}

/// A header value as HTTP carries it unchanged: visible ASCII, spaces and tabs, none at
/// either end (those would be taken as optional whitespace).
fn header_safe(v: &str) -> bool {
    v.bytes().all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
        && !v.starts_with([' ', '\t'])
        && !v.ends_with([' ', '\t'])
}

/// RFC 9110 `tchar`, written out again rather than taken from the code under test.
fn tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `headers`: byte 0 picks a mode.
/// - 0: the rest is a string: `encode_value` gives a value HTTP carries unchanged, and
///   `decode_value` gives the string back; `decode_value` of the string itself never fails
///   but for a malformed sentinel.
/// - 1: the rest is a tool's `inputSchema`, then byte `0xFF`, then its arguments:
///   `header_params` finds only token names, unique ignoring case, each under `properties`
///   alone; each mirrored argument (`param_value`) is a safe value that decodes to the
///   argument's text.
/// - 2 and 3: the rest is byte (method), params, `0xFF`, header lines `name:value`: the
///   server's 2026 header check (`check_modern_headers`) never panics and answers
///   `-32020` or `-32602`; and headers mirrored from the body as the client mirrors them
///   always pass it when the body has the envelope.
pub fn headers(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 4 {
        0 => {
            let Ok(s) = std::str::from_utf8(rest) else {
                return;
            };
            let enc = headers::encode_value(s);
            assert!(
                s.is_empty() || (header_safe(&enc) && !enc.is_empty()),
                "{enc:?}"
            );
            assert_eq!(headers::decode_value(&enc).as_deref(), Some(s), "{enc:?}");
            let _ = headers::decode_value(s);
        }
        1 => header_params(rest),
        _ => server_headers(rest),
    }
}

fn header_params(rest: &[u8]) {
    let mut parts = rest.splitn(2, |b| *b == 0xff);
    let schema = parts.next().unwrap_or_default();
    let Ok(schema) = serde_json::from_slice::<Value>(schema) else {
        return;
    };
    let Ok(params) = headers::header_params(&schema) else {
        return;
    };
    let mut seen = HashSet::new();
    for p in &params {
        assert!(!p.header.is_empty() && p.header.bytes().all(tchar), "{p:?}");
        assert!(seen.insert(p.header.to_ascii_lowercase()), "{p:?} twice");
        assert!(!p.path.is_empty(), "{p:?} on the root");
        let mut at = &schema;
        for k in &p.path {
            at = at
                .get("properties")
                .and_then(|props| props.get(k))
                .unwrap_or_else(|| panic!("{p:?} is not under properties alone"));
        }
        assert_eq!(
            at.get("x-mcp-header").and_then(Value::as_str),
            Some(&*p.header)
        );
    }
    let args = parts
        .next()
        .and_then(|a| serde_json::from_slice::<serde_json::Map<String, Value>>(a).ok())
        .unwrap_or_default();
    for p in &params {
        let Some(v) = headers::param_value(&args, &p.path) else {
            continue;
        };
        assert!(v.is_empty() || header_safe(&v), "{v:?}");
        let decoded = headers::decode_value(&v).expect("a mirrored value decodes");
        let mut arg = args.get(&p.path[0]);
        for k in &p.path[1..] {
            arg = arg.and_then(|a| a.get(k));
        }
        let expected = match arg {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => unreachable!("a value for an absent argument"),
        };
        assert_eq!(decoded, expected);
    }
}

fn server_headers(rest: &[u8]) {
    let Some((&sel, rest)) = rest.split_first() else {
        return;
    };
    let method = pick_method(sel);
    let mut parts = rest.splitn(2, |b| *b == 0xff);
    let params = parts.next().unwrap_or_default();
    let Ok(params) = std::str::from_utf8(params) else {
        return;
    };
    let Ok(params) = serde_json::from_str::<Box<RawValue>>(params) else {
        return;
    };
    let request = Request::raw(1, method, Some(params));
    let lines = parts.next().unwrap_or_default();
    let pairs: Vec<(&str, &[u8])> = lines
        .split(|b| *b == b'\n')
        .filter_map(|l| {
            let colon = l.iter().position(|b| *b == b':')?;
            let name = std::str::from_utf8(&l[..colon]).ok()?;
            Some((name, &l[colon + 1..]))
        })
        .collect();
    if let Err((code, _)) = mcp_server::http::fuzzing::check_modern_headers(&pairs, &request) {
        assert!(
            code == codes::HEADER_MISMATCH || code == codes::INVALID_PARAMS,
            "code {code}"
        );
    }
    // The client's mirror of this body (mcp-client's `HttpTransport::mirror`).
    let Some(mirrored) = mirror(&request) else {
        return;
    };
    let pairs: Vec<(&str, &[u8])> = mirrored.iter().map(|(n, v)| (*n, v.as_bytes())).collect();
    if let Err(e) = mcp_server::http::fuzzing::check_modern_headers(&pairs, &request) {
        panic!("headers mirrored from the body refused: {e:?} ({mirrored:?})");
    }
}

/// Headers mirrored from a body the way the client does, or `None` when the body lacks
/// what the server requires (the envelope, a string name), or holds duplicate keys where
/// it is read (parsers may disagree on which one counts), or a text HTTP cannot carry.
fn mirror(request: &Request) -> Option<Vec<(&'static str, String)>> {
    let params = RawObject::from_raw(request.params.as_deref()?).ok()?;
    let unique = |o: &RawObject<'_>| o.keys().collect::<HashSet<_>>().len() == o.len();
    let meta_obj = RawObject::from_raw(params.get("_meta")?).ok()?;
    if !unique(&params) || !unique(&meta_obj) {
        return None;
    }
    let meta: serde_json::Map<String, Value> =
        serde_json::from_str(params.get("_meta")?.get()).ok()?;
    let version = meta.get(meta::PROTOCOL_VERSION)?.as_str()?;
    meta.get(meta::CLIENT_CAPABILITIES)?;
    if !header_safe(version) || !header_safe(&request.method) || version.is_empty() {
        return None;
    }
    let mut out = vec![
        (headers::PROTOCOL_VERSION, version.to_owned()),
        (headers::METHOD, request.method.clone()),
    ];
    if let Some(field) = headers::name_member(&request.method) {
        let name = params.get_str(field)?;
        out.push((headers::NAME, headers::encode_value(&name)));
    }
    Some(out)
}

/// `config`: the bytes as a configuration file. Never a panic; an error names where;
/// each upstream's exposed names stay within the configured length and the TOOL-03
/// characters (plus those of the configured separator).
pub fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (upstreams, options) = match crate::config::parse(&text, "fuzz.json") {
        Ok(parsed) => (parsed.upstreams, parsed.options),
        Err(e) => {
            assert!(!e.location.is_empty() && !e.problem.is_empty(), "{e:?}");
            let _ = e.to_string();
            return;
        }
    };
    let separator: Option<String> = serde_json::from_str::<Value>(&text).ok().and_then(|v| {
        v.get("gateway")?
            .get("separator")?
            .as_str()
            .map(str::to_owned)
    });
    let max_len = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| v.get("gateway")?.get("maxNameLength")?.as_u64())
        .unwrap_or(64);
    for u in &upstreams {
        let ns = u
            .namespace
            .clone()
            .unwrap_or_else(|| options.namespacing.namespace_for_key(&u.key));
        for tool in [u.key.as_str(), "tool", ""] {
            let name = options.namespacing.expose(&ns, tool);
            assert!(name.chars().count() as u64 <= max_len, "{name:?} too long");
            let allowed = |c: char| {
                c.is_ascii_alphanumeric()
                    || c == '_'
                    || c == '-'
                    || separator.as_deref().is_some_and(|s| s.contains(c))
            };
            assert!(name.chars().all(allowed), "{name:?}");
        }
    }
}
