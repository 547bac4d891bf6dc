//! The endpoint's authorization step: the protected resource metadata for anyone who asks,
//! and for every other request the principal its credentials stand for, or the `401` /
//! `403` that says how to get one.

use std::sync::Arc;

use bytes::Bytes;
use http::{header, Method, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use mcp_types::codes;

use super::reply::{empty, respond, rpc_error, HttpBody};
use crate::auth::{Authorization, Principal, Refusal};

/// What the guard made of a request.
pub(super) enum Verdict {
    /// Serve it, for this principal (`None`: the endpoint does not authenticate).
    Serve(Option<Arc<Principal>>),
    /// Answer with this, and stop.
    Answer(Response<HttpBody>),
}

/// The metadata document, if `parts` asks for it.
pub(super) fn metadata(
    auth: &Authorization,
    parts: &http::request::Parts,
) -> Option<Response<HttpBody>> {
    if !auth.resource().is_metadata_path(parts.uri.path()) {
        return None;
    }
    if parts.method != Method::GET {
        return Some(respond(StatusCode::METHOD_NOT_ALLOWED, empty(), None));
    }
    let body = Full::new(Bytes::from(auth.resource().document().to_string())).boxed_unsync();
    Some(respond(StatusCode::OK, body, Some("application/json")))
}

/// Checks the credentials of a request to the endpoint.
pub(super) async fn check(auth: &Authorization, parts: &http::request::Parts) -> Verdict {
    match auth.check(parts).await {
        Ok(principal) => Verdict::Serve(Some(Arc::new(principal))),
        Err(refusal) => Verdict::Answer(refused(auth, &refusal)),
    }
}

/// The answer to a refused request: the status the spec gives, the challenge, and a
/// JSON-RPC error body a client can show.
fn refused(auth: &Authorization, refusal: &Refusal) -> Response<HttpBody> {
    let status = match refusal {
        Refusal::InsufficientScope(_) => StatusCode::FORBIDDEN,
        _ => StatusCode::UNAUTHORIZED,
    };
    // The refusal's text names what was wrong, never the credential.
    tracing::info!(%status, "request refused: {refusal}");
    let mut r = rpc_error(
        status,
        None,
        codes::INVALID_REQUEST,
        match status {
            StatusCode::FORBIDDEN => format!("Forbidden: {refusal}"),
            _ => format!("Unauthorized: {refusal}"),
        },
    );
    let challenge = auth.resource().challenge(refusal, &auth.required_scopes);
    if let Ok(v) = header::HeaderValue::from_str(&challenge) {
        r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    r
}

/// The answer to a request for a legacy session opened by another subject. `404`, as for
/// a session that does not exist: whether it does is not the caller's to learn.
pub(super) fn not_yours() -> Response<HttpBody> {
    tracing::warn!("refused: a session used with another subject's credentials");
    rpc_error(
        StatusCode::NOT_FOUND,
        None,
        codes::INVALID_REQUEST,
        "Session not found",
    )
}
