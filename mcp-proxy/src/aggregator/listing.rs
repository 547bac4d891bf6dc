//! Listing an upstream: everything it offers, read in one go, and how often a listing
//! that keeps changing is read again.

use std::time::Duration;

use mcp_client::{Client, ClientError, Listed};

use super::catalog::Listing;
use crate::upstream_error::UpstreamError;

/// Shortest time between two listings of an upstream (or of a host's own session of one)
/// that keeps saying its lists changed.
pub(super) const RELIST_INTERVAL: Duration = Duration::from_millis(500);

/// How often a supervisor (or follower) with nothing to do looks whether its connection
/// ended.
pub(super) const CLOSE_POLL: Duration = Duration::from_millis(500);

/// Everything `client`'s upstream offers, each item as it was written (TOOL-07). A failed `tools/list` fails the listing (an
/// upstream whose tools cannot be listed is failing, not empty); a failed prompts or
/// resources list is logged and left empty. A 2026 upstream's `ttlMs` comes from the same
/// `tools/list` requests.
pub(super) async fn list_all(client: &Client) -> Result<Listing, UpstreamError> {
    let caps = client.server().capabilities.clone();
    let mut l = Listing::default();
    if caps.tools.is_some() {
        let listed = client
            .list_tools_exact()
            .await
            .map_err(|e| UpstreamError::from_client(&e).during("tools/list"))?;
        l.tools = listed.items;
        l.stale_at = listed.ttl.map(|t| std::time::Instant::now() + t);
    }
    if caps.prompts.is_some() {
        l.prompts = or_empty("prompts/list", client.list_prompts_exact().await);
    }
    if caps.resources.is_some() {
        l.resources = or_empty("resources/list", client.list_resources_exact().await);
        l.templates = or_empty(
            "resources/templates/list",
            client.list_resource_templates_exact().await,
        );
    }
    Ok(l)
}

fn or_empty<T>(what: &str, listed: Result<Listed<T>, ClientError>) -> Vec<T> {
    listed.map(|l| l.items).unwrap_or_else(|e| {
        tracing::warn!("{what} failed: {e}; listed as empty");
        Vec::new()
    })
}
