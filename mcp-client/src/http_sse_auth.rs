//! The 2024-11-05 HTTP+SSE transport's requests: the configured headers on every one (the
//! stream's GET and each message's POST), and the [`AuthProvider`]'s credentials, a
//! refusal (`401`, or `403` asking for more scope) told to it and the request sent again
//! once it has a new token, as the Streamable HTTP transport does.

use std::sync::Arc;

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Method, Request, Response, Uri};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::client::legacy::Client as HyperClient;

use crate::auth::AuthProvider;
use crate::http::{
    configured_headers, insert_credentials, refusal, Connector, HttpConfig, HttpError,
};

/// Sends the transport's requests.
#[derive(Clone)]
pub(crate) struct Requester {
    client: HyperClient<Connector, Full<Bytes>>,
    extra: HeaderMap,
    auth: Option<Arc<dyn AuthProvider>>,
}

impl Requester {
    /// A requester with `config`'s headers and auth.
    pub(crate) fn new(config: &HttpConfig) -> Result<Requester, HttpError> {
        Ok(Requester {
            client: HyperClient::builder(hyper_util::rt::TokioExecutor::new())
                .build(crate::http::connector()),
            extra: configured_headers(&config.headers)?,
            auth: config.auth.clone(),
        })
    }

    /// `method` to `uri` with `body` (`content_type` naming it) and `accept`; a refusal
    /// the provider answers with a new token is sent again, until it gives up.
    pub(crate) async fn send(
        &self,
        method: Method,
        uri: &Uri,
        body: Bytes,
        content_type: Option<&'static str>,
        accept: Option<&'static str>,
    ) -> Result<Response<Incoming>, String> {
        let endpoint = uri.to_string();
        loop {
            let mut req = Request::new(Full::new(body.clone()));
            *req.method_mut() = method.clone();
            *req.uri_mut() = uri.clone();
            let h = req.headers_mut();
            *h = self.extra.clone();
            if let Some(ct) = content_type {
                h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
            }
            if let Some(a) = accept {
                h.insert(header::ACCEPT, HeaderValue::from_static(a));
            }
            let credentials = self
                .auth
                .as_ref()
                .and_then(|a| a.credentials(method.as_str(), &endpoint));
            if let Some(c) = &credentials {
                insert_credentials(h, c);
            }
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| format!("{endpoint}: {e}"))?;
            let Some(auth) = &self.auth else {
                return Ok(resp);
            };
            let token = credentials.map(|c| c.token);
            let Some(refused) = refusal(&resp, &endpoint, token.clone()) else {
                if let (Some(t), true) = (&token, resp.status().is_success()) {
                    auth.accepted(t);
                }
                return Ok(resp);
            };
            let status = resp.status();
            auth.unauthorized(refused)
                .await
                .map_err(|e| format!("{endpoint}: HTTP {status}: authorization failed: {e}"))?;
        }
    }
}
