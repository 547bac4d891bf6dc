//! The HTTP transport's side of authorization: every request carries what the
//! [`crate::auth::AuthProvider`] gives (a Bearer token, or a DPoP-bound one with its
//! proof), and a refused POST (`401`, or `403` with `insufficient_scope`) is told to the
//! provider and sent again once it has a new token, until it gives up.

use bytes::Bytes;
use http::{header, HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode};
use http_body_util::Full;
use mcp_types::{codes, ErrorObject, Frame};

use super::{request_ids, HttpError, Shared};
use crate::auth::{BearerChallenge, Credentials, Refused};

/// The `DPoP` and `DPoP-Nonce` headers (RFC 9449).
const DPOP: &str = "dpop";
const DPOP_NONCE: &str = "dpop-nonce";

/// `HttpConfig::headers` as a header map, or the first that is not a valid header.
pub(crate) fn configured_headers(headers: &[(String, String)]) -> Result<HeaderMap, HttpError> {
    let mut extra = HeaderMap::new();
    for (k, v) in headers {
        let name =
            HeaderName::from_bytes(k.as_bytes()).map_err(|_| HttpError::Header(k.clone()))?;
        let value = HeaderValue::from_str(v).map_err(|_| HttpError::Header(k.clone()))?;
        extra.insert(name, value);
    }
    Ok(extra)
}

/// Puts `credentials` on `h`: `Authorization`, and `DPoP` with a DPoP-bound token.
pub(crate) fn insert_credentials(h: &mut HeaderMap, credentials: &Credentials) {
    if let Ok(v) = HeaderValue::from_str(&credentials.authorization) {
        h.insert(header::AUTHORIZATION, v);
    }
    if let Some(v) = credentials
        .proof
        .as_deref()
        .and_then(|p| HeaderValue::from_str(p).ok())
    {
        h.insert(HeaderName::from_static(DPOP), v);
    }
}

/// What to tell an auth provider of `resp` to `endpoint`, which carried `token`, if the
/// server refused it: a `401`, or a `403` with `insufficient_scope` (step-up).
pub(crate) fn refusal<B>(
    resp: &http::Response<B>,
    endpoint: &impl std::fmt::Display,
    token: Option<String>,
) -> Option<Refused> {
    let challenge = resp
        .headers()
        .get(header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .and_then(BearerChallenge::parse);
    let step_up = resp.status() == StatusCode::FORBIDDEN
        && challenge.as_ref().and_then(|c| c.error.as_deref()) == Some("insufficient_scope");
    if resp.status() != StatusCode::UNAUTHORIZED && !step_up {
        return None;
    }
    let nonce = resp.headers().get(DPOP_NONCE).and_then(|v| v.to_str().ok());
    let endpoint = endpoint.to_string();
    Some(Refused::new(endpoint, challenge, token).with_dpop_nonce(nonce.map(str::to_owned)))
}

impl Shared {
    /// The configured headers, and the credentials for a `method` request if there are.
    pub(super) fn base_headers(&self, method: &str) -> HeaderMap {
        let credentials = self.credentials(method);
        self.headers_with(credentials.as_ref())
    }

    fn credentials(&self, method: &str) -> Option<Credentials> {
        let auth = self.auth.as_ref()?;
        auth.credentials(method, &self.url.to_string())
    }

    /// The configured headers, and `credentials` (`Authorization`, and `DPoP` with a
    /// DPoP-bound token).
    pub(super) fn headers_with(&self, credentials: Option<&Credentials>) -> HeaderMap {
        let mut h = self.extra.clone();
        if let Some(c) = credentials {
            insert_credentials(&mut h, c);
        }
        h
    }

    /// POSTs `body` in `session` (none: outside any, as `initialize` is); a refusal the
    /// auth provider can answer gets it a token and the POST goes again, until it is
    /// accepted or the provider gives up.
    pub(super) async fn post(
        &self,
        body: Bytes,
        frame: &Frame,
        session: Option<&str>,
    ) -> Result<http::Response<hyper::body::Incoming>, ErrorObject> {
        loop {
            let mut req = Request::new(Full::new(body.clone()));
            *req.method_mut() = Method::POST;
            *req.uri_mut() = self.url.clone();
            let credentials = self.credentials("POST");
            *req.headers_mut() = self.headers_for(frame, credentials.as_ref(), session);
            let token = credentials.map(|c| c.token);
            let resp = self.client.request(req).await.map_err(|e| {
                tracing::warn!("POST {} failed: {e}", self.url);
                ErrorObject::new(codes::INTERNAL_ERROR, format!("HTTP request failed: {e}"))
            })?;
            let Some(auth) = &self.auth else {
                return Ok(resp);
            };
            let Some(refused) = refusal(&resp, &self.url, token.clone()) else {
                // A notification's 202 says little: servers let some through unchecked.
                let answered = resp.status().is_success() && !request_ids(frame).is_empty();
                if let (Some(t), true) = (&token, answered) {
                    auth.accepted(t);
                }
                return Ok(resp);
            };
            if let Err(e) = auth.unauthorized(refused).await {
                if let super::super::auth::AuthError::UserAction(e) = e {
                    // The user's to act on, not an HTTP failure.
                    return Err(*e);
                }
                tracing::warn!("authorization for {} failed: {e}", self.url);
                return Err(ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    format!("HTTP {}: authorization failed: {e}", resp.status()),
                )
                .with_data(super::status_data(resp.status())));
            }
        }
    }
}
