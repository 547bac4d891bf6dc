//! What flows besides a request's answer: input requests bridged for legacy clients,
//! the 2026-07-28 `subscriptions/listen` stream (its resource subscriptions included), and list changes for legacy sessions.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mcp_revisions::{features, Translator};
use mcp_types::protocol::*;
use mcp_types::rpc::{Peer, RpcError};
use mcp_types::{codes, meta, ErrorObject, RequestId, Revision};
use serde_json::{json, Map, Value};

use super::{internal, Session};
use crate::context::Notifier;
use crate::host::HostSession;
use crate::{Outcome, RequestContext, Subscriber};

/// The client capability an input request needs.
fn capability_for(method_name: &str) -> Option<&'static str> {
    match method_name {
        method::SAMPLING_CREATE_MESSAGE => Some("sampling"),
        method::ELICITATION_CREATE => Some("elicitation"),
        method::ROOTS_LIST => Some("roots"),
        _ => None,
    }
}

fn has_capability(caps: &ClientCapabilities, key: &str) -> bool {
    match key {
        "sampling" => caps.sampling.is_some(),
        "elicitation" => caps.elicitation.is_some(),
        "roots" => caps.roots.is_some(),
        _ => false,
    }
}

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

    /// Runs a handler that may ask for input. A 2026-07-28 client gets the
    /// `InputRequiredResult`; for a legacy client the input requests are sent as real
    /// server→client requests and the handler runs again with the answers.
    pub(super) async fn with_input<T, F, Fut>(
        &self,
        peer: &Peer,
        ctx: RequestContext,
        run: F,
    ) -> Result<Outcome<T>, ErrorObject>
    where
        F: Fn(RequestContext) -> Fut,
        Fut: Future<Output = Result<Outcome<T>, ErrorObject>>,
    {
        let first = run(ctx.clone()).await?;
        self.with_input_after(peer, ctx, first, run).await
    }

    /// [`Self::with_input`] once the first round has answered `first`.
    pub(super) async fn with_input_after<T, F, Fut>(
        &self,
        peer: &Peer,
        mut ctx: RequestContext,
        first: Outcome<T>,
        run: F,
    ) -> Result<Outcome<T>, ErrorObject>
    where
        F: Fn(RequestContext) -> Fut,
        Fut: Future<Output = Result<Outcome<T>, ErrorObject>>,
    {
        let mut rounds = 0;
        let mut out = first;
        loop {
            let Outcome::InputRequired(mut ir) = out else {
                return Ok(out);
            };
            let requests = ir.requests().map_err(internal)?;
            check_capabilities(&ctx, &requests)?;
            if features::input_required_results(ctx.revision) {
                ir.result_type = Some(ResultType::InputRequired);
                return Ok(Outcome::InputRequired(ir));
            }
            rounds += 1;
            if rounds > self.shared.options.max_input_rounds {
                return Err(internal(format!(
                    "gave up after {} rounds of input requests",
                    self.shared.options.max_input_rounds
                )));
            }
            // Rare next to a plain call: boxed, so every call's future stays small.
            let answers = Box::pin(self.ask_legacy_client(peer, &ctx, requests)).await?;
            ctx.input_responses = answers.into();
            ctx.request_state = ir.request_state.take();
            out = run(ctx.clone()).await?;
        }
    }

    /// One round of input requests sent to a legacy client as real requests; its answers
    /// by input key.
    async fn ask_legacy_client(
        &self,
        peer: &Peer,
        ctx: &RequestContext,
        requests: Vec<(String, InputRequest)>,
    ) -> Result<Map<String, Value>, ErrorObject> {
        let mut answers = Map::new();
        for (key, r) in requests {
            let mut params = r.params.clone().unwrap_or_else(|| json!({}));
            if let (Some(task), Value::Object(p)) = (&ctx.related_task, &mut params) {
                // 2025-11-25: a request made for a task names it.
                if let Value::Object(m) = p.entry("_meta").or_insert_with(|| json!({})) {
                    m.insert(meta::RELATED_TASK.into(), json!({"taskId": task}));
                }
            }
            let policy = self.shared.options.downgrade_policy.as_ref();
            let params = crate::with_policy(Translator::canonical_to(ctx.revision), policy)
                .params(&r.method, params)
                .map_err(|e| {
                    self.shared.stats.refused();
                    internal(format!(
                        "cannot ask a {} client for {}: {e}",
                        ctx.revision, r.method
                    ))
                })?;
            let raw = serde_json::value::to_raw_value(&params).map_err(internal)?;
            let answer = peer
                .request(
                    &r.method,
                    Some(raw),
                    Some(self.shared.options.client_request_timeout),
                )
                .await
                .map_err(|e| match e {
                    RpcError::Error(e) => e,
                    other => internal(format!("client did not answer {}: {other}", r.method)),
                })?;
            answers.insert(key, serde_json::from_str(answer.get()).map_err(internal)?);
        }
        Ok(answers)
    }
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

/// The principal a session's requests are for now.
fn current_principal(
    caller: &parking_lot::RwLock<crate::context::Caller>,
) -> Option<std::sync::Arc<crate::auth::Principal>> {
    caller.read().principal.clone()
}

/// Refuses input requests the client cannot answer: it did not declare the capability
/// their method needs.
fn check_capabilities(
    ctx: &RequestContext,
    requests: &[(String, InputRequest)],
) -> Result<(), ErrorObject> {
    for (_, r) in requests {
        if let Some(cap) = capability_for(&r.method) {
            if !has_capability(&ctx.client_capabilities, cap) {
                return Err(ErrorObject::new(
                    codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    format!("Missing required client capability: {cap}"),
                )
                .with_data(json!({"requiredCapabilities": {cap: {}}})));
            }
        }
    }
    Ok(())
}

/// A request for input as a 2026-07-28 client receives it: checked against what it
/// declared, and marked as such.
pub(super) fn input_required_answer(
    ctx: &RequestContext,
    mut ir: InputRequiredResult,
) -> Result<InputRequiredResult, ErrorObject> {
    check_capabilities(ctx, &ir.requests().map_err(internal)?)?;
    ir.result_type = Some(ResultType::InputRequired);
    Ok(ir)
}
