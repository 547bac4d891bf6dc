//! Multi round-trip requests (2026-07-28): a server that needs input answers
//! [`InputRequiredResult`]; the client fulfils `inputRequests` and retries the
//! same request with `inputResponses` and the exact `requestState`.

use serde_json::{Map, Value};

use super::client_features::{CreateMessageRequestParams, ElicitRequestParams};
use super::common::{PaginatedRequestParams, ResultType};
use crate::meta::Meta;
use crate::model::wire_object;

wire_object! {
    /// One request the server needs the client to fulfil: `sampling/createMessage`,
    /// `elicitation/create` or `roots/list`.
    pub struct InputRequest {
        /// The method.
        req method: String,
        /// Its params, kept raw; see [`InputRequest::decode`].
        #[serde(deserialize_with = "crate::serde_util::present")]
        opt params: Value,
    }
}

/// A typed [`InputRequest`].
#[derive(Debug, Clone, PartialEq)]
pub enum InputRequestKind {
    /// `sampling/createMessage`
    Sampling(CreateMessageRequestParams),
    /// `elicitation/create`
    Elicitation(ElicitRequestParams),
    /// `roots/list`
    Roots(PaginatedRequestParams),
    /// A method this crate does not know.
    Other(String),
}

impl InputRequest {
    /// Decodes the params by method.
    pub fn decode(&self) -> Result<InputRequestKind, serde_json::Error> {
        let params = self
            .params
            .clone()
            .unwrap_or_else(|| Value::Object(Map::new()));
        Ok(match self.method.as_str() {
            "sampling/createMessage" => InputRequestKind::Sampling(serde_json::from_value(params)?),
            "elicitation/create" => InputRequestKind::Elicitation(serde_json::from_value(params)?),
            "roots/list" => InputRequestKind::Roots(serde_json::from_value(params)?),
            other => InputRequestKind::Other(other.to_owned()),
        })
    }
}

wire_object! {
    /// `resultType: "input_required"`: the server needs input before it can finish.
    /// At least one of `inputRequests` and `requestState` is present.
    pub struct InputRequiredResult {
        /// Requests to fulfil, by server-chosen key.
        opt input_requests: Map<String, Value>,
        /// Opaque state to echo exactly on the retry.
        opt request_state: String,
        /// Always `input_required`.
        opt result_type: ResultType,
        /// Result metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

impl InputRequiredResult {
    /// The input requests, decoded, in key order.
    pub fn requests(&self) -> Result<Vec<(String, InputRequest)>, serde_json::Error> {
        self.input_requests
            .iter()
            .flatten()
            .map(|(k, v)| Ok((k.clone(), serde_json::from_value(v.clone())?)))
            .collect()
    }
}
