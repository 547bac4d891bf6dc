//! Listing an upstream and following its list changes: the first listing of a connection
//! (bounded like its handshake), a relisting when the upstream says a list changed
//! (coalesced when it says so often), and which lists hosts are told changed.

use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_client::{Client, ClientError, Listed};
use mcp_types::protocol::*;

use super::catalog::{Listing, ListsChanged};
use super::id::UpstreamId;
use super::pool::Upstream;
use super::Aggregator;
use crate::UpstreamError;

/// Shortest time between two listings of an upstream (or of a host's own session of one)
/// that keeps saying its lists changed.
pub(super) const RELIST_INTERVAL: Duration = Duration::from_millis(500);

/// How often a supervisor (or follower) with nothing to do looks whether its connection
/// ended.
pub(super) const CLOSE_POLL: Duration = Duration::from_millis(500);

impl Aggregator {
    /// What a connection just opened offers, bounded like its handshake by the connect
    /// timeout (a listing that hangs must not hold a start any longer than one).
    pub(super) async fn first_listing(&self, client: &Client) -> Result<Listing, UpstreamError> {
        let limit = self.inner.options.connect_timeout;
        match tokio::time::timeout(limit, list_all(client)).await {
            Ok(listed) => listed,
            Err(_) => Err(UpstreamError::Timeout(limit)),
        }
    }

    /// Lists upstream `i` again when it says a list changed (or a new session may offer
    /// others), until `client`'s connection ends or this aggregator stops keeping it. A
    /// flood of list changes is coalesced: the first is followed at once, the rest at most
    /// once per [`RELIST_INTERVAL`]; hosts hear only of the lists the upstream said changed
    /// or that read differently.
    pub(super) async fn follow_list_changes(
        &self,
        i: UpstreamId,
        u: &Upstream,
        client: &Client,
        mut notes: tokio::sync::broadcast::Receiver<TypedNotification>,
    ) {
        let mut renewals = u.session_renewals.load(Ordering::Relaxed);
        let mut due = false;
        let mut last: Option<tokio::time::Instant> = None;
        loop {
            let next = last.map(|t| t + RELIST_INTERVAL).filter(|_| due);
            let tick = next.unwrap_or_else(|| tokio::time::Instant::now() + CLOSE_POLL);
            let changed = tokio::select! {
                n = notes.recv() => match n {
                    Ok(TypedNotification::Bare(_)) => true,
                    Ok(_) => false,
                    // Notifications were dropped: a list change may be among them.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => true,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => false,
                },
                () = tokio::time::sleep_until(tick) => false,
            };
            let renewed = u.session_renewals.load(Ordering::Relaxed);
            due |= changed || renewed != renewals;
            renewals = renewed;
            let now = tokio::time::Instant::now();
            if due && last.is_none_or(|t| now >= t + RELIST_INTERVAL) {
                due = false;
                last = Some(now);
                // What the upstream said changed is announced even if the listing reads
                // the same (its notification is what a 2026 listen stream must hear); what
                // it did not say is announced only if the listing differs.
                let said = client.take_list_changes();
                let changed = self.relist(i, client).await.or_said(said);
                self.announce(i, changed);
            }
            if client.close_reason().is_some() || !self.keeps(u) {
                return;
            }
        }
    }

    /// Lists again the upstreams whose `ttlMs` has run out.
    pub(super) async fn refresh_stale(&self) {
        for i in self.inner.catalog.stale(std::time::Instant::now()) {
            if let Some(client) = self.inner.upstreams[i].client() {
                let changed = self.relist(i, &client).await;
                self.announce(i, changed);
            }
        }
    }

    /// Lists upstream `i` again; when that fails, its last listing stays and the failure
    /// is reported in its status until a listing succeeds. Which lists changed.
    pub(super) async fn relist(&self, i: UpstreamId, client: &Client) -> ListsChanged {
        let u = &self.inner.upstreams[i];
        match list_all(client).await {
            Ok(listing) => {
                *u.last_error.lock() = None;
                self.inner.catalog.set_listing(i, listing)
            }
            Err(e) => {
                tracing::warn!(upstream = %u.config.key, kind = e.kind(), "relisting failed: {e}");
                self.failed(u, e);
                ListsChanged::default()
            }
        }
    }
}

/// Everything `client`'s upstream offers, each item as it was written (TOOL-07). A failed `tools/list` fails the listing (an
/// upstream whose tools cannot be listed is failing, not empty); a failed prompts or
/// resources list is logged and left empty. A 2026 upstream's `ttlMs` comes from the same
/// `tools/list` requests.
async fn list_all(client: &Client) -> Result<Listing, UpstreamError> {
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
