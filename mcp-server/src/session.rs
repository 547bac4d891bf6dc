//! One connection: tells each request's era, negotiates, dispatches to the handler,
//! bridges input requests for legacy clients, and translates every answer down to the
//! revision of the request it answers.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mcp_revisions::negotiate::{
    answer_initialize, check_request_version, unsupported_version_error,
};
use mcp_revisions::shapes::{self, Direction};
use mcp_revisions::Translator;
use mcp_types::protocol::*;
use mcp_types::rpc::{error_response, response, Inbound, Peer, RpcError};
use mcp_types::{
    codes, meta, Era, ErrorObject, Message, Notification, Request, RequestId, Revision,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::handler::{Cancellation, Notifier, Outcome, RequestContext, ServerHandler};
use crate::ServerOptions;

/// What a legacy client settled at `initialize`.
#[derive(Clone)]
struct LegacyState {
    revision: Revision,
    capabilities: ClientCapabilities,
    info: Implementation,
    log_level: Option<LoggingLevel>,
}

pub(crate) struct Session {
    handler: Arc<dyn ServerHandler>,
    options: Arc<ServerOptions>,
    changes: tokio::sync::broadcast::Sender<crate::ListChanged>,
    legacy: Mutex<Option<LegacyState>>,
    in_flight: Mutex<HashMap<RequestId, Arc<Cancellation>>>,
}

fn invalid_params(method_name: &str, e: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(
        codes::INVALID_PARAMS,
        format!("Invalid params for {method_name}: {e}"),
    )
}

fn decode<T: DeserializeOwned>(
    method_name: &str,
    params: Option<&RawValue>,
) -> Result<T, ErrorObject> {
    serde_json::from_str(params.map_or("{}", RawValue::get))
        .map_err(|e| invalid_params(method_name, e))
}

fn internal(e: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(codes::INTERNAL_ERROR, format!("Internal error: {e}"))
}

fn to_value<T: Serialize>(t: &T) -> Result<Value, ErrorObject> {
    serde_json::to_value(t).map_err(internal)
}

/// The `_meta` of a request's params, if any.
fn request_meta(params: Option<&RawValue>) -> Map<String, Value> {
    #[derive(serde::Deserialize)]
    struct P {
        #[serde(rename = "_meta")]
        meta: Option<Map<String, Value>>,
    }
    params
        .and_then(|p| serde_json::from_str::<P>(p.get()).ok())
        .and_then(|p| p.meta)
        .unwrap_or_default()
}

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
    pub(crate) fn new(
        handler: Arc<dyn ServerHandler>,
        options: Arc<ServerOptions>,
        changes: tokio::sync::broadcast::Sender<crate::ListChanged>,
    ) -> Self {
        Session {
            handler,
            options,
            changes,
            legacy: Mutex::new(None),
            in_flight: Mutex::new(HashMap::new()),
        }
    }

    /// The revision a request is served in, as far as its envelope tells.
    fn revision_of(&self, req: &Request) -> Revision {
        match request_meta(req.params.as_deref())
            .get(meta::PROTOCOL_VERSION)
            .and_then(Value::as_str)
        {
            Some(v) => Revision::parse(v).unwrap_or(Revision::LATEST),
            None => self
                .legacy_state()
                .map_or(Revision::LATEST_LEGACY, |s| s.revision),
        }
    }

    fn legacy_state(&self) -> Option<LegacyState> {
        self.legacy.lock().ok().and_then(|g| g.clone())
    }

    async fn dispatch(
        &self,
        peer: &Peer,
        req: Request,
        cancelled: Arc<Cancellation>,
    ) -> Result<Value, ErrorObject> {
        let params = req.params.as_deref();
        let m = req.method.as_str();
        let mut meta_obj = request_meta(params);
        if !self
            .options
            .supported
            .iter()
            .any(|r| r.era() == Era::Modern)
        {
            // A legacy-only server does not know per-request versions: it answers as one.
            meta_obj.remove(meta::PROTOCOL_VERSION);
        }
        if m == method::INITIALIZE && !meta_obj.contains_key(meta::PROTOCOL_VERSION) {
            let out = self.initialize(params)?;
            if let Some(s) = self.legacy_state() {
                self.forward_list_changes(peer, s.revision);
            }
            return Ok(out);
        }
        // Era of this request: per-request `_meta` (modern) or the session's handshake (legacy).
        let (revision, caps, info, log_level) = match meta_obj.get(meta::PROTOCOL_VERSION) {
            Some(v) => {
                // 2026-07-28 requires both; a request without capabilities is malformed, not "none".
                let Some(caps) = meta_obj.get(meta::CLIENT_CAPABILITIES) else {
                    return Err(invalid_params(
                        m,
                        "_meta lacks io.modelcontextprotocol/clientCapabilities",
                    ));
                };
                let rev = check_request_version(v.as_str(), &self.modern_supported())?;
                let caps: ClientCapabilities =
                    serde_json::from_value(caps.clone()).map_err(|e| invalid_params(m, e))?;
                let info = meta_obj
                    .get(meta::CLIENT_INFO)
                    .and_then(|i| serde_json::from_value(i.clone()).ok());
                let level = meta_obj
                    .get(meta::LOG_LEVEL)
                    .and_then(|l| serde_json::from_value(l.clone()).ok());
                (rev, caps, info, level)
            }
            None => match self.legacy_state() {
                Some(s) => (s.revision, s.capabilities, Some(s.info), s.log_level),
                None if m == method::PING => (
                    Revision::LATEST_LEGACY,
                    ClientCapabilities::default(),
                    None,
                    None,
                ),
                None => {
                    return Err(ErrorObject::new(
                        codes::INVALID_REQUEST,
                        "Not initialized: send `initialize` first, or (2026-07-28) put \
                         io.modelcontextprotocol/protocolVersion in the request's _meta",
                    ))
                }
            },
        };
        let spec = shapes::method(m)
            .filter(|s| s.revisions.contains(revision) && s.direction != Direction::ServerToClient);
        if spec.is_none() && m != method::DISCOVER && !is_extension_task_method(m, revision) {
            return Err(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("Method not found: {m} (in MCP {revision})"),
            ));
        }
        let ctx = RequestContext {
            revision,
            client_capabilities: caps,
            client_info: info,
            input_responses: Map::new(),
            request_state: None,
            progress_token: meta_obj
                .get(meta::PROGRESS_TOKEN)
                .and_then(|t| serde_json::from_value(t.clone()).ok()),
            progress_sent: Default::default(),
            task: None,
            related_task: None,
            log_level,
            notifier: Notifier {
                peer: peer.clone(),
                revision,
                changes: self.changes.clone(),
            },
            cancelled,
        };
        let result = self.route(peer, &req.id, m, params, ctx).await?;
        self.finish(m, revision, result)
    }

    fn modern_supported(&self) -> Vec<Revision> {
        self.options.supported.clone()
    }

    fn initialize(&self, params: Option<&RawValue>) -> Result<Value, ErrorObject> {
        let p: InitializeRequestParams = decode(method::INITIALIZE, params)?;
        let Some(revision) = answer_initialize(&p.protocol_version, &self.options.supported) else {
            // A modern-only server names what it speaks: legacy clients cannot fall forward.
            return Err(unsupported_version_error(
                Some(&p.protocol_version),
                &self.options.supported,
            ));
        };
        if let Ok(mut g) = self.legacy.lock() {
            *g = Some(LegacyState {
                revision,
                capabilities: p.capabilities,
                info: p.client_info,
                log_level: None,
            });
        }
        let result = InitializeResult {
            protocol_version: revision.as_str().to_owned(),
            capabilities: self.handler.capabilities(),
            server_info: self.options.info.clone(),
            instructions: self.options.instructions.clone(),
            ..Default::default()
        };
        self.finish(method::INITIALIZE, revision, to_value(&result)?)
    }

    async fn route(
        &self,
        peer: &Peer,
        id: &RequestId,
        m: &str,
        params: Option<&RawValue>,
        ctx: RequestContext,
    ) -> Result<Value, ErrorObject> {
        let h = &self.handler;
        let list = |p: Option<&RawValue>| decode::<PaginatedRequestParams>(m, p);
        match m {
            method::DISCOVER => {
                let mut versions = self.options.supported.clone();
                versions.sort_unstable_by(|a, b| b.cmp(a));
                to_value(&DiscoverResult {
                    supported_versions: versions.iter().map(|r| r.as_str().to_owned()).collect(),
                    capabilities: h.capabilities(),
                    instructions: self.options.instructions.clone(),
                    ..Default::default()
                })
            }
            method::PING => Ok(json!({})),
            method::SUBSCRIPTIONS_LISTEN => {
                let p: SubscriptionsListenRequestParams = decode(m, params)?;
                self.listen(id, p.notifications, ctx).await
            }
            method::LOGGING_SET_LEVEL => {
                let p: SetLevelRequestParams = decode(m, params)?;
                if let Ok(mut g) = self.legacy.lock() {
                    if let Some(s) = g.as_mut() {
                        s.log_level = Some(p.level);
                    }
                }
                Ok(json!({}))
            }
            method::TOOLS_LIST => to_value(&h.list_tools(&ctx, list(params)?).await?),
            method::PROMPTS_LIST => to_value(&h.list_prompts(&ctx, list(params)?).await?),
            method::RESOURCES_LIST => to_value(&h.list_resources(&ctx, list(params)?).await?),
            method::RESOURCES_TEMPLATES_LIST => {
                to_value(&h.list_resource_templates(&ctx, list(params)?).await?)
            }
            method::RESOURCES_SUBSCRIBE | method::RESOURCES_UNSUBSCRIBE => {
                let p: ResourceRequestParams = decode(m, params)?;
                h.subscribe(&ctx, p, m == method::RESOURCES_SUBSCRIBE)
                    .await?;
                Ok(json!({}))
            }
            method::COMPLETION_COMPLETE => to_value(&h.complete(&ctx, decode(m, params)?).await?),
            method::TOOLS_CALL => {
                let p: CallToolRequestParams = decode(m, params)?;
                let mut ctx =
                    with_retry_input(ctx, p.input_responses.clone(), p.request_state.clone());
                // `task` is a 2025-11-25 param; a 2026 client's stray one is ignored.
                ctx.task = p
                    .task
                    .clone()
                    .filter(|_| ctx.revision == Revision::V2025_11_25);
                let accepts_task = ctx.accepts_task();
                let out = self
                    .with_input(peer, ctx, |ctx| {
                        let (h, p) = (h.clone(), p.clone());
                        async move { h.call_tool(&ctx, p).await }
                    })
                    .await?;
                if matches!(out, Outcome::Task(_)) && !accepts_task {
                    return Err(internal(
                        "the server answered with a task, which this client did not accept",
                    ));
                }
                outcome_value(out)
            }
            // The extension's methods are only for a client that negotiated it.
            method::TASKS_GET | method::TASKS_CANCEL | method::TASKS_UPDATE
                if ctx.revision == Revision::V2026_07_28 && !ctx.accepts_task() =>
            {
                Err(ErrorObject::new(
                    codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    format!("Missing required client capability: extension {TASKS_EXTENSION}"),
                )
                .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})))
            }
            method::TASKS_GET => to_value(&h.get_task(&ctx, decode(m, params)?).await?),
            method::TASKS_CANCEL => to_value(&h.cancel_task(&ctx, decode(m, params)?).await?),
            method::TASKS_UPDATE => {
                h.update_task(&ctx, decode(m, params)?).await?;
                Ok(json!({}))
            }
            method::TASKS_RESULT => {
                let p: TaskRequestParams = decode(m, params)?;
                let mut ctx = ctx;
                ctx.related_task = Some(p.task_id.clone());
                let out = self
                    .with_input(peer, ctx, |ctx| {
                        let (h, p) = (h.clone(), p.clone());
                        async move { h.task_result(&ctx, p).await }
                    })
                    .await?;
                let mut value = outcome_value(out)?;
                if let Value::Object(o) = &mut value {
                    // 2025-11-25: the answer to tasks/result names its task.
                    if let Value::Object(m) = o.entry("_meta").or_insert_with(|| json!({})) {
                        m.insert(meta::RELATED_TASK.into(), json!({"taskId": p.task_id}));
                    }
                }
                Ok(value)
            }
            method::PROMPTS_GET => {
                let p: GetPromptRequestParams = decode(m, params)?;
                let ctx = with_retry_input(ctx, p.input_responses.clone(), p.request_state.clone());
                let out = self
                    .with_input(peer, ctx, |ctx| {
                        let (h, p) = (h.clone(), p.clone());
                        async move { h.get_prompt(&ctx, p).await }
                    })
                    .await?;
                outcome_value(out)
            }
            method::RESOURCES_READ => {
                let p: ResourceRequestParams = decode(m, params)?;
                let ctx = with_retry_input(ctx, p.input_responses.clone(), p.request_state.clone());
                let out = self
                    .with_input(peer, ctx, |ctx| {
                        let (h, p) = (h.clone(), p.clone());
                        async move { h.read_resource(&ctx, p).await }
                    })
                    .await?;
                outcome_value(out)
            }
            other => Err(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("Method not found: {other}"),
            )),
        }
    }

    /// 2026-07-28 `subscriptions/listen`: acknowledges, then relays the list changes the
    /// client asked for, each tagged with the subscription id, until the client goes away.
    async fn listen(
        &self,
        id: &RequestId,
        filter: SubscriptionFilter,
        ctx: RequestContext,
    ) -> Result<Value, ErrorObject> {
        let tag = json!({ meta::SUBSCRIPTION_ID: id });
        let caps = self.handler.capabilities();
        let granted = SubscriptionFilter {
            tools_list_changed: filter.tools_list_changed.filter(|_| caps.tools.is_some()),
            prompts_list_changed: filter
                .prompts_list_changed
                .filter(|_| caps.prompts.is_some()),
            resources_list_changed: filter
                .resources_list_changed
                .filter(|_| caps.resources.is_some()),
            resource_subscriptions: None,
            ..Default::default()
        };
        let mut changes = self.changes.subscribe();
        let ack = json!({"notifications": granted, "_meta": tag});
        if !ctx
            .notifier
            .notify(method::SUBSCRIPTIONS_ACKNOWLEDGED, ack)
            .await
        {
            return Ok(json!({"_meta": tag}));
        }
        let wants = |c: crate::ListChanged| match c {
            crate::ListChanged::Tools => granted.tools_list_changed == Some(true),
            crate::ListChanged::Prompts => granted.prompts_list_changed == Some(true),
            crate::ListChanged::Resources => granted.resources_list_changed == Some(true),
        };
        loop {
            let change = tokio::select! {
                c = changes.recv() => c,
                // The stream's end is only seen on a send: probe now and then.
                () = tokio::time::sleep(std::time::Duration::from_secs(1)) => {
                    if ctx.notifier.peer.close_reason().is_some() {
                        break;
                    }
                    continue;
                }
            };
            match change {
                Ok(c) if wants(c) => {
                    if !ctx.notifier.notify(c.method(), json!({"_meta": tag})).await {
                        break;
                    }
                }
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            }
        }
        Ok(json!({"_meta": tag}))
    }

    /// Legacy sessions hear about list changes as plain notifications.
    fn forward_list_changes(&self, peer: &Peer, revision: Revision) {
        let mut changes = self.changes.subscribe();
        let notifier = Notifier {
            peer: peer.clone(),
            revision,
            changes: self.changes.clone(),
        };
        tokio::spawn(async move {
            loop {
                match changes.recv().await {
                    Ok(c) => {
                        if !notifier.notify(c.method(), json!({})).await {
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
    async fn with_input<T, F, Fut>(
        &self,
        peer: &Peer,
        mut ctx: RequestContext,
        run: F,
    ) -> Result<Outcome<T>, ErrorObject>
    where
        F: Fn(RequestContext) -> Fut,
        Fut: Future<Output = Result<Outcome<T>, ErrorObject>>,
    {
        let mut rounds = 0;
        loop {
            let out = run(ctx.clone()).await?;
            let Outcome::InputRequired(mut ir) = out else {
                return Ok(out);
            };
            let requests = ir.requests().map_err(internal)?;
            for (_, r) in &requests {
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
            if ctx.revision.era() == Era::Modern {
                ir.result_type = Some(ResultType::InputRequired);
                return Ok(Outcome::InputRequired(ir));
            }
            rounds += 1;
            if rounds > self.options.max_input_rounds {
                return Err(internal(format!(
                    "gave up after {} rounds of input requests",
                    self.options.max_input_rounds
                )));
            }
            let mut answers = Map::new();
            for (key, r) in requests {
                let mut params = r.params.clone().unwrap_or_else(|| json!({}));
                if let (Some(task), Value::Object(p)) = (&ctx.related_task, &mut params) {
                    // 2025-11-25: a request made for a task names it.
                    if let Value::Object(m) = p.entry("_meta").or_insert_with(|| json!({})) {
                        m.insert(meta::RELATED_TASK.into(), json!({"taskId": task}));
                    }
                }
                let params = Translator::canonical_to(ctx.revision)
                    .params(&r.method, params)
                    .map_err(|e| {
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
                        Some(self.options.client_request_timeout),
                    )
                    .await
                    .map_err(|e| match e {
                        RpcError::Error(e) => e,
                        other => internal(format!("client did not answer {}: {other}", r.method)),
                    })?;
                answers.insert(key, serde_json::from_str(answer.get()).map_err(internal)?);
            }
            ctx.input_responses = answers;
            ctx.request_state = ir.request_state.take();
        }
    }

    /// Translates a result to the revision it goes to, with what 2026-07-28 results carry.
    fn finish(&self, m: &str, revision: Revision, mut value: Value) -> Result<Value, ErrorObject> {
        if revision == Revision::V2026_07_28 {
            if let Value::Object(o) = &mut value {
                // A task's `ttlMs` is its retention, not a list's cache lifetime.
                let is_task = m.starts_with("tasks/")
                    || o.get("resultType").and_then(Value::as_str) == Some("task");
                if !is_task
                    && (o.contains_key("ttlMs")
                        || shapes::method(m)
                            .and_then(|s| s.result)
                            .is_some_and(|r| r.has("ttlMs", revision)))
                {
                    o.entry("ttlMs")
                        .or_insert_with(|| json!(self.options.list_ttl_ms));
                    o.entry("cacheScope")
                        .or_insert_with(|| json!(self.options.list_cache_scope));
                }
                let meta = o.entry("_meta").or_insert_with(|| json!({}));
                if let Value::Object(mo) = meta {
                    mo.entry(meta::SERVER_INFO)
                        .or_insert_with(|| to_value(&self.options.info).unwrap_or_default());
                }
            }
        }
        Translator::canonical_to(revision)
            .result(m, value)
            .map_err(internal)
    }
}

fn with_retry_input(
    mut ctx: RequestContext,
    responses: Option<Map<String, Value>>,
    state: Option<String>,
) -> RequestContext {
    ctx.input_responses = responses.unwrap_or_default();
    ctx.request_state = state;
    ctx
}

fn outcome_value<T: Serialize>(out: Outcome<T>) -> Result<Value, ErrorObject> {
    match out {
        Outcome::Complete(t) => to_value(&t),
        Outcome::InputRequired(ir) => to_value(&ir),
        Outcome::Task(mut t) => {
            t.result_type = Some(ResultType::Task);
            to_value(&t)
        }
    }
}

/// The 2026-07-28 tasks extension's methods, which the core schema omits.
fn is_extension_task_method(m: &str, revision: Revision) -> bool {
    revision == Revision::V2026_07_28
        && matches!(
            m,
            method::TASKS_GET | method::TASKS_CANCEL | method::TASKS_UPDATE
        )
}

#[async_trait]
impl Inbound for Session {
    async fn request(&self, peer: &Peer, req: Request) -> Message {
        let id = req.id.clone();
        let method_name = req.method.clone();
        let cancelled = Arc::new(Cancellation::default());
        if let Ok(mut f) = self.in_flight.lock() {
            f.insert(id.clone(), cancelled.clone());
        }
        let revision = self.revision_of(&req);
        let out = self.dispatch(peer, req, cancelled).await;
        if let Ok(mut f) = self.in_flight.lock() {
            f.remove(&id);
        }
        match out.and_then(|v| serde_json::value::to_raw_value(&v).map_err(internal)) {
            Ok(raw) => response(id, raw),
            Err(mut e) => {
                tracing::info!(method = %method_name, code = e.code, "request failed: {}", e.message);
                // A code the client's revision forbids (-32002 in 2026) goes as its replacement.
                if let Some(code) = mcp_revisions::errors::replacement(e.code, revision) {
                    e.code = code;
                }
                error_response(id, e)
            }
        }
    }

    async fn closed(&self, _reason: &mcp_types::transport::CloseReason) {
        // A closed connection cancels what it asked (2026 HTTP: closing the stream is the
        // cancellation).
        if let Ok(f) = self.in_flight.lock() {
            for flag in f.values() {
                flag.cancel();
            }
        }
    }

    async fn notification(&self, _peer: &Peer, n: Notification) {
        match n.method.as_str() {
            method::CANCELLED => {
                let Ok(p) = n.params_as::<CancelledNotificationParams>() else {
                    tracing::warn!("malformed notifications/cancelled");
                    return;
                };
                let flag = p
                    .request_id
                    .and_then(|id| self.in_flight.lock().ok().and_then(|f| f.get(&id).cloned()));
                if let Some(flag) = flag {
                    flag.cancel();
                }
            }
            method::INITIALIZED | method::ROOTS_LIST_CHANGED | method::PROGRESS => {}
            other => tracing::debug!(method = other, "notification ignored"),
        }
    }
}
