//! Where a legacy session's messages go: each answer to the POST that asked, a request's
//! progress to that POST too, anything else the server says on its own to the newest open
//! POST stream, else the GET stream, else held for the next GET. The router is the
//! session's transport: the session sends, the router puts the message where it belongs,
//! at once, without a task in between.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
use mcp_types::transport::{
    send_without_waiting, CloseReason, Closed, Incoming, Transport, TrySendError,
};
use mcp_types::{meta, Frame, Message, RequestId};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, Notify};

use super::exchange::until_closed;
use super::reply::sse_event;

/// Server messages held for a GET stream that is not there yet, at most.
const PARKED_MAX: usize = 256;

/// How a POST wants its answers.
pub(super) enum Mode {
    /// It takes a stream, but one lone answer that comes first goes as plain JSON: the
    /// first message decides.
    Undecided(oneshot::Sender<Decision>),
    /// JSON: answers collected until all came.
    Json(Vec<Message>, Option<oneshot::Sender<Vec<Message>>>),
    /// SSE: events go to the body while it is there.
    Sse(Option<mpsc::Sender<Bytes>>),
}

/// What the first message of an undecided POST made of it.
pub(super) enum Decision {
    /// The answer came first, and alone: plain JSON.
    Json(Message),
    /// Something else came first: a stream, which got it.
    Sse(mpsc::Receiver<Bytes>),
}

/// One POST's (or the GET's) messages, while it is open: a POST's goes when its last
/// answer is given, the GET's when another GET replaces it.
struct Stream {
    next_seq: u64,
    mode: Mode,
    /// Requests of this POST still unanswered.
    pending: usize,
}

/// The session's SSE events for `Last-Event-ID` replay, of all its streams, oldest
/// first, bounded in events and bytes.
#[derive(Default)]
struct Replay {
    /// (stream, sequence number in it, the event).
    events: VecDeque<(u64, u64, Bytes)>,
    bytes: usize,
}

impl Replay {
    fn keep(&mut self, stream: u64, seq: u64, event: Bytes, limits: ReplayLimits) {
        self.bytes += event.len();
        self.events.push_back((stream, seq, event));
        while self.events.len() > limits.events || self.bytes > limits.bytes {
            let Some((_, _, old)) = self.events.pop_front() else {
                break;
            };
            self.bytes -= old.len();
        }
    }

    fn holds(&self, stream: u64) -> bool {
        self.events.iter().any(|(s, _, _)| *s == stream)
    }
}

/// How much replay a session keeps.
#[derive(Clone, Copy)]
pub(super) struct ReplayLimits {
    /// Events, at most.
    pub(super) events: usize,
    /// Bytes of events, at most.
    pub(super) bytes: usize,
}

#[derive(Default)]
struct Routing {
    streams: HashMap<u64, Stream, ahash::RandomState>,
    waiting: HashMap<RequestId, u64, ahash::RandomState>,
    progress: HashMap<String, u64, ahash::RandomState>,
    open_posts: Vec<u64>,
    get_stream: Option<u64>,
    replay: Replay,
    /// Server-initiated messages with nowhere to go yet, for the next GET stream.
    parked: Vec<Message>,
}

/// A legacy session's transport, routing what the session sends.
pub(super) struct Router {
    routing: Mutex<Routing>,
    next_stream: AtomicU64,
    limits: ReplayLimits,
    closed: Mutex<Option<CloseReason>>,
    shut: Notify,
}

/// What a router holds now, entry by entry (for tests that look for growth).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RouterEntries {
    /// Open streams (POSTs not fully answered, and the GET stream).
    pub streams: usize,
    /// Requests not answered yet.
    pub waiting: usize,
    /// Progress tokens of requests not answered yet.
    pub progress: usize,
    /// Events kept for replay.
    pub replay_events: usize,
    /// Bytes of the events kept for replay.
    pub replay_bytes: usize,
    /// Messages held for the next GET stream.
    pub parked: usize,
}

/// The stream channel's room, in events.
const STREAM_ROOM: usize = 256;

impl Router {
    pub(super) fn new(limits: ReplayLimits) -> Router {
        Router {
            routing: Mutex::new(Routing::default()),
            next_stream: AtomicU64::new(1),
            limits,
            closed: Mutex::new(None),
            shut: Notify::new(),
        }
    }

    /// Opens the stream of a POST carrying `requests` (their ids, and their progress
    /// tokens as JSON text), unless that would leave more than `max_in_flight` requests
    /// unanswered: then nothing is opened, and `mode` is given back.
    pub(super) fn open_post(
        &self,
        requests: &[(RequestId, Option<String>)],
        mode: Mode,
        max_in_flight: usize,
    ) -> Result<(), Mode> {
        let stream_id = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let mut r = self.routing.lock();
        if r.waiting.len() + requests.len() > max_in_flight {
            return Err(mode);
        }
        for (id, token) in requests {
            r.waiting.insert(id.clone(), stream_id);
            if let Some(t) = token {
                r.progress.insert(t.clone(), stream_id);
            }
        }
        r.open_posts.push(stream_id);
        r.streams.insert(
            stream_id,
            Stream {
                next_seq: 0,
                mode,
                pending: requests.len(),
            },
        );
        Ok(())
    }

    /// What it holds now.
    pub(super) fn entries(&self) -> RouterEntries {
        let r = self.routing.lock();
        RouterEntries {
            streams: r.streams.len(),
            waiting: r.waiting.len(),
            progress: r.progress.len(),
            replay_events: r.replay.events.len(),
            replay_bytes: r.replay.bytes,
            parked: r.parked.len(),
        }
    }

    fn push(&self, r: &mut Routing, stream_id: u64, msg: Message) {
        let Some(stream) = r.streams.get_mut(&stream_id) else {
            return;
        };
        let is_answer = matches!(msg, Message::Response(_) | Message::Error(_));
        match &mut stream.mode {
            Mode::Json(answers, _) => {
                if is_answer {
                    answers.push(msg);
                } else {
                    tracing::warn!(method = ?msg.method(), "dropped: the client asked for JSON, not a stream");
                }
                return;
            }
            Mode::Undecided(_) if is_answer && stream.pending == 1 => {
                let Mode::Undecided(tx) = std::mem::replace(&mut stream.mode, Mode::Sse(None))
                else {
                    return;
                };
                let _ = tx.send(Decision::Json(msg));
                return;
            }
            Mode::Undecided(_) => {
                let (tx, rx) = mpsc::channel(STREAM_ROOM);
                if let Mode::Undecided(decide) =
                    std::mem::replace(&mut stream.mode, Mode::Sse(Some(tx)))
                {
                    let _ = decide.send(Decision::Sse(rx));
                }
            }
            Mode::Sse(_) => {}
        }
        stream.next_seq += 1;
        let seq = stream.next_seq;
        let event = sse_event(Some(&format!("{stream_id}-{seq}")), &msg);
        if let Mode::Sse(sink) = &mut stream.mode {
            // A full or closed sink: the client resumes with Last-Event-ID from the log.
            if sink
                .as_ref()
                .is_some_and(|s| s.try_send(event.clone()).is_err())
            {
                *sink = None;
            }
        }
        r.replay.keep(stream_id, seq, event, self.limits);
    }

    /// A POST's last answer is given: its stream ends (its events stay in the replay log
    /// while it has room), and nothing of it is kept but them.
    fn finish(&self, r: &mut Routing, stream_id: u64) {
        r.open_posts.retain(|s| *s != stream_id);
        r.progress.retain(|_, s| *s != stream_id);
        if let Some(Stream {
            mode: Mode::Json(answers, Some(tx)),
            ..
        }) = r.streams.remove(&stream_id)
        {
            let _ = tx.send(answers);
        }
    }

    fn route(&self, msg: Message) {
        let mut r = self.routing.lock();
        let r = &mut *r;
        let target = match &msg {
            Message::Response(_) | Message::Error(_) => {
                msg.id().and_then(|id| r.waiting.remove(id))
            }
            Message::Notification(n) => {
                let token = n
                    .params_as::<serde_json::Map<String, Value>>()
                    .ok()
                    .and_then(|p| p.get(meta::PROGRESS_TOKEN).map(Value::to_string));
                token
                    .and_then(|t| r.progress.get(&t).copied())
                    .or_else(|| r.open_posts.last().copied())
            }
            Message::Request(_) => r.open_posts.last().copied(),
        };
        let is_answer = matches!(msg, Message::Response(_) | Message::Error(_));
        match target.or(r.get_stream) {
            Some(stream_id) => {
                self.push(r, stream_id, msg);
                if is_answer {
                    let done = r.streams.get_mut(&stream_id).is_some_and(|s| {
                        s.pending = s.pending.saturating_sub(1);
                        s.pending == 0
                    });
                    if done && Some(stream_id) != r.get_stream {
                        self.finish(r, stream_id);
                    }
                }
            }
            None if is_answer => tracing::debug!("answer to a request no stream waits for"),
            None if r.parked.len() >= PARKED_MAX => {
                tracing::warn!("dropped: too many server messages waiting for a GET stream")
            }
            None => r.parked.push(msg),
        }
    }

    /// A GET stream: a fresh one for server-initiated messages, or with `Last-Event-ID`
    /// the replay of the stream that id belongs to, continued if that stream is live.
    pub(super) fn attach_get(&self, tx: mpsc::Sender<Bytes>, last_event: Option<&str>) {
        let mut r = self.routing.lock();
        let resume = last_event.and_then(|l| {
            let (s, q) = l.split_once('-')?;
            Some((s.parse::<u64>().ok()?, q.parse::<u64>().ok()?))
        });
        if let Some((stream_id, seq)) = resume {
            let live = r.streams.contains_key(&stream_id);
            if live || r.replay.holds(stream_id) {
                let missed = r.replay.events.iter();
                for (_, _, e) in missed.filter(|(s, q, _)| *s == stream_id && *q > seq) {
                    if tx.try_send(e.clone()).is_err() {
                        break;
                    }
                }
                if let Some(stream) = r.streams.get_mut(&stream_id) {
                    if matches!(stream.mode, Mode::Sse(_)) {
                        stream.mode = Mode::Sse(Some(tx));
                    }
                }
                return;
            }
        }
        let stream_id = self.next_stream.fetch_add(1, Ordering::Relaxed);
        r.streams.insert(
            stream_id,
            Stream {
                next_seq: 0,
                mode: Mode::Sse(Some(tx)),
                pending: 0,
            },
        );
        // The GET stream it replaces goes; its events stay for replay while they fit.
        if let Some(old) = r.get_stream.replace(stream_id) {
            r.streams.remove(&old);
        }
        for m in std::mem::take(&mut r.parked) {
            self.push(&mut r, stream_id, m);
        }
    }

    /// Ends every stream (the session is over).
    pub(super) fn end(&self) {
        *self.routing.lock() = Routing::default();
        self.closed.lock().get_or_insert(CloseReason::Closed);
        self.shut.notify_waiters();
    }
}

#[async_trait]
impl Transport for Router {
    async fn send(&self, frame: Frame) -> Result<(), Closed> {
        send_without_waiting(self, frame)
    }

    fn try_send(&self, frame: Frame) -> Result<(), TrySendError> {
        if let Some(r) = self.close_reason() {
            return Err(TrySendError::Closed(Closed(r)));
        }
        for m in frame.into_messages() {
            self.route(m);
        }
        Ok(())
    }

    /// Messages reach a legacy session through its POSTs, not this way: it waits until
    /// the session ends.
    async fn recv(&self) -> Result<Incoming, Closed> {
        until_closed(&self.shut, || self.close_reason()).await
    }

    async fn close(&self) {
        self.end();
    }

    fn close_reason(&self) -> Option<CloseReason> {
        self.closed.lock().clone()
    }
}
