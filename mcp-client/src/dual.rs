//! Both eras on one connection. The 2026-07-28 versioning page lets a dual-era server
//! serve both concurrently on the same process: a connection opened with `initialize`
//! can also speak 2026-07-28, and each handle sends in its own era.

use std::sync::Arc;

use mcp_revisions::features;

use crate::{relay, Client, ClientError};

impl Client {
    /// Opens 2026-07-28 on this legacy connection too: sends `server/discover` (with the
    /// 2026 envelope) on it and returns a handle that speaks 2026-07-28 there, while this
    /// one goes on in its legacy session. Both share the connection.
    ///
    /// For a server that serves both eras concurrently on one stdio process or connection
    /// (the spec allows it; not every dual-era server does). The legacy session is asked
    /// a `ping` after the `server/discover`: a server that leaves its legacy session once
    /// it has heard 2026-07-28 fails here rather than on a host's call later. The server's
    /// own requests (sampling, elicitation, roots) come only in the legacy session and are
    /// answered in its revision.
    ///
    /// Errors: [`ClientError::Negotiation`] if this connection speaks 2026-07-28 already or
    /// the server does not serve both; otherwise what the `server/discover` met.
    pub async fn open_modern(&self) -> Result<Client, ClientError> {
        if features::per_request_meta(self.revision) {
            return Err(ClientError::Negotiation(format!(
                "this connection speaks {} already",
                self.revision
            )));
        }
        let timeout = Some(self.options.probe_timeout);
        let (revision, server) = Self::discover(&self.peer, &self.options, timeout).await?;
        if let Err(e) = self.ping().await {
            return Err(ClientError::Negotiation(format!(
                "the server left its legacy session after server/discover ({e})"
            )));
        }
        Ok(Client {
            peer: self.peer.clone(),
            shared: self.shared.clone(),
            envelope: Arc::new(relay::Envelope::new(revision, &self.options)),
            options: self.options.clone(),
            server: Arc::new(server),
            revision,
            output_schemas: self.output_schemas.clone(),
            task_tools: self.task_tools.clone(),
            next_progress: self.next_progress.clone(),
        })
    }
}
