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
    let mut e = Envelope::default();
    Scanner::new(text).object(|s, key| member(s, key, &mut e))?;
    if !e.version {
        return None;
    }
    let owned = |raw: &str| prewritten(raw.to_owned());
    if let Some(p) = e.params {
        // An object or an array, as the full reader requires (else it says why).
        if !(p.starts_with('{') || p.starts_with('[')) {
            return None;
        }
    }
    let params: Option<Box<RawValue>> = e.params.map(owned);
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
