//! The JSON-RPC 2.0 envelope.
//!
//! Payloads (`params`, `result`) are kept as raw JSON text ([`RawValue`]) so a
//! relay can route a message by its envelope and pass the payload on without
//! decoding or re-encoding it. Typed views come from [`Request::params_as`] and
//! [`Response::result_as`], or from [`crate::protocol`] by method.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::codes;
use crate::raw::ParamsLayout;

mod extra;
mod fast;
mod id;
mod read;
mod write;

pub use extra::Extra;
pub use id::{IdNumber, RequestId};

/// A request: expects exactly one response with the same id.
#[derive(Debug)]
pub struct Request {
    /// The id the response must echo.
    pub id: RequestId,
    /// The method name, e.g. `tools/call`.
    pub method: String,
    /// The raw params object, if any.
    pub params: Option<Box<RawValue>>,
    /// Envelope members JSON-RPC does not define, kept verbatim.
    pub extra: Extra,
    /// Where the params' members lie, as the reader found them.
    layout: Option<Box<ParamsLayout>>,
}

/// A notification: a request without an id, never answered.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The method name, e.g. `notifications/progress`.
    pub method: String,
    /// The raw params object, if any.
    pub params: Option<Box<RawValue>>,
    /// Envelope members JSON-RPC does not define, kept verbatim.
    pub extra: Extra,
}

/// A successful response.
#[derive(Debug, Clone)]
pub struct Response {
    /// The id of the request this answers.
    pub id: RequestId,
    /// The raw result. Which type it is depends on the method of the request it answers.
    pub result: Box<RawValue>,
    /// Envelope members JSON-RPC does not define, kept verbatim.
    pub extra: Extra,
}

/// An error response.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorResponse {
    /// The id of the request this answers; `None` (written as `null`) when it could not be read.
    pub id: Option<RequestId>,
    /// The error.
    pub error: ErrorObject,
    /// Envelope members JSON-RPC does not define, kept verbatim.
    pub extra: Extra,
}

/// The `error` member of an error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code; see [`crate::codes`].
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Additional information, as sent (`null` kept distinct from absent).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::serde_util::present"
    )]
    pub data: Option<Value>,
    /// Members JSON-RPC does not define, kept verbatim.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ErrorObject {
    /// An error with a code and message and no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
            extra: Extra::new(),
        }
    }

    /// Adds `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

/// Any one JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A successful response.
    Response(Response),
    /// An error response.
    Error(ErrorResponse),
}

/// What one transport frame carries: a single message or a batch (2025-03-26 allowed batches).
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// One message.
    Single(Message),
    /// A JSON array of messages.
    Batch(Vec<Message>),
}

/// Why bytes could not be read as a JSON-RPC frame.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnvelopeError {
    /// Not JSON at all (answer with [`codes::PARSE_ERROR`]).
    #[error("parse error: {0}")]
    Parse(serde_json::Error),
    /// JSON, but not a JSON-RPC 2.0 message (answer with [`codes::INVALID_REQUEST`]).
    #[error("invalid JSON-RPC message: {0}")]
    Invalid(String),
}

impl EnvelopeError {
    /// The JSON-RPC error code a peer should be answered with.
    pub fn code(&self) -> i64 {
        match self {
            EnvelopeError::Parse(_) => codes::PARSE_ERROR,
            EnvelopeError::Invalid(_) => codes::INVALID_REQUEST,
        }
    }
}

impl Frame {
    /// Reads one line as a frame when it is a common single message (see [`fast`]),
    /// keeping the line's buffer for a large payload instead of copying it; else gives the
    /// line back, to be read by [`Frame::parse`].
    pub(crate) fn from_line(line: Vec<u8>) -> Result<Frame, Vec<u8>> {
        let text = String::from_utf8(line).map_err(|e| e.into_bytes())?;
        if !text.trim_ascii_start().starts_with('{') {
            return Err(text.into_bytes());
        }
        fast::message_in(text)
            .map(Frame::Single)
            .map_err(String::into_bytes)
    }

    /// Reads one frame from bytes.
    pub fn parse(bytes: &[u8]) -> Result<Frame, EnvelopeError> {
        // Checked as UTF-8 once, whole: read from a `&[u8]`, serde_json checks every
        // string and every raw payload again (a tenth of reading a message).
        let Ok(text) = std::str::from_utf8(bytes) else {
            return match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
                Err(parse) => Err(EnvelopeError::Parse(parse)),
                Ok(_) => Err(EnvelopeError::Invalid("not UTF-8".into())),
            };
        };
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
        if first == Some(&b'{') {
            if let Some(m) = fast::message(text) {
                return Ok(Frame::Single(m));
            }
        }
        let parsed = if first == Some(&b'[') {
            serde_json::from_str::<Vec<Message>>(text).map(Frame::Batch)
        } else {
            serde_json::from_str::<Message>(text).map(Frame::Single)
        };
        match parsed {
            Ok(Frame::Batch(b)) if b.is_empty() => {
                Err(EnvelopeError::Invalid("empty batch".into()))
            }
            Ok(frame) => Ok(frame),
            // Only on failure: tell "not JSON" from "JSON but not JSON-RPC", which answer with different codes.
            Err(e) => match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
                Err(parse) => Err(EnvelopeError::Parse(parse)),
                Ok(_) => Err(EnvelopeError::Invalid(e.to_string())),
            },
        }
    }

    /// The messages in this frame, in order.
    pub fn into_messages(self) -> Vec<Message> {
        match self {
            Frame::Single(m) => vec![m],
            Frame::Batch(v) => v,
        }
    }
}

impl Serialize for Frame {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Frame::Single(m) => m.serialize(s),
            Frame::Batch(v) => v.serialize(s),
        }
    }
}

fn to_raw<T: Serialize + ?Sized>(value: &T) -> Result<Box<RawValue>, serde_json::Error> {
    serde_json::value::to_raw_value(value)
}

impl Request {
    /// A request with typed params.
    pub fn new<P: Serialize>(
        id: impl Into<RequestId>,
        method: impl Into<String>,
        params: &P,
    ) -> Result<Self, serde_json::Error> {
        Ok(Request::raw(id, method, Some(to_raw(params)?)))
    }

    /// A request with params as raw text (or none), and no other members.
    pub fn raw(
        id: impl Into<RequestId>,
        method: impl Into<String>,
        params: Option<Box<RawValue>>,
    ) -> Self {
        Request {
            id: id.into(),
            method: method.into(),
            params,
            extra: Extra::new(),
            layout: None,
        }
    }

    /// Takes what the reader of this request noted of where its params' members lie (a
    /// request read by [`Frame::parse`] has it). It describes the params as they were
    /// read: [`ParamsLayout::bind`] it to the text before use.
    pub fn take_params_layout(&mut self) -> Option<Box<ParamsLayout>> {
        self.layout.take()
    }

    /// Notes the layout of params just read into this request.
    pub(crate) fn with_layout(mut self, layout: Option<ParamsLayout>) -> Self {
        if let (Some(mut l), Some(p)) = (layout, self.params.as_deref()) {
            l.place(p.get());
            self.layout = Some(Box::new(l));
        }
        self
    }

    /// Decodes the params as `T` (absent params decode as `{}`).
    pub fn params_as<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.params.as_deref().map_or("{}", RawValue::get))
    }
}

impl Notification {
    /// A notification with typed params.
    pub fn new<P: Serialize>(
        method: impl Into<String>,
        params: &P,
    ) -> Result<Self, serde_json::Error> {
        Ok(Notification {
            method: method.into(),
            params: Some(to_raw(params)?),
            extra: Extra::new(),
        })
    }

    /// Decodes the params as `T` (absent params decode as `{}`).
    pub fn params_as<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.params.as_deref().map_or("{}", RawValue::get))
    }
}

impl Response {
    /// A response with a typed result.
    pub fn new<R: Serialize>(id: RequestId, result: &R) -> Result<Self, serde_json::Error> {
        Ok(Response {
            id,
            result: to_raw(result)?,
            extra: Extra::new(),
        })
    }

    /// Decodes the result as `T`. Pick `T` by the method of the request this answers.
    pub fn result_as<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.result.get())
    }
}

impl ErrorResponse {
    /// An error response to `id`.
    pub fn new(id: Option<RequestId>, error: ErrorObject) -> Self {
        ErrorResponse {
            id,
            error,
            extra: Extra::new(),
        }
    }
}

impl Message {
    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            _ => None,
        }
    }

    /// The raw params of a request or notification.
    pub fn params(&self) -> Option<&RawValue> {
        match self {
            Message::Request(r) => r.params.as_deref(),
            Message::Notification(n) => n.params.as_deref(),
            _ => None,
        }
    }

    /// The id of a request or response.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Message::Request(r) => Some(&r.id),
            Message::Response(r) => Some(&r.id),
            Message::Error(e) => e.id.as_ref(),
            Message::Notification(_) => None,
        }
    }

    /// Reads exactly one message (a batch is an error here; see [`Frame::parse`]).
    pub fn parse(bytes: &[u8]) -> Result<Message, EnvelopeError> {
        match Frame::parse(bytes)? {
            Frame::Single(m) => Ok(m),
            Frame::Batch(_) => Err(EnvelopeError::Invalid(
                "expected one message, got a batch".into(),
            )),
        }
    }

    /// Encodes the message as compact JSON.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_to(&mut out);
        out
    }
}

fn raw_eq(a: &RawValue, b: &RawValue) -> bool {
    a.get() == b.get()
}

impl Clone for Request {
    /// A copy without the params' layout: the copy's params lie elsewhere, where the
    /// layout could never be bound.
    fn clone(&self) -> Self {
        Request {
            id: self.id.clone(),
            method: self.method.clone(),
            params: self.params.clone(),
            extra: self.extra.clone(),
            layout: None,
        }
    }
}

impl PartialEq for Request {
    fn eq(&self, o: &Self) -> bool {
        self.id == o.id
            && self.method == o.method
            && opt_raw_eq(&self.params, &o.params)
            && self.extra == o.extra
    }
}

impl PartialEq for Notification {
    fn eq(&self, o: &Self) -> bool {
        self.method == o.method && opt_raw_eq(&self.params, &o.params) && self.extra == o.extra
    }
}

impl PartialEq for Response {
    fn eq(&self, o: &Self) -> bool {
        self.id == o.id && raw_eq(&self.result, &o.result) && self.extra == o.extra
    }
}

fn opt_raw_eq(a: &Option<Box<RawValue>>, b: &Option<Box<RawValue>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => raw_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("jsonrpc", "2.0")?;
        let extra = match self {
            Message::Request(r) => {
                m.serialize_entry("id", &r.id)?;
                m.serialize_entry("method", &r.method)?;
                if let Some(p) = &r.params {
                    m.serialize_entry("params", p)?;
                }
                &r.extra
            }
            Message::Notification(n) => {
                m.serialize_entry("method", &n.method)?;
                if let Some(p) = &n.params {
                    m.serialize_entry("params", p)?;
                }
                &n.extra
            }
            Message::Response(r) => {
                m.serialize_entry("id", &r.id)?;
                m.serialize_entry("result", &r.result)?;
                &r.extra
            }
            Message::Error(e) => {
                m.serialize_entry("id", &e.id)?;
                m.serialize_entry("error", &e.error)?;
                &e.extra
            }
        };
        for (k, v) in extra {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(text: &str) -> Value {
        let m = Message::parse(text.as_bytes()).expect("parses");
        serde_json::from_slice(&m.to_bytes()).expect("json")
    }

    #[test]
    fn ids_are_kept_exactly() {
        for text in [
            r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":"7","method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":-3,"result":{}}"#,
        ] {
            let expected: Value = serde_json::from_str(text).expect("json");
            assert_eq!(roundtrip(text), expected);
        }
        let big = r#"{"jsonrpc":"2.0","id":12345678901234567890123,"method":"ping"}"#;
        assert_eq!(
            Message::parse(big.as_bytes()).expect("parses").to_bytes(),
            br#"{"jsonrpc":"2.0","id":12345678901234567890123,"method":"ping"}"#
        );
        let m = Message::parse(br#"{"jsonrpc":"2.0","id":"7","method":"ping"}"#).expect("parses");
        assert_eq!(m.id(), Some(&RequestId::String("7".into())));
        assert_ne!(m.id(), Some(&RequestId::from(7)));
    }

    #[test]
    fn integer_ids_are_written_as_they_came() {
        for text in [
            "0",
            "7",
            "-3",
            "123456789012345678",
            "-0",
            "1e3",
            "1.0",
            "12345678901234567890123",
        ] {
            let id = RequestId::Number(IdNumber::from_text(text));
            assert_eq!(serde_json::to_string(&id).expect("id"), text);
        }
    }

    #[test]
    fn classifies_each_kind() {
        let kinds = [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
                "request",
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                "notification",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#,
                "response",
            ),
            (
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
                "error",
            ),
        ];
        for (text, kind) in kinds {
            let got = match Message::parse(text.as_bytes()).expect("parses") {
                Message::Request(_) => "request",
                Message::Notification(_) => "notification",
                Message::Response(_) => "response",
                Message::Error(_) => "error",
            };
            assert_eq!(got, kind, "{text}");
        }
    }

    #[test]
    fn parse_errors_and_invalid_requests_get_different_codes() {
        assert_eq!(
            Frame::parse(b"{not json").unwrap_err().code(),
            codes::PARSE_ERROR
        );
        for bad in [
            r#"{"id":1,"method":"x"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#,
            r#"[]"#,
            r#"42"#,
        ] {
            assert_eq!(
                Frame::parse(bad.as_bytes()).unwrap_err().code(),
                codes::INVALID_REQUEST,
                "{bad}"
            );
        }
    }

    #[test]
    fn batches_are_readable_and_unknown_envelope_members_survive() {
        let text = r#"[{"jsonrpc":"2.0","id":1,"method":"ping","x-trace":"a"},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":50}}]"#;
        let frame = Frame::parse(text.as_bytes()).expect("batch");
        let expected: Value = serde_json::from_str(text).expect("json");
        assert_eq!(serde_json::to_value(&frame).expect("encode"), expected);
        assert_eq!(frame.into_messages().len(), 2);
    }

    #[test]
    fn payloads_pass_through_byte_for_byte() {
        let text = r#"{"jsonrpc":"2.0","id":1,"result":{"b":1.50,"a":[ 1 ]}}"#;
        let m = Message::parse(text.as_bytes()).expect("parses");
        let Message::Response(r) = &m else {
            panic!("response")
        };
        assert_eq!(r.result.get(), r#"{"b":1.50,"a":[ 1 ]}"#);
    }
}
