//! Legacy sessions (2025-03-26 … 2025-11-25): `initialize` opens one, later POSTs name it
//! with `Mcp-Session-Id`. The session object keeps the handshake; its peer has no read
//! loop: each POST hands its messages over directly, and what the session sends goes
//! through the [`Router`] to the POST it belongs to (or the GET stream).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame as BodyFrame};
use mcp_types::rpc::{Inbound, Peer};
use mcp_types::transport::CloseReason;
use mcp_types::{codes, meta, Frame, Message, RequestId};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
// Tokio's clock, which tests can pause and advance, is std's outside them.
use tokio::time::Instant;

use super::reply::{
    empty, frame_body, keep_alive, lone_answer, respond, rpc_error, sse, HttpBody, KEEP_ALIVE,
};
use super::routing::{Decision, Mode, ReplayLimits, Router, RouterEntries};
use super::{HttpOptions, SessionActivity};
use crate::auth::Principal;
use crate::Server;

/// Whether a session is in use: POSTs waiting for their answers and SSE bodies open,
/// and when the last of them ended.
pub(super) struct Activity {
    /// Uses now, and [`GONE`] once the session was claimed while idle.
    busy: AtomicUsize,
    since: Mutex<Instant>,
}

impl Activity {
    /// A session's activity as it is made: idle from now.
    pub(super) fn new() -> Arc<Activity> {
        Arc::new(Activity {
            busy: AtomicUsize::new(0),
            since: Mutex::new(Instant::now()),
        })
    }
}

impl SessionActivity for Activity {
    fn idle_for(&self) -> Option<Duration> {
        if self.busy.load(Ordering::SeqCst) > 0 {
            return None;
        }
        Some(self.since.lock().elapsed())
    }

    fn claim_idle(&self) -> bool {
        self.busy
            .compare_exchange(0, GONE, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }
}

/// Set in [`Activity::busy`] when the session is claimed idle (expired, evicted): a use
/// that begins after that finds the session gone, as a later lookup would.
const GONE: usize = 1 << (usize::BITS - 1);

/// One use of a session, for as long as it lasts (a POST awaiting its answers, an SSE
/// body): the session is not idle while one is held.
pub(super) struct Busy {
    activity: Arc<Activity>,
    /// The session was claimed before this use began.
    gone: bool,
}

impl Busy {
    pub(super) fn new(activity: &Arc<Activity>) -> Busy {
        let before = activity.busy.fetch_add(1, Ordering::SeqCst);
        Busy {
            activity: activity.clone(),
            gone: before & GONE != 0,
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        *self.activity.since.lock() = Instant::now();
        self.activity.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One legacy session: the server's session object, its peer, and the router its
/// messages go through.
pub(super) struct LegacySession {
    inbound: Arc<dyn Inbound>,
    peer: Peer,
    router: Arc<Router>,
    keep_alive: Duration,
    max_in_flight: usize,
    activity: Arc<Activity>,
    /// Who opened it ([`Principal::identity`]), when the endpoint authenticates: only
    /// they may use it.
    owner: Option<String>,
    /// The server's session object, told whose credentials each POST came with.
    session: Arc<crate::session::Session>,
}

impl LegacySession {
    pub(super) fn start(server: &Server, o: &HttpOptions, caller: crate::context::Caller) -> Self {
        let router = Arc::new(Router::new(ReplayLimits {
            events: o.replay_events,
            bytes: o.replay_bytes,
        }));
        let session = server.host_session(caller.clone());
        LegacySession {
            owner: caller.principal.as_ref().map(|p| p.identity()),
            session: session.clone(),
            inbound: session,
            peer: Peer::detached(router.clone()),
            router,
            keep_alive: o.keep_alive,
            max_in_flight: o.max_in_flight_per_session,
            activity: Activity::new(),
        }
    }

    /// From now on, `handover` keeps this session's snapshot as session `id` each time it
    /// changes.
    pub(super) fn keep_with(&self, id: &str, handover: Arc<dyn super::SessionHandover>) {
        let id = id.to_owned();
        self.session
            .watch(Box::new(move |snapshot| handover.kept(&id, snapshot)));
    }

    /// Takes up the session `snapshot` describes, without an `initialize`; `false` (logged)
    /// when the snapshot does not read.
    pub(super) async fn resume(&self, snapshot: &super::SessionSnapshot) -> bool {
        match self.session.resume(&self.peer, snapshot).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("{e}");
                false
            }
        }
    }

    /// Whether `principal` may use this session: the identity that opened it, or anyone
    /// when the endpoint does not authenticate.
    pub(super) fn belongs_to(&self, principal: Option<&Principal>) -> bool {
        match &self.owner {
            None => true,
            Some(owner) => principal.is_some_and(|p| &p.identity() == owner),
        }
    }

    /// Serves what comes next for `principal`: the same identity as before, with the
    /// scopes and claims of its latest credentials.
    pub(super) fn adopt(&self, principal: Option<Arc<Principal>>) {
        if self.owner.is_some() {
            self.session.set_principal(principal);
        }
    }

    /// How it is used, for its [`super::SessionManager`].
    pub(super) fn activity(&self) -> Arc<dyn SessionActivity> {
        self.activity.clone()
    }

    /// Whether it was claimed (expired, evicted): no use begins on it any more.
    pub(super) fn is_claimed(&self) -> bool {
        self.activity.busy.load(Ordering::SeqCst) & GONE != 0
    }

    /// Whether it has been idle for `timeout` or longer and is claimed now (see
    /// [`SessionActivity::claim_idle`]): then it is to be ended.
    pub(super) fn claim_expired(&self, timeout: Duration) -> bool {
        self.activity.idle_for().is_some_and(|d| d >= timeout) && self.activity.claim_idle()
    }

    /// What its router holds now.
    pub(super) fn entries(&self) -> RouterEntries {
        self.router.entries()
    }

    /// Opens a POST's stream in the router, unless the session has too many requests
    /// unanswered already.
    fn open(
        &self,
        requests: &[(RequestId, Option<String>)],
        mode: Mode,
    ) -> Result<(), Box<Response<HttpBody>>> {
        self.router
            .open_post(requests, mode, self.max_in_flight)
            .map_err(|_| Box::new(self.too_many(requests)))
    }

    fn too_many(&self, requests: &[(RequestId, Option<String>)]) -> Response<HttpBody> {
        let why = format!(
            "Too many requests in flight: this session may have {} unanswered at once",
            self.max_in_flight
        );
        tracing::warn!("refused: {why}");
        if let [(id, _)] = requests {
            return rpc_error(
                StatusCode::TOO_MANY_REQUESTS,
                Some(id.clone()),
                mcp_types::codes::SERVER_BUSY,
                why,
            );
        }
        let errors = requests
            .iter()
            .map(|(id, _)| {
                Message::Error(mcp_types::ErrorResponse::new(
                    Some(id.clone()),
                    mcp_types::ErrorObject::new(mcp_types::codes::SERVER_BUSY, why.clone()),
                ))
            })
            .collect();
        respond(
            StatusCode::TOO_MANY_REQUESTS,
            frame_body(&Frame::Batch(errors)),
            Some("application/json"),
        )
    }

    /// A use held from before the session enters the table until its `initialize` POST
    /// is done: a session just made is not idle, so a full table never evicts it first.
    pub(super) fn hold(&self) -> Busy {
        Busy::new(&self.activity)
    }

    /// One POST: its messages go to the session, and the answers to its requests come
    /// back as JSON (when the client takes no stream, or when a lone answer comes first)
    /// or as an SSE stream.
    pub(super) async fn post(&self, frame: Frame, sse_ok: bool) -> Response<HttpBody> {
        let busy = Busy::new(&self.activity);
        if busy.gone {
            // Expired or evicted after its lookup: what a lookup now answers.
            return super::not_found();
        }
        let single = matches!(frame, Frame::Single(_));
        let requests: Vec<(RequestId, Option<String>)> = match &frame {
            Frame::Single(m) => request_of(m).into_iter().collect(),
            Frame::Batch(b) => b.iter().filter_map(request_of).collect(),
        };
        if requests.is_empty() {
            // Notifications, and answers to the server's requests.
            self.peer.deliver(frame, &self.inbound).await;
            return respond(StatusCode::ACCEPTED, empty(), None);
        }
        if !sse_ok {
            let (tx, rx) = oneshot::channel();
            if let Err(r) = self.open(&requests, Mode::Json(Vec::new(), Some(tx))) {
                return *r;
            }
            self.peer.deliver(frame, &self.inbound).await;
            return match rx.await {
                Ok(mut answers) if answers.len() == 1 && single => {
                    lone_answer(StatusCode::OK, &answers.remove(0))
                }
                Ok(answers) => respond(
                    StatusCode::OK,
                    frame_body(&Frame::Batch(answers)),
                    Some("application/json"),
                ),
                Err(_) => ended(),
            };
        }
        if !single || requests.len() != 1 {
            let (tx, rx) = mpsc::channel(256);
            if let Err(r) = self.open(&requests, Mode::Sse(Some(tx))) {
                return *r;
            }
            self.peer.deliver(frame, &self.inbound).await;
            return self.stream(rx);
        }
        let (tx, rx) = oneshot::channel();
        if let Err(r) = self.open(&requests, Mode::Undecided(tx)) {
            return *r;
        }
        self.peer.deliver(frame, &self.inbound).await;
        match rx.await {
            Ok(Decision::Json(m)) => lone_answer(StatusCode::OK, &m),
            Ok(Decision::Sse(rx)) => self.stream(rx),
            Err(_) => ended(),
        }
    }

    /// A GET stream (see [`Router::attach_get`]).
    pub(super) fn get(&self, last_event: Option<&str>) -> Response<HttpBody> {
        let (tx, rx) = mpsc::channel(256);
        self.router.attach_get(tx, last_event);
        self.stream(rx)
    }

    /// The session ends (DELETE): what it was doing is cancelled.
    pub(super) async fn end(&self) {
        self.router.end();
        self.peer.shut(CloseReason::Closed, &self.inbound).await;
    }

    fn stream(&self, rx: mpsc::Receiver<Bytes>) -> Response<HttpBody> {
        sse(Events {
            rx,
            keep_alive: keep_alive(self.keep_alive),
            _busy: Busy::new(&self.activity),
        }
        .boxed_unsync())
    }
}

fn ended() -> Response<HttpBody> {
    rpc_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        None,
        codes::INTERNAL_ERROR,
        "request ended without an answer",
    )
}

/// The `_meta` key of a progress token, its searcher built once.
static PROGRESS_TOKEN_KEY: std::sync::LazyLock<mcp_types::raw::KeyFinder> =
    std::sync::LazyLock::new(|| mcp_types::raw::KeyFinder::new(meta::PROGRESS_TOKEN));

/// A request's id and progress token (as JSON text), for routing what answers it.
fn request_of(m: &Message) -> Option<(RequestId, Option<String>)> {
    let Message::Request(r) = m else {
        return None;
    };
    // Most requests carry no progress token: a search of their text says so for less
    // than decoding them.
    let may_have_token = r.params.as_deref().is_some_and(|p| {
        PROGRESS_TOKEN_KEY.may_be_in(p.get()) || mcp_types::raw::has_key_escapes(p.get())
    });
    if !may_have_token {
        return Some((r.id.clone(), None));
    }
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(rename = "_meta", borrow, default)]
        meta: Option<&'a serde_json::value::RawValue>,
    }
    let token = r
        .params
        .as_deref()
        .and_then(|p| serde_json::from_str::<Params<'_>>(p.get()).ok())
        .and_then(|p| p.meta)
        .and_then(|m| serde_json::from_str::<serde_json::Map<String, Value>>(m.get()).ok())
        .and_then(|m| m.get(meta::PROGRESS_TOKEN).map(Value::to_string));
    Some((r.id.clone(), token))
}

/// An SSE body fed by the router, with keep-alive comments while idle.
struct Events {
    rx: mpsc::Receiver<Bytes>,
    keep_alive: tokio::time::Interval,
    _busy: Busy,
}

impl Body for Events {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<BodyFrame<Bytes>, Self::Error>>> {
        use std::task::Poll;
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(b)) => return Poll::Ready(Some(Ok(BodyFrame::data(b)))),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => {}
        }
        if self.keep_alive.poll_tick(cx).is_ready() {
            return Poll::Ready(Some(Ok(BodyFrame::data(Bytes::from_static(KEEP_ALIVE)))));
        }
        Poll::Pending
    }
}
