//! One bounded `GET` of a JSON document over `http(s)` — what an OAuth participant reads
//! of the other side: a JWKS, authorization server or protected resource metadata.

use std::time::Duration;

use bytes::Bytes;
use http::{header, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Empty, Full, Limited};
use hyper_util::client::legacy::Client as HyperClient;
use serde_json::Value;

use crate::http::connector;

/// Why a document could not be fetched.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The URL does not parse or is not http(s).
    #[error("invalid URL {0:?}")]
    Url(String),
    /// No answer within the time allowed.
    #[error("no answer from {0} in time")]
    Timeout(String),
    /// The request failed (connection, TLS, protocol).
    #[error("cannot fetch {url}: {why}")]
    Transport {
        /// What was fetched.
        url: String,
        /// Why it failed.
        why: String,
    },
    /// An answer other than `200`.
    #[error("{url} answered {status}")]
    Status {
        /// What was fetched.
        url: String,
        /// Its status.
        status: StatusCode,
    },
    /// A body longer than allowed, or not JSON.
    #[error("{url}: {why}")]
    Body {
        /// What was fetched.
        url: String,
        /// What is wrong with it.
        why: String,
    },
}

/// `url` as a URI, if it is `http(s)`.
fn http_uri(url: &str) -> Result<Uri, FetchError> {
    let uri: Uri = url.parse().map_err(|_| FetchError::Url(url.to_owned()))?;
    match uri.scheme_str() {
        Some("http" | "https") => Ok(uri),
        _ => Err(FetchError::Url(url.to_owned())),
    }
}

/// Sends `request` (to `url`) on a fresh client over the shared connector.
async fn send<B>(
    url: &str,
    request: Result<Request<B>, http::Error>,
) -> Result<http::Response<hyper::body::Incoming>, FetchError>
where
    B: hyper::body::Body + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let request = request.map_err(|e| FetchError::Url(format!("{url}: {e}")))?;
    let client =
        HyperClient::builder(hyper_util::rt::TokioExecutor::new()).build::<_, B>(connector());
    client
        .request(request)
        .await
        .map_err(|e| FetchError::Transport {
            url: url.to_owned(),
            why: e.to_string(),
        })
}

/// The body of `response`, at most `max_bytes` of it.
async fn read_limited(
    url: &str,
    response: http::Response<hyper::body::Incoming>,
    max_bytes: usize,
) -> Result<Bytes, FetchError> {
    Ok(Limited::new(response.into_body(), max_bytes)
        .collect()
        .await
        .map_err(|e| FetchError::Body {
            url: url.to_owned(),
            why: format!("unreadable or longer than {max_bytes} bytes: {e}"),
        })?
        .to_bytes())
}

/// `GET url` (`Accept: application/json`), its body at most `max_bytes`, the whole
/// exchange within `timeout`, parsed as JSON. Redirects are not followed: a document that
/// moved is the publisher's to fix, and following one could lead anywhere.
pub async fn get_json(url: &str, max_bytes: usize, timeout: Duration) -> Result<Value, FetchError> {
    let request = Request::get(http_uri(url)?)
        .header(header::ACCEPT, "application/json")
        .body(Empty::<Bytes>::new());
    let exchange = async {
        let response = send(url, request).await?;
        if response.status() != StatusCode::OK {
            return Err(FetchError::Status {
                url: url.to_owned(),
                status: response.status(),
            });
        }
        let body = read_limited(url, response, max_bytes).await?;
        serde_json::from_slice(&body).map_err(|e| FetchError::Body {
            url: url.to_owned(),
            why: format!("not JSON: {e}"),
        })
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| FetchError::Timeout(url.to_owned()))?
}

/// What a `POST` got back: the status, the headers and the body (JSON, else `null`).
#[derive(Debug)]
pub struct Posted {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: http::HeaderMap,
    /// The body, if it is JSON.
    pub body: Value,
}

/// `POST url` with `body` of `content_type` and `headers`, read as [`get_json`] reads:
/// bounded, in time, no redirects. Any status comes back with the body: what an error
/// means is the caller's protocol to read.
pub async fn post_json(
    url: &str,
    content_type: &str,
    body: String,
    headers: &[(&str, &str)],
    max_bytes: usize,
    timeout: Duration,
) -> Result<Posted, FetchError> {
    let mut request = Request::post(http_uri(url)?)
        .header(header::ACCEPT, "application/json")
        .header(header::CONTENT_TYPE, content_type);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Full::new(Bytes::from(body)));
    let exchange = async {
        let response = send(url, request).await?;
        let (status, headers) = (response.status(), response.headers().clone());
        let body = read_limited(url, response, max_bytes).await?;
        Ok(Posted {
            status,
            headers,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        })
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| FetchError::Timeout(url.to_owned()))?
}

/// `GET url`, not following a redirect: where it redirects to (`Location`, made absolute
/// against `url`), or `None` when it answers otherwise.
pub async fn redirect_of(url: &str, timeout: Duration) -> Result<Option<String>, FetchError> {
    let uri = http_uri(url)?;
    let origin = format!(
        "{}://{}",
        uri.scheme_str().unwrap_or("https"),
        uri.authority().map(|a| a.as_str()).unwrap_or_default()
    );
    let request = Request::get(uri).body(Empty::<Bytes>::new());
    let response = tokio::time::timeout(timeout, send(url, request))
        .await
        .map_err(|_| FetchError::Timeout(url.to_owned()))??;
    if !response.status().is_redirection() {
        return Ok(None);
    }
    let Some(location) = response
        .headers()
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
    else {
        return Ok(None);
    };
    Ok(Some(if location.starts_with('/') {
        format!("{origin}{location}")
    } else {
        location.to_owned()
    }))
}
