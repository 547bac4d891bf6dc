//! What a handler knows about the request it serves ([`RequestContext`]), and how it
//! talks back to the client: progress, log messages, list changes, cancellation.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mcp_revisions::{features, DowngradePolicy, Translator};
use mcp_types::protocol::*;
use mcp_types::rpc::Peer;
use mcp_types::Revision;
use parking_lot::Mutex;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// Sends notifications to the client that made a request, in its revision.
#[derive(Clone)]
pub(crate) struct Notifier {
    pub(crate) peer: Peer,
    pub(crate) revision: Revision,
    pub(crate) changes: tokio::sync::broadcast::Sender<crate::change::Change>,
    /// [`crate::ServerOptions::downgrade_policy`] (`None`, the default, costs a request's
    /// context nothing to carry).
    pub(crate) policy: Option<Arc<dyn DowngradePolicy>>,
}

impl Notifier {
    /// The params of a notification in the client's revision; `None` when that revision
    /// cannot carry it.
    fn params(&self, method_name: &str, params: Value) -> Option<Box<serde_json::value::RawValue>> {
        match self.translated(method_name, params) {
            Ok(p) => Some(p),
            Err(e) => {
                tracing::debug!(method = method_name, revision = %self.revision, "notification not sent: {e}");
                None
            }
        }
    }

    /// The params of a notification in the client's revision, or why they cannot be.
    pub(crate) fn translated(
        &self,
        method_name: &str,
        params: Value,
    ) -> Result<Box<RawValue>, crate::NotifyError> {
        let t = crate::with_policy(
            Translator::canonical_to(self.revision),
            self.policy.as_ref(),
        );
        let p = t
            .params(method_name, params)
            .map_err(|e| crate::NotifyError::NotInRevision {
                method: method_name.to_owned(),
                revision: self.revision,
                reason: e.to_string(),
            })?;
        serde_json::value::to_raw_value(&p).map_err(|e| crate::NotifyError::Encode(e.to_string()))
    }

    /// [`Notifier::notify`] without waiting (see [`Peer::send_now`]).
    pub(crate) fn notify_now(&self, method_name: &str, params: Value) -> bool {
        let Some(raw) = self.params(method_name, params) else {
            return true;
        };
        self.peer.notify_now(method_name, Some(raw)).is_ok()
    }

    /// Sends a notification in the client's revision; false once the connection is gone.
    pub(crate) async fn notify(&self, method_name: &str, params: Value) -> bool {
        let Some(raw) = self.params(method_name, params) else {
            return true;
        };
        if self.peer.notify(method_name, Some(raw)).await.is_err() {
            tracing::debug!(
                method = method_name,
                "notification not sent: connection closed"
            );
            return false;
        }
        true
    }
}

/// What a handler knows about the request it is serving, and how it talks back.
#[derive(Clone)]
pub struct RequestContext {
    pub(crate) revision: Revision,
    pub(crate) client_capabilities: Arc<ClientCapabilities>,
    pub(crate) client_capabilities_raw: Arc<RawValue>,
    pub(crate) client_info: Option<Arc<Implementation>>,
    /// Made only on a retry that carries answers: most calls never have any.
    pub(crate) input_responses: mcp_types::jsonrpc::Extra,
    pub(crate) request_state: Option<String>,
    pub(crate) progress_token: Option<ProgressToken>,
    /// The last progress value sent for this request (progress must only increase);
    /// there only when the request has a progress token, so that others allocate nothing.
    pub(crate) progress_sent: Option<Arc<Mutex<Option<f64>>>>,
    pub(crate) task: Option<TaskMetadata>,
    /// The task whose `tasks/result` this is: requests made for it name it (2025-11-25).
    pub(crate) related_task: Option<String>,
    pub(crate) log_level: Option<LoggingLevel>,
    pub(crate) host: Option<crate::HostSession>,
    pub(crate) principal: Option<Arc<crate::auth::Principal>>,
    pub(crate) http: Option<Arc<http::request::Parts>>,
    pub(crate) notifier: Notifier,
    pub(crate) cancelled: Arc<Cancellation>,
    /// The `subscriptions/listen` stream this context subscribes for, if it does.
    pub(crate) listen: Option<crate::Subscriber>,
    pub(crate) trace: Option<Arc<crate::TraceContext>>,
    /// The JSON-RPC id the client gave the request (an audit record names it).
    pub(crate) request_id: Option<mcp_types::RequestId>,
}

/// The cancelled state of one in-flight request, awaitable, with an optional action to
/// run when it is cancelled (a call answered from a callback has no task to notice).
#[derive(Default)]
pub(crate) struct Cancellation {
    flag: AtomicBool,
    notify: tokio::sync::Notify,
    hook: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Cancellation {
    pub(crate) fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
        let hook = self.hook.lock().take();
        if let Some(hook) = hook {
            hook();
        }
    }

    /// Runs `hook` when the request is cancelled (at once if it already is).
    pub(crate) fn on_cancel(&self, hook: Box<dyn FnOnce() + Send>) {
        if self.is_cancelled() {
            hook();
            return;
        }
        *self.hook.lock() = Some(hook);
        // A cancel that came while the hook was being set finds it, or we run it here.
        if self.is_cancelled() {
            let hook = self.hook.lock().take();
            if let Some(hook) = hook {
                hook();
            }
        }
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Registered before the check, so a cancel between the two still wakes us.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

fn severity(level: &LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
        LoggingLevel::Other(_) => 1,
    }
}

/// Who a connection or a lone request is for, and the HTTP request that carried it.
#[derive(Clone, Default)]
pub(crate) struct Caller {
    pub(crate) principal: Option<Arc<crate::auth::Principal>>,
    pub(crate) http: Option<Arc<http::request::Parts>>,
}

impl RequestContext {
    /// The HTTP request this came in: a 2026-07-28 request's own POST, or for a legacy
    /// session the POST that opened it (`initialize`); `None` off HTTP. Its credential
    /// headers (`Authorization`, `Proxy-Authorization`, `Cookie`) are removed: what they
    /// said is [`RequestContext::principal`], and a handler has no business with them.
    pub fn http_request(&self) -> Option<&http::request::Parts> {
        self.http.as_deref()
    }

    /// The request's W3C trace context: from its `_meta` (`traceparent`, `tracestate`),
    /// else, for a 2026-07-28 request over HTTP, its headers of those names. A relay
    /// sends it on, so the host's trace continues upstream.
    pub fn trace_context(&self) -> Option<&crate::TraceContext> {
        self.trace.as_deref()
    }

    /// The JSON-RPC id the client gave this request; `None` for work the server does on
    /// its own (a session's subscriptions renewed after a hand-over).
    pub fn request_id(&self) -> Option<&mcp_types::RequestId> {
        self.request_id.as_ref()
    }

    /// Who the request is for: the principal its HTTP credentials stand for (see
    /// [`crate::auth`]), or [`crate::ServerOptions::local_principal`] on a connection
    /// without credentials; `None` when neither applies.
    pub fn principal(&self) -> Option<&crate::auth::Principal> {
        self.principal.as_deref()
    }

    /// [`RequestContext::principal`], shared: for keeping beyond the request.
    pub fn principal_shared(&self) -> Option<&Arc<crate::auth::Principal>> {
        self.principal.as_ref()
    }

    /// The host session this request came in (a stdio connection, a legacy HTTP
    /// session); `None` for a 2026-07-28 request over HTTP, which stands alone.
    pub fn host_session(&self) -> Option<&crate::HostSession> {
        self.host.as_ref()
    }

    /// Where notifications outside any request reach this client
    /// ([`crate::Subscriber`]): for a legacy request its host session; for the
    /// `resources/subscribe` calls a 2026-07-28 `subscriptions/listen` makes of the handler,
    /// that stream; `None` otherwise (a 2026-07-28 request has nowhere to send to after it
    /// is answered but a listen stream).
    pub fn subscriber(&self) -> Option<crate::Subscriber> {
        if let Some(s) = &self.listen {
            return Some(s.clone());
        }
        if features::per_request_meta(self.revision) {
            return None;
        }
        let host = self.host.clone()?;
        Some(crate::Subscriber::session(host, self.notifier.clone()))
    }

    /// The revision this request is served in.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    /// The capabilities the client declared (at `initialize`, or on this 2026 request).
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.client_capabilities
    }

    /// The capabilities the client declared, exactly as it wrote them (a relay passes
    /// them on without re-encoding).
    pub fn client_capabilities_raw(&self) -> &RawValue {
        &self.client_capabilities_raw
    }

    /// [`RequestContext::client_capabilities_raw`], shared: every request of a session
    /// whose client declared its capabilities once (at `initialize`) holds the same one,
    /// so what is derived from them can be kept and told apart by pointer.
    pub fn client_capabilities_raw_shared(&self) -> &Arc<RawValue> {
        &self.client_capabilities_raw
    }

    /// The client's self-description, if it gave one.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.client_info.as_deref()
    }

    /// The capabilities the client declared, shared (cheap to keep past the request).
    pub fn client_capabilities_arc(&self) -> Arc<ClientCapabilities> {
        self.client_capabilities.clone()
    }

    /// The client's answer to the input request named `key`, on a retry.
    pub fn input_response(&self, key: &str) -> Option<&Value> {
        self.input_responses.get(key)
    }

    /// Every answer to input requests on this round (empty on a first call).
    pub fn input_responses(&self) -> &Map<String, Value> {
        &self.input_responses
    }

    /// The log level the client wants for this request (legacy: `logging/setLevel`;
    /// 2026-07-28: the request's `logLevel`), if any.
    pub fn log_level(&self) -> Option<&LoggingLevel> {
        self.log_level.as_ref()
    }

    /// Whether this request may be answered with [`Outcome::Task`](crate::Outcome::Task): a 2026-07-28 client
    /// that declared the tasks extension, or a 2025-11-25 client that asked for a task.
    pub fn accepts_task(&self) -> bool {
        if features::has_tasks_extension(self.revision) {
            self.client_capabilities
                .extensions
                .as_ref()
                .is_some_and(|e| e.contains_key(TASKS_EXTENSION))
        } else {
            features::has_task_param(self.revision) && self.task.is_some()
        }
    }

    /// The 2025-11-25 `task` param: the client asked for this request to run as a task
    /// (`None` in other revisions, where the param means nothing).
    pub fn task_requested(&self) -> Option<&TaskMetadata> {
        self.task.as_ref()
    }

    /// The `requestState` of this round, on a retry.
    pub fn request_state(&self) -> Option<&str> {
        self.request_state.as_deref()
    }

    /// Whether the client asked for progress on this request (gave a `progressToken`).
    pub fn wants_progress(&self) -> bool {
        self.progress_token.is_some()
    }

    /// The last progress value sent for this request, if any.
    pub fn last_progress(&self) -> Option<f64> {
        let sent = self.progress_sent.as_ref()?;
        *sent.lock()
    }

    /// Whether the client cancelled this request.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.is_cancelled()
    }

    /// Resolves once the client cancels this request (at once if it already has); select
    /// on it to stop long work promptly.
    pub async fn cancelled(&self) {
        self.cancelled.wait().await
    }

    /// Announces that a list changed, to every connected client that listens (see
    /// [`crate::Server::notify_list_changed`]).
    pub fn list_changed(&self, what: crate::ListChanged) {
        let _ = self.notifier.changes.send(crate::change::Change {
            what,
            audience: None,
        });
    }

    /// Reports progress, if the client asked for it (a `progressToken`). The spec wants
    /// each value greater than the last: one that is not (or is not a finite number) is
    /// dropped, its message with it.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let (Some(token), Some(sent)) = (&self.progress_token, &self.progress_sent) else {
            return;
        };
        {
            let mut last = sent.lock();
            if !progress.is_finite() || last.is_some_and(|l| progress <= l) {
                tracing::debug!(progress, "progress not sent: not above the last value");
                return;
            }
            *last = Some(progress);
        }
        let mut params = serde_json::json!({"progressToken": token, "progress": progress});
        if let Some(t) = total {
            params["total"] = t.into();
        }
        if let Some(m) = message {
            params["message"] = m.into();
        }
        self.notifier.notify(method::PROGRESS, params).await;
    }

    /// Sends a log message if the client wants this level (legacy: `logging/setLevel`;
    /// 2026-07-28: the request's `logLevel`, and nothing when it has none).
    pub async fn log(&self, level: LoggingLevel, logger: Option<&str>, data: Value) {
        if let Some(params) = self.log_params(level, logger, data) {
            self.notifier.notify(method::LOGGING_MESSAGE, params).await;
        }
    }

    /// [`RequestContext::log`] without waiting, for code that may not wait (a callback).
    pub fn log_now(&self, level: LoggingLevel, logger: Option<&str>, data: Value) {
        if let Some(params) = self.log_params(level, logger, data) {
            self.notifier.notify_now(method::LOGGING_MESSAGE, params);
        }
    }

    fn log_params(&self, level: LoggingLevel, logger: Option<&str>, data: Value) -> Option<Value> {
        let wanted = match &self.log_level {
            Some(min) => severity(&level) >= severity(min),
            // A 2026-07-28 request without a level asked for no log messages.
            None => !features::per_request_meta(self.revision),
        };
        if !wanted {
            return None;
        }
        let mut params = serde_json::json!({"level": level, "data": data});
        if let Some(l) = logger {
            params["logger"] = l.into();
        }
        Some(params)
    }
}
