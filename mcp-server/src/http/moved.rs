//! A legacy session's request taken to the replica that holds it (see `rehome.rs`): the
//! answer, or word that the session moved (`421 Misdirected Request` naming its holder,
//! which only a replica sends, to another replica's hop), or nothing when the replica
//! cannot be reached. Where each session was last found is remembered ([`Holders`]), so
//! that a session taken over is reached in one hop, not through the replica that opened it.

use std::collections::HashMap;

use http::header::HeaderName;
use http::{Response, StatusCode};
use parking_lot::Mutex;

use super::forward::Forwarded;
use super::rehome::SessionRequest;
use super::reply::{rpc_error, HttpBody};
use super::StreamableHttp;
use crate::seal::ReplicaId;

/// Names the replica holding a session, in a `421` to another replica's hop.
static HOLDER: HeaderName = HeaderName::from_static("mcp-gateway-holder");

/// The most sessions whose holder is remembered; past it, all are forgotten (each is
/// found again in a hop or two).
const MAX_HOLDERS: usize = 4096;

/// What came of taking a request to another replica.
pub(super) enum Relayed {
    /// Its answer.
    Answer(Response<HttpBody>),
    /// It does not hold the session: this replica does.
    Moved(ReplicaId),
    /// It cannot be reached (or the request may not be forwarded).
    Unreachable,
}

/// The answer to another replica's hop for a session held by `holder`.
pub(super) fn moved(holder: ReplicaId) -> Response<HttpBody> {
    let mut r = rpc_error(
        StatusCode::MISDIRECTED_REQUEST,
        None,
        mcp_types::codes::INVALID_REQUEST,
        "this session is held by another replica",
    );
    if let Ok(v) = http::HeaderValue::from_str(&holder.0.to_string()) {
        r.headers_mut().insert(HOLDER.clone(), v);
    }
    r
}

/// The holder a `421` from a replica names.
fn moved_to(r: &Response<HttpBody>) -> Option<ReplicaId> {
    if r.status() != StatusCode::MISDIRECTED_REQUEST {
        return None;
    }
    let n = r.headers().get(&HOLDER)?.to_str().ok()?.parse().ok()?;
    Some(ReplicaId(n))
}

/// Where sessions taken over were last found, by id.
#[derive(Default)]
pub(super) struct Holders(Mutex<HashMap<String, ReplicaId>>);

impl Holders {
    pub(super) fn get(&self, id: &str) -> Option<ReplicaId> {
        self.0.lock().get(id).copied()
    }

    /// Session `id`, opened by `opened_by`, was answered by `holder`.
    pub(super) fn note(&self, id: &str, holder: ReplicaId, opened_by: ReplicaId) {
        let mut held = self.0.lock();
        if holder == opened_by {
            held.remove(id);
            return;
        }
        if held.len() >= MAX_HOLDERS {
            held.clear();
        }
        held.insert(id.to_owned(), holder);
    }

    pub(super) fn forget(&self, id: &str) {
        self.0.lock().remove(id);
    }
}

impl StreamableHttp {
    /// The request taken to replica `to`, if it may be forwarded.
    pub(super) async fn relay(&self, r: &SessionRequest<'_>, to: ReplicaId) -> Relayed {
        let Some(forwarder) = self.inner.forwarder.as_ref().filter(|_| r.direct) else {
            return Relayed::Unreachable;
        };
        match forwarder.forward(to, r.parts, r.body.clone()).await {
            Forwarded::Answer(a) => match moved_to(&a) {
                Some(holder) => Relayed::Moved(holder),
                None => Relayed::Answer(a),
            },
            Forwarded::Unreachable => Relayed::Unreachable,
        }
    }

    /// Whether `replica` is among the live replicas.
    pub(super) fn is_live(&self, replica: ReplicaId) -> bool {
        self.inner
            .forwarder
            .as_ref()
            .is_some_and(|f| f.is_live(replica))
    }

    /// The answer of replica `to` at the address it was last known at, when the store has
    /// no record of the session and the registry does not list `to` (both lost their data,
    /// say, while `to` serves on); `None` (so `404`) when it cannot be reached either.
    pub(super) async fn last_try(
        &self,
        r: &SessionRequest<'_>,
        to: ReplicaId,
    ) -> Option<Response<HttpBody>> {
        let me = self.inner.sealer.as_deref()?.replica();
        if !r.direct || to == me {
            return None;
        }
        let forwarder = self.inner.forwarder.as_ref()?;
        match forwarder
            .forward_last_known(to, r.parts, r.body.clone())
            .await
        {
            Forwarded::Answer(answer) => Some(answer),
            Forwarded::Unreachable => None,
        }
    }
}
