//! An [`AuthorizationHandler`] for a program with a user at a terminal: it shows the
//! authorization URL, and takes the browser's return on the loopback redirect URI
//! (RFC 8252 §7.3) itself, so no other web server is needed.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::oauth::AuthorizationHandler;
use super::provider::AuthError;
use super::request::{query_of, query_value};

/// How long the user has to authorize.
const PATIENCE: Duration = Duration::from_secs(300);
/// Connections to the redirect URI taken before giving up (a browser may ask for
/// `/favicon.ico` and the like first).
const MAX_VISITS: usize = 16;
/// The most of a request read: its request line is all that is needed.
const MAX_REQUEST: usize = 16 * 1024;
/// How long one visit may take to send its request line.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

type ShowUrl = Arc<dyn Fn(&str) + Send + Sync>;

/// Shows the authorization URL (on standard error, unless told otherwise) and listens on
/// the redirect URI, which must be `http://127.0.0.1:<port>/…` or `http://localhost:…`
/// (`[::1]` too), for the browser to come back.
#[derive(Clone)]
pub struct LoopbackBrowser {
    show: ShowUrl,
    patience: Duration,
}

impl std::fmt::Debug for LoopbackBrowser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackBrowser")
            .field("patience", &self.patience)
            .finish_non_exhaustive()
    }
}

impl Default for LoopbackBrowser {
    fn default() -> Self {
        LoopbackBrowser {
            show: Arc::new(|url| eprintln!("To authorize, open this URL in a browser:\n  {url}")),
            patience: PATIENCE,
        }
    }
}

impl LoopbackBrowser {
    /// Shows the URL with `show` instead (a UI, a log line, a test's browser).
    pub fn show_with(mut self, show: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.show = Arc::new(show);
        self
    }

    /// Waits at most `patience` for the user (five minutes by default).
    pub fn patience(mut self, patience: Duration) -> Self {
        self.patience = patience;
        self
    }
}

/// `host:port` and path of a loopback `http` redirect URI.
fn loopback(redirect_uri: &str) -> Option<(String, String)> {
    let rest = redirect_uri.strip_prefix("http://")?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
    let local = matches!(host, "127.0.0.1" | "localhost" | "[::1]");
    let bind = if host == "localhost" {
        authority.replacen("localhost", "127.0.0.1", 1)
    } else {
        authority.to_owned()
    };
    let path = if path.is_empty() { "/" } else { path };
    (local && authority.contains(':')).then(|| (bind, path.to_owned()))
}

/// The target of the request on `s` (its request line's second word), read until the
/// line ends, at most [`MAX_REQUEST`] bytes.
async fn request_target(s: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buf.windows(2).any(|w| w == b"\r\n") {
        let n = s.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() > MAX_REQUEST {
            return None;
        }
    }
    let head = String::from_utf8_lossy(&buf);
    head.split(' ').nth(1).map(str::to_owned)
}

#[async_trait]
impl AuthorizationHandler for LoopbackBrowser {
    async fn authorize(&self, url: &str, redirect_uri: &str) -> Result<String, AuthError> {
        let (bind, path) = loopback(redirect_uri).ok_or_else(|| {
            AuthError::NotCompleted(format!(
                "{redirect_uri} is not a loopback http URI with a port, where a browser could come back"
            ))
        })?;
        let listener = TcpListener::bind(bind.as_str())
            .await
            .map_err(|e| AuthError::NotCompleted(format!("listening on {bind}: {e}")))?;
        (self.show)(url);
        // Only the return of this authorization completes it: a page can make a browser
        // visit the redirect URI too, with a state of its own.
        let expected = query_value(query_of(url), "state");
        let wait = async {
            for _ in 0..MAX_VISITS {
                let Ok((mut s, _)) = listener.accept().await else {
                    continue;
                };
                let target = tokio::time::timeout(READ_TIMEOUT, request_target(&mut s))
                    .await
                    .ok()
                    .flatten()
                    .unwrap_or_default();
                let on_path = target.split('?').next() == Some(path.as_str());
                let ours = on_path && query_value(query_of(&target), "state") == expected;
                let reply = match (on_path, ours) {
                    (_, true) => "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n\r\nAuthorization received: you can close this window.",
                    (true, false) => "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n\r\nNot the authorization this program is waiting for.",
                    _ => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                };
                let _ = s.write_all(reply.as_bytes()).await;
                if ours {
                    let origin = redirect_uri
                        .strip_suffix(path.as_str())
                        .unwrap_or(redirect_uri);
                    return Ok(format!("{origin}{target}"));
                }
            }
            Err(AuthError::NotCompleted(
                "the browser did not come back".into(),
            ))
        };
        tokio::time::timeout(self.patience, wait)
            .await
            .map_err(|_| AuthError::NotCompleted("the user did not authorize in time".into()))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_http_redirect_uris_with_a_port_are_taken() {
        assert_eq!(
            loopback("http://127.0.0.1:8765/callback"),
            Some(("127.0.0.1:8765".into(), "/callback".into()))
        );
        assert_eq!(
            loopback("http://localhost:9000"),
            Some(("127.0.0.1:9000".into(), "/".into()))
        );
        assert_eq!(
            loopback("http://[::1]:9000/cb"),
            Some(("[::1]:9000".into(), "/cb".into()))
        );
        assert_eq!(loopback("http://127.0.0.1/callback"), None, "no port");
        assert_eq!(loopback("https://127.0.0.1:1/cb"), None);
        assert_eq!(loopback("http://example.com:80/cb"), None);
    }

    #[tokio::test]
    async fn the_browser_coming_back_to_the_redirect_uri_completes_the_authorization() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let redirect = format!("http://127.0.0.1:{port}/callback");
        let back = format!("{redirect}?code=c1&state=s1");
        let browser = back.clone();
        let handler = LoopbackBrowser::default().show_with(move |_url| {
            let visit = browser.clone();
            tokio::spawn(async move {
                let stray = visit.replace("/callback?code=c1&state=s1", "/favicon.ico");
                let forged = visit.replace("code=c1&state=s1", "code=evil&state=forged");
                let _ = crate::fetch::redirect_of(&stray, Duration::from_secs(5)).await;
                let _ = crate::fetch::redirect_of(&forged, Duration::from_secs(5)).await;
                // A connection that sends nothing holds the listener for its read timeout
                // at most.
                let idle = tokio::net::TcpStream::connect(
                    visit
                        .trim_start_matches("http://")
                        .split('/')
                        .next()
                        .unwrap_or(""),
                )
                .await;
                let _ = crate::fetch::redirect_of(&visit, Duration::from_secs(10)).await;
                drop(idle);
            });
        });
        let got = handler
            .authorize("https://as.example/authorize?x=1&state=s1", &redirect)
            .await;
        assert_eq!(got.ok().as_deref(), Some(back.as_str()));
    }
}
