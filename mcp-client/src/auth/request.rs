//! The authorization code request (RFC 6749 §4.1.1 with PKCE, RFC 8707's `resource`) and
//! what comes back to the redirect URI (`code`, `state`, RFC 9207's `iss`), checked.

use super::discovery::{AuthorizationServerMetadata, ProtectedResourceMetadata};
use super::pkce::{random_token, NoRandomness, Pkce};
use super::BearerChallenge;

/// The scopes to ask for, as the spec's scope selection strategy says: the challenge's
/// `scope`, else every scope the resource's metadata lists, else none (`scope` omitted).
pub fn select_scopes(
    challenge: Option<&BearerChallenge>,
    resource: &ProtectedResourceMetadata,
) -> Option<String> {
    if let Some(s) = challenge.and_then(|c| c.scope.as_deref()) {
        return Some(s.to_owned());
    }
    resource
        .scopes_supported
        .as_ref()
        .filter(|s| !s.is_empty())
        .map(|s| s.join(" "))
}

/// `application/x-www-form-urlencoded` / query encoding of one value.
pub(crate) fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `name=value&…`, each encoded.
pub(crate) fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// One value of a query string, decoded.
/// The query of `url` (between `?` and any `#`), empty when it has none.
pub(crate) fn query_of(url: &str) -> &str {
    url.split_once('?')
        .map(|(_, q)| q.split('#').next().unwrap_or(q))
        .unwrap_or("")
}

pub(crate) fn query_value(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(k)? == name)
            .then(|| percent_decode(v))
            .flatten()
    })
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// One authorization code request in flight: what the client must remember until the
/// redirect comes back (the PKCE verifier, `state`, the issuer it went to).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuthorizationRequest {
    /// Where to send the user.
    pub url: String,
    /// The redirect URI it names.
    pub redirect_uri: String,
    /// The issuer asked, for RFC 9207's check of the response.
    pub issuer: String,
    /// The resource the token is for (RFC 8707).
    pub resource: String,
    pkce: Pkce,
    state: String,
}

/// What came back to the redirect URI that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RedirectError {
    /// The authorization server said no (`error=…`).
    #[error("authorization refused: {0}")]
    Refused(String),
    /// `state` missing or not ours: not the answer to this request.
    #[error("the redirect's state is not this request's")]
    State,
    /// `iss` is not the issuer asked (RFC 9207): a mix-up attack, or a confused server.
    #[error("the redirect comes from issuer {got:?}, not {expected:?}")]
    Issuer {
        /// The issuer asked.
        expected: String,
        /// The one named.
        got: String,
    },
    /// The server says it sends `iss`, and did not.
    #[error("the redirect lacks the iss its server says it sends")]
    MissingIssuer,
    /// No `code`.
    #[error("the redirect has no code")]
    NoCode,
}

impl AuthorizationRequest {
    /// A request to `server` for `client_id`, for the resource `resource`, asking `scope`.
    pub fn new(
        server: &AuthorizationServerMetadata,
        client_id: &str,
        redirect_uri: &str,
        resource: &str,
        scope: Option<&str>,
    ) -> Result<AuthorizationRequest, NoRandomness> {
        let pkce = Pkce::new()?;
        let state = random_token(16)?;
        let endpoint = server.authorization_endpoint.clone().unwrap_or_default();
        let mut pairs = vec![
            ("response_type", "code"),
            ("client_id", client_id),
            ("redirect_uri", redirect_uri),
            ("code_challenge", pkce.challenge()),
            ("code_challenge_method", "S256"),
            ("state", &state),
            ("resource", resource),
        ];
        if let Some(s) = scope {
            pairs.push(("scope", s));
        }
        let separator = if endpoint.contains('?') { '&' } else { '?' };
        let url = format!("{endpoint}{separator}{}", form(&pairs));
        Ok(AuthorizationRequest {
            url,
            redirect_uri: redirect_uri.to_owned(),
            issuer: server.issuer.clone(),
            resource: resource.to_owned(),
            state,
            pkce,
        })
    }

    /// A request sent earlier (by this process or another replica of it), from what it
    /// was sent with: enough to check the redirect back and trade its code. Its `url` is
    /// empty: it is not sent again.
    pub fn resume(
        issuer: impl Into<String>,
        redirect_uri: impl Into<String>,
        resource: impl Into<String>,
        state: impl Into<String>,
        code_verifier: impl Into<String>,
    ) -> AuthorizationRequest {
        AuthorizationRequest {
            url: String::new(),
            redirect_uri: redirect_uri.into(),
            issuer: issuer.into(),
            resource: resource.into(),
            pkce: Pkce::from_verifier(code_verifier.into()),
            state: state.into(),
        }
    }

    /// Its `state`, which the redirect must bring back (a server that keeps requests in
    /// flight for many users finds each one by it).
    pub fn state(&self) -> &str {
        &self.state
    }

    /// The PKCE verifier, for the token request.
    pub fn code_verifier(&self) -> &str {
        self.pkce.verifier()
    }

    /// The code in the redirect the user-agent was sent to (`redirect`, the whole URL),
    /// checked: `state` ours, `iss` the issuer asked when present (and present when the
    /// server says it sends it, `iss_required`), no `error`.
    pub fn code_from(&self, redirect: &str, iss_required: bool) -> Result<String, RedirectError> {
        let query = query_of(redirect);
        // The state first: an answer that is not to this request says nothing, not even
        // that the user refused.
        if query_value(query, "state").as_deref() != Some(self.state.as_str()) {
            return Err(RedirectError::State);
        }
        if let Some(e) = query_value(query, "error") {
            let more = query_value(query, "error_description").unwrap_or_default();
            return Err(RedirectError::Refused(
                format!("{e} {more}").trim().to_owned(),
            ));
        }
        match query_value(query, "iss") {
            Some(iss) if iss != self.issuer => {
                return Err(RedirectError::Issuer {
                    expected: self.issuer.clone(),
                    got: iss,
                })
            }
            None if iss_required => return Err(RedirectError::MissingIssuer),
            _ => {}
        }
        query_value(query, "code").ok_or(RedirectError::NoCode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> AuthorizationServerMetadata {
        serde_json::from_value(serde_json::json!({
            "issuer": "https://as.example", "authorization_endpoint": "https://as.example/authorize"}))
        .expect("metadata")
    }

    #[test]
    fn scopes_follow_the_selection_strategy() {
        let prm = |s: Option<Vec<&str>>| -> ProtectedResourceMetadata {
            serde_json::from_value(
                serde_json::json!({"resource": "https://r/mcp", "scopes_supported": s}),
            )
            .expect("prm")
        };
        let challenge = BearerChallenge::parse(r#"Bearer scope="a b""#);
        assert_eq!(
            select_scopes(challenge.as_ref(), &prm(Some(vec!["c"]))).as_deref(),
            Some("a b")
        );
        assert_eq!(
            select_scopes(None, &prm(Some(vec!["c", "d"]))).as_deref(),
            Some("c d")
        );
        assert_eq!(select_scopes(None, &prm(None)), None);
    }

    #[test]
    fn the_request_carries_pkce_state_and_resource_and_the_redirect_is_checked() {
        let r = AuthorizationRequest::new(
            &server(),
            "client 1",
            "http://127.0.0.1:9/cb",
            "https://r/mcp",
            Some("a b"),
        )
        .expect("request");
        let query = r.url.split_once('?').map(|(_, q)| q).unwrap_or_default();
        assert!(r
            .url
            .starts_with("https://as.example/authorize?response_type=code&client_id=client+1&"));
        assert_eq!(
            query_value(query, "code_challenge_method").as_deref(),
            Some("S256")
        );
        assert_eq!(
            query_value(query, "resource").as_deref(),
            Some("https://r/mcp")
        );
        assert_eq!(query_value(query, "scope").as_deref(), Some("a b"));
        let state = query_value(query, "state").expect("state");
        assert_eq!(
            query_value(query, "code_challenge").as_deref(),
            Some(Pkce::from_verifier(r.code_verifier().to_owned()).challenge())
        );
        let back = |q: &str| format!("http://127.0.0.1:9/cb?{q}");
        assert_eq!(
            r.code_from(&back(&format!("code=xyz&state={state}")), false),
            Ok("xyz".into())
        );
        assert_eq!(
            r.code_from(
                &back(&format!(
                    "code=xyz&state={state}&iss=https%3A%2F%2Fas.example"
                )),
                true
            ),
            Ok("xyz".into())
        );
        assert_eq!(
            r.code_from(&back("code=xyz&state=other"), false),
            Err(RedirectError::State)
        );
        assert!(matches!(
            r.code_from(
                &back(&format!("code=x&state={state}&iss=https%3A%2F%2Fevil")),
                false
            ),
            Err(RedirectError::Issuer { .. })
        ));
        assert_eq!(
            r.code_from(&back(&format!("code=x&state={state}")), true),
            Err(RedirectError::MissingIssuer)
        );
        assert!(matches!(
            r.code_from(&back(&format!("error=access_denied&state={state}")), false),
            Err(RedirectError::Refused(_))
        ));
        // A refusal that is not to this request (a page's forged redirect) is not one.
        assert_eq!(
            r.code_from(&back("error=access_denied&state=forged"), false),
            Err(RedirectError::State)
        );
        assert_eq!(
            r.code_from(&back(&format!("state={state}")), false),
            Err(RedirectError::NoCode)
        );
    }
}
