//! Which connection a host's request to an upstream goes on: the host's own upstream
//! session where the upstream keeps one per host, else the shared one.

use super::id::UpstreamId;
use std::sync::Arc;

use mcp_client::{ClientError, EraChoice};
use mcp_revisions::features;
use mcp_server::{HostSession, RequestContext};

use super::Aggregator;
use crate::bridge::Calls;
use crate::sessions::{bridged_capabilities, fits_start, HostLinks, Link};

impl Aggregator {
    /// The per-host sessions of upstream `i` and the host of `ctx`, when that host's
    /// requests go on a session opened for it: the upstream keeps sessions per host, speaks
    /// a legacy revision (a 2026 one carries everything per request), the request came in
    /// a host session, and that host is not the first one whose capabilities are those the
    /// connection opened at start declared (that host has it).
    fn per_host<'a>(
        &'a self,
        i: UpstreamId,
        ctx: &'a RequestContext,
    ) -> Option<(&'a Arc<HostLinks>, &'a HostSession)> {
        let u = &self.inner.upstreams[i];
        let links = u.links.as_ref()?;
        let host = ctx.host_session()?;
        let legacy = u
            .client()
            .is_some_and(|c| !features::per_request_meta(c.revision()));
        let fits = || fits_start(ctx.client_capabilities());
        (legacy && !links.is_first(host.id(), fits)).then_some((links, host))
    }

    /// The connection for `ctx`'s requests to upstream `i` if it is open now; `None` when
    /// it must be opened first (see [`Aggregator::link`]) or the upstream is down. Calls
    /// relayed without a task go on it; one that needs a task takes [`Aggregator::link`],
    /// which never gives the legacy session beside a 2026 connection, because the task
    /// path writes its requests for the connection's own revision.
    pub(super) fn link_now(&self, i: UpstreamId, ctx: &RequestContext) -> Option<Link> {
        let u = &self.inner.upstreams[i];
        if let Some((links, host)) = self.per_host(i, ctx) {
            return links.get(host.id());
        }
        // A legacy host's call goes in its own era where a legacy session is open beside
        // a 2026 connection (UpstreamConfig::legacy_session).
        let legacy = (!features::per_request_meta(ctx.revision()))
            .then(|| u.legacy_client())
            .flatten();
        Some(Link {
            client: legacy.or_else(|| u.client())?,
            calls: u.calls.clone(),
        })
    }

    /// The connection for `ctx`'s requests to upstream `i`, opening the host's own session
    /// there first if it needs one. The host's session speaks the revision the shared
    /// connection negotiated (the catalog was listed in it) and declares exactly what the
    /// host declared it can be asked.
    pub(super) async fn link(
        &self,
        i: UpstreamId,
        ctx: &RequestContext,
    ) -> Result<Link, ClientError> {
        let u = &self.inner.upstreams[i];
        let shared = u
            .client()
            .ok_or_else(|| ClientError::Unavailable(u.unavailable()))?;
        let Some((links, host)) = self.per_host(i, ctx) else {
            return Ok(Link {
                client: shared,
                calls: u.calls.clone(),
            });
        };
        let era = EraChoice::Legacy(shared.revision());
        let capabilities = bridged_capabilities(ctx.client_capabilities());
        links
            .get_or_open(&u.config.key, host, || async {
                let calls = Arc::new(Calls::default());
                let client = self.open(u, calls.clone(), capabilities, era).await?;
                Ok(Link { client, calls })
            })
            .await
            .map_err(|e| ClientError::Unavailable(e.to_string()))
    }
}
