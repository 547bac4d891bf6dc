//! Which connection a host's request to an upstream goes on: the shared one, the host's
//! own upstream session, or a pooled session lent to the one call (or to the calls of a
//! host that can be asked nothing).

use super::id::UpstreamId;
use std::sync::Arc;

use mcp_client::{ClientError, EraChoice};
use mcp_revisions::features;
use mcp_server::{HostSession, RequestContext};
use mcp_types::protocol::ClientCapabilities;

use super::own_lists::OwnSessions;
use super::pool::{Pool, Upstream};
use crate::credentials::{CredentialError, PerUser, PrincipalAuth};
use crate::sessions::host::HostLinks;
use crate::sessions::pool::{SessionPool, Sharer};
use crate::sessions::principal::{PrincipalLinkError, PrincipalLinks};
use crate::sessions::{bridged_capabilities, fits_start, start_capabilities, Link};
use crate::upstream_questions::Calls;

/// What a host's request needs of the upstream session it goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Need {
    /// One call: any session that declared what its host declared will do.
    Call,
    /// Something the upstream keeps for the host across calls (a resource subscription, a
    /// task and what follows it): the host's own session.
    State,
}

impl Need {
    /// What request `method_name` needs: a task (made by `params`' `task`, or followed by
    /// a `tasks/*` request) lives in the session that created it.
    pub(super) fn of(method_name: &str, params: &mcp_types::raw::RawObject<'_>) -> Need {
        match method_name.starts_with("tasks/") || params.contains_key("task") {
            true => Need::State,
            false => Need::Call,
        }
    }
}

/// Where one host's requests to one upstream go.
enum Via<'a> {
    /// The shared connection.
    Shared,
    /// The host's own session ([`crate::SessionMode::PerHost`]).
    Own(&'a Arc<HostLinks>, &'a HostSession),
    /// A pooled session per call (or per host that can be asked nothing), or the host's
    /// own once it keeps state upstream ([`crate::SessionMode::Pooled`]).
    Pool(&'a Arc<SessionPool>, &'a Arc<HostLinks>, &'a HostSession),
    /// The connection of the request's principal ([`crate::credentials::PerUser`]).
    Principal(&'a Arc<PrincipalLinks>, &'a PerUser),
}

/// Which connection each host's request to an upstream goes on (see the module's docs),
/// opening a host's own session when it needs one. Cheap to clone.
#[derive(Clone)]
pub(super) struct Links {
    pool: Arc<Pool>,
    own: Arc<OwnSessions>,
}

impl Links {
    /// Links to `pool`'s upstreams; a host's own session is followed by `own`.
    pub(super) fn new(pool: Arc<Pool>, own: Arc<OwnSessions>) -> Links {
        Links { pool, own }
    }

    /// The pool the links lead into.
    pub(super) fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    /// How the host of `ctx` reaches upstream `i`: on sessions opened for hosts when the
    /// upstream keeps them, speaks a legacy revision (a 2026 one carries everything per
    /// request), the request came in a host session, and that host is not the first one
    /// whose capabilities are those the connection opened at start declared (that host
    /// has it).
    fn via<'a>(&'a self, i: UpstreamId, ctx: &'a RequestContext) -> Via<'a> {
        let u = &self.pool.get(i);
        if let (Some(links), Some(per_user)) = (&u.principals, &u.config.per_user) {
            return Via::Principal(links, per_user);
        }
        let (Some(links), Some(host)) = (u.links.as_ref(), ctx.host_session()) else {
            return Via::Shared;
        };
        let legacy = u
            .client()
            .is_some_and(|c| !features::per_request_meta(c.revision()));
        let fits = || fits_start(ctx.client_capabilities());
        if !legacy || links.is_first(host.id(), fits) {
            return Via::Shared;
        }
        match &u.pool {
            Some(pool) => Via::Pool(pool, links, host),
            None => Via::Own(links, host),
        }
    }

    /// The connection for a call of `ctx`'s host to upstream `i` if one is ready now;
    /// `None` when it must be opened or waited for first (see [`Links::link`]) or the
    /// upstream is down. Calls relayed without a task go on it; one that needs a task
    /// takes [`Links::link`], which never gives the legacy session beside a 2026
    /// connection, because the task path writes its requests for the connection's own
    /// revision.
    pub(super) fn link_now(&self, i: UpstreamId, ctx: &RequestContext) -> Option<Link> {
        let u = &self.pool.get(i);
        match self.via(i, ctx) {
            Via::Principal(links, _) => return links.ready(ctx.principal()?),
            Via::Own(links, host) => return links.get(host.id()),
            Via::Pool(pool, links, host) => {
                let capabilities = bridged_capabilities(ctx.client_capabilities());
                return links
                    .get(host.id())
                    .or_else(|| pool.try_lease(&capabilities, sharer(&capabilities, host)));
            }
            Via::Shared => {}
        }
        // A legacy host's call goes in its own era where a legacy session is open beside
        // a 2026 connection (UpstreamConfig::legacy_session).
        let legacy = (!features::per_request_meta(ctx.revision()))
            .then(|| u.legacy_client())
            .flatten();
        Some(Link {
            client: legacy.or_else(|| u.client())?,
            calls: u.calls.clone(),
            lease: None,
        })
    }

    /// The connection for `ctx`'s request to upstream `i`, opening (or waiting for) a
    /// session for the host there first if it needs one. A host's session speaks the
    /// revision the shared connection negotiated (the catalog was listed in it) and
    /// declares exactly what the host declared it can be asked.
    pub(super) async fn link(
        &self,
        i: UpstreamId,
        ctx: &RequestContext,
        need: Need,
    ) -> Result<Link, ClientError> {
        let u = self.pool.get(i);
        let shared = self.pool.shared(i)?;
        let (pool, links, host) = match self.via(i, ctx) {
            Via::Principal(links, per_user) => {
                return self.principal_link(i, ctx, links, per_user, shared).await
            }
            Via::Shared => {
                return Ok(Link {
                    client: shared,
                    calls: u.calls.clone(),
                    lease: None,
                })
            }
            Via::Own(links, host) => (None, links, host),
            Via::Pool(pool, links, host) => (Some(pool), links, host),
        };
        let era = EraChoice::Legacy(shared.revision());
        let capabilities = bridged_capabilities(ctx.client_capabilities());
        if let Some(pool) = pool {
            if let Some(own) = links.get(host.id()) {
                return Ok(own);
            }
            if need == Need::Call {
                let open = || self.open_link(u, capabilities.clone(), era);
                return pool
                    .lease(
                        &u.config.key,
                        &capabilities,
                        sharer(&capabilities, host),
                        self.pool.call_timeout(i),
                        open,
                    )
                    .await
                    .map_err(|e| ClientError::Unavailable(e.to_string()));
            }
        }
        self.own_link(i, links, host, capabilities, era).await
    }

    /// `host`'s own session on upstream `i`, opened if it has none; what a new one lists
    /// is what the host sees of that upstream from then on.
    async fn own_link(
        &self,
        i: UpstreamId,
        links: &Arc<HostLinks>,
        host: &HostSession,
        capabilities: ClientCapabilities,
        era: EraChoice,
    ) -> Result<Link, ClientError> {
        let u = &self.pool.get(i);
        let open = || async {
            let link = self.open_link(u, capabilities, era).await?;
            // Followed until the host or the session ends, on a task of its own.
            drop(
                self.own
                    .follow_own_session(i, host.clone(), link.client.clone()),
            );
            Ok(link)
        };
        links
            .get_or_open(&u.config.key, host, open)
            .await
            .map_err(|e| ClientError::Unavailable(e.to_string()))
    }

    /// The connection of `ctx`'s principal to upstream `i`, opened (speaking the revision
    /// of `shared`, declaring what the gateway can bridge, as the shared connection
    /// does) with that principal's credentials if it has none; its token renewed first
    /// when the one held is not good any more.
    async fn principal_link(
        &self,
        i: UpstreamId,
        ctx: &RequestContext,
        links: &Arc<PrincipalLinks>,
        per_user: &PerUser,
        shared: mcp_client::Client,
    ) -> Result<Link, ClientError> {
        let u = self.pool.get(i);
        let key = u.config.key.as_str();
        let principal = ctx.principal_shared().ok_or_else(|| {
            let e = CredentialError::NoPrincipal {
                upstream: key.into(),
            };
            ClientError::Unavailable(e.to_string())
        })?;
        let resource = match &u.config.transport {
            crate::UpstreamTransport::Http(h) => h.url.as_str(),
            _ => "",
        };
        let era = match features::per_request_meta(shared.revision()) {
            true => EraChoice::Modern,
            false => EraChoice::Legacy(shared.revision()),
        };
        let auth = || {
            PrincipalAuth::new(
                per_user.credentials.clone(),
                key,
                resource,
                principal.clone(),
            )
        };
        let open = |auth: Arc<PrincipalAuth>| async move {
            let calls = Arc::new(Calls::default());
            let client = self
                .pool
                .open_as(u, calls.clone(), start_capabilities(), era, Some(auth))
                .await?;
            Ok(Link {
                client,
                calls,
                lease: None,
            })
        };
        let link = links
            .get_or_open(key, principal, auth, open)
            .await
            .map_err(|e| match e {
                // The user's to act on: the host is asked (`consent.rs`).
                PrincipalLinkError::Credentials(CredentialError::ConsentRequired(c)) => {
                    ClientError::Server(c.to_error())
                }
                // The host is told which upstream: `reason` does not say it again.
                PrincipalLinkError::Credentials(e) => ClientError::Unavailable(e.reason()),
                other => ClientError::Unavailable(other.to_string()),
            })?;
        // What it lists for this user is what this user sees of it.
        self.own.follow_principal_link(i, ctx, &link.client);
        Ok(link)
    }

    /// A new session on `u` for hosts that declared `capabilities`.
    async fn open_link(
        &self,
        u: &Upstream,
        capabilities: ClientCapabilities,
        era: EraChoice,
    ) -> Result<Link, crate::upstream_error::UpstreamError> {
        // A host's own session or a pooled one: one host's calls at a time.
        let calls = Arc::new(Calls::for_one_host());
        let client = self.pool.open(u, calls.clone(), capabilities, era).await?;
        watch_list_changes(&client, &u.heard_elsewhere);
        Ok(Link {
            client,
            calls,
            lease: None,
        })
    }
}

/// Tells the upstream's keeper of each list change `client` (a pooled session, or a
/// host's own) hears, so that it lists the upstream again on its own connection: an
/// upstream whose lists live outside its sessions (a database, a file, one server behind
/// them all) says so only on the session whose call changed them. What the keeper's
/// listing shows is what every host then sees; a change held in one session's process
/// alone is not (another session would not have it). Ends when the session's client is
/// gone.
pub(super) fn watch_list_changes(client: &mcp_client::Client, heard: &Arc<tokio::sync::Notify>) {
    use tokio::sync::broadcast::error::RecvError;
    let mut notes = client.notifications();
    let heard = Arc::downgrade(heard);
    tokio::spawn(async move {
        loop {
            let list_changed = match notes.recv().await {
                Ok(mcp_types::protocol::TypedNotification::Bare(_)) => true,
                Ok(_) => false,
                Err(RecvError::Lagged(_)) => true,
                Err(RecvError::Closed) => return,
            };
            if list_changed {
                let Some(heard) = heard.upgrade() else { return };
                heard.notify_one();
            }
        }
    });
}

/// Whether `host`'s calls may share a pooled session (see `sessions::pool`): it can be asked
/// nothing, so the session declares nothing either.
fn sharer(capabilities: &ClientCapabilities, host: &HostSession) -> Sharer {
    (!capabilities.answers_input_requests()).then(|| host.id())
}

#[cfg(test)]
mod tests {
    use super::super::test_parts::{connect, ids, in_process, links, parts, request};
    use super::*;
    use crate::sessions::{PerHostLimits, SessionMode};

    #[tokio::test]
    async fn a_shared_upstream_is_reached_on_its_shared_connection() {
        let (pool, catalog) = parts(vec![in_process("alpha", vec!["echo"])]);
        let i = ids(1)[0];
        let shared = connect(&pool, i).await;
        let links = links(pool.clone(), catalog);
        let req = request().await;
        let now = links.link_now(i, &req.ctx).expect("ready now");
        assert!(now.client.same_connection(&shared));
        assert!(Arc::ptr_eq(&now.calls, &pool.get(i).calls));
        assert!(now.lease.is_none());
        for need in [Need::Call, Need::State] {
            let link = links.link(i, &req.ctx, need).await.expect("linked");
            assert!(link.client.same_connection(&shared), "{need:?}");
        }
        pool.close_all().await;
    }

    #[tokio::test]
    async fn a_down_upstream_has_no_link_and_says_why() {
        let (pool, catalog) = parts(vec![in_process("alpha", vec!["echo"])]);
        let i = ids(1)[0];
        let links = links(pool, catalog);
        let req = request().await;
        assert!(links.link_now(i, &req.ctx).is_none());
        match links.link(i, &req.ctx, Need::Call).await {
            Err(ClientError::Unavailable(why)) => {
                assert_eq!(why, "upstream `alpha` is unavailable: not connected")
            }
            Err(e) => panic!("another error: {e}"),
            Ok(_) => panic!("linked to a down upstream"),
        }
    }

    #[tokio::test]
    async fn a_host_gets_a_session_of_its_own_on_a_legacy_per_host_upstream() {
        let mut config = in_process("alpha", vec!["echo"]);
        config.revision = Some(mcp_types::Revision::LATEST_LEGACY);
        config.session = SessionMode::PerHost(PerHostLimits::default());
        let (pool, catalog) = parts(vec![config]);
        let i = ids(1)[0];
        let shared = connect(&pool, i).await;
        assert!(!features::per_request_meta(shared.revision()));
        let links = links(pool.clone(), catalog);
        // A host that declares less than the shared connection did: not the first host.
        let req = request().await;
        let host = req.ctx.host_session().expect("a host session").id();
        assert!(links.link_now(i, &req.ctx).is_none(), "none opened yet");
        let own = links.link(i, &req.ctx, Need::Call).await.expect("opened");
        assert!(!own.client.same_connection(&shared));
        assert!(!Arc::ptr_eq(&own.calls, &pool.get(i).calls));
        let again = links.link_now(i, &req.ctx).expect("open now");
        assert!(
            again.client.same_connection(&own.client),
            "the same one, kept"
        );
        let upstream = pool.get(i);
        let host_links = upstream.links.as_ref().expect("per-host links");
        assert!(host_links.get(host).is_some());
        assert_eq!(pool.status()[0].host_sessions, 1);
        pool.close_all().await;
    }

    #[test]
    fn what_a_task_needs_is_its_own_session() {
        let need = |method: &str, params: &str| {
            let raw = serde_json::value::RawValue::from_string(params.into()).expect("raw");
            Need::of(
                method,
                &mcp_types::raw::RawObject::from_raw(&raw).expect("object"),
            )
        };
        assert_eq!(need("tools/call", r#"{"name":"x"}"#), Need::Call);
        assert_eq!(need("tools/call", r#"{"name":"x","task":{}}"#), Need::State);
        assert_eq!(need("tasks/get", r#"{"taskId":"t"}"#), Need::State);
        assert_eq!(need("resources/read", r#"{"uri":"u"}"#), Need::Call);
    }
}
