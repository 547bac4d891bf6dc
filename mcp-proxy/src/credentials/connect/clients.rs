//! Who the connect pages are a client of: the gateway's own issuer, where a browser's
//! user logs in ([`ConnectLogin`]), and each upstream's authorization server, where the
//! user consents ([`UpstreamClient`], known there as [`ConsentClient`] says).

use mcp_client::auth::{discovery, AuthorizationServerMetadata, ClientIdentity, TokenError};
use mcp_server::auth::Authorization;
use tokio::sync::OnceCell;

use super::ConnectDesk;

/// How the connect pages log a browser's user in: the gateway's own issuer (the one its
/// authorization trusts), the gateway's client there, and the authorization that tells who
/// a token it issued stands for.
#[derive(Clone)]
pub struct ConnectLogin {
    pub(super) issuer: String,
    pub(super) client: ClientIdentity,
    pub(super) resource: String,
    pub(super) scope: Option<String>,
    pub(super) authorization: Authorization,
}

impl std::fmt::Debug for ConnectLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectLogin")
            .field("issuer", &self.issuer)
            .field("client", &self.client)
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl ConnectLogin {
    /// Logs users in at `issuer` as `client`, asking a token for `resource` (the
    /// gateway's), whose principal `authorization` tells.
    pub fn new(
        issuer: impl Into<String>,
        client: ClientIdentity,
        resource: impl Into<String>,
        authorization: Authorization,
    ) -> Self {
        ConnectLogin {
            issuer: issuer.into(),
            client,
            resource: resource.into(),
            scope: None,
            authorization,
        }
    }

    /// Asking for `scope` (space-separated) as well.
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }
}

/// How the gateway is known to an upstream's authorization server, for users' consents.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ConsentClient {
    /// A client registered there beforehand.
    Registered(ClientIdentity),
    /// A client ID metadata document at this URL (the client's id), where the server
    /// takes them (`client_id_metadata_document_supported`).
    MetadataDocument(String),
    /// Registered dynamically (RFC 7591) at the first consent, the registration kept
    /// sealed with the grants (so that every replica and every restart uses the same).
    Dynamic,
}

/// One upstream's authorization server, as the gateway is a client of it.
#[derive(Debug)]
pub(crate) struct UpstreamClient {
    pub(crate) resource: String,
    pub(super) source: ConsentClient,
    pub(crate) scope: Option<String>,
    pub(super) issuer: Option<String>,
    pub(super) metadata: OnceCell<AuthorizationServerMetadata>,
    pub(super) client: OnceCell<ClientIdentity>,
}

/// A dynamic registration as it is kept.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Registration {
    pub(super) client_id: String,
    pub(super) client_secret: Option<String>,
    pub(super) auth_method: String,
}

impl UpstreamClient {
    /// Who the gateway is at the authorization server `meta` describes (upstream `key`),
    /// registering first if it is to, and has not.
    pub(crate) async fn client(
        &self,
        desk: &ConnectDesk,
        key: &str,
        meta: &AuthorizationServerMetadata,
    ) -> Result<&ClientIdentity, TokenError> {
        self.client
            .get_or_try_init(|| async {
                match &self.source {
                    ConsentClient::Registered(c) => Ok(c.clone()),
                    ConsentClient::MetadataDocument(url) => {
                        if meta.client_id_metadata_document_supported != Some(true) {
                            return Err(TokenError::Transport(format!(
                                "{} takes no client ID metadata documents",
                                meta.issuer
                            )));
                        }
                        Ok(ClientIdentity::public(url.clone()))
                    }
                    ConsentClient::Dynamic => desk.registered(key, meta).await,
                }
            })
            .await
    }

    /// Its authorization server's metadata: of `issuer` if configured, else found from
    /// the upstream's protected resource metadata.
    pub(crate) async fn metadata(&self) -> Result<&AuthorizationServerMetadata, TokenError> {
        self.metadata
            .get_or_try_init(|| async {
                let found = match &self.issuer {
                    Some(issuer) => discovery::server_metadata(issuer).await,
                    None => discovery::discover(&self.resource, None)
                        .await
                        .map(|d| d.authorization_server),
                };
                found.map_err(|e| TokenError::Transport(e.to_string()))
            })
            .await
    }
}
