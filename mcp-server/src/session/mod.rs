//! One connection: tells each request's era, negotiates, dispatches to the handler,
//! bridges input requests for legacy clients, and translates every answer down to the
//! revision of the request it answers.
//!
//! A request's params are read one level deep ([`RawObject`]) and its `_meta` for the
//! envelope keys only; `tools/call` goes to the handler with its params still raw, so a
//! relaying handler passes the client's arguments on exactly.

mod declared;
mod fast;
mod finish;
mod handshake;
mod legacy_questions;
mod listen;
mod meta;
mod route;

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use async_trait::async_trait;
use mcp_revisions::features;
use mcp_revisions::negotiate::{
    answer_initialize, check_request_version, unsupported_version_error,
};
use mcp_revisions::shapes::{self, Direction};
use mcp_types::protocol::*;
use mcp_types::raw::{self, RawObject};
use mcp_types::rpc::{Inbound, Peer};
use mcp_types::{codes, ErrorObject, Message, Notification, Request, RequestId, Revision};
use parking_lot::{Mutex, RwLock};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tracing::Instrument;

use crate::context::{Cancellation, Notifier};
use crate::host::{HostSession, HostSessionGuard};
use crate::{RawResult, ServerShared};
use crate::{RequestContext, ServerHandler};
use declared::{Declared, DeclaredCache};
pub use handshake::SessionSnapshot;
pub(crate) use meta::RequestMeta;

/// What a legacy client settled at `initialize`.
#[derive(Clone)]
struct LegacyState {
    revision: Revision,
    declared: Declared,
    log_level: Option<LoggingLevel>,
}

pub(crate) struct Session {
    handler: Arc<dyn ServerHandler>,
    shared: Arc<ServerShared>,
    legacy: Mutex<Option<LegacyState>>,
    in_flight: Mutex<HashMap<RequestId, Arc<Cancellation>, ahash::RandomState>>,
    /// 2026-07-28 declarations, decoded once per distinct text.
    declared: DeclaredCache,
    /// Itself, for the answers of calls taken on the read loop, which come later.
    me: Weak<Session>,
    /// The host this connection is (none for a lone 2026-07-28 HTTP request); ended when
    /// the connection closes or the session goes.
    host: Option<HostSessionGuard>,
    /// Who this connection or request is for, as its credentials said, and over HTTP the
    /// request that carried it.
    /// Updated by each POST of a legacy HTTP session, so its requests are served for
    /// the credentials they came with.
    caller: Arc<RwLock<crate::context::Caller>>,
    /// The revision it was counted as a host under (see [`crate::ServerStats`]).
    counted: std::sync::OnceLock<Revision>,
    /// The resources its legacy host subscribed to, for its [`SessionSnapshot`].
    subscribed: Mutex<std::collections::BTreeSet<String>>,
    /// Told of each change of its [`SessionSnapshot`].
    watcher: Mutex<Option<Arc<handshake::SharedWatcher>>>,
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(r) = self.counted.get() {
            self.shared.stats.host_left(*r);
        }
    }
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
        .map_err(|e| invalid_params(method_name, raw::read_error(&e)))
}

fn internal(e: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(codes::INTERNAL_ERROR, format!("Internal error: {e}"))
}

/// A `_meta` member decoded, or nothing when it is absent or malformed (a client's
/// description and log level are hints, not requirements).
fn lenient<T: DeserializeOwned>(raw: Option<&RawValue>) -> Option<T> {
    raw.and_then(|r| serde_json::from_str(r.get()).ok())
}

/// Who is asking, for one request: its revision and what it declared.
struct Asker {
    revision: Revision,
    declared: Declared,
    log_level: Option<LoggingLevel>,
}

impl Session {
    /// A session; `host`: whether it is a host's connection or session of its own (see
    /// [`crate::HostSession`]).
    pub(crate) fn new(
        handler: Arc<dyn ServerHandler>,
        shared: Arc<ServerShared>,
        host: bool,
        caller: crate::context::Caller,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| Session {
            caller: Arc::new(RwLock::new(caller)),
            host: host.then(|| HostSession::start().1),
            handler,
            shared,
            legacy: Mutex::new(None),
            in_flight: Mutex::new(HashMap::default()),
            declared: DeclaredCache::default(),
            me: me.clone(),
            counted: std::sync::OnceLock::new(),
            subscribed: Mutex::default(),
            watcher: Mutex::new(None),
        })
    }

    /// The handler it serves with.
    pub(crate) fn handler(&self) -> &Arc<dyn ServerHandler> {
        &self.handler
    }

    /// Who the session's requests are for now.
    pub(crate) fn principal(&self) -> Option<Arc<crate::auth::Principal>> {
        self.caller.read().principal.clone()
    }

    /// From now on, its requests are for `principal` (the credentials of a legacy HTTP
    /// session's latest POST: a token reissued with fewer scopes narrows what it sees).
    pub(crate) fn set_principal(&self, principal: Option<Arc<crate::auth::Principal>>) {
        self.caller.write().principal = principal;
    }

    fn legacy_state(&self) -> Option<LegacyState> {
        self.legacy.lock().clone()
    }

    fn serves_modern(&self) -> bool {
        self.shared
            .options
            .supported
            .iter()
            .any(|r| features::per_request_meta(*r))
    }

    /// The revision a request is served in, as far as its envelope tells.
    fn revision_of(&self, meta: &RequestMeta<'_>) -> Revision {
        match meta.version().filter(|_| self.serves_modern()) {
            Some(v) => Revision::parse(&v).unwrap_or(Revision::LATEST),
            None => self
                .legacy_state()
                .map_or(Revision::LATEST_LEGACY, |s| s.revision),
        }
    }

    /// The era, revision and declarations of one request: its own `_meta` (2026-07-28) or
    /// the session's handshake.
    fn asker(&self, m: &str, meta: &RequestMeta<'_>) -> Result<Asker, ErrorObject> {
        let asker = self.asker_of(m, meta)?;
        if self.host.is_some()
            && self.counted.get().is_none()
            && self.counted.set(asker.revision).is_ok()
        {
            self.shared.stats.host_joined(asker.revision);
        }
        Ok(asker)
    }

    fn asker_of(&self, m: &str, meta: &RequestMeta<'_>) -> Result<Asker, ErrorObject> {
        if let Some(v) = meta.protocol_version {
            // 2026-07-28 requires both; a request without capabilities is malformed, not "none".
            let Some(caps) = meta.client_capabilities else {
                return Err(invalid_params(
                    m,
                    "_meta lacks io.modelcontextprotocol/clientCapabilities",
                ));
            };
            let version = mcp_types::raw::as_str(v);
            let revision =
                check_request_version(version.as_deref(), &self.shared.options.supported)?;
            let declared = self
                .declared
                .get(caps, meta.client_info)
                .map_err(|e| invalid_params(m, e))?;
            return Ok(Asker {
                revision,
                declared,
                log_level: lenient(meta.log_level),
            });
        }
        match self.legacy_state() {
            Some(s) => Ok(Asker {
                revision: s.revision,
                declared: s.declared,
                log_level: s.log_level,
            }),
            None if m == method::PING => Ok(Asker {
                revision: Revision::LATEST_LEGACY,
                declared: Declared::none(),
                log_level: None,
            }),
            None => Err(ErrorObject::new(
                codes::INVALID_REQUEST,
                "Not initialized: send `initialize` first, or (2026-07-28) put \
                 io.modelcontextprotocol/protocolVersion in the request's _meta",
            )),
        }
    }

    async fn dispatch(
        &self,
        peer: &Peer,
        req: &Request,
        params: Option<&RawObject<'_>>,
        mut meta: RequestMeta<'_>,
        cancelled: Arc<Cancellation>,
    ) -> Result<Box<RawValue>, ErrorObject> {
        let m = req.method.as_str();
        if !self.serves_modern() {
            // A legacy-only server does not know per-request versions: it answers as one.
            meta.protocol_version = None;
        }
        if m == method::INITIALIZE && meta.protocol_version.is_none() {
            let out = self.initialize(req.params.as_deref())?;
            if let Some(s) = self.legacy_state() {
                self.forward_list_changes(peer, s.revision);
            }
            self.changed();
            return Ok(out);
        }
        let asker = self.asker(m, &meta)?;
        let revision = asker.revision;
        let spec = shapes::method(m)
            .filter(|s| s.revisions.contains(revision) && s.direction != Direction::ServerToClient);
        if spec.is_none() && m != method::DISCOVER && !is_extension_task_method(m, revision) {
            return Err(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("Method not found: {m} (in MCP {revision})"),
            ));
        }
        let mut ctx = self.context(peer, asker, &meta, cancelled);
        ctx.request_id = Some(req.id.clone());
        self.route(peer, &req.id, m, req.params.as_deref(), params, ctx)
            .await
    }

    /// The context a handler gets for one request.
    fn context(
        &self,
        peer: &Peer,
        asker: Asker,
        meta: &RequestMeta<'_>,
        cancelled: Arc<Cancellation>,
    ) -> RequestContext {
        let revision = asker.revision;
        let progress_token: Option<ProgressToken> = meta
            .progress_token
            .and_then(|t| serde_json::from_str(t.get()).ok());
        RequestContext {
            revision,
            progress_sent: progress_token.as_ref().map(|_| Default::default()),
            progress_token,
            client_capabilities: asker.declared.capabilities,
            client_capabilities_raw: asker.declared.capabilities_raw,
            client_info: asker.declared.info,
            input_responses: Default::default(),
            request_state: None,
            task: None,
            related_task: None,
            log_level: asker.log_level,
            host: self.host.as_ref().map(|g| g.session().clone()),
            principal: self.principal(),
            http: self.caller.read().http.clone(),
            notifier: Notifier {
                peer: peer.clone(),
                revision,
                changes: self.shared.changes.clone(),
                policy: self.shared.options.downgrade_policy.clone(),
            },
            cancelled,
            listen: None,
            trace: self.trace_of(meta),
            request_id: None,
        }
    }

    /// The trace context of a request: its `_meta`'s, else (a 2026-07-28 request over
    /// HTTP, whose HTTP request is its own, not its session's) its headers'.
    fn trace_of(&self, meta: &RequestMeta<'_>) -> Option<Arc<crate::TraceContext>> {
        if let Some(t) = meta.trace() {
            return Some(Arc::new(t));
        }
        if self.host.is_some() {
            return None;
        }
        let caller = self.caller.read();
        let headers = &caller.http.as_ref()?.headers;
        let get = |k: &str| headers.get(k).and_then(|v| v.to_str().ok());
        let parent = get(mcp_types::meta::TRACEPARENT)?;
        crate::TraceContext::parse(parent, get(mcp_types::meta::TRACESTATE)).map(Arc::new)
    }

    fn initialize(&self, params: Option<&RawValue>) -> Result<Box<RawValue>, ErrorObject> {
        let p: InitializeRequestParams = decode(method::INITIALIZE, params)?;
        let options = &self.shared.options;
        let Some(revision) = answer_initialize(&p.protocol_version, &options.supported) else {
            // A modern-only server names what it speaks: legacy clients cannot fall forward.
            return Err(unsupported_version_error(
                Some(&p.protocol_version),
                &options.supported,
            ));
        };
        // The capabilities as the client wrote them, for a relay to pass on verbatim.
        let capabilities_raw = params
            .and_then(|p| RawObject::from_raw(p).ok())
            .and_then(|o| o.get("capabilities").map(|c| Arc::from(c.to_owned())))
            .unwrap_or_else(|| Arc::from(mcp_types::raw::encode(&p.capabilities)));
        *self.legacy.lock() = Some(LegacyState {
            revision,
            declared: Declared {
                capabilities: Arc::new(p.capabilities),
                capabilities_raw,
                info: Some(Arc::new(p.client_info)),
            },
            log_level: None,
        });
        let result = InitializeResult {
            protocol_version: revision.as_str().to_owned(),
            capabilities: self.handler.capabilities(),
            server_info: options.info.clone(),
            instructions: options.instructions.clone(),
            ..Default::default()
        };
        self.finish(method::INITIALIZE, revision, RawResult::canonical(&result)?)
    }
}

/// The 2026-07-28 tasks extension's methods, which the core schema omits.
fn is_extension_task_method(m: &str, revision: Revision) -> bool {
    features::has_tasks_extension(revision)
        && matches!(
            m,
            method::TASKS_GET | method::TASKS_CANCEL | method::TASKS_UPDATE
        )
}

#[async_trait]
impl Inbound for Session {
    async fn request(&self, peer: &Peer, req: Request) -> Message {
        let cancelled = Arc::new(Cancellation::default());
        self.in_flight
            .lock()
            .insert(req.id.clone(), cancelled.clone());
        // Params are read one level deep, once; params that are not an object read as none
        // here and get the typed decoder's error where a method needs them. Params nested
        // too deep to read are refused saying so, not read as if they had no `_meta`.
        let params = match req.params.as_deref().map(RawObject::from_raw) {
            Some(Err(e)) if raw::is_too_deep(&e) => {
                let error = invalid_params(&req.method, raw::read_error(&e));
                self.answered(&req.id);
                let revision = self.revision_of(&RequestMeta::of(None));
                return self.message(req.id, &req.method, revision, Err(error));
            }
            Some(p) => p.ok(),
            None => None,
        };
        let meta = RequestMeta::of(params.as_ref());
        let revision = self.revision_of(&meta);
        let span = crate::span::request(&req.method, &req.id, revision);
        if let (Some(p), true) = (&params, req.method == method::TOOLS_CALL) {
            crate::span::tool(&span, p);
        }
        if crate::span::joins_traces() {
            crate::span::join(&span, self.trace_of(&meta).as_deref());
        }
        let out = self
            .dispatch(peer, &req, params.as_ref(), meta, cancelled)
            .instrument(span.clone())
            .await;
        crate::span::outcome(&span, &out);
        self.answered(&req.id);
        self.message(req.id, &req.method, revision, out)
    }

    fn request_now(&self, peer: &Peer, req: Request) -> Option<Request> {
        if req.method != method::TOOLS_CALL {
            return Some(req);
        }
        self.call_now(peer, req)
    }

    fn max_in_flight(&self) -> usize {
        self.shared.options.max_in_flight_requests
    }

    fn batch(&self, len: usize) -> Result<(), ErrorObject> {
        let refused = |why: String| Err(ErrorObject::new(codes::INVALID_REQUEST, why));
        match self.legacy_state().map(|s| s.revision) {
            Some(r) if features::json_rpc_batches(r) => {
                mcp_types::rpc::check_batch_len(len, self.shared.options.max_batch_messages)
            }
            Some(r) => refused(format!("MCP {r} has no JSON-RPC batches")),
            None => refused(
                "a JSON-RPC batch cannot come before `initialize` (and 2026-07-28 has none)".into(),
            ),
        }
    }

    async fn closed(&self, _reason: &mcp_types::transport::CloseReason) {
        if let Some(host) = &self.host {
            host.session().end();
        }
        // A closed connection cancels what it asked (2026 HTTP: closing the stream is the
        // cancellation).
        // Taken out of the lock first: a cancellation may answer its call, which needs it.
        let flags: Vec<Arc<Cancellation>> = self.in_flight.lock().values().cloned().collect();
        for flag in flags {
            flag.cancel();
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
                    .and_then(|id| self.in_flight.lock().get(&id).cloned());
                if let Some(flag) = flag {
                    flag.cancel();
                }
            }
            method::INITIALIZED | method::ROOTS_LIST_CHANGED | method::PROGRESS => {}
            other => tracing::debug!(method = other, "notification ignored"),
        }
    }
}
