//! The protected resource's metadata (RFC 9728) and the `WWW-Authenticate` challenges that
//! point clients at it.

use serde_json::{json, Value};

use super::Refusal;

/// The well-known path of protected resource metadata (RFC 9728 §3).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// What this server is to OAuth clients: its canonical URI (the audience its tokens must
/// name, RFC 8707), the authorization servers that issue them, and the scopes it knows.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProtectedResource {
    /// The canonical URI of the MCP endpoint, such as `https://mcp.example.com/mcp`.
    pub resource: String,
    /// Issuers clients may get tokens from (their `issuer` identifiers).
    pub authorization_servers: Vec<String>,
    /// Scopes this resource understands.
    pub scopes_supported: Vec<String>,
    /// A name for people.
    pub resource_name: Option<String>,
    origin: String,
    path: String,
}

/// A resource URI that cannot name a protected resource.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{uri:?} cannot be a resource URI: {why}")]
pub struct InvalidResource {
    uri: String,
    why: &'static str,
}

impl ProtectedResource {
    /// The resource at the absolute `http(s)` URI `resource` (no query, no fragment).
    pub fn new(resource: impl Into<String>) -> Result<Self, InvalidResource> {
        let resource = resource.into();
        let bad = |why| InvalidResource {
            uri: resource.clone(),
            why,
        };
        let uri: http::Uri = resource.parse().map_err(|_| bad("not a URI"))?;
        let scheme = uri.scheme_str().ok_or_else(|| bad("not absolute"))?;
        if scheme != "https" && scheme != "http" {
            return Err(bad("not http(s)"));
        }
        let authority = uri.authority().ok_or_else(|| bad("no host"))?;
        if uri.query().is_some() || resource.contains('#') {
            return Err(bad("has a query or fragment"));
        }
        let path = uri.path().trim_end_matches('/').to_owned();
        Ok(ProtectedResource {
            origin: format!("{scheme}://{}", authority.as_str().to_ascii_lowercase()),
            path,
            resource,
            authorization_servers: Vec::new(),
            scopes_supported: Vec::new(),
            resource_name: None,
        })
    }

    /// With `issuer` among its authorization servers.
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// With `scopes` listed as supported.
    pub fn scopes_supported(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Named `name` for people.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// Whether a request for `path` asks for this metadata: the well-known path, or it
    /// followed by the resource's path (RFC 9728 §3.1).
    pub fn is_metadata_path(&self, path: &str) -> bool {
        match path.strip_prefix(METADATA_PATH) {
            Some("") | Some("/") => true,
            Some(rest) => !self.path.is_empty() && rest.trim_end_matches('/') == self.path,
            None => false,
        }
    }

    /// The path of the metadata (the well-known path followed by the resource's), for
    /// an embedder that routes it ([`crate::http::layers::ResourceMetadataService`]).
    pub fn metadata_path(&self) -> String {
        format!("{METADATA_PATH}{}", self.path)
    }

    /// Where clients fetch the metadata: the path-suffixed well-known URL.
    pub fn metadata_url(&self) -> String {
        format!("{}{METADATA_PATH}{}", self.origin, self.path)
    }

    /// The metadata document.
    pub fn document(&self) -> Value {
        let mut doc = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes_supported.is_empty() {
            doc["scopes_supported"] = json!(self.scopes_supported);
        }
        if let Some(name) = &self.resource_name {
            doc["resource_name"] = json!(name);
        }
        doc
    }

    /// The `WWW-Authenticate` value for `refusal`; `scopes` are those a request needs.
    pub fn challenge(&self, refusal: &Refusal, scopes: &[String]) -> String {
        let mut parts = Vec::with_capacity(4);
        match refusal {
            Refusal::Missing => {}
            Refusal::InvalidToken(why) => {
                parts.push(r#"error="invalid_token""#.to_owned());
                parts.push(format!(r#"error_description="{}""#, quotable(why)));
            }
            Refusal::InsufficientScope(_) => {
                parts.push(r#"error="insufficient_scope""#.to_owned());
            }
        }
        let scope = match refusal {
            Refusal::InsufficientScope(needed) => needed.as_slice(),
            _ => scopes,
        };
        if !scope.is_empty() {
            parts.push(format!(r#"scope="{}""#, quotable(&scope.join(" "))));
        }
        parts.push(format!(r#"resource_metadata="{}""#, self.metadata_url()));
        format!("Bearer {}", parts.join(", "))
    }
}

/// `s` as the inside of an HTTP quoted string: printable ASCII without `"` or `\`.
fn quotable(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c == ' ' || c.is_ascii_graphic() => c,
            _ => '?',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_found_at_both_well_known_forms() {
        let r = ProtectedResource::new("https://MCP.example.com/mcp").unwrap();
        assert_eq!(
            r.metadata_url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert!(r.is_metadata_path("/.well-known/oauth-protected-resource"));
        assert!(r.is_metadata_path("/.well-known/oauth-protected-resource/mcp"));
        assert!(!r.is_metadata_path("/.well-known/oauth-protected-resource/other"));
        assert!(!r.is_metadata_path("/mcp"));
        for bad in [
            "/mcp",
            "ftp://h/mcp",
            "https://h/mcp?x=1",
            "https://h/mcp#f",
        ] {
            assert!(ProtectedResource::new(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn challenges_say_what_the_spec_says() {
        let r = ProtectedResource::new("https://h/mcp").unwrap();
        let meta = r#"resource_metadata="https://h/.well-known/oauth-protected-resource/mcp""#;
        let scopes = vec!["mcp:tools".to_owned()];
        assert_eq!(
            r.challenge(&Refusal::Missing, &scopes),
            format!(r#"Bearer scope="mcp:tools", {meta}"#)
        );
        assert_eq!(
            r.challenge(&Refusal::InvalidToken("bad \"sig\"\n".into()), &[]),
            format!(r#"Bearer error="invalid_token", error_description="bad 'sig'?", {meta}"#)
        );
        assert_eq!(
            r.challenge(&Refusal::InsufficientScope(scopes.clone()), &[]),
            format!(r#"Bearer error="insufficient_scope", scope="mcp:tools", {meta}"#)
        );
    }
}
