//! Browser pages served beside the MCP endpoint ([`Pages`]): what a server shows a user
//! it sends to a URL of its own (a URL-mode elicitation's connect page, an OAuth
//! redirect target). A page is a top-level navigation, so it passes the `Host` check
//! (DNS rebinding) but not the `Origin` check, and it never needs the endpoint's bearer
//! token: a page identifies its user by its own means (a login, a cookie).

use async_trait::async_trait;
use http::Response;

use super::HttpBody;

/// Pages under one path prefix, served by [`super::StreamableHttp`] when
/// [`super::HttpOptions::pages`] is given.
#[async_trait]
pub trait Pages: Send + Sync + 'static {
    /// The prefix of the paths served (`/connect`, say); a request whose path is the
    /// prefix or starts with it and `/` is handed to [`Pages::serve`].
    fn prefix(&self) -> &str;

    /// The answer to `request` (its body is not read: pages are `GET`s).
    async fn serve(&self, request: &http::request::Parts) -> Response<HttpBody>;
}

/// The [`Pages`] an endpoint serves.
#[derive(Clone)]
pub struct PagesHandle(pub std::sync::Arc<dyn Pages>);

impl std::fmt::Debug for PagesHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("PagesHandle")
            .field(&self.0.prefix())
            .finish()
    }
}

impl PagesHandle {
    /// Whether `path` is one of the pages'.
    pub(super) fn serves(&self, path: &str) -> bool {
        let prefix = self.0.prefix().trim_end_matches('/');
        path.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Connect;

    #[async_trait]
    impl Pages for Connect {
        fn prefix(&self) -> &str {
            "/connect"
        }
        async fn serve(&self, _: &http::request::Parts) -> Response<HttpBody> {
            Response::new(super::super::reply::empty())
        }
    }

    #[test]
    fn only_the_prefix_and_paths_below_it_are_pages() {
        let h = PagesHandle(std::sync::Arc::new(Connect));
        assert!(h.serves("/connect"));
        assert!(h.serves("/connect/start/abc"));
        assert!(!h.serves("/connected"));
        assert!(!h.serves("/mcp"));
    }
}
