//! Where a legacy session's messages go: each answer to the POST that asked, a request's
//! progress to that POST too, anything else the server says on its own to the newest open
//! POST stream, else the GET stream, else held for the next GET. The router is the
//! session's transport: the session sends, the router puts the message where it belongs,
//! at once, without a task in between.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use async_trait::async_trait;
use bytes::Bytes;
use mcp_types::transport::{
    send_without_waiting, CloseReason, Closed, Incoming, Transport, TrySendError,
};
use mcp_types::{meta, Frame, Message, RequestId};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, Notify};

use super::exchange::until_closed;
use super::reply::sse_event;

/// Streams whose answers are all given are kept this many, newest, for replay.
const FINISHED_KEPT: usize = 16;

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

/// One POST's (or the GET's) messages.
struct Stream {
    /// SSE events, for `Last-Event-ID` replay.
    events: VecDeque<(u64, Bytes)>,
    next_seq: u64,
    mode: Mode,
    /// Requests of this POST still unanswered.
    pending: usize,
}

#[derive(Default)]
struct Routing {
    streams: HashMap<u64, Stream>,
    waiting: HashMap<RequestId, u64>,
    progress: HashMap<String, u64>,
    open_posts: Vec<u64>,
    get_stream: Option<u64>,
    /// Finished SSE streams kept for replay, oldest first.
    finished: VecDeque<u64>,
    /// Server-initiated messages with nowhere to go yet, for the next GET stream.
    parked: Vec<Message>,
}

/// A legacy session's transport, routing what the session sends.
pub(super) struct Router {
    routing: Mutex<Routing>,
    next_stream: AtomicU64,
    replay_events: usize,
    closed: Mutex<Option<CloseReason>>,
    shut: Notify,
}

/// The stream channel's room, in events.
const STREAM_ROOM: usize = 256;

impl Router {
    pub(super) fn new(replay_events: usize) -> Router {
        Router {
            routing: Mutex::new(Routing::default()),
            next_stream: AtomicU64::new(1),
            replay_events,
            closed: Mutex::new(None),
            shut: Notify::new(),
        }
    }

    /// Opens the stream of a POST carrying `requests` (their ids, and their progress
    /// tokens as JSON text).
    pub(super) fn open_post(&self, requests: &[(RequestId, Option<String>)], mode: Mode) {
        let stream_id = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let Ok(mut r) = self.routing.lock() else {
            return;
        };
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
                events: VecDeque::new(),
                next_seq: 0,
                mode,
                pending: requests.len(),
            },
        );
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
        let event = sse_event(Some(&format!("{stream_id}-{}", stream.next_seq)), &msg);
        stream.events.push_back((stream.next_seq, event.clone()));
        while stream.events.len() > self.replay_events {
            stream.events.pop_front();
        }
        if let Mode::Sse(sink) = &mut stream.mode {
            // A full or closed sink: the client resumes with Last-Event-ID from the log.
            if sink.as_ref().is_some_and(|s| s.try_send(event).is_err()) {
                *sink = None;
            }
        }
    }

    /// A POST's last answer is given: its stream ends, and is kept for replay only if it
    /// was a stream.
    fn finish(&self, r: &mut Routing, stream_id: u64) {
        r.open_posts.retain(|s| *s != stream_id);
        r.progress.retain(|_, s| *s != stream_id);
        let Some(stream) = r.streams.get_mut(&stream_id) else {
            return;
        };
        match &mut stream.mode {
            Mode::Json(answers, tx) => {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(std::mem::take(answers));
                }
                r.streams.remove(&stream_id);
            }
            Mode::Sse(sink) if !stream.events.is_empty() => {
                *sink = None;
                r.finished.push_back(stream_id);
                while r.finished.len() > FINISHED_KEPT {
                    if let Some(old) = r.finished.pop_front() {
                        r.streams.remove(&old);
                    }
                }
            }
            _ => {
                r.streams.remove(&stream_id);
            }
        }
    }

    fn route(&self, msg: Message) {
        let Ok(mut r) = self.routing.lock() else {
            return;
        };
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
        let Ok(mut r) = self.routing.lock() else {
            return;
        };
        let resume = last_event.and_then(|l| {
            let (s, q) = l.split_once('-')?;
            Some((s.parse::<u64>().ok()?, q.parse::<u64>().ok()?))
        });
        if let Some((stream_id, seq)) = resume {
            let live = r.open_posts.contains(&stream_id) || r.get_stream == Some(stream_id);
            if let Some(stream) = r.streams.get_mut(&stream_id) {
                for (_, e) in stream.events.iter().filter(|(s, _)| *s > seq) {
                    if tx.try_send(e.clone()).is_err() {
                        break;
                    }
                }
                if live {
                    stream.mode = Mode::Sse(Some(tx));
                }
                return;
            }
        }
        let stream_id = self.next_stream.fetch_add(1, Ordering::Relaxed);
        r.streams.insert(
            stream_id,
            Stream {
                events: VecDeque::new(),
                next_seq: 0,
                mode: Mode::Sse(Some(tx)),
                pending: 0,
            },
        );
        r.get_stream = Some(stream_id);
        for m in std::mem::take(&mut r.parked) {
            self.push(&mut r, stream_id, m);
        }
    }

    /// Ends every stream (the session is over).
    pub(super) fn end(&self) {
        if let Ok(mut r) = self.routing.lock() {
            *r = Routing::default();
        }
        if let Ok(mut c) = self.closed.lock() {
            c.get_or_insert(CloseReason::Closed);
        }
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
        self.closed.lock().ok().and_then(|c| c.clone())
    }
}
