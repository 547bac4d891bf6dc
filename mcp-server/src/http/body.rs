//! A POST's body, read whole within the endpoint's bounds: `413` past
//! [`HttpOptions::max_body_bytes`], `408` past [`HttpOptions::body_read_timeout`].

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Body;
use mcp_types::codes;

use super::reply::{rpc_error, HttpBody};
use super::HttpOptions;

/// A POST's body, read within the endpoint's size and time bounds, or the answer that
/// says which it broke.
pub(super) async fn read<B>(body: B, o: &HttpOptions) -> Result<Bytes, Box<Response<HttpBody>>>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let limit = o.max_body_bytes;
    let read = Limited::new(body, limit).collect();
    let Ok(read) = tokio::time::timeout(o.body_read_timeout, read).await else {
        return Err(Box::new(rpc_error(
            StatusCode::REQUEST_TIMEOUT,
            None,
            codes::INVALID_REQUEST,
            "Request body too slow",
        )));
    };
    let bytes = match read {
        Ok(c) => c.to_bytes(),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            return Err(Box::new(rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                None,
                codes::INVALID_REQUEST,
                format!("Request body exceeds {limit} bytes"),
            )))
        }
        Err(e) => {
            return Err(Box::new(rpc_error(
                StatusCode::BAD_REQUEST,
                None,
                codes::INVALID_REQUEST,
                format!("Unreadable body: {e}"),
            )))
        }
    };
    Ok(bytes)
}
