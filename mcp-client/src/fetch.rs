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

/// `GET url` (`Accept: application/json`), its body at most `max_bytes`, the whole
/// exchange within `timeout`, parsed as JSON. Redirects are not followed: a document that
/// moved is the publisher's to fix, and following one could lead anywhere.
pub async fn get_json(url: &str, max_bytes: usize, timeout: Duration) -> Result<Value, FetchError> {
    let uri: Uri = url.parse().map_err(|_| FetchError::Url(url.to_owned()))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return Err(FetchError::Url(url.to_owned()));
    }
    let client = HyperClient::builder(hyper_util::rt::TokioExecutor::new())
        .build::<_, Empty<Bytes>>(connector());
    let request = Request::get(uri)
        .header(header::ACCEPT, "application/json")
        .body(Empty::new())
        .map_err(|e| FetchError::Url(format!("{url}: {e}")))?;
    let exchange = async {
        let response = client
            .request(request)
            .await
            .map_err(|e| FetchError::Transport {
                url: url.to_owned(),
                why: e.to_string(),
            })?;
        if response.status() != StatusCode::OK {
            return Err(FetchError::Status {
                url: url.to_owned(),
                status: response.status(),
            });
        }
        let body = Limited::new(response.into_body(), max_bytes)
            .collect()
            .await
            .map_err(|e| FetchError::Body {
                url: url.to_owned(),
                why: format!("unreadable or longer than {max_bytes} bytes: {e}"),
            })?
            .to_bytes();
        serde_json::from_slice(&body).map_err(|e| FetchError::Body {
            url: url.to_owned(),
            why: format!("not JSON: {e}"),
        })
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| FetchError::Timeout(url.to_owned()))?
}

/// `POST url` with `body` of `content_type` (and `authorization`, if given), read as
/// [`get_json`] reads: bounded, in time, no redirects. A `4xx` with a JSON body (an OAuth
/// error) comes back as it is, with
/// its status: what an error means is the caller's protocol to read.
pub async fn post_json(
    url: &str,
    content_type: &str,
    body: String,
    authorization: Option<&str>,
    max_bytes: usize,
    timeout: Duration,
) -> Result<(StatusCode, Value), FetchError> {
    let uri: Uri = url.parse().map_err(|_| FetchError::Url(url.to_owned()))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return Err(FetchError::Url(url.to_owned()));
    }
    let client = HyperClient::builder(hyper_util::rt::TokioExecutor::new())
        .build::<_, Full<Bytes>>(connector());
    let mut request = Request::post(uri)
        .header(header::ACCEPT, "application/json")
        .header(header::CONTENT_TYPE, content_type);
    if let Some(a) = authorization {
        request = request.header(header::AUTHORIZATION, a);
    }
    let request = request
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| FetchError::Url(format!("{url}: {e}")))?;
    let exchange = async {
        let response = client
            .request(request)
            .await
            .map_err(|e| FetchError::Transport {
                url: url.to_owned(),
                why: e.to_string(),
            })?;
        let status = response.status();
        let body = Limited::new(response.into_body(), max_bytes)
            .collect()
            .await
            .map_err(|e| FetchError::Body {
                url: url.to_owned(),
                why: format!("unreadable or longer than {max_bytes} bytes: {e}"),
            })?
            .to_bytes();
        let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        Ok((status, value))
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| FetchError::Timeout(url.to_owned()))?
}

/// `GET url`, not following a redirect: where it redirects to (`Location`, made absolute
/// against `url`), or `None` when it answers otherwise.
pub async fn redirect_of(url: &str, timeout: Duration) -> Result<Option<String>, FetchError> {
    let uri: Uri = url.parse().map_err(|_| FetchError::Url(url.to_owned()))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return Err(FetchError::Url(url.to_owned()));
    }
    let origin = format!(
        "{}://{}",
        uri.scheme_str().unwrap_or("https"),
        uri.authority().map(|a| a.as_str()).unwrap_or_default()
    );
    let client = HyperClient::builder(hyper_util::rt::TokioExecutor::new())
        .build::<_, Empty<Bytes>>(connector());
    let request = Request::get(uri)
        .body(Empty::new())
        .map_err(|e| FetchError::Url(format!("{url}: {e}")))?;
    let response = tokio::time::timeout(timeout, client.request(request))
        .await
        .map_err(|_| FetchError::Timeout(url.to_owned()))?
        .map_err(|e| FetchError::Transport {
            url: url.to_owned(),
            why: e.to_string(),
        })?;
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
