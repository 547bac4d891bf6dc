//! Requests other than the common call, run upstream as [`Flight`]s: progress and log
//! lines relayed to the host while they run, the upstream's questions handed to the host
//! (the flight parked under a `requestState` until the host's retry brings the answers),
//! cancellation passed on.

use super::id::UpstreamId;
use std::sync::Arc;
use std::time::Duration;

use mcp_client::{CallOptions, ClientError};
use mcp_revisions::Translator;
use mcp_server::RequestContext;
use mcp_types::protocol::*;
use mcp_types::raw::RawObject;
use mcp_types::{codes, ErrorObject};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::answers::{decode, input_required, upstream_error, OWN_KEYS};
use super::downgrade::Downgrade;
use super::links::Links;
use super::parked::Parked;
use super::pool::Pool;
use super::request_state::{self, Held, RequestBinding};
use crate::upstream_questions::{Flight, Step, STATE_PREFIX};
use mcp_server::Outcome;
use serde::de::DeserializeOwned;

/// Requests sent upstream for hosts and driven to their end (see the module's docs).
/// Cheap to clone.
#[derive(Clone)]
pub(super) struct Flights {
    links: Links,
    /// Upstream calls waiting for a host's answers, by the `requestState` given to it.
    parked: Arc<Parked<Flight>>,
    /// What seals those states.
    sealer: Arc<mcp_server::seal::Sealer>,
    /// Whether an upstream's own `requestState` is sealed into one of the gateway's (see
    /// [`Flights::seal_upstream_state`]).
    wraps: bool,
    downgrade: Downgrade,
}

/// What a retry's gateway `requestState` gives back.
pub(super) enum Resumed {
    /// The call parked for the host's answers.
    Flight(Flight),
    /// The upstream's own state, for a new request to the upstream that issued it.
    Upstream(String),
    /// The request, to go upstream afresh (the gateway asked for a consent).
    Afresh,
}

impl Flights {
    /// Flights over `links`, parked in `parked` while hosts answer, under states sealed by
    /// `sealer`, which seals upstreams' own states in too if `wraps`.
    pub(super) fn new(
        links: Links,
        parked: Arc<Parked<Flight>>,
        sealer: Arc<mcp_server::seal::Sealer>,
        wraps: bool,
        downgrade: Downgrade,
    ) -> Self {
        Flights {
            links,
            parked,
            sealer,
            wraps,
            downgrade,
        }
    }

    /// Seals the upstream's own `requestState` of `ir` (unless it is the gateway's) into
    /// one of the gateway's, bound to the host of `ctx` and its request `binding`: with
    /// replicas, the retry then reaches the replica whose upstream issued it. A state too
    /// long to seal goes as it is.
    pub(super) fn seal_upstream_state(
        &self,
        ir: &mut InputRequiredResult,
        binding: RequestBinding,
        ctx: &RequestContext,
    ) {
        let Some(theirs) = ir.request_state.as_deref().filter(|_| self.wraps) else {
            return;
        };
        if theirs.starts_with(STATE_PREFIX) {
            return;
        }
        let wait = self.pool().input_timeout();
        let held = Held::Upstream(theirs.to_owned());
        match request_state::seal(&self.sealer, &held, wait, ctx.principal(), binding) {
            Ok(ours) if ours.len() <= mcp_server::seal::MAX_TOKEN_LEN => {
                ir.request_state = Some(ours);
            }
            _ => {
                tracing::debug!("an upstream's requestState is too long to seal: relayed as it is")
            }
        }
    }

    /// How the host of `ctx` hears that its request to upstream `i` (the one `binding`
    /// names) needs the consents `e` carries (see `consent.rs`).
    pub(super) fn ask_consent(
        &self,
        i: UpstreamId,
        ctx: &RequestContext,
        e: ErrorObject,
        binding: RequestBinding,
    ) -> super::consent::Asked {
        let state = || {
            let wait = super::consent::CONSENT_WAIT;
            request_state::seal(&self.sealer, &Held::Consent, wait, ctx.principal(), binding).ok()
        };
        let credentials = self
            .pool()
            .get(i)
            .config
            .per_user
            .as_ref()
            .map(|p| p.credentials.clone());
        let sent = |id: &str, host: mcp_server::Subscriber| {
            if let Some(c) = &credentials {
                c.elicitation_sent(id, host);
            }
        };
        super::consent::ask(ctx, e, state, sent)
    }

    /// What seals the ids hosts hold (states, task ids).
    pub(super) fn sealer(&self) -> &mcp_server::seal::Sealer {
        &self.sealer
    }

    /// The links the flights go on.
    pub(super) fn links(&self) -> &Links {
        &self.links
    }

    fn pool(&self) -> &Pool {
        self.links.pool()
    }

    /// Sends a request upstream for the host of `ctx` (or resumes one parked for this host's
    /// answers), relaying what flows while it runs. `params` are of the union model: they
    /// get the hop's `_meta` and are translated to the upstream's revision here.
    pub(super) async fn upstream_call(
        &self,
        i: UpstreamId,
        method_name: &str,
        params: Value,
        ctx: &RequestContext,
    ) -> Result<Value, ClientError> {
        self.upstream_call_for(i, method_name, params, ctx, None)
            .await
    }

    /// [`Self::upstream_call`] made for a host request other than itself (`host`: a
    /// task's result fetched within the host's call), which a retry must be to resume it.
    pub(super) async fn upstream_call_for(
        &self,
        i: UpstreamId,
        method_name: &str,
        params: Value,
        ctx: &RequestContext,
        host: Option<RequestBinding>,
    ) -> Result<Value, ClientError> {
        let params = self.hop_value_params(i, method_name, params, ctx)?;
        let mut params = RawObject::from_raw(&params).map_err(|e| ClientError::InvalidResult {
            method: method_name.into(),
            reason: e.to_string(),
        })?;
        if let Some(client) = self.pool().get(i).client() {
            client.add_envelope(&mut params);
        }
        let answer = self
            .upstream_call_bound(i, method_name, params, ctx, host)
            .await?;
        serde_json::from_str(answer.get()).map_err(|e| ClientError::InvalidResult {
            method: method_name.into(),
            reason: e.to_string(),
        })
    }

    /// [`Self::upstream_call`] with params already in the upstream's revision, answered
    /// as the upstream wrote it.
    pub(super) async fn upstream_call_raw(
        &self,
        i: UpstreamId,
        method_name: &str,
        params: RawObject<'_>,
        ctx: &RequestContext,
    ) -> Result<Box<RawValue>, ClientError> {
        self.upstream_call_bound(i, method_name, params, ctx, None)
            .await
    }

    /// [`Self::upstream_call_raw`] for `host` (see [`Self::upstream_call_for`]).
    async fn upstream_call_bound(
        &self,
        i: UpstreamId,
        method_name: &str,
        mut params: RawObject<'_>,
        ctx: &RequestContext,
        host: Option<RequestBinding>,
    ) -> Result<Box<RawValue>, ClientError> {
        if let Some(state) = ctx.request_state().filter(|s| s.starts_with(STATE_PREFIX)) {
            let binding = host.unwrap_or_else(|| {
                RequestBinding::of_params(self.pool().key(i), method_name, &params)
            });
            match self.resume(state, method_name, binding, ctx)? {
                Resumed::Flight(flight) => return self.drive(flight, ctx).await,
                // The upstream gets its own state back, and answers the retry anew.
                Resumed::Upstream(theirs) => params.insert_str("requestState", &theirs),
                // The answer was the user's consent, given elsewhere: nothing to send on.
                Resumed::Afresh => {
                    params.remove("requestState");
                    params.remove("inputResponses");
                }
            }
        }
        let need = super::links::Need::of(method_name, &params);
        let link = self.links.link(i, ctx, need).await?;
        let mut flight = self.launch(i, link, method_name, params, ctx);
        if let Some(b) = host {
            flight.binding = b;
        }
        self.drive(flight, ctx).await
    }

    /// Request `method_name` of upstream `i` for the host of `ctx`: the questions it asks
    /// instead of answering, or its result, decoded and then made the gateway's by `tidy`.
    pub(super) async fn relay_typed<T: DeserializeOwned>(
        &self,
        ctx: &RequestContext,
        i: UpstreamId,
        method_name: &str,
        params: Value,
        tidy: impl FnOnce(&mut T),
    ) -> Result<Outcome<T>, ErrorObject> {
        let key = self.pool().key(i);
        let binding = RequestBinding::of_value(key, method_name, &params);
        let v = match self.upstream_call(i, method_name, params, ctx).await {
            Ok(v) => v,
            Err(e) => {
                let e = upstream_error(key, e);
                if !super::consent::needs_consent(&e) {
                    return Err(e);
                }
                return match self.ask_consent(i, ctx, e, binding) {
                    super::consent::Asked::Error(e) => Err(e),
                    super::consent::Asked::InputRequired(ir) => Ok(Outcome::InputRequired(ir)),
                    super::consent::Asked::Told(text) => {
                        Err(ErrorObject::new(codes::INTERNAL_ERROR, text)
                            .with_data(json!({"upstream": key, "kind": "consent_required"})))
                    }
                };
            }
        };
        if let Some(mut ir) = input_required(key, &v)? {
            self.seal_upstream_state(&mut ir, binding, ctx);
            return Ok(Outcome::InputRequired(ir));
        }
        let mut r = decode(key, v)?;
        tidy(&mut r);
        Ok(Outcome::Complete(r))
    }

    /// Union-model params with what the upstream hears of this host (its capabilities and
    /// log level, the answers and state of a retry), in the upstream's revision.
    pub(super) fn hop_value_params(
        &self,
        i: UpstreamId,
        method_name: &str,
        mut params: Value,
        ctx: &RequestContext,
    ) -> Result<Box<RawValue>, ClientError> {
        let revision = self.pool().revision(i)?;
        if let Value::Object(p) = &mut params {
            // What the upstream may ask for, and hear, is what this host declared (unless
            // the caller set what the gateway itself takes on: the tasks extension).
            let meta = p.entry("_meta").or_insert_with(|| json!({}));
            if let Value::Object(m) = meta {
                m.entry(mcp_types::meta::CLIENT_CAPABILITIES)
                    .or_insert_with(|| json!(ctx.client_capabilities()));
                if let Some(level) = ctx.log_level() {
                    m.insert(mcp_types::meta::LOG_LEVEL.into(), json!(level));
                }
            }
            let mut responses = ctx.input_responses().clone();
            for k in OWN_KEYS {
                responses.remove(k);
            }
            if !responses.is_empty() {
                p.insert("inputResponses".into(), Value::Object(responses));
            }
            if let Some(state) = ctx.request_state() {
                p.insert("requestState".into(), json!(state));
            }
        }
        let translator = self
            .downgrade
            .translator(Translator::canonical_to(revision));
        let translated = translator.params(method_name, params)?;
        serde_json::value::to_raw_value(&translated).map_err(|e| ClientError::InvalidResult {
            method: method_name.into(),
            reason: e.to_string(),
        })
    }

    /// Sends a request on `link` as a flight for the host of `ctx` to drive.
    pub(super) fn launch(
        &self,
        i: UpstreamId,
        link: crate::sessions::Link,
        method_name: &str,
        params: RawObject<'_>,
        ctx: &RequestContext,
    ) -> Flight {
        let crate::sessions::Link {
            client,
            calls,
            lease,
        } = link;
        // Progress is relayed only to a host that asked for it.
        let (tx, progress) = match ctx.wants_progress() {
            true => {
                let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
                (Some(tx), Some(rx))
            }
            false => (None, None),
        };
        let cancel = Arc::new(tokio::sync::Notify::new());
        let mut opts = CallOptions::default()
            .timeout(self.pool().call_timeout(i))
            .return_input_required(true)
            .cancel(cancel.clone());
        opts.progress = tx;
        // A held `tasks/result` gets the requests its upstream task makes.
        let task = (method_name == method::TASKS_RESULT)
            .then(|| params.get_str("taskId").map(|t| t.into_owned()))
            .flatten();
        let host = ctx.host_session().map(|h| h.id());
        let slot = calls.enter(ctx.client_capabilities_arc(), host, task);
        let binding = RequestBinding::of_params(self.pool().key(i), method_name, &params);
        let request = client.prepare_raw(method_name, params, &opts);
        let call = Box::pin(async move { client.send_raw(request, &opts).await });
        Flight {
            method: method_name.to_owned(),
            call,
            progress,
            cancel,
            slot,
            pending: Vec::new(),
            asked: 0,
            binding,
            lease,
        }
    }

    /// Takes the call parked under `state`, if this retry (`method_name`, for what
    /// `binding` names, by the principal of `ctx`) may resume it, and hands it the host's
    /// answers.
    pub(super) fn resume(
        &self,
        state: &str,
        method_name: &str,
        binding: RequestBinding,
        ctx: &RequestContext,
    ) -> Result<Resumed, ClientError> {
        let refused = || {
            ClientError::Server(ErrorObject::new(
                codes::INVALID_PARAMS,
                "requestState is unknown, expired, already used or for another request",
            ))
        };
        let claims =
            request_state::open(&self.sealer, state, ctx.principal(), binding).map_err(|e| {
                tracing::info!(method = %method_name, "requestState refused: {e}");
                refused()
            })?;
        let slot = match claims.held {
            Held::Slot(slot) => slot,
            Held::Upstream(theirs) => return Ok(Resumed::Upstream(theirs)),
            Held::Consent => return Ok(Resumed::Afresh),
        };
        // A task run for a tools/call is resumed by the host's tools/call retry. A request
        // of another method leaves it parked for its own.
        let flight = self.parked.take_if(slot, |f| {
            f.method == method_name
                || (method_name == method::TOOLS_CALL && f.method == method::TASKS_RESULT)
        });
        let Some(mut flight) = flight else {
            tracing::info!(method = %method_name, owner = %claims.owner, "requestState names no call parked here");
            if claims.owner != self.sealer.replica() {
                // Genuine, this principal's, for this request: its replica is gone.
                return Err(ClientError::Server(lost(claims.owner)));
            }
            return Err(refused());
        };
        flight.answer(ctx.input_responses());
        Ok(Resumed::Flight(flight))
    }

    /// Relays progress and logs while the upstream works; hands its requests to the host
    /// (parking the call until the host answers); cancels it when the host cancels.
    pub(super) async fn drive(
        &self,
        mut f: Flight,
        ctx: &RequestContext,
    ) -> Result<Box<RawValue>, ClientError> {
        loop {
            let step = tokio::select! {
                step = f.next() => step,
                // The host cancelled (a notification, or a closed 2026 stream): so do we.
                () = ctx.cancelled() => {
                    f.cancel.notify_one();
                    return (&mut f.call).await;
                }
            };
            match step {
                Step::Done(r) => return r,
                // What flows during a call is boxed: most calls have none, and their state
                // stays small without it.
                Step::Progress(p) => {
                    let progress = p.progress.as_f64().unwrap_or_default();
                    let total = p.total.and_then(|t| t.as_f64());
                    Box::pin(ctx.progress(progress, total, p.message.as_deref())).await;
                }
                Step::Events { logs, asks } => {
                    for l in logs {
                        Box::pin(ctx.log(l.level, l.logger.as_deref(), l.data)).await;
                    }
                    if !asks.is_empty() {
                        let requests = f.hand_over(asks);
                        let state = self.park(f, ctx)?;
                        let answer = json!({
                            "resultType": "input_required",
                            "inputRequests": requests,
                            "requestState": state,
                        });
                        return serde_json::value::to_raw_value(&answer).map_err(|e| {
                            ClientError::InvalidResult {
                                method: "inputRequests".into(),
                                reason: e.to_string(),
                            }
                        });
                    }
                }
            }
        }
    }

    /// Keeps a call until the host of `ctx` retries with the `requestState` returned, at
    /// most `input_timeout`.
    pub(super) fn park(&self, flight: Flight, ctx: &RequestContext) -> Result<String, ClientError> {
        let wait = self.pool().input_timeout();
        let binding = flight.binding;
        let slot = self.parked.park(flight, wait, |f| {
            tracing::warn!(method = %f.method, "a host never answered an upstream's request; the call is cancelled");
            abandon(f);
        });
        let held = Held::Slot(slot);
        request_state::seal(&self.sealer, &held, wait, ctx.principal(), binding).map_err(|e| {
            if let Some(f) = self.parked.take_if(slot, |_| true) {
                abandon(f);
            }
            ClientError::InvalidResult {
                method: "requestState".into(),
                reason: e.to_string(),
            }
        })
    }
}

/// Ends a parked call no host will resume: the upstream's questions fail, and the request,
/// driven once more, sends its cancellation upstream.
fn abandon(f: Flight) {
    let Flight {
        call,
        cancel,
        pending,
        ..
    } = f;
    drop(pending);
    cancel.notify_one();
    tokio::spawn(async move {
        let _ = tokio::time::timeout(Duration::from_secs(5), call).await;
    });
}

/// The answer to a retry whose call was parked on `owner`, a replica that cannot be reached
/// (stopped or gone: the request was forwarded there and could not be): it says why, and
/// what to do.
fn lost(owner: mcp_server::seal::ReplicaId) -> ErrorObject {
    ErrorObject::new(
        codes::INVALID_PARAMS,
        format!(
            "the call this requestState resumes was waiting on gateway replica {owner}, \
             which cannot be reached now; send the request again without requestState \
             and inputResponses to start it anew"
        ),
    )
}

#[cfg(test)]
#[path = "flights_tests.rs"]
mod tests;
