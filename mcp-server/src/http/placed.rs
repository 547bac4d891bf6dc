//! Where a request is served: here, or at the replica that holds what it names (see
//! `cluster.rs`), which the endpoint asks before anything else is done with the request.

use bytes::Bytes;
use http::{Response, StatusCode};
use mcp_types::{codes, Frame, Message};

use super::checks::{header_str, names};
use super::cluster::PEER_NOTICE;
use super::forward::Forwarded;
use super::hop::{self, HopCheck};
use super::rehome::SessionRequest;
use super::reply::{empty, respond, rpc_error, HttpBody};
use super::StreamableHttp;
use crate::auth::Principal;
use crate::seal::ReplicaId;
use std::sync::Arc;

impl StreamableHttp {
    /// Whether a request may be another replica's, to be looked at before a client's
    /// checks: this endpoint has replicas, and the request is a POST to its path with a hop
    /// header.
    pub(super) fn is_replica_hop(&self, parts: &http::request::Parts) -> bool {
        self.inner.forwarder.is_some()
            && parts.method == http::Method::POST
            && parts.uri.path() == self.inner.options.path
            && parts.headers.contains_key(&hop::HOP)
    }

    /// The answer to another replica's notice (`202`, the notice handed to
    /// [`super::HttpOptions::peer_notices`]), or to a hop this replica cannot take (`403`);
    /// `None`: not a notice, a forwarded client request to serve as any other.
    pub(super) fn replica_notice(
        &self,
        parts: &http::request::Parts,
        body: &Bytes,
    ) -> Option<Response<HttpBody>> {
        let forwarder = self.inner.forwarder.as_ref()?;
        let frame = Frame::parse(body).ok()?;
        let notice = peer_notice(&frame)?;
        match hop::check(forwarder.sealer(), parts, body) {
            HopCheck::Forwarded(from) => {
                if let Some(n) = &self.inner.options.peer_notices {
                    n.0.received(from, notice);
                }
                Some(respond(StatusCode::ACCEPTED, empty(), None))
            }
            HopCheck::Refused(why) => {
                tracing::warn!("refused a replica's notice: {why}");
                Some(refused_hop())
            }
            HopCheck::Direct => None,
        }
    }

    /// The answer of the replica holding what this request (`parts`, `body`, read as
    /// `frame` for a POST, with `principal`'s credentials) names, when that is another
    /// replica this one can reach; `None`: serve it here. A hop header this replica cannot
    /// take is refused (`403`).
    pub(super) async fn elsewhere(
        &self,
        parts: &http::request::Parts,
        body: &Bytes,
        frame: Option<&Frame>,
        principal: Option<&Arc<Principal>>,
    ) -> Option<Response<HttpBody>> {
        let forwarder = self.inner.forwarder.as_ref()?;
        let direct = match hop::check(forwarder.sealer(), parts, body) {
            HopCheck::Direct => true,
            HopCheck::Forwarded(_) => false,
            HopCheck::Refused(why) => {
                tracing::warn!(method = %parts.method, "refused {why}");
                return Some(refused_hop());
            }
        };
        if let Some(id) = header_str(&parts.headers, &names::SESSION_ID) {
            let request = SessionRequest {
                id,
                parts,
                body,
                principal,
                direct,
            };
            return self.session_elsewhere(&request).await;
        }
        let owner = self.placed_owner(frame)?;
        if owner == forwarder.replica() {
            return None;
        }
        if !direct {
            // At most one hop: served here, whatever it names.
            tracing::warn!(%owner, "a forwarded request names another replica's state: not forwarded again");
            return None;
        }
        match forwarder.forward(owner, parts, body.clone()).await {
            Forwarded::Answer(r) => Some(r),
            Forwarded::Unreachable => None,
        }
    }

    /// The replica holding what the handler's placement reads in the request's messages.
    fn placed_owner(&self, frame: Option<&Frame>) -> Option<ReplicaId> {
        let placement = self.inner.options.placement.as_ref()?;
        let messages: &[Message] = match frame? {
            Frame::Single(m) => std::slice::from_ref(m),
            Frame::Batch(b) => b,
        };
        messages
            .iter()
            .filter(|m| matches!(m, Message::Request(_)))
            .find_map(|m| placement.0.owner(m))
    }
}

/// The params of a replica's notice, if `frame` is one.
fn peer_notice(frame: &Frame) -> Option<&serde_json::value::RawValue> {
    match frame {
        Frame::Single(Message::Notification(n)) if n.method == PEER_NOTICE => n.params.as_deref(),
        _ => None,
    }
}

/// The answer to a hop this replica cannot take.
fn refused_hop() -> Response<HttpBody> {
    rpc_error(
        StatusCode::FORBIDDEN,
        None,
        codes::INVALID_REQUEST,
        "Forbidden: a replica hop this replica cannot take",
    )
}
