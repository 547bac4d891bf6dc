//! The common message read without serde: the reader [`Message`]'s `Deserialize` would
//! be, for a request, notification or response with nothing unusual about it.
//!
//! Anything else (an error response, an escaped name or method, a null or escaped id,
//! members JSON-RPC does not define, a repeated member, a version other than `"2.0"`,
//! text [`Scanner`] refuses) gives `None`, and [`Frame::parse`](super::Frame::parse)
//! reads the text with serde_json as before: its answer, and its error, stand.

use serde_json::value::RawValue;

use super::{Extra, IdNumber, Message, Notification, Request, RequestId, Response};
use crate::raw::scan::Scanner;
use crate::raw::{prewritten, read_laid_out, ParamsLayout};

/// The members read, each at most once.
#[derive(Default)]
struct Envelope<'a> {
    version: bool,
    id: Option<RequestId>,
    method: Option<&'a str>,
    params: Option<&'a str>,
    /// Where the params' members lie, when they are an object read with its layout.
    layout: Option<ParamsLayout>,
    result: Option<&'a str>,
}

/// `text` as one message, when it is a common one.
pub(super) fn message(text: &str) -> Option<Message> {
    message_with(text, |raw| prewritten(raw.to_owned()))
}

/// A payload (`params` or `result`) at least this large keeps the buffer of the line it
/// came in ([`message_in`]).
pub(super) const OWN_PAYLOAD_BYTES: usize = 64 * 1024;

/// `line` as one message, when it is a common one, as [`message`] reads it; a payload of
/// [`OWN_PAYLOAD_BYTES`] or more is moved to the front of the line's own buffer and kept there
/// rather than copied, so that a large message is held once, not twice, while it is read.
/// The line is given back when it is not a common message.
pub(super) fn message_in(mut line: String) -> Result<Message, String> {
    let base = line.as_ptr() as usize;
    let mut span = None;
    // The large payload is a placeholder until the line is done with.
    let built = message_with(&line, |raw| {
        if raw.len() < OWN_PAYLOAD_BYTES || span.is_some() {
            return prewritten(raw.to_owned());
        }
        let start = raw.as_ptr() as usize - base;
        span = Some(start..start + raw.len());
        RawValue::NULL.to_owned()
    });
    let Some(mut message) = built else {
        return Err(line);
    };
    let Some(span) = span else {
        return Ok(message);
    };
    line.truncate(span.end);
    line.drain(..span.start);
    // Shrunk in place: what lay past the payload is given back.
    line.shrink_to_fit();
    let payload = prewritten(line);
    match &mut message {
        Message::Request(r) => {
            if let Some(layout) = r.layout.as_deref_mut() {
                layout.place(payload.get());
            }
            r.params = Some(payload);
        }
        Message::Notification(n) => n.params = Some(payload),
        Message::Response(r) => r.result = payload,
        Message::Error(_) => {}
    }
    Ok(message)
}

/// `text` as one message, when it is a common one, its payload made owned by `owned`.
/// Inlined: each caller's `owned` is compiled into the reader.
#[inline(always)]
fn message_with(text: &str, mut owned: impl FnMut(&str) -> Box<RawValue>) -> Option<Message> {
    let mut e = Envelope::default();
    Scanner::new(text).object(|s, key| member(s, key, &mut e))?;
    if !e.version {
        return None;
    }
    if let Some(p) = e.params {
        // An object or an array, as the full reader requires (else it says why).
        if !(p.starts_with('{') || p.starts_with('[')) {
            return None;
        }
    }
    let params: Option<Box<RawValue>> = e.params.map(&mut owned);
    Some(match (e.method, e.id, e.result) {
        (Some(method), Some(id), None) => {
            Message::Request(Request::raw(id, method, params).with_layout(e.layout))
        }
        (Some(method), None, None) => Message::Notification(Notification {
            method: method.to_owned(),
            params,
            extra: Extra::new(),
        }),
        (None, Some(id), Some(result)) if params.is_none() => Message::Response(Response {
            id,
            result: owned(result),
            extra: Extra::new(),
        }),
        _ => return None,
    })
}

/// Reads one member's value into `e`.
fn member<'a>(s: &mut Scanner<'a>, key: &str, e: &mut Envelope<'a>) -> Option<()> {
    match key {
        "jsonrpc" if !e.version => {
            let (v, escaped) = s.string()?;
            e.version = !escaped && v == "2.0";
            e.version.then_some(())
        }
        "id" if e.id.is_none() => {
            e.id = Some(id(s)?);
            Some(())
        }
        "method" if e.method.is_none() => {
            let (m, escaped) = s.string()?;
            e.method = Some(m).filter(|_| !escaped);
            e.method.map(|_| ())
        }
        "params" if e.params.is_none() => {
            let start = s.position();
            match read_laid_out(s) {
                Some((text, layout)) => {
                    e.params = Some(text);
                    e.layout = Some(layout);
                }
                // Not laid out: read plainly, whose verdict stands.
                None => {
                    s.rewind(start);
                    e.params = Some(s.value()?);
                }
            }
            Some(())
        }
        "result" if e.result.is_none() => {
            e.result = Some(s.value()?);
            Some(())
        }
        _ => None,
    }
}

/// A string id without escapes, or a number id as written.
fn id(s: &mut Scanner<'_>) -> Option<RequestId> {
    s.ws();
    match s.peek()? {
        b'"' => {
            let (text, escaped) = s.string()?;
            (!escaped).then(|| RequestId::String(text.to_owned()))
        }
        b'-' | b'0'..=b'9' => {
            let text = s.value()?;
            Some(RequestId::Number(IdNumber::from_text(text)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::Frame;
    use super::*;

    /// What the full reader makes of `text`, written back.
    fn by_serde(text: &str) -> Option<Vec<u8>> {
        serde_json::from_str::<Message>(text)
            .ok()
            .map(|m| m.to_bytes())
    }

    #[test]
    fn common_messages_read_as_the_full_reader_reads_them() {
        for text in [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a","arguments":{"n":123456789012345678901234567890,"z":{"b":1,"a":2}}}}"#,
            r#"{"jsonrpc":"2.0","id":"x-1","method":"ping"}"#,
            r#" { "method" : "notifications/initialized" , "jsonrpc" : "2.0" } "#,
            r#"{"jsonrpc":"2.0","method":"n","params":[1.10000000000000000000001]}"#,
            r#"{"id":18446744073709551616,"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"\"é\""}]}}"#,
            r#"{"jsonrpc":"2.0","id":-1.5e3,"result":{}}"#,
        ] {
            let fast = message(text).unwrap_or_else(|| panic!("taken: {text}"));
            assert_eq!(Some(fast.to_bytes()), by_serde(text), "{text}");
        }
    }

    #[test]
    fn a_large_payload_keeps_the_lines_buffer() {
        let pad = "y".repeat(OWN_PAYLOAD_BYTES);
        for text in [
            format!(
                r#" {{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"a","arguments":{{"t":"{pad}"}}}}}} "#
            ),
            format!(r#"{{"jsonrpc":"2.0","method":"n","params":["{pad}"]}}"#),
            format!(r#"{{"id":"x","result":{{"t":"{pad}","n":1.50}},"jsonrpc":"2.0"}}"#),
            r#"{"jsonrpc":"2.0","id":1,"result":{"small":true}}"#.to_owned(),
        ] {
            let by_copy = message(&text).expect("common").to_bytes();
            let line = text.clone();
            let start = line.as_ptr();
            let Ok(m) = message_in(line) else {
                panic!("common: {}", &text[..40])
            };
            assert_eq!(m.to_bytes(), by_copy);
            let kept = m.payload().map(|p| p.get().as_ptr()) == Some(start);
            assert_eq!(kept, text.len() > OWN_PAYLOAD_BYTES, "{}", &text[..40]);
            if let Message::Request(r) = &m {
                let layout = r.layout.as_deref().expect("laid out");
                let params = r.params.as_deref().expect("params");
                assert!(
                    layout.bind(params).is_some(),
                    "the layout follows the params"
                );
            }
        }
        let odd = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}"#;
        assert_eq!(message_in(odd.to_owned()).err().as_deref(), Some(odd));
    }

    #[test]
    fn the_unusual_is_left_to_the_full_reader() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":"\u0031","method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","extra":true}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x"} x"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":01,"method":"x"}"#,
            r#"{"id":1,"method":"x"}"#,
            r#"{}"#,
        ] {
            assert!(message(text).is_none(), "{text}");
            // And the full reader's verdict is what a caller gets.
            let whole = Frame::parse(text.as_bytes()).map(|f| match f {
                Frame::Single(m) => m.to_bytes(),
                Frame::Batch(_) => Vec::new(),
            });
            assert_eq!(whole.ok(), by_serde(text), "{text}");
        }
    }
}
