//! Messages written as compact JSON by hand: the envelope is a handful of fixed names, an
//! id and a method, and the payload is raw text already, so going through a serializer
//! would only cost time. Only what is not raw (an error object, unknown envelope members)
//! is written by serde_json.

use serde::Serialize;
use serde_json::value::RawValue;

use super::{Extra, Frame, Message, RequestId};
use crate::raw::write_str;

impl Frame {
    /// Appends the frame as compact JSON (the same text as serializing it).
    pub fn write_to(&self, out: &mut Vec<u8>) {
        match self {
            Frame::Single(m) => m.write_to(out),
            Frame::Batch(items) => {
                out.push(b'[');
                for (i, m) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    m.write_to(out);
                }
                out.push(b']');
            }
        }
    }
}

impl Message {
    /// Appends the message as compact JSON (the same text as serializing it): payloads as
    /// they are, without being read.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        self.write_around(out, |out, payload| {
            out.extend_from_slice(payload.get().as_bytes())
        });
    }

    /// The payload (`params` or `result`), if the message has one.
    pub(crate) fn payload(&self) -> Option<&RawValue> {
        match self {
            Message::Request(r) => r.params.as_deref(),
            Message::Notification(n) => n.params.as_deref(),
            Message::Response(r) => Some(&r.result),
            Message::Error(_) => None,
        }
    }

    /// Takes the payload out, if the message has one: a request's or notification's
    /// `params` are left absent, a response's `result` `null`.
    pub(crate) fn take_payload(&mut self) -> Option<Box<RawValue>> {
        let null = || RawValue::NULL.to_owned();
        match self {
            Message::Request(r) => r.params.take(),
            Message::Notification(n) => n.params.take(),
            Message::Response(r) => Some(std::mem::replace(&mut r.result, null())),
            Message::Error(_) => None,
        }
    }

    /// Appends the message as [`Message::write_to`] does, with `payload` writing the
    /// payload (`params` or `result`) where it goes.
    pub(crate) fn write_around(
        &self,
        out: &mut Vec<u8>,
        mut payload: impl FnMut(&mut Vec<u8>, &RawValue),
    ) {
        out.extend_from_slice(br#"{"jsonrpc":"2.0""#);
        let extra = match self {
            Message::Request(r) => {
                write_id(out, &r.id);
                write_method(out, &r.method);
                if let Some(p) = &r.params {
                    out.extend_from_slice(br#","params":"#);
                    payload(out, p);
                }
                &r.extra
            }
            Message::Notification(n) => {
                write_method(out, &n.method);
                if let Some(p) = &n.params {
                    out.extend_from_slice(br#","params":"#);
                    payload(out, p);
                }
                &n.extra
            }
            Message::Response(r) => {
                write_id(out, &r.id);
                out.extend_from_slice(br#","result":"#);
                payload(out, &r.result);
                &r.extra
            }
            Message::Error(e) => {
                match &e.id {
                    Some(id) => write_id(out, id),
                    None => out.extend_from_slice(br#","id":null"#),
                }
                out.extend_from_slice(br#","error":"#);
                write_value(out, &e.error);
                &e.extra
            }
        };
        write_extra(out, extra);
        out.push(b'}');
    }
}

fn write_id(out: &mut Vec<u8>, id: &RequestId) {
    out.extend_from_slice(br#","id":"#);
    match id {
        RequestId::String(s) => write_str(out, s),
        RequestId::Number(n) => n.write_to(out),
    }
}

fn write_method(out: &mut Vec<u8>, method: &str) {
    out.extend_from_slice(br#","method":"#);
    write_str(out, method);
}

fn write_extra(out: &mut Vec<u8>, extra: &Extra) {
    for (k, v) in extra {
        out.push(b',');
        write_str(out, k);
        out.push(b':');
        write_value(out, v);
    }
}

fn write_value<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    if serde_json::to_writer(&mut *out, value).is_err() {
        // Only a map with non-string keys fails, which no member here is.
        out.extend_from_slice(b"null");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-written text is exactly what the serializer writes, for every kind.
    #[test]
    fn writes_what_the_serializer_writes() {
        for text in [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"b":1.50,"a":[1e400]}}"#,
            r#"{"jsonrpc":"2.0","id":"a\"b","method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":12345678901234567890123,"method":"ping","x":{"y":1}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","method":"n","params":[1,2]}"#,
            r#"{"jsonrpc":"2.0","id":-3,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":{"z":1,"a":2}}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]"#,
        ] {
            let frame = Frame::parse(text.as_bytes()).expect("parses");
            let mut out = Vec::new();
            frame.write_to(&mut out);
            assert_eq!(
                out,
                serde_json::to_vec(&frame).expect("serializes"),
                "{text}"
            );
        }
    }
}
