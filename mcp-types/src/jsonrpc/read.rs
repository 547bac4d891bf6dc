//! The full reader of one message: serde_json drives it, for every message the common
//! reader ([`fast`](super::fast)) leaves to it, with errors that say what is wrong.

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::id::id_from_raw;
use super::{
    ErrorObject, ErrorResponse, Extra, Message, Notification, Request, RequestId, Response,
};

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MessageVisitor)
    }
}

struct MessageVisitor;

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = Message;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC 2.0 message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
        let mut version: Option<std::borrow::Cow<'de, str>> = None;
        // Outer Option: was `id` present; inner: was it null.
        let mut id: Option<Option<RequestId>> = None;
        let mut method: Option<String> = None;
        let mut params: Option<Box<RawValue>> = None;
        let mut result: Option<Box<RawValue>> = None;
        let mut error: Option<ErrorObject> = None;
        let mut extra = Extra::new();
        // Keys and the version are read in place where they have no escapes: a message
        // costs no allocation for its envelope's names.
        while let Some(key) = map.next_key_seed(crate::raw::KeySeed)? {
            let dup = |k: &str| de::Error::custom(format!("duplicate member `{k}`"));
            match key.as_ref() {
                "jsonrpc" if version.is_none() => {
                    version = Some(map.next_value_seed(crate::raw::KeySeed)?)
                }
                "id" if id.is_none() => {
                    let raw: Box<RawValue> = map.next_value()?;
                    id = Some(id_from_raw(&raw).map_err(de::Error::custom)?);
                }
                "method" if method.is_none() => method = Some(map.next_value()?),
                "params" if params.is_none() => params = Some(map.next_value()?),
                "result" if result.is_none() => result = Some(map.next_value()?),
                "error" if error.is_none() => error = Some(map.next_value()?),
                k @ ("jsonrpc" | "id" | "method" | "params" | "result" | "error") => {
                    return Err(dup(k))
                }
                _ => {
                    extra.insert(key.into_owned(), map.next_value()?);
                }
            }
        }
        match version.as_deref() {
            Some("2.0") => {}
            Some(v) => {
                return Err(de::Error::custom(format!(
                    "unsupported jsonrpc version {v:?}"
                )))
            }
            None => return Err(de::Error::missing_field("jsonrpc")),
        }
        if let Some(p) = &params {
            let t = p.get().trim_start();
            if !(t.starts_with('{') || t.starts_with('[')) {
                return Err(de::Error::custom("params must be an object or array"));
            }
        }
        match (method, id, result, error) {
            (Some(method), Some(Some(id)), None, None) => {
                let mut r = Request::raw(id, method, params);
                r.extra = extra;
                Ok(Message::Request(r))
            }
            (Some(_), Some(None), None, None) => {
                Err(de::Error::custom("request id must not be null"))
            }
            (Some(method), None, None, None) => Ok(Message::Notification(Notification {
                method,
                params,
                extra,
            })),
            (None, Some(Some(id)), Some(result), None) if params.is_none() => {
                Ok(Message::Response(Response { id, result, extra }))
            }
            (None, Some(id), None, Some(error)) if params.is_none() => {
                Ok(Message::Error(ErrorResponse { id, error, extra }))
            }
            _ => Err(de::Error::custom(
                "not a request, notification, response or error response",
            )),
        }
    }
}
