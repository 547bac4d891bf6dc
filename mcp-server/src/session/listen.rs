//! The 2026-07-28 `subscriptions/listen` stream (its resource subscriptions included) and
//! the list changes a legacy session hears: what flows to a client besides answers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mcp_types::protocol::*;
use mcp_types::rpc::Peer;
use mcp_types::{meta, ErrorObject, RequestId, Revision};
use serde_json::{json, Value};

use super::Session;
use crate::context::Notifier;
use crate::host::HostSession;
use crate::{RequestContext, Subscriber};

impl Session {
    /// `subscriptions/listen` (2026-07-28): acknowledges what the server honours of what the
    /// client asked for, then sends the list changes and resource updates it asked for,
    /// each tagged with the subscription id, until the client cancels or goes away. The
    /// `resourceSubscriptions` are made of the handler as `subscribe` calls whose
    /// [`RequestContext::subscriber`] is this stream (only where the handler declares
    /// `resources.subscribe`; a URI it refuses is left out of the acknowledgement), and
    /// unmade when the stream ends.
    pub(super) async fn listen(
        &self,
        id: &RequestId,
        filter: SubscriptionFilter,
        ctx: RequestContext,
    ) -> Result<Value, ErrorObject> {
        let tag = json!({ meta::SUBSCRIPTION_ID: id });
        let open = Arc::new(AtomicBool::new(false));
        // The stream's own life: ended (its guard dropped) when this returns.
        let (life, _ends) = HostSession::start();
        let mut sub_ctx = ctx.clone();
        sub_ctx.listen = Some(Subscriber::listen(
            life,
            ctx.notifier.clone(),
            tag.clone(),
            open.clone(),
        ));
        let subscribed = self
            .subscribe_all(&sub_ctx, filter.resource_subscriptions.clone())
            .await;
        let caps = self.handler.capabilities();
        let granted = SubscriptionFilter {
            tools_list_changed: filter.tools_list_changed.filter(|_| caps.tools.is_some()),
            prompts_list_changed: filter
                .prompts_list_changed
                .filter(|_| caps.prompts.is_some()),
            resources_list_changed: filter
                .resources_list_changed
                .filter(|_| caps.resources.is_some()),
            resource_subscriptions: (!subscribed.is_empty()).then(|| subscribed.clone()),
            ..Default::default()
        };
        let changes = self.shared.changes.subscribe();
        let ack = json!({"notifications": granted, "_meta": tag});
        if ctx
            .notifier
            .notify(method::SUBSCRIPTIONS_ACKNOWLEDGED, ack)
            .await
        {
            open.store(true, Ordering::SeqCst);
            relay_changes(changes, &granted, &ctx, &tag).await;
        }
        for uri in subscribed {
            let p = ResourceRequestParams {
                uri,
                ..Default::default()
            };
            if let Err(e) = self.handler.subscribe(&sub_ctx, p, false).await {
                tracing::debug!(
                    "unsubscribing at the end of a listen stream failed: {}",
                    e.message
                );
            }
        }
        Ok(json!({"_meta": tag}))
    }

    /// The URIs of `uris` the handler subscribed `ctx`'s stream to, when it declares
    /// `resources.subscribe`.
    async fn subscribe_all(&self, ctx: &RequestContext, uris: Option<Vec<String>>) -> Vec<String> {
        let declared = self
            .handler
            .capabilities()
            .resources
            .and_then(|r| r.subscribe)
            == Some(true);
        let mut subscribed = Vec::new();
        for uri in uris.filter(|_| declared).unwrap_or_default() {
            if subscribed.contains(&uri) {
                continue;
            }
            let p = ResourceRequestParams {
                uri: uri.clone(),
                ..Default::default()
            };
            match self.handler.subscribe(ctx, p, true).await {
                Ok(()) => subscribed.push(uri),
                Err(e) => tracing::debug!(uri, "resource subscription refused: {}", e.message),
            }
        }
        subscribed
    }

    /// Legacy sessions hear about list changes as plain notifications.
    pub(super) fn forward_list_changes(&self, peer: &Peer, revision: Revision) {
        let mut changes = self.shared.changes.subscribe();
        let notifier = Notifier {
            peer: peer.clone(),
            revision,
            changes: self.shared.changes.clone(),
            policy: self.shared.options.downgrade_policy.clone(),
        };
        // Ends with the session, not only at the next change it fails to send: a session
        // that ends while nothing changes would otherwise leave this task (and the
        // session's state it holds) behind for good.
        let host = self.host.as_ref().map(|h| h.session().clone());
        let caller = self.caller.clone();
        tokio::spawn(async move {
            let ended = async {
                match &host {
                    Some(h) => h.ended().await,
                    None => std::future::pending().await,
                }
            };
            tokio::pin!(ended);
            loop {
                let change = tokio::select! {
                    () = &mut ended => return,
                    c = changes.recv() => c,
                };
                match change {
                    Ok(c)
                        if !c.reaches(
                            current_principal(&caller).as_deref(),
                            host.as_ref().map(|h| h.id()),
                        ) => {}
                    Ok(c) => {
                        if !notifier.notify(c.what.method(), json!({})).await {
                            return;
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }
}

/// The principal a session's requests are for now.
fn current_principal(
    caller: &parking_lot::RwLock<crate::context::Caller>,
) -> Option<std::sync::Arc<crate::auth::Principal>> {
    caller.read().principal.clone()
}

/// The list changes `granted` asks for, sent on a listen stream tagged with `tag`, until the
/// client cancels the stream or goes away.
async fn relay_changes(
    mut changes: tokio::sync::broadcast::Receiver<crate::change::Change>,
    granted: &SubscriptionFilter,
    ctx: &RequestContext,
    tag: &Value,
) {
    let wants = |c: crate::ListChanged| match c {
        crate::ListChanged::Tools => granted.tools_list_changed == Some(true),
        crate::ListChanged::Prompts => granted.prompts_list_changed == Some(true),
        crate::ListChanged::Resources => granted.resources_list_changed == Some(true),
    };
    loop {
        let change = tokio::select! {
            c = changes.recv() => c,
            () = ctx.cancelled() => break,
            // The stream's end is only seen on a send: probe now and then.
            () = tokio::time::sleep(std::time::Duration::from_secs(1)) => {
                if ctx.notifier.peer.close_reason().is_some() {
                    break;
                }
                continue;
            }
        };
        match change {
            Ok(c)
                if wants(c.what)
                    && c.reaches(ctx.principal(), ctx.host_session().map(|h| h.id())) =>
            {
                if !ctx
                    .notifier
                    .notify(c.what.method(), json!({"_meta": tag}))
                    .await
                {
                    break;
                }
            }
            Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
            Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
        }
    }
}
