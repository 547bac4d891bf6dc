//! [`HttpConfig`]: how to reach an HTTP server.

use std::sync::Arc;

/// How to reach an HTTP server.
///
/// `#[non_exhaustive]`: built with [`HttpConfig::new`] and the setters, each named after
/// its field:
///
/// ```
/// let c = mcp_client::http::HttpConfig::new("http://127.0.0.1:8080/mcp")
///     .headers(vec![("authorization".into(), "Bearer t".into())])
///     .max_resumes(2);
/// assert_eq!(c.max_resumes, 2);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The MCP endpoint (`http://…/mcp` or `https://…`).
    pub url: String,
    /// Headers added to every request (authorization, say).
    pub headers: Vec<(String, String)>,
    /// How many times a broken legacy SSE stream is resumed with `Last-Event-ID`.
    pub max_resumes: usize,
    /// The longest answer read from the server (default 16 MiB): a JSON body, or one SSE
    /// event. A longer one fails the requests it was to answer, with an error naming the
    /// limit, instead of growing memory without end.
    pub max_message_bytes: usize,
    /// Who gets the access token when the server asks for one (`401`): see
    /// [`crate::auth::OAuth`]. With it, every request carries the current token, and a
    /// refused one is renewed and the request sent again, as often as the provider
    /// agrees to try (OAuth's `max_attempts` in a row).
    pub auth: Option<Arc<dyn crate::auth::AuthProvider>>,
    /// Called each time the server ends the legacy session (`404` to a request in it) and
    /// the transport starts a new one, before the refused request is sent again (see
    /// [`super::SessionRenewal`]). The transport renews the session with or without it.
    pub on_session_renewed: Option<super::SessionRenewedHook>,
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("url", &self.url)
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("max_resumes", &self.max_resumes)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("auth", &self.auth.is_some())
            .field("on_session_renewed", &self.on_session_renewed.is_some())
            .finish()
    }
}

impl HttpConfig {
    /// An endpoint with no extra headers.
    pub fn new(url: impl Into<String>) -> Self {
        HttpConfig {
            url: url.into(),
            headers: Vec::new(),
            max_resumes: 5,
            max_message_bytes: mcp_types::transport::DEFAULT_MAX_MESSAGE_BYTES,
            auth: None,
            on_session_renewed: None,
        }
    }

    /// Sets [`HttpConfig::url`], the MCP endpoint.
    #[must_use]
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.url = url.into();
        self
    }

    /// Gets access tokens from `auth` (see [`HttpConfig::auth`]).
    #[must_use]
    pub fn auth(mut self, auth: Arc<dyn crate::auth::AuthProvider>) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Calls `hook` each time the transport starts a new session because the server
    /// ended the last one (see [`HttpConfig::on_session_renewed`]).
    #[must_use]
    pub fn on_session_renewed(mut self, hook: super::SessionRenewedHook) -> Self {
        self.on_session_renewed = Some(hook);
        self
    }
}

mcp_types::setters! {
    HttpConfig {
        /// Sets [`HttpConfig::headers`], the `(name, value)` pairs added to every request.
        headers: Vec<(String, String)>;
        /// Sets [`HttpConfig::max_resumes`].
        max_resumes: usize;
        /// Sets [`HttpConfig::max_message_bytes`].
        max_message_bytes: usize;
    }
}
