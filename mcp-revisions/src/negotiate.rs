//! Version negotiation in both eras, and telling a peer's era from how it opens.

use mcp_types::protocol::method;
use mcp_types::{codes, meta, Era, ErrorObject, Message, Revision};
use serde_json::{json, Value};

/// Legacy era, server side: the version to answer `initialize` with.
///
/// If the client's requested version is one the server supports, the server answers
/// with it; otherwise it counter-offers the newest legacy version it supports, and the
/// client decides whether to continue. `None` when the server supports no legacy version.
pub fn answer_initialize(requested: &str, supported: &[Revision]) -> Option<Revision> {
    let legacy = || supported.iter().copied().filter(|r| r.era() == Era::Legacy);
    Revision::parse(requested)
        .ok()
        .filter(|r| r.era() == Era::Legacy && supported.contains(r))
        .or_else(|| legacy().max())
}

/// Why a client cannot continue with a server's answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NegotiationError {
    /// The server answered `initialize` with a version the client does not support; the
    /// client should disconnect.
    #[error("server chose protocol version {offered:?}, which this client does not support")]
    Unsupported {
        /// What the server offered.
        offered: String,
    },
}

/// Legacy era, client side: accepts the server's `initialize` answer if the client supports it.
pub fn accept_initialize_answer(
    offered: &str,
    supported: &[Revision],
) -> Result<Revision, NegotiationError> {
    Revision::parse(offered)
        .ok()
        .filter(|r| supported.contains(r))
        .ok_or_else(|| NegotiationError::Unsupported {
            offered: offered.to_owned(),
        })
}

/// 2026-07-28, server side: checks the `io.modelcontextprotocol/protocolVersion` of a
/// request's `_meta`. An unsupported (or missing) version gets the `-32022` error whose
/// `data` lists `supported` (newest first) and echoes `requested`.
pub fn check_request_version(
    requested: Option<&str>,
    supported: &[Revision],
) -> Result<Revision, ErrorObject> {
    if let Some(r) = requested.and_then(|s| Revision::parse(s).ok()) {
        if supported.contains(&r) {
            return Ok(r);
        }
    }
    Err(unsupported_version_error(requested, supported))
}

/// The `UnsupportedProtocolVersionError` (`-32022`) for `requested`.
pub fn unsupported_version_error(requested: Option<&str>, supported: &[Revision]) -> ErrorObject {
    let mut list: Vec<Revision> = supported.to_vec();
    list.sort_unstable_by(|a, b| b.cmp(a));
    list.dedup();
    ErrorObject::new(
        codes::UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
    )
    .with_data(json!({
        "supported": list.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
        // The schema types `requested` as a string: a request that named none requested "".
        "requested": requested.unwrap_or_default(),
    }))
}

/// 2026-07-28, client side: the version to retry with after a `-32022` error, the newest
/// one both sides support.
pub fn retry_version(error: &ErrorObject, supported: &[Revision]) -> Option<Revision> {
    if error.code != codes::UNSUPPORTED_PROTOCOL_VERSION {
        return None;
    }
    error
        .data
        .as_ref()?
        .get("supported")?
        .as_array()?
        .iter()
        .filter_map(|v| v.as_str().and_then(|s| Revision::parse(s).ok()))
        .filter(|r| supported.contains(r))
        .max()
}

/// A dual-era server tells a client's era from its first request: `initialize` selects the
/// legacy era; a request whose `_meta` carries a protocol version (or `server/discover`) the
/// modern one. `None` for anything else (a notification, a legacy request sent before
/// `initialize`).
pub fn era_of_opening(first: &Message) -> Option<Era> {
    let Message::Request(r) = first else {
        return None;
    };
    if r.method == method::INITIALIZE {
        return Some(Era::Legacy);
    }
    if r.method == method::DISCOVER || request_protocol_version(first).is_some() {
        return Some(Era::Modern);
    }
    None
}

/// The `io.modelcontextprotocol/protocolVersion` in a request's `_meta`, if any.
pub fn request_protocol_version(msg: &Message) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(rename = "_meta")]
        meta: Option<serde_json::Map<String, Value>>,
    }
    let Message::Request(r) = msg else {
        return None;
    };
    let p: Params = serde_json::from_str(r.params.as_deref()?.get()).ok()?;
    p.meta?
        .get(meta::PROTOCOL_VERSION)?
        .as_str()
        .map(str::to_owned)
}

/// Whether `code` is one only a 2026-07-28 server sends (`-32020`…`-32022`): an answer
/// carrying it identifies a modern server.
pub fn is_modern_error(code: i64) -> bool {
    crate::errors::ERROR_CODES
        .iter()
        .any(|c| c.code == code && c.revisions == crate::shapes::RevisionSet::parse("....X"))
}

/// A dual-era client probing a stdio server with `server/discover` reads the answer: a
/// result or a recognised modern error (`-32020`…`-32022`) means a modern server; any other error
/// (or silence, which the caller times out) a legacy one.
pub fn era_of_discover_answer(answer: &Message) -> Option<Era> {
    match answer {
        Message::Response(_) => Some(Era::Modern),
        Message::Error(e) if is_modern_error(e.error.code) => Some(Era::Modern),
        Message::Error(_) => Some(Era::Legacy),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Revision::*;

    #[test]
    fn legacy_server_echoes_a_supported_version_or_counter_offers_its_newest() {
        let all = Revision::ALL;
        assert_eq!(answer_initialize("2025-03-26", &all), Some(V2025_03_26));
        assert_eq!(
            answer_initialize("2026-07-28", &all),
            Some(V2025_11_25),
            "2026 has no initialize"
        );
        assert_eq!(answer_initialize("1999-01-01", &all), Some(V2025_11_25));
        assert_eq!(
            answer_initialize("2025-06-18", &[V2024_11_05, V2025_03_26]),
            Some(V2025_03_26)
        );
        assert_eq!(answer_initialize("2025-06-18", &[V2026_07_28]), None);
    }

    #[test]
    fn legacy_client_refuses_an_unsupported_answer() {
        assert_eq!(
            accept_initialize_answer("2025-06-18", &Revision::ALL),
            Ok(V2025_06_18)
        );
        assert!(accept_initialize_answer("2099-01-01", &Revision::ALL).is_err());
        assert!(accept_initialize_answer("2024-11-05", &[V2025_06_18]).is_err());
    }

    #[test]
    fn modern_version_error_matches_the_spec_example() {
        let e = check_request_version(Some("1900-01-01"), &[V2025_11_25, V2026_07_28]).unwrap_err();
        assert_eq!(e.code, -32022);
        assert_eq!(e.message, "Unsupported protocol version");
        assert_eq!(
            e.data,
            Some(json!({"supported": ["2026-07-28", "2025-11-25"], "requested": "1900-01-01"}))
        );
        assert_eq!(
            check_request_version(Some("2026-07-28"), &[V2026_07_28]),
            Ok(V2026_07_28)
        );
        assert_eq!(
            check_request_version(None, &[V2026_07_28])
                .unwrap_err()
                .data
                .unwrap()["requested"],
            ""
        );
        assert_eq!(retry_version(&e, &[V2025_11_25]), Some(V2025_11_25));
        assert_eq!(retry_version(&e, &[V2024_11_05]), None);
    }

    #[test]
    fn era_from_the_opening_message() {
        let parse = |s: &str| Message::parse(s.as_bytes()).expect("message");
        let init = parse(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#);
        assert_eq!(era_of_opening(&init), Some(Era::Legacy));
        let modern = parse(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        );
        assert_eq!(era_of_opening(&modern), Some(Era::Modern));
        assert_eq!(
            era_of_opening(&parse(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)),
            None
        );
        let err = parse(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#);
        assert_eq!(era_of_discover_answer(&err), Some(Era::Legacy));
        for code in [-32020, -32021, -32022] {
            let err = parse(&format!(
                r#"{{"jsonrpc":"2.0","id":1,"error":{{"code":{code},"message":"v"}}}}"#
            ));
            assert_eq!(era_of_discover_answer(&err), Some(Era::Modern), "{code}");
        }
    }
}
