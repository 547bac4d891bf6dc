//! A `WWW-Authenticate` header's Bearer challenge (RFC 6750 §3, RFC 9728 §5.1): where the
//! protected resource metadata is, the scopes to ask for, and what was wrong.

/// The Bearer challenge of a `401` or `403`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BearerChallenge {
    /// `resource_metadata`: the protected resource metadata URL.
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs, space-separated as sent.
    pub scope: Option<String>,
    /// `error` (`invalid_token`, `insufficient_scope`, …).
    pub error: Option<String>,
    /// `error_description`.
    pub error_description: Option<String>,
}

impl BearerChallenge {
    /// The Bearer (or DPoP) challenge among those of a `WWW-Authenticate` value (several
    /// schemes may share one header), or `None` when there is none.
    pub fn parse(header: &str) -> Option<BearerChallenge> {
        let mut rest = header;
        let mut dpop = None;
        loop {
            let (scheme, after) = split_token(rest.trim_start());
            if scheme.is_empty() {
                return dpop;
            }
            let (params, next) = parameters(after);
            let get = |k: &str| {
                params
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(k))
                    .map(|(_, v)| v.clone())
            };
            let challenge = || BearerChallenge {
                resource_metadata: get("resource_metadata"),
                scope: get("scope"),
                error: get("error"),
                error_description: get("error_description"),
            };
            if scheme.eq_ignore_ascii_case("bearer") {
                return Some(challenge());
            }
            // A DPoP challenge (RFC 9449 §7.1) carries the same parameters; a Bearer one
            // beside it is preferred.
            if scheme.eq_ignore_ascii_case("dpop") && dpop.is_none() {
                dpop = Some(challenge());
            }
            let Some(next) = next else { return dpop };
            rest = next;
        }
    }

    /// The scopes of `scope`, one by one.
    pub fn scopes(&self) -> Vec<String> {
        self.scope
            .as_deref()
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    }
}

/// A token (`1*tchar`) at the start of `s`, and what follows it.
fn split_token(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)))
        .unwrap_or(s.len());
    s.split_at(end)
}

/// The `name=value` parameters at the start of `s` (values as tokens or quoted strings),
/// and the rest after the comma that starts the next challenge, if one does.
fn parameters(mut s: &str) -> (Vec<(String, String)>, Option<&str>) {
    let mut out = Vec::new();
    loop {
        s = s.trim_start().trim_start_matches(',').trim_start();
        let (name, after) = split_token(s);
        let after_ws = after.trim_start();
        if name.is_empty() || !after_ws.starts_with('=') {
            // Not a parameter: another challenge's scheme starts here (or nothing does).
            return (out, (!name.is_empty()).then_some(s));
        }
        let value_start = after_ws[1..].trim_start();
        let (value, rest) = match value_start.strip_prefix('"') {
            Some(quoted) => unquote(quoted),
            None => {
                let (v, r) = split_token(value_start);
                // token68-ish values (base64 with `/` `=`) are read to the next comma.
                let end = value_start.find(',').unwrap_or(value_start.len());
                if v.len() < end {
                    (value_start[..end].trim().to_owned(), &value_start[end..])
                } else {
                    (v.to_owned(), r)
                }
            }
        };
        out.push((name.to_owned(), value));
        s = rest;
    }
}

/// A quoted string's content (after its opening quote), unescaped, and what follows it.
fn unquote(s: &str) -> (String, &str) {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return (out, &s[i + 1..]),
            '\\' => {
                if let Some((_, e)) = chars.next() {
                    out.push(e);
                }
            }
            c => out.push(c),
        }
    }
    (out, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_challenges_are_read_among_others() {
        let c = BearerChallenge::parse(
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read files:write""#,
        )
        .expect("bearer");
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        assert_eq!(c.scopes(), ["files:read", "files:write"]);
        let c = BearerChallenge::parse(
            r#"DPoP algs="ES256", Bearer error="insufficient_scope", scope=admin, error_description="needs \"admin\"""#,
        )
        .expect("bearer after another scheme");
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scope.as_deref(), Some("admin"));
        assert_eq!(c.error_description.as_deref(), Some(r#"needs "admin""#));
        assert_eq!(
            BearerChallenge::parse("Bearer"),
            Some(BearerChallenge::default())
        );
        assert_eq!(BearerChallenge::parse(r#"Basic realm="x""#), None);
        let c = BearerChallenge::parse(
            r#"DPoP error="use_dpop_nonce", resource_metadata="https://m/x""#,
        )
        .expect("a DPoP challenge alone is read");
        assert_eq!(c.error.as_deref(), Some("use_dpop_nonce"));
        assert_eq!(c.resource_metadata.as_deref(), Some("https://m/x"));
        assert_eq!(BearerChallenge::parse(""), None);
    }
}
