//! # mcp-client
//!
//! An MCP client for both eras over any [`Transport`]. [`Client::connect`] finds out which
//! era the server speaks (a `server/discover` probe, falling back to `initialize`, as the
//! 2026-07-28 versioning page describes) or is told; negotiates the revision; and then
//! correlates concurrent requests, routes progress to the caller, surfaces list-changed
//! notifications, and answers what the server asks (sampling, elicitation, roots) with a
//! [`ClientHandler`] — as real requests from a legacy server, and as the
//! `InputRequiredResult` → retry loop of a 2026-07-28 one.

pub mod auth;
mod child;
mod dual;
pub mod fetch;
pub mod http;
pub mod http_sse;
mod http_sse_auth;
mod list_changes;
mod listing;
mod options;
mod relay;
mod tasks;
pub use list_changes::ListChanges;
pub use relay::{MetaRewrite, RawRequest};
pub use tasks::Started;
pub mod sse;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
pub use child::{ChildTransport, StdioCommand};
use mcp_revisions::negotiate::{accept_initialize_answer, is_modern_error, retry_version};
use mcp_revisions::{features, TranslateError, Translator};
use mcp_types::protocol::*;
use mcp_types::rpc::{error_response, response, Inbound, Peer, RpcError};
use mcp_types::schema::{Rejection, SchemaValidator};
use mcp_types::transport::{CloseReason, Transport};
use mcp_types::{codes, meta, Era, ErrorObject, Message, Notification, Request, Revision};
pub use options::{CallOptions, ClientOptions};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};
use tokio::sync::{broadcast, mpsc};

/// Connects to an HTTP server in whichever transport it speaks: Streamable HTTP
/// (2025-03-26 and later, both eras), else the 2024-11-05 HTTP+SSE transport, as the spec's
/// backward-compatibility notes describe. `config.url` is the Streamable HTTP endpoint or,
/// for an old server, its SSE URL.
pub async fn connect_http(
    config: http::HttpConfig,
    handler: impl ClientHandler + Clone,
    options: ClientOptions,
) -> Result<Client, ClientError> {
    let bad = |e: http::HttpError| ClientError::Negotiation(e.to_string());
    let streamable = http::HttpTransport::new(config.clone()).map_err(bad)?;
    match Client::connect(streamable, handler.clone(), options.clone()).await {
        Ok(c) => Ok(c),
        Err(first) => {
            tracing::debug!("Streamable HTTP failed ({first}); trying HTTP+SSE");
            let Ok(sse) = http_sse::SseTransport::connect(config).await else {
                return Err(first);
            };
            let era = match options.era {
                EraChoice::Legacy(r) => EraChoice::Legacy(r),
                _ => EraChoice::Legacy(Revision::LATEST_LEGACY),
            };
            Client::connect(sse, handler, ClientOptions { era, ..options }).await
        }
    }
}

/// The newest revision without a handshake (version and capabilities in every request's
/// `_meta`) that `options` allow: the one a modern connection speaks.
fn modern_revision(options: &ClientOptions) -> Option<Revision> {
    options
        .supported
        .iter()
        .copied()
        .filter(|r| features::per_request_meta(*r))
        .max()
}

/// A complete list, every page of it, and how long the server said it stays valid (the
/// 2026-07-28 `ttlMs` of its first page; `None` when it gave none or zero).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Listed<T> {
    /// Every item, in the server's order.
    pub items: Vec<T>,
    /// How long the list may be kept.
    pub ttl: Option<Duration>,
}

/// Why a client operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered with a JSON-RPC error. One the HTTP transport made of a
    /// request the server refused at the HTTP level carries the status as
    /// `data.httpStatus` (a `401` or `403`: the credentials were refused).
    #[error("server error {}: {}", .0.code, .0.message)]
    Server(ErrorObject),
    /// The connection closed (the server exited, the stream ended).
    #[error("connection closed: {0}")]
    Closed(CloseReason),
    /// No answer in time; the request was cancelled.
    #[error("no answer within {0:?}; the request was cancelled")]
    Timeout(Duration),
    /// No revision both sides support.
    #[error("version negotiation failed: {0}")]
    Negotiation(String),
    /// The server's answer is not what the method calls for.
    #[error("invalid result for {method}: {reason}")]
    InvalidResult {
        /// The method.
        method: String,
        /// What is wrong.
        reason: String,
    },
    /// The request cannot be expressed in the negotiated revision.
    #[error(transparent)]
    Translate(#[from] TranslateError),
    /// The request was cancelled by the caller.
    #[error("the request was cancelled")]
    Cancelled,
    /// The server kept asking for input.
    #[error("the server asked for input {0} times; giving up")]
    TooManyInputRounds(usize),
    /// There is no connection to send on, and none could be had (said why).
    #[error("{0}")]
    Unavailable(String),
    /// The server's answer could not be taken (it could not be read, or it came under
    /// an id no request has) and was tied to this request, which fails at once instead of
    /// waiting for its timeout. Says what was wrong; its code (`-32603`, internal error)
    /// is the one to pass the failure on with as a JSON-RPC error.
    #[error("{}", .0.message)]
    BadAnswer(ErrorObject),
    /// The request is longer than the connection takes; it was not sent.
    #[error(
        "the request is about {bytes} bytes, over the {limit}-byte message limit of the connection"
    )]
    TooLarge {
        /// Its length as written, at most this.
        bytes: usize,
        /// The connection's limit.
        limit: usize,
    },
}

impl From<RpcError> for ClientError {
    fn from(e: RpcError) -> Self {
        match e {
            RpcError::Error(e) => ClientError::Server(e),
            RpcError::Closed(r) => ClientError::Closed(r),
            RpcError::Timeout(t) => ClientError::Timeout(t),
            RpcError::TooLarge { bytes, limit } => ClientError::TooLarge { bytes, limit },
            RpcError::BadAnswer(e) => ClientError::BadAnswer(e),
            // A reason added later: the request got no result, said why.
            other => ClientError::Unavailable(other.to_string()),
        }
    }
}

/// Which era to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EraChoice {
    /// Probe with `server/discover`; fall back to `initialize` on any non-modern answer.
    Detect,
    /// Legacy: `initialize`, offering this revision.
    Legacy(Revision),
    /// 2026-07-28, no probe.
    Modern,
}

/// What the client does when the server asks something or tells something.
/// Unimplemented requests are answered with `-32601`.
#[async_trait]
pub trait ClientHandler: Send + Sync + 'static {
    /// `sampling/createMessage`.
    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        Err(ErrorObject::new(
            codes::METHOD_NOT_FOUND,
            "sampling is not supported by this client",
        ))
    }

    /// `elicitation/create`.
    async fn elicit(&self, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        Err(ErrorObject::new(
            codes::METHOD_NOT_FOUND,
            "elicitation is not supported by this client",
        ))
    }

    /// `roots/list`.
    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        Err(ErrorObject::new(
            codes::METHOD_NOT_FOUND,
            "roots are not supported by this client",
        ))
    }

    /// A log message from the server (`notifications/message`). Returning it (the default)
    /// publishes it on [`Client::notifications`]; a handler that delivers it itself (a
    /// relay, to the one call it belongs to) returns `None`.
    fn log_message(
        &self,
        params: LoggingMessageNotificationParams,
    ) -> Option<LoggingMessageNotificationParams> {
        Some(params)
    }
}

#[async_trait]
impl<H: ClientHandler + ?Sized> ClientHandler for Arc<H> {
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        (**self).create_message(params).await
    }
    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        (**self).elicit(params).await
    }
    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        (**self).list_roots().await
    }
    fn log_message(
        &self,
        params: LoggingMessageNotificationParams,
    ) -> Option<LoggingMessageNotificationParams> {
        (**self).log_message(params)
    }
}

/// A handler that supports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHandler;

impl ClientHandler for NoHandler {}

/// A tool's output schema as listed, or compiled once used.
#[derive(Clone)]
enum OutputSchema {
    Declared(Arc<Value>),
    Compiled(SchemaValidator),
}

/// What the client found when it checked `structuredContent` against the tool's
/// `outputSchema` (TOOL-14). Reported, never silently dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputCheck {
    /// The tool declares no output schema (or the client has not listed it).
    NotDeclared,
    /// The result is an error result; nothing to check.
    ErrorResult,
    /// `structuredContent` conforms.
    Valid,
    /// The tool declares a schema but the result has no `structuredContent`.
    Missing,
    /// `structuredContent` breaks the schema.
    Invalid(String),
    /// The schema could not be used to check.
    Unchecked(String),
}

/// The result of a tool call and what its check found.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The result as the server sent it.
    pub result: CallToolResult,
    /// The output schema check.
    pub output: OutputCheck,
}

/// What the server told about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerInfo {
    /// `serverInfo` (from `initialize`, or a 2026 result's `_meta`).
    pub info: Option<Implementation>,
    /// Capabilities.
    pub capabilities: ServerCapabilities,
    /// Instructions.
    pub instructions: Option<String>,
}

struct Shared {
    handler: Arc<dyn ClientHandler>,
    revision: Mutex<Revision>,
    progress: Mutex<HashMap<ProgressToken, mpsc::UnboundedSender<ProgressNotificationParams>>>,
    notifications: broadcast::Sender<TypedNotification>,
    /// The lists the server said changed, until taken.
    list_changes: list_changes::Announced,
    /// The server's requests being served now ([`Client::requests_being_served`]).
    serving: AtomicUsize,
}

/// One of the server's requests being served: counted out when it is answered.
struct Serving<'a>(&'a AtomicUsize);

impl Drop for Serving<'_> {
    fn drop(&mut self) {
        // A request of a batch was never counted in (see `request_now`): never below 0.
        let _ = self
            .0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }
}

/// A connected MCP client. Cheap to clone; all clones share the connection.
#[derive(Clone)]
pub struct Client {
    peer: Peer,
    shared: Arc<Shared>,
    options: Arc<ClientOptions>,
    server: Arc<ServerInfo>,
    revision: Revision,
    /// Output schemas by tool, compiled at the first call of the tool: a compiled validator
    /// costs far more memory than its schema, and a proxy relaying calls never needs one.
    output_schemas: Arc<Mutex<HashMap<String, OutputSchema>>>,
    /// The tools whose `execution.taskSupport` is `"required"`, from the last listing:
    /// [`Client::call_tool`] runs them as tasks.
    task_tools: Arc<Mutex<std::collections::HashSet<String>>>,
    next_progress: Arc<AtomicU64>,
    /// The 2026-07-28 envelope, encoded once for raw requests.
    envelope: Arc<relay::Envelope>,
}

struct ClientInbound {
    shared: Arc<Shared>,
}

#[async_trait]
impl Inbound for ClientInbound {
    /// Counts the request in on the read loop, before anything the server sent after it is
    /// read (its answer to a call, say), and gives it back to be served on a task.
    fn request_now(&self, _peer: &Peer, request: Request) -> Option<Request> {
        self.shared.serving.fetch_add(1, Ordering::SeqCst);
        Some(request)
    }

    async fn request(&self, _peer: &Peer, r: Request) -> Message {
        let _serving = Serving(&self.shared.serving);
        let revision = *self.shared.revision.lock();
        let h = &self.shared.handler;
        let answer: Result<Value, ErrorObject> = async {
            let value = match r.method.as_str() {
                method::PING => json!({}),
                method::SAMPLING_CREATE_MESSAGE => to_value(&h.create_message(params(&r)?).await?),
                method::ELICITATION_CREATE => to_value(&h.elicit(params(&r)?).await?),
                method::ROOTS_LIST => to_value(&h.list_roots().await?),
                other => {
                    return Err(ErrorObject::new(
                        codes::METHOD_NOT_FOUND,
                        format!("Method not found: {other}"),
                    ))
                }
            };
            Translator::canonical_to(revision)
                .result(&r.method, value)
                .map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()))
        }
        .await;
        match answer.and_then(|v| {
            serde_json::value::to_raw_value(&v)
                .map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()))
        }) {
            Ok(raw) => response(r.id, raw),
            Err(e) => error_response(r.id, e),
        }
    }

    async fn notification(&self, _peer: &Peer, n: Notification) {
        self.shared.list_changes.note(&n.method);
        let typed = match TypedNotification::decode(&n.method, n.params.as_deref()) {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!("malformed notification from server: {e}");
                return;
            }
        };
        let typed = match typed {
            TypedNotification::Log(l) => match self.shared.handler.log_message(l) {
                Some(l) => TypedNotification::Log(l),
                None => return,
            },
            other => other,
        };
        if let TypedNotification::Progress(p) = &typed {
            let tx = self.shared.progress.lock().get(&p.progress_token).cloned();
            if let Some(tx) = tx {
                let _ = tx.send(p.clone());
            }
            return;
        }
        // No receiver is fine: nobody is listening for list changes.
        let _ = self.shared.notifications.send(typed);
    }
}

fn params<T: DeserializeOwned>(r: &Request) -> Result<T, ErrorObject> {
    r.params_as().map_err(|e| {
        ErrorObject::new(
            codes::INVALID_PARAMS,
            format!("Invalid params for {}: {e}", r.method),
        )
    })
}

fn to_value<T: Serialize>(t: &T) -> Value {
    serde_json::to_value(t).unwrap_or(Value::Null)
}

fn decode<T: DeserializeOwned>(method_name: &str, v: Value) -> Result<T, ClientError> {
    serde_json::from_value(v).map_err(|e| ClientError::InvalidResult {
        method: method_name.into(),
        reason: e.to_string(),
    })
}

impl Client {
    /// Connects over `transport`: detects or takes the era, negotiates, and is ready.
    pub async fn connect(
        transport: impl Transport,
        handler: impl ClientHandler,
        options: ClientOptions,
    ) -> Result<Client, ClientError> {
        let (tx, _) = broadcast::channel(256);
        let shared = Arc::new(Shared {
            handler: Arc::new(handler),
            revision: Mutex::new(Revision::LATEST),
            progress: Mutex::new(HashMap::new()),
            notifications: tx,
            list_changes: Default::default(),
            serving: AtomicUsize::new(0),
        });
        let (peer, _reader) = Peer::start(
            Arc::new(transport),
            Arc::new(ClientInbound {
                shared: shared.clone(),
            }),
        );
        let options = Arc::new(options);
        let modern_ok = modern_revision(&options).is_some();
        let (revision, server) = match options.era {
            EraChoice::Modern => Self::discover(&peer, &options, None).await?,
            EraChoice::Legacy(offer) => Self::initialize(&peer, &options, offer).await?,
            EraChoice::Detect if modern_ok => {
                match Self::discover(&peer, &options, Some(options.probe_timeout)).await {
                    Ok(found) => found,
                    Err(ClientError::Server(e))
                        if e.code == codes::UNSUPPORTED_PROTOCOL_VERSION =>
                    {
                        return Err(ClientError::Negotiation(format!(
                        "the server is modern but supports none of our versions (it offered {:?})",
                        e.data
                    )))
                    }
                    Err(ClientError::Closed(r)) => return Err(ClientError::Closed(r)),
                    // Any other modern error still identifies a modern server: no fallback.
                    Err(ClientError::Server(e)) if is_modern_error(e.code) => {
                        return Err(ClientError::Server(e))
                    }
                    Err(e) => {
                        tracing::debug!(
                            "server/discover probe failed ({e}); falling back to initialize"
                        );
                        let offer = Self::newest_legacy(&options)?;
                        Self::initialize(&peer, &options, offer).await?
                    }
                }
            }
            EraChoice::Detect => {
                Self::initialize(&peer, &options, Self::newest_legacy(&options)?).await?
            }
        };
        *shared.revision.lock() = revision;
        Ok(Client {
            peer,
            shared,
            envelope: Arc::new(relay::Envelope::new(revision, &options)),
            options,
            server: Arc::new(server),
            revision,
            output_schemas: Arc::new(Mutex::new(HashMap::new())),
            task_tools: Arc::default(),
            next_progress: Arc::new(AtomicU64::new(1)),
        })
    }

    fn newest_legacy(options: &ClientOptions) -> Result<Revision, ClientError> {
        options
            .supported
            .iter()
            .copied()
            .filter(|r| r.era() == Era::Legacy)
            .max()
            .ok_or_else(|| {
                ClientError::Negotiation(
                    "the server is legacy and this client supports no legacy revision".into(),
                )
            })
    }

    fn modern_meta(options: &ClientOptions) -> Value {
        json!({
            meta::PROTOCOL_VERSION: modern_revision(options).unwrap_or(Revision::LATEST).as_str(),
            meta::CLIENT_CAPABILITIES: options.capabilities,
            meta::CLIENT_INFO: options.info,
        })
    }

    async fn discover(
        peer: &Peer,
        options: &ClientOptions,
        timeout: Option<Duration>,
    ) -> Result<(Revision, ServerInfo), ClientError> {
        let params = json!({"_meta": Self::modern_meta(options)});
        let raw = serde_json::value::to_raw_value(&params).ok();
        let mut answer = peer
            .request(
                method::DISCOVER,
                raw.clone(),
                timeout.or(options.request_timeout),
            )
            .await;
        // A -32022 that lists our version anyway asks for a retry: do it once.
        if let Err(RpcError::Error(e)) = &answer {
            if retry_version(e, &options.supported).is_some_and(features::per_request_meta) {
                answer = peer
                    .request(method::DISCOVER, raw, timeout.or(options.request_timeout))
                    .await;
            }
        }
        let result = match answer {
            Ok(r) => r,
            Err(RpcError::Error(e)) if e.code == codes::UNSUPPORTED_PROTOCOL_VERSION => {
                // A modern server that does not speak our modern version.
                return match retry_version(&e, &options.supported) {
                    Some(r) if r.era() == Era::Modern => Err(ClientError::Negotiation(format!(
                        "unexpected retry version {r}"
                    ))),
                    _ => Err(ClientError::Server(e)),
                };
            }
            Err(e) => return Err(e.into()),
        };
        let d: DiscoverResult =
            serde_json::from_str(result.get()).map_err(|e| ClientError::InvalidResult {
                method: method::DISCOVER.into(),
                reason: e.to_string(),
            })?;
        let ours = modern_revision(options).unwrap_or(Revision::LATEST);
        if !d.supported_versions.iter().any(|v| v == ours.as_str()) {
            return Err(ClientError::Negotiation(format!(
                "server/discover lists {:?}",
                d.supported_versions
            )));
        }
        let info = d
            .meta
            .as_ref()
            .and_then(|m| m.get(meta::SERVER_INFO))
            .and_then(|i| serde_json::from_value(i.clone()).ok());
        Ok((
            ours,
            ServerInfo {
                info,
                capabilities: d.capabilities,
                instructions: d.instructions,
            },
        ))
    }

    async fn initialize(
        peer: &Peer,
        options: &ClientOptions,
        offer: Revision,
    ) -> Result<(Revision, ServerInfo), ClientError> {
        let params = InitializeRequestParams {
            protocol_version: offer.as_str().into(),
            capabilities: options.capabilities.clone(),
            client_info: options.info.clone(),
            ..Default::default()
        };
        let value =
            Translator::canonical_to(offer).params(method::INITIALIZE, to_value(&params))?;
        let raw = serde_json::value::to_raw_value(&value).ok();
        let result = peer
            .request(method::INITIALIZE, raw, options.request_timeout)
            .await?;
        let init: InitializeResult =
            serde_json::from_str(result.get()).map_err(|e| ClientError::InvalidResult {
                method: method::INITIALIZE.into(),
                reason: e.to_string(),
            })?;
        let revision = accept_initialize_answer(&init.protocol_version, &options.supported)
            .map_err(|e| ClientError::Negotiation(e.to_string()))?;
        peer.notify(method::INITIALIZED, None)
            .await
            .map_err(|e| ClientError::Closed(e.0))?;
        Ok((
            revision,
            ServerInfo {
                info: Some(init.server_info),
                capabilities: init.capabilities,
                instructions: init.instructions,
            },
        ))
    }

    /// The negotiated revision.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    /// What the server said about itself.
    pub fn server(&self) -> &ServerInfo {
        &self.server
    }

    /// Notifications from the server other than progress: list changes, log messages,
    /// resource updates. Each receiver sees those sent after it subscribed.
    pub fn notifications(&self) -> broadcast::Receiver<TypedNotification> {
        self.shared.notifications.subscribe()
    }

    /// The lists the server said changed (`notifications/*/list_changed`) since the last
    /// call, which takes them: the typed notifications do not say which list.
    pub fn take_list_changes(&self) -> ListChanges {
        self.shared.list_changes.take()
    }

    /// Whether `other` is a handle of this same connection (clones are).
    pub fn same_connection(&self, other: &Client) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// Why the connection closed, once it has.
    pub fn close_reason(&self) -> Option<CloseReason> {
        self.peer.close_reason()
    }

    /// Closes the connection.
    pub async fn close(&self) {
        self.peer.close().await;
    }

    /// Sends any request and returns its raw result. `params` are in the crate's union
    /// model; they are translated to the negotiated revision (and carry the 2026 `_meta`).
    /// A 2026 `InputRequiredResult` is answered with the [`ClientHandler`] and the request
    /// retried with `inputResponses` and the exact `requestState`, until a final result.
    pub async fn request(
        &self,
        method_name: &str,
        params: Value,
        opts: &CallOptions,
    ) -> Result<Value, ClientError> {
        let mut params = match params {
            Value::Null => json!({}),
            p => p,
        };
        let token = opts.progress.as_ref().map(|tx| {
            let key = format!("p{}", self.next_progress.fetch_add(1, Ordering::Relaxed));
            self.shared
                .progress
                .lock()
                .insert(ProgressToken::String(key.clone()), tx.clone());
            key
        });
        let out = self
            .request_rounds(method_name, &mut params, token.as_deref(), opts)
            .await;
        if let Some(key) = token {
            self.shared
                .progress
                .lock()
                .remove(&ProgressToken::String(key));
        }
        out
    }

    async fn request_rounds(
        &self,
        method_name: &str,
        params: &mut Value,
        token: Option<&str>,
        opts: &CallOptions,
    ) -> Result<Value, ClientError> {
        let timeout = opts.timeout.or(self.options.request_timeout);
        for _ in 0..=self.options.max_input_rounds {
            let mut p = params.clone();
            if let Value::Object(o) = &mut p {
                let meta_obj = o.entry("_meta").or_insert_with(|| json!({}));
                if let (Value::Object(m), Some(t)) = (&mut *meta_obj, token) {
                    m.insert(meta::PROGRESS_TOKEN.into(), json!(t));
                }
                if features::per_request_meta(self.revision) {
                    if let (Value::Object(m), Value::Object(add)) =
                        (meta_obj, Self::modern_meta(&self.options))
                    {
                        for (k, v) in add {
                            m.entry(k).or_insert(v);
                        }
                    }
                } else if matches!(o.get("_meta"), Some(Value::Object(m)) if m.is_empty()) {
                    o.remove("_meta");
                }
            }
            let p = Translator::canonical_to(self.revision)
                .with_client_capabilities(to_value(&self.options.capabilities))
                .params(method_name, p)?;
            let raw = serde_json::value::to_raw_value(&p).ok();
            let id = self.peer.next_id();
            let call = self
                .peer
                .request_with_id(id.clone(), method_name, raw, timeout);
            let result = match &opts.cancel {
                None => call.await?,
                Some(cancel) => tokio::select! {
                    r = call => r?,
                    () = cancel.notified() => {
                        self.peer.cancel(&id, "cancelled by the caller").await;
                        return Err(ClientError::Cancelled);
                    }
                },
            };
            let value: Value =
                serde_json::from_str(result.get()).map_err(|e| ClientError::InvalidResult {
                    method: method_name.into(),
                    reason: e.to_string(),
                })?;
            if value.get("resultType").and_then(Value::as_str) != Some("input_required")
                || opts.return_input_required
            {
                return Ok(value);
            }
            let ir: InputRequiredResult = decode(method_name, value)?;
            let responses = self.fulfil(&ir).await?;
            if let Value::Object(o) = params {
                o.insert("inputResponses".into(), Value::Object(responses));
                match &ir.request_state {
                    Some(s) => o.insert("requestState".into(), json!(s)),
                    None => o.remove("requestState"),
                };
            }
        }
        Err(ClientError::TooManyInputRounds(
            self.options.max_input_rounds,
        ))
    }

    /// Answers a 2026 `InputRequiredResult` with the handler, as a legacy client would
    /// answer the same requests sent on their own.
    async fn fulfil(&self, ir: &InputRequiredResult) -> Result<Map<String, Value>, ClientError> {
        let h = &self.shared.handler;
        let mut responses = Map::new();
        let requests = ir.requests().map_err(|e| ClientError::InvalidResult {
            method: "inputRequests".into(),
            reason: e.to_string(),
        })?;
        for (key, r) in requests {
            let kind = r.decode().map_err(|e| ClientError::InvalidResult {
                method: r.method.clone(),
                reason: e.to_string(),
            })?;
            let answer = match kind {
                InputRequestKind::Sampling(p) => {
                    to_value(&h.create_message(p).await.map_err(ClientError::Server)?)
                }
                InputRequestKind::Elicitation(p) => {
                    to_value(&h.elicit(p).await.map_err(ClientError::Server)?)
                }
                InputRequestKind::Roots(_) => {
                    to_value(&h.list_roots().await.map_err(ClientError::Server)?)
                }
                InputRequestKind::Other(m) => {
                    return Err(ClientError::Server(ErrorObject::new(
                        codes::METHOD_NOT_FOUND,
                        format!("unknown input request {m}"),
                    )))
                }
            };
            responses.insert(key, answer);
        }
        Ok(responses)
    }

    async fn typed<P: Serialize, R: DeserializeOwned>(
        &self,
        method_name: &str,
        params: &P,
    ) -> Result<R, ClientError> {
        let v = self
            .request(method_name, to_value(params), &CallOptions::default())
            .await?;
        decode(method_name, v)
    }

    /// Calls a tool.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<ToolCall, ClientError> {
        self.call_tool_with(name, arguments, &CallOptions::default())
            .await
    }

    /// Calls a tool with options (timeout, progress).
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        opts: &CallOptions,
    ) -> Result<ToolCall, ClientError> {
        let as_task = self.task_tools.lock().contains(name);
        let result = if as_task {
            // TOOL-21: a task-required tool is run as a task, never refused by the server.
            self.run_tool_as_task(name, arguments, opts).await?
        } else {
            let params = CallToolRequestParams {
                name: name.into(),
                arguments: Some(arguments),
                ..Default::default()
            };
            let v = self
                .request(method::TOOLS_CALL, to_value(&params), opts)
                .await?;
            decode(method::TOOLS_CALL, v)?
        };
        let declared = self.output_schemas.lock().get(name).cloned();
        let validator = match declared {
            None => None,
            Some(OutputSchema::Compiled(v)) => Some(v),
            Some(OutputSchema::Declared(schema)) => {
                let v = SchemaValidator::new(&schema, self.options.validation.clone());
                self.output_schemas
                    .lock()
                    .insert(name.to_owned(), OutputSchema::Compiled(v.clone()));
                Some(v)
            }
        };
        let output = match (validator, &result.structured_content) {
            (None, _) => OutputCheck::NotDeclared,
            (Some(_), _) if result.is_error() => OutputCheck::ErrorResult,
            (Some(_), None) => OutputCheck::Missing,
            (Some(v), Some(s)) => match v.validate(s).await {
                Ok(()) => OutputCheck::Valid,
                Err(Rejection::Schema(e)) => OutputCheck::Unchecked(e.to_string()),
                Err(Rejection::TimedOut(t)) => {
                    OutputCheck::Unchecked(format!("validation took longer than {t:?}"))
                }
                Err(other) => OutputCheck::Invalid(other.to_string()),
            },
        };
        Ok(ToolCall { result, output })
    }

    /// How many of the server's requests (sampling, elicitation, roots) are being served
    /// now: counted from the moment the read loop takes one, so a request the server sent
    /// before answering a call is counted by the time that answer is seen. A relay that
    /// lends a connection to one call at a time lends it again only when this is 0.
    pub fn requests_being_served(&self) -> usize {
        self.shared.serving.load(Ordering::SeqCst)
    }

    /// Gets a prompt.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<GetPromptResult, ClientError> {
        let p = GetPromptRequestParams {
            name: name.into(),
            arguments: Some(arguments),
            ..Default::default()
        };
        self.typed(method::PROMPTS_GET, &p).await
    }

    /// Reads a resource.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        self.typed(
            method::RESOURCES_READ,
            &ResourceRequestParams {
                uri: uri.into(),
                ..Default::default()
            },
        )
        .await
    }

    /// Completes an argument.
    pub async fn complete(
        &self,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, ClientError> {
        self.typed(method::COMPLETION_COMPLETE, &params).await
    }

    /// Pings the server (legacy era; 2026-07-28 has no `ping`).
    pub async fn ping(&self) -> Result<(), ClientError> {
        self.request(method::PING, json!({}), &CallOptions::default())
            .await
            .map(|_| ())
    }

    /// 2026-07-28: opens a `subscriptions/listen` stream; the notifications it carries arrive
    /// on [`Client::notifications`]. The returned task ends when the server ends the stream.
    pub fn listen(
        &self,
        filter: SubscriptionFilter,
    ) -> tokio::task::JoinHandle<Result<Value, ClientError>> {
        let client = self.clone();
        tokio::spawn(async move {
            let p = SubscriptionsListenRequestParams {
                notifications: filter,
                ..Default::default()
            };
            let opts = CallOptions {
                timeout: Some(Duration::from_secs(u64::from(u32::MAX))),
                ..Default::default()
            };
            client
                .request(method::SUBSCRIPTIONS_LISTEN, to_value(&p), &opts)
                .await
        })
    }
}
