//! Why an upstream could not be used: one typed error for every seam that reaches an
//! upstream (an [`crate::UpstreamConnector`], opening and listing a connection, a host's
//! own session), kept in [`crate::UpstreamStatus::last_error`], counted by kind in the
//! metrics, and turned into the host's JSON-RPC error in one place
//! ([`UpstreamError::to_error_object`]).

use std::time::Duration;

use mcp_client::ClientError;
use mcp_types::transport::CloseReason;
use mcp_types::{codes, ErrorObject};

/// Why an upstream could not be used. Each variant says what went wrong in words for logs
/// and status; [`UpstreamError::kind`] is its stable name for metrics and alerts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// The upstream refused the gateway's credentials (HTTP `401`, or `403`).
    #[error("unauthorized: {0}")]
    Unauthorized(String),
    /// It could not be reached or started: a process that does not start, a connection
    /// refused, a connector that has none, a gateway shutting down.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// Its connection failed or closed.
    #[error("connection failed: {0}")]
    Transport(String),
    /// It answered, but not as the protocol says: no common revision, a result that is
    /// not what the method calls for, an error where a handshake or list was due.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// No answer within this time.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// A message longer than the connection takes.
    #[error("too large: {0}")]
    TooLarge(String),
}

impl UpstreamError {
    /// The kind, as metrics label it: `unauthorized`, `unavailable`, `transport`,
    /// `protocol`, `timeout` or `too_large`.
    pub fn kind(&self) -> &'static str {
        match self {
            UpstreamError::Unauthorized(_) => "unauthorized",
            UpstreamError::Unavailable(_) => "unavailable",
            UpstreamError::Transport(_) => "transport",
            UpstreamError::Protocol(_) => "protocol",
            UpstreamError::Timeout(_) => "timeout",
            UpstreamError::TooLarge(_) => "too_large",
        }
    }

    /// The same error, said to have happened while doing `what` (`tools/list`): its words
    /// say so; its kind stays.
    pub fn during(self, what: &str) -> Self {
        let said = |why: String| format!("{what} failed: {why}");
        match self {
            UpstreamError::Unauthorized(w) => UpstreamError::Unauthorized(said(w)),
            UpstreamError::Unavailable(w) => UpstreamError::Unavailable(said(w)),
            UpstreamError::Transport(w) => UpstreamError::Transport(said(w)),
            UpstreamError::Protocol(w) => UpstreamError::Protocol(said(w)),
            UpstreamError::TooLarge(w) => UpstreamError::TooLarge(said(w)),
            timeout @ UpstreamError::Timeout(_) => timeout,
        }
    }

    /// What a client error says of the upstream it came from.
    pub fn from_client(e: &ClientError) -> Self {
        match e {
            ClientError::Server(o) | ClientError::BadAnswer(o) => match http_status(o) {
                Some(401 | 403) => UpstreamError::Unauthorized(o.message.clone()),
                Some(_) => UpstreamError::Transport(o.message.clone()),
                None => UpstreamError::Protocol(e.to_string()),
            },
            ClientError::Closed(r) => match r {
                CloseReason::SessionEnded(why) => UpstreamError::Unavailable(why.clone()),
                other => UpstreamError::Transport(other.to_string()),
            },
            ClientError::Timeout(t) => UpstreamError::Timeout(*t),
            ClientError::Unavailable(why) => UpstreamError::Unavailable(why.clone()),
            ClientError::TooLarge { .. } => UpstreamError::TooLarge(e.to_string()),
            ClientError::Cancelled => UpstreamError::Transport(e.to_string()),
            _ => UpstreamError::Protocol(e.to_string()),
        }
    }

    /// Whether `o`, an error a client got, is not the server's own answer but the HTTP
    /// transport's account of a request the server refused (then the upstream failed; the
    /// host is not shown the upstream's HTTP exchange as if it were a JSON-RPC error).
    pub fn is_refusal(o: &ErrorObject) -> bool {
        http_status(o).is_some()
    }

    /// The error a host is answered with when upstream `upstream` failed this way: an
    /// internal error that names the upstream and why (never the upstream's credentials
    /// or anything the host did not send).
    pub fn to_error_object(&self, upstream: &str) -> ErrorObject {
        ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("upstream `{upstream}` failed: {self}"),
        )
        .with_data(serde_json::json!({"upstream": upstream, "kind": self.kind()}))
    }
}

impl From<ClientError> for UpstreamError {
    fn from(e: ClientError) -> Self {
        UpstreamError::from_client(&e)
    }
}

/// The HTTP status an HTTP transport put in an error it made of a refused request.
fn http_status(o: &ErrorObject) -> Option<u16> {
    let status = o.data.as_ref()?.get("httpStatus")?.as_u64()?;
    u16::try_from(status).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_errors_are_sorted_by_kind() {
        let refused = ErrorObject::new(codes::INTERNAL_ERROR, "HTTP 401 Unauthorized")
            .with_data(serde_json::json!({"httpStatus": 401}));
        let cases = [
            (ClientError::Server(refused), "unauthorized"),
            (
                ClientError::Server(ErrorObject::new(-32601, "Method not found")),
                "protocol",
            ),
            (ClientError::Closed(CloseReason::PeerClosed), "transport"),
            (ClientError::Timeout(Duration::from_secs(1)), "timeout"),
            (ClientError::Unavailable("none".into()), "unavailable"),
            (
                ClientError::TooLarge {
                    bytes: 10,
                    limit: 5,
                },
                "too_large",
            ),
            (ClientError::Negotiation("no revision".into()), "protocol"),
        ];
        for (e, kind) in cases {
            assert_eq!(UpstreamError::from_client(&e).kind(), kind, "{e}");
        }
    }

    #[test]
    fn a_host_is_told_which_upstream_failed_and_how() {
        let o = UpstreamError::Timeout(Duration::from_secs(2)).to_error_object("fs");
        assert_eq!(o.code, codes::INTERNAL_ERROR);
        assert!(
            o.message.contains("`fs`") && o.message.contains("2s"),
            "{}",
            o.message
        );
        assert_eq!(
            o.data,
            Some(serde_json::json!({"upstream": "fs", "kind": "timeout"}))
        );
    }
}
