//! What a per-user upstream lists for each user: a principal's own connection is listed
//! (with that user's token) as what the host of a request sees of that upstream, in place
//! of the listing the gateway's own identity got, so that an upstream whose lists differ
//! per user is shown to each user as it lists for them. A request with a host session
//! sees it through that host's own listings (`own_lists.rs`, list changes told to that
//! host alone); a lone 2026 request, through its principal's.

use std::sync::Arc;

use mcp_client::Client;
use mcp_server::auth::PrincipalDigest;
use mcp_server::RequestContext;
use mcp_types::protocol::TypedNotification;

use super::id::UpstreamId;
use super::listing::RELIST_INTERVAL;
use super::own_lists::{closed, OwnSessions};

/// Who follows a principal's connection: a host session, or a principal's lone requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Follower {
    Host(mcp_server::HostSessionId),
    Principal(PrincipalDigest),
}

impl OwnSessions {
    /// Has the viewer of `ctx` see what the principal's connection `client` to per-user
    /// upstream `i` lists, unless it does already or is being made to (one follower per
    /// viewer and upstream, until its connection or host ends).
    pub(super) fn follow_principal_link(
        self: &Arc<Self>,
        i: UpstreamId,
        ctx: &RequestContext,
        client: &Client,
    ) {
        let follower = match (ctx.host_session(), ctx.principal()) {
            (Some(host), _) => Follower::Host(host.id()),
            (None, Some(p)) => Follower::Principal(PrincipalDigest::of(Some(p))),
            (None, None) => return,
        };
        if !self.following.lock().insert((follower, i)) {
            return;
        }
        let following = match (follower, ctx.host_session()) {
            (Follower::Host(_), Some(host)) => {
                self.follow_own_session(i, host.clone(), client.clone())
            }
            (Follower::Principal(p), _) => self.follow_principal(i, p, client.clone()),
            (Follower::Host(_), None) => return,
        };
        let me = Arc::downgrade(self);
        tokio::spawn(async move {
            let _ = following.await;
            if let Some(own) = me.upgrade() {
                own.following.lock().remove(&(follower, i));
            }
        });
    }

    /// Lists `client` as what `principal`'s lone requests see of upstream `i`, and again
    /// at each list change it announces, until its connection ends.
    fn follow_principal(
        self: &Arc<Self>,
        i: UpstreamId,
        principal: PrincipalDigest,
        client: Client,
    ) -> tokio::task::JoinHandle<()> {
        let me = Arc::downgrade(self);
        let token = self.principals.token();
        tokio::spawn(async move {
            let mut notes = client.notifications();
            let mut due = true;
            loop {
                if due {
                    due = false;
                    let Some(own) = me.upgrade() else { return };
                    let _ = client.take_list_changes();
                    own.relist_into(&own.principals, principal, i, &client, token)
                        .await;
                    drop(own);
                    tokio::time::sleep(RELIST_INTERVAL).await;
                }
                let note = tokio::select! {
                    n = notes.recv() => n,
                    () = closed(&client) => break,
                };
                match note {
                    Ok(TypedNotification::Bare(_)) => due = true,
                    Ok(_) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => due = true,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                }
            }
            if let Some(own) = me.upgrade() {
                own.principals.remove(principal, i, token);
            }
        })
    }
}
