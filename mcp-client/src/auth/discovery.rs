//! Finding who authorizes a protected MCP server: its Protected Resource Metadata
//! (RFC 9728; the challenge's `resource_metadata` URL, else the well-known URIs in the
//! spec's order), then its authorization server's metadata (RFC 8414 and OpenID Connect
//! Discovery, in the spec's order), each validated as the RFCs require: the resource
//! named must be the one asked about, the issuer identical to the one the URL was made
//! from.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::fetch::get_json;

/// Largest metadata document read.
const MAX_DOCUMENT: usize = 256 * 1024;

/// How long one metadata fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// A protected MCP server's metadata (RFC 9728 §2), the members a client uses; the
/// document as sent is in `raw`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct ProtectedResourceMetadata {
    /// The resource's identifier.
    pub resource: String,
    /// The issuers that can give tokens for it.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// Scopes it understands.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// The document as it came.
    #[serde(skip)]
    pub raw: Value,
}

/// An authorization server's metadata (RFC 8414 §2), the members a client uses; the
/// document as sent is in `raw`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct AuthorizationServerMetadata {
    /// Its issuer identifier.
    pub issuer: String,
    /// Where the user authorizes.
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    /// Where codes and credentials become tokens.
    #[serde(default)]
    pub token_endpoint: Option<String>,
    /// Dynamic client registration (RFC 7591).
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// Scopes it knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// PKCE methods (`S256` is required by MCP).
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// How a client authenticates at the token endpoint.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Grant types it takes.
    #[serde(default)]
    pub grant_types_supported: Option<Vec<String>>,
    /// Whether it takes Client ID Metadata Documents.
    #[serde(default)]
    pub client_id_metadata_document_supported: Option<bool>,
    /// Whether it sends `iss` with authorization responses (RFC 9207).
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// The algorithms of DPoP proofs it takes (RFC 9449 §5.1).
    #[serde(default)]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// The document as it came.
    #[serde(skip)]
    pub raw: Value,
}

impl AuthorizationServerMetadata {
    /// The metadata of the server `issuer` known only by its `token_endpoint` (configured
    /// rather than discovered).
    pub fn with_token_endpoint(
        issuer: impl Into<String>,
        token_endpoint: impl Into<String>,
    ) -> Self {
        AuthorizationServerMetadata {
            issuer: issuer.into(),
            authorization_endpoint: None,
            token_endpoint: Some(token_endpoint.into()),
            registration_endpoint: None,
            scopes_supported: None,
            code_challenge_methods_supported: None,
            token_endpoint_auth_methods_supported: None,
            grant_types_supported: None,
            client_id_metadata_document_supported: None,
            authorization_response_iss_parameter_supported: None,
            dpop_signing_alg_values_supported: None,
            raw: Value::Null,
        }
    }
}

/// What discovery found.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Discovery {
    /// The server's metadata.
    pub resource: ProtectedResourceMetadata,
    /// The metadata of the authorization server chosen (the first the resource names).
    pub authorization_server: AuthorizationServerMetadata,
}

/// Why discovery failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiscoveryError {
    /// No protected resource metadata at any place tried.
    #[error("no protected resource metadata for {endpoint} (tried {tried:?}): {last}")]
    NoResourceMetadata {
        /// The MCP endpoint.
        endpoint: String,
        /// The URLs tried, in order.
        tried: Vec<String>,
        /// The last failure.
        last: String,
    },
    /// Metadata that names another resource than the one asked about.
    #[error("the metadata at {url} is for {named:?}, not {endpoint:?}")]
    WrongResource {
        /// Where it came from.
        url: String,
        /// The resource it names.
        named: String,
        /// The MCP endpoint.
        endpoint: String,
    },
    /// The resource names no authorization server.
    #[error("the resource metadata names no authorization server")]
    NoAuthorizationServer,
    /// No usable authorization server metadata at any place tried.
    #[error("no metadata for authorization server {issuer} (tried {tried:?}): {last}")]
    NoServerMetadata {
        /// The issuer.
        issuer: String,
        /// The URLs tried, in order.
        tried: Vec<String>,
        /// The last failure.
        last: String,
    },
}

/// The MCP endpoint as a resource identifier: no fragment, no query.
fn resource_of(endpoint: &str) -> &str {
    let end = endpoint.find(['?', '#']).unwrap_or(endpoint.len());
    &endpoint[..end]
}

/// `(origin, path)` of an `http(s)` URL, the path without its trailing `/`.
fn origin_and_path(url: &str) -> (String, String) {
    let url = resource_of(url);
    match url.split_once("://") {
        Some((scheme, rest)) => match rest.find('/') {
            Some(i) => (
                format!("{scheme}://{}", &rest[..i]),
                rest[i..].trim_end_matches('/').to_owned(),
            ),
            None => (url.to_owned(), String::new()),
        },
        None => (url.to_owned(), String::new()),
    }
}

/// Whether `url` may be fetched in discovery: https, or http to this machine.
pub fn secure(url: &str) -> bool {
    if url.starts_with("https://") {
        return true;
    }
    let (origin, _) = origin_and_path(url);
    let host = origin.strip_prefix("http://").unwrap_or_default();
    let host = match host.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
        _ => host,
    };
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
}

/// Where to look for a server's protected resource metadata, in the spec's order: the
/// challenge's URL alone when it gave one (and it is on the server's own origin: a
/// challenge must not send the client to fetch anything anywhere), else the
/// path-suffixed and the root well-known URIs.
pub fn resource_metadata_urls(endpoint: &str, from_challenge: Option<&str>) -> Vec<String> {
    if let Some(url) = from_challenge {
        if origin_and_path(url).0 == origin_and_path(endpoint).0 {
            return vec![url.to_owned()];
        }
        tracing::warn!(url, "ignoring a resource_metadata URL on another origin");
    }
    let (origin, path) = origin_and_path(endpoint);
    let mut urls = Vec::with_capacity(2);
    if !path.is_empty() {
        urls.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    urls.push(format!("{origin}/.well-known/oauth-protected-resource"));
    urls
}

/// Where to look for an authorization server's metadata, in the spec's order (RFC 8414
/// with path insertion, OpenID Connect with path insertion, then path appending; for an
/// issuer without a path, RFC 8414 then OpenID Connect).
pub fn server_metadata_urls(issuer: &str) -> Vec<String> {
    let (origin, path) = origin_and_path(issuer);
    if path.is_empty() {
        return vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ];
    }
    vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}/.well-known/openid-configuration{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
    ]
}

/// The first of `urls` that answers a document `accept` takes, or the last failure.
async fn first_document<T>(
    urls: &[String],
    mut accept: impl FnMut(&str, Value) -> Result<T, String>,
) -> Result<T, String> {
    let mut last = String::from("nothing tried");
    for url in urls {
        match get_json(url, MAX_DOCUMENT, FETCH_TIMEOUT).await {
            Ok(doc) => match accept(url, doc) {
                Ok(t) => return Ok(t),
                Err(why) => last = why,
            },
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}

/// The protected resource metadata of the MCP server at `endpoint`, from the challenge
/// of its `401` if it gave one.
pub async fn resource_metadata(
    endpoint: &str,
    challenge: Option<&crate::auth::BearerChallenge>,
) -> Result<ProtectedResourceMetadata, DiscoveryError> {
    let urls = resource_metadata_urls(
        endpoint,
        challenge.and_then(|c| c.resource_metadata.as_deref()),
    );
    let wanted = resource_of(endpoint).trim_end_matches('/').to_owned();
    let mut wrong = None;
    let found = first_document(&urls, |url, doc| {
        let mut m: ProtectedResourceMetadata =
            serde_json::from_value(doc.clone()).map_err(|e| format!("{url}: {e}"))?;
        // RFC 9728 §3.3: the resource must be the one the client asked about: the same
        // origin, and its path the endpoint's or a whole-segment prefix of it.
        let (named_origin, named_path) = origin_and_path(&m.resource);
        let (wanted_origin, wanted_path) = origin_and_path(&wanted);
        let covers =
            named_path == wanted_path || wanted_path.starts_with(&format!("{named_path}/"));
        if named_origin != wanted_origin || !covers {
            wrong = Some((url.to_owned(), m.resource.clone()));
            return Err(format!("{url} names {}", m.resource));
        }
        m.raw = doc;
        Ok(m)
    })
    .await;
    match (found, wrong) {
        (Ok(m), _) => Ok(m),
        (Err(_), Some((url, named))) => Err(DiscoveryError::WrongResource {
            url,
            named,
            endpoint: endpoint.to_owned(),
        }),
        (Err(last), None) => Err(DiscoveryError::NoResourceMetadata {
            endpoint: endpoint.to_owned(),
            tried: urls,
            last,
        }),
    }
}

/// The metadata of the authorization server `issuer`; a document whose `issuer` is not
/// identical to it is not used (RFC 8414 §3.3).
pub async fn server_metadata(issuer: &str) -> Result<AuthorizationServerMetadata, DiscoveryError> {
    if !secure(issuer) {
        return Err(DiscoveryError::NoServerMetadata {
            issuer: issuer.to_owned(),
            tried: Vec::new(),
            last: "an authorization server is reached over https only (or on loopback)".into(),
        });
    }
    let urls = server_metadata_urls(issuer);
    first_document(&urls, |url, doc| {
        let mut m: AuthorizationServerMetadata =
            serde_json::from_value(doc.clone()).map_err(|e| format!("{url}: {e}"))?;
        if m.issuer != issuer {
            return Err(format!(
                "{url} is the metadata of {:?}, not {issuer:?}",
                m.issuer
            ));
        }
        m.raw = doc;
        Ok(m)
    })
    .await
    .map_err(|last| DiscoveryError::NoServerMetadata {
        issuer: issuer.to_owned(),
        tried: urls,
        last,
    })
}

/// Discovery from a `401`: the resource's metadata, then its first authorization server's.
pub async fn discover(
    endpoint: &str,
    challenge: Option<&crate::auth::BearerChallenge>,
) -> Result<Discovery, DiscoveryError> {
    let resource = resource_metadata(endpoint, challenge).await?;
    let issuer = resource
        .authorization_servers
        .first()
        .ok_or(DiscoveryError::NoAuthorizationServer)?
        .clone();
    let authorization_server = server_metadata(&issuer).await?;
    Ok(Discovery {
        resource,
        authorization_server,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_looked_for_in_the_spec_order() {
        assert_eq!(
            resource_metadata_urls("https://example.com/public/mcp", None),
            [
                "https://example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://example.com/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            resource_metadata_urls("https://example.com/mcp", Some("https://example.com/prm")),
            ["https://example.com/prm"]
        );
        assert_eq!(
            resource_metadata_urls("https://example.com/mcp", Some("http://169.254.169.254/x")),
            [
                "https://example.com/.well-known/oauth-protected-resource/mcp",
                "https://example.com/.well-known/oauth-protected-resource"
            ],
            "a URL on another origin is not fetched"
        );
        assert!(secure("https://a") && secure("http://127.0.0.1:9/x") && !secure("http://a/x"));
        assert!(secure("https://auth.example.com/jwks"));
        assert!(secure("http://127.0.0.1:8080/jwks"));
        assert!(secure("http://localhost/jwks"));
        assert!(!secure("http://auth.example.com/jwks"));
        assert!(!secure("http://127.0.0.1.evil.example/jwks"));
        assert!(!secure("ftp://x/jwks"));
        assert_eq!(
            resource_metadata_urls("https://example.com", None),
            ["https://example.com/.well-known/oauth-protected-resource"]
        );
        assert_eq!(
            server_metadata_urls("https://auth.example.com/tenant1"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            server_metadata_urls("https://auth.example.com"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration"
            ]
        );
    }
}
