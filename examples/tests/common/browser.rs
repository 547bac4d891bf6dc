//! A scripted user browser for the OAuth/OIDC end-to-end tests, and the real authorization
//! servers it talks to: two `oidc-provider` instances (`examples/interop/oidc/providers.mjs`,
//! the package pinned in `examples/interop/package.json`), "users" (the gateway's own
//! users) and "upstream" (the upstream MCP server's authorization server).
//!
//! A [`Browser`] is one user: its own cookie jar, redirects followed by hand so it can stop
//! at a redirect URI nothing listens on, and oidc-provider's development login and consent
//! forms filled and submitted (any login name is accepted and becomes `sub`).

use std::time::Duration;

use mcp_client::auth::{
    discovery::server_metadata, request_token, AuthorizationRequest, AuthorizationServerMetadata,
    ClientIdentity, Token,
};
use reqwest::{Method, StatusCode, Url};
use serde_json::Value;

/// RFC 8693's grant type.
pub const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// RFC 8693's type of an access token (`subject_token_type`, `issued_token_type`).
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
/// The scope the providers' resource servers know by default (`gatewayScope`,
/// `upstreamScope` in their configuration).
pub const SCOPE: &str = "mcp";

/// How many requests one visit may take (redirects and forms) before it gives up.
const MAX_STEPS: usize = 30;
const TIMEOUT: Duration = Duration::from_secs(30);

/// What a visit ended at.
#[derive(Debug, Clone)]
pub struct Page {
    /// The status of the last response (for a stop, the redirect's).
    pub status: u16,
    /// The last URL: the page shown, or the URL the browser stopped at.
    pub url: String,
    /// The page's text (empty at a stop).
    pub body: String,
    /// Whether the visit stopped at one of the stop prefixes.
    pub stopped: bool,
}

/// One simulated user with a browser: a cookie jar of its own, a login name for login
/// forms, and where to stop.
pub struct Browser {
    client: reqwest::Client,
    login: String,
    stop_prefixes: Vec<String>,
}

impl Default for Browser {
    fn default() -> Self {
        Browser::new()
    }
}

impl Browser {
    /// A browser whose user logs in as `user`.
    pub fn new() -> Browser {
        Browser::new_as("user")
    }

    /// A browser whose user logs in as `login` (oidc-provider's development login takes any
    /// name, and it becomes the subject).
    pub fn new_as(login: &str) -> Browser {
        let client = reqwest::Client::builder()
            .cookie_store(true)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(TIMEOUT)
            .build()
            .expect("an HTTP client");
        Browser {
            client,
            login: login.to_owned(),
            stop_prefixes: Vec::new(),
        }
    }

    /// The browser, stopping (in [`Browser::visit`]) when it is sent to a URL starting with
    /// `prefix`.
    pub fn stop_at(mut self, prefix: &str) -> Browser {
        self.stop_prefixes.push(prefix.to_owned());
        self
    }

    /// The user's login name.
    pub fn login(&self) -> &str {
        &self.login
    }

    /// Opens `url` and follows what a user would: redirects, and the login and consent
    /// forms (submitted filled in). Stops at a URL starting with one of the stop prefixes
    /// (that URL is returned, not requested); otherwise returns the first page that is not
    /// a redirect or a form.
    pub async fn visit(&self, url: &str) -> Page {
        self.visit_until(url, &self.stop_prefixes).await
    }

    /// [`Browser::visit`] with `stop_prefixes` instead of the browser's own.
    pub async fn visit_until<S: AsRef<str>>(&self, url: &str, stop_prefixes: &[S]) -> Page {
        let stops = |u: &str| stop_prefixes.iter().any(|p| u.starts_with(p.as_ref()));
        let mut method = Method::GET;
        let mut url = url.to_owned();
        let mut form: Vec<(String, String)> = Vec::new();
        let mut status = 0;
        for _ in 0..MAX_STEPS {
            if stops(&url) {
                return Page {
                    status,
                    url,
                    body: String::new(),
                    stopped: true,
                };
            }
            let mut request = self.client.request(method.clone(), &url);
            if method == Method::POST {
                request = request.form(&form);
            }
            let response = match request.send().await {
                Ok(r) => r,
                Err(e) => {
                    return Page {
                        status: 0,
                        url,
                        body: format!("{method} failed: {e:?}"),
                        stopped: false,
                    }
                }
            };
            status = response.status().as_u16();
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .map(str::to_owned);
            if response.status().is_redirection() {
                let Some(next) = location.and_then(|l| join(&url, &l)) else {
                    return Page {
                        status,
                        url,
                        body: "a redirect without a usable Location".into(),
                        stopped: false,
                    };
                };
                // 307 and 308 repeat the request; the others (oidc-provider's 302 and 303)
                // become a GET.
                if !matches!(
                    response.status(),
                    StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
                ) {
                    method = Method::GET;
                    form.clear();
                }
                url = next;
                continue;
            }
            let body = response.text().await.unwrap_or_default();
            match post_form(&body) {
                Some((action, fields)) if status == 200 => {
                    let Some(next) = join(&url, &action) else {
                        return Page {
                            status,
                            url,
                            body,
                            stopped: false,
                        };
                    };
                    form = self.fill(fields);
                    method = Method::POST;
                    url = next;
                }
                _ => {
                    return Page {
                        status,
                        url,
                        body,
                        stopped: false,
                    }
                }
            }
        }
        Page {
            status,
            url,
            body: format!("gave up after {MAX_STEPS} requests"),
            stopped: false,
        }
    }

    /// A form's fields as this user fills them in: the login name in `login`, a password in
    /// `password`, every other field (hidden ones: `prompt`) as it came.
    fn fill(&self, fields: Vec<(String, String)>) -> Vec<(String, String)> {
        fields
            .into_iter()
            .map(|(name, value)| match name.as_str() {
                "login" => (name, self.login.clone()),
                "password" => (name, "any password".to_owned()),
                _ => (name, value),
            })
            .collect()
    }

    /// Sends the user to `authorization_url` and on through login and consent: the URL
    /// (starting with `stop_at_prefix`, the redirect URI) the authorization server sent the
    /// user back to, with the code in it; or what the browser was shown instead.
    pub async fn authorize(
        &self,
        authorization_url: &str,
        stop_at_prefix: &str,
    ) -> Result<String, String> {
        let page = self.visit_until(authorization_url, &[stop_at_prefix]).await;
        if page.stopped {
            Ok(page.url)
        } else {
            Err(format!(
                "the browser ended at {} ({}), not at {stop_at_prefix}: {}",
                page.url,
                page.status,
                excerpt(&page.body)
            ))
        }
    }

    /// The authorization code flow with PKCE (RFC 6749 §4.1, RFC 7636) at `issuer` for
    /// `client`, redirected to `redirect_uri` (which need not listen), for `resource`
    /// (RFC 8707) with `scope`: this user's login and consent in this browser, the
    /// redirect checked (`state`, `iss`), and the code redeemed with the verifier.
    pub async fn code_flow(
        &self,
        issuer: &str,
        client: &ClientIdentity,
        redirect_uri: &str,
        resource: &str,
        scope: Option<&str>,
    ) -> Result<Token, String> {
        let metadata = metadata(issuer).await;
        let request =
            AuthorizationRequest::new(&metadata, &client.client_id, redirect_uri, resource, scope)
                .map_err(|e| format!("no randomness: {e}"))?;
        let redirect = self.authorize(&request.url, redirect_uri).await?;
        let iss_required = metadata.authorization_response_iss_parameter_supported == Some(true);
        let code = request
            .code_from(&redirect, iss_required)
            .map_err(|e| format!("{e} ({redirect})"))?;
        request_token(
            &metadata,
            client,
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", redirect_uri),
                ("code_verifier", request.code_verifier()),
                ("resource", resource),
            ],
        )
        .await
        .map_err(|e| e.to_string())
    }
}

/// An access token of `login` from the "users" issuer `users_issuer`, for `resource` (the
/// gateway), through the public client `client_id` (`host-app`) and its `redirect_uri`: a
/// fresh browser's PKCE authorization code flow.
pub async fn user_access_token(
    users_issuer: &str,
    client_id: &str,
    redirect_uri: &str,
    resource: &str,
    login: &str,
) -> String {
    Browser::new_as(login)
        .code_flow(
            users_issuer,
            &ClientIdentity::public(client_id),
            redirect_uri,
            resource,
            Some(SCOPE),
        )
        .await
        .unwrap_or_else(|e| panic!("{login}'s access token from {users_issuer}: {e}"))
        .access_token
}

/// The authorization server metadata of `issuer` (discovered as our client discovers it).
pub async fn metadata(issuer: &str) -> AuthorizationServerMetadata {
    server_metadata(issuer)
        .await
        .unwrap_or_else(|e| panic!("the metadata of {issuer}: {e}"))
}

/// A plain HTTP client for the tests' own requests (no cookies, no proxy: everything is
/// on 127.0.0.1).
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(TIMEOUT)
        .build()
        .expect("an HTTP client")
}

/// POSTs `params` as a form to `endpoint`, authenticated with HTTP Basic as `client_id`
/// and `secret` when given (`client_secret_basic`): the status and the JSON answer (`null`
/// when it is not JSON). For what our client's token API does not show (RFC 8693's
/// `issued_token_type`, an `id_token`, the revocation endpoint's empty answer).
pub async fn form_post(
    endpoint: &str,
    basic: Option<(&str, &str)>,
    params: &[(&str, &str)],
) -> (u16, Value) {
    let mut request = http_client().post(endpoint).form(params);
    if let Some((id, secret)) = basic {
        // RFC 6749 §2.3.1: both form-encoded before they are joined.
        request = request.basic_auth(url_form(id), Some(url_form(secret)));
    }
    let response = request
        .send()
        .await
        .unwrap_or_else(|e| panic!("POST {endpoint}: {e}"));
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// `s` form-encoded (`application/x-www-form-urlencoded`).
fn url_form(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(char::from(b))
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The claims of a JWT, decoded without verifying it (for assertions).
pub fn jwt_claims(token: &str) -> Value {
    jwt_part(token, 1)
}

/// The header of a JWT, decoded without verifying it (for assertions).
pub fn jwt_header(token: &str) -> Value {
    jwt_part(token, 0)
}

fn jwt_part(token: &str, index: usize) -> Value {
    let part = token
        .split('.')
        .nth(index)
        .unwrap_or_else(|| panic!("not a JWT: {}", excerpt(token)));
    let bytes = base64url(part).unwrap_or_else(|| panic!("not base64url: {}", excerpt(part)));
    serde_json::from_slice(&bytes).expect("a JWT's part is a JSON object")
}

/// Decodes unpadded base64url.
fn base64url(s: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        } as u32)
    };
    let s = s.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    for chunk in s.chunks(4) {
        if chunk.len() == 1 {
            return None;
        }
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c)? << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

/// `reference` resolved against `base`.
fn join(base: &str, reference: &str) -> Option<String> {
    Url::parse(base)
        .ok()?
        .join(reference)
        .ok()
        .map(|u| u.to_string())
}

/// The first `method="post"` form of an HTML page: its action and its named inputs
/// (with the values they came with).
fn post_form(html: &str) -> Option<(String, Vec<(String, String)>)> {
    let lower = html.to_ascii_lowercase();
    let mut from = 0;
    while let Some(start) = lower[from..].find("<form").map(|i| i + from) {
        let open_end = lower[start..].find('>').map(|i| i + start)?;
        let close = lower[open_end..]
            .find("</form")
            .map_or(html.len(), |i| i + open_end);
        let open = &html[start..=open_end];
        from = close;
        let post = attribute(open, "method").is_some_and(|m| m.eq_ignore_ascii_case("post"));
        let Some(action) = attribute(open, "action") else {
            continue;
        };
        if !post {
            continue;
        }
        let inner = &html[open_end + 1..close];
        let inner_lower = &lower[open_end + 1..close];
        let mut fields = Vec::new();
        let mut at = 0;
        while let Some(i) = inner_lower[at..].find("<input").map(|i| i + at) {
            let end = inner_lower[i..].find('>').map_or(inner.len(), |e| e + i);
            let tag = &inner[i..end];
            if let Some(name) = attribute(tag, "name") {
                fields.push((name, attribute(tag, "value").unwrap_or_default()));
            }
            at = end;
        }
        return Some((action, fields));
    }
    None
}

/// The value of attribute `name` in an HTML tag (quoted with `"` or `'`), entities decoded.
fn attribute(tag: &str, name: &str) -> Option<String> {
    let lower = tag.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find(name).map(|i| i + from) {
        from = i + name.len();
        let before = lower[..i].chars().next_back();
        if !before.is_some_and(char::is_whitespace) {
            continue;
        }
        let rest = tag[from..].trim_start();
        let Some(rest) = rest.strip_prefix('=') else {
            continue;
        };
        let rest = rest.trim_start();
        let quote = rest.chars().next()?;
        if quote != '"' && quote != '\'' {
            let end = rest
                .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
                .unwrap_or(rest.len());
            return Some(unescape(&rest[..end]));
        }
        let value = &rest[1..];
        let end = value.find(quote)?;
        return Some(unescape(&value[..end]));
    }
    None
}

/// HTML entities (named ones an escaper writes, and numeric ones) decoded.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let Some(end) = rest.find(';').filter(|&e| e <= 10) else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let entity = &rest[1..end];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => entity
                .strip_prefix("#x")
                .or_else(|| entity.strip_prefix("#X"))
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The start of `s`, for a message.
fn excerpt(s: &str) -> String {
    s.chars().take(400).collect()
}
