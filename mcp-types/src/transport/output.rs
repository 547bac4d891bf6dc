//! The write half of a line transport: written at once when it is free, gathered when
//! it is not.
//!
//! A frame sent while nothing is waiting to be written goes to the stream there and then,
//! from the sender's task: the peer starts on it without waiting for this task to yield,
//! and no other task is woken to write it. When more input is already read and waiting
//! on this thread (the rest of a burst, see [`note_more_ahead`]), or the stream would
//! block, what follows is appended to one buffer, and a flushing task writes all of it
//! in one call when the sender's task yields. So a burst costs two system calls, and a
//! lone answer leaves at once without waking a task. A large payload is not copied into
//! the buffer: it waits in a queue as it came, in order between the bytes around it.

use std::cell::Cell;
use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::value::RawValue;
use tokio::io::AsyncWrite;
use tokio::sync::Notify;

use super::{CloseReason, CloseSlot};

/// A write buffer grown past this is given back once written.
const KEEP_BUFFER_BYTES: usize = 1024 * 1024;

/// How long closing waits for what is buffered to be written.
const CLOSE_FLUSH: Duration = Duration::from_secs(2);

thread_local! {
    /// Whether the frame being handled on this thread has more input read behind it.
    static MORE_AHEAD: Cell<bool> = const { Cell::new(false) };
}

/// Says whether the line a reader just gave out has more bytes read behind it (set by
/// the line reader for every frame). The frames sent while it holds are the answers of a
/// burst: they are gathered for one write instead of one system call each. Only a hint:
/// it changes how writes are grouped, never their order or whether they happen.
pub(super) fn note_more_ahead(more: bool) {
    MORE_AHEAD.with(|m| m.set(more));
}

fn more_ahead() -> bool {
    MORE_AHEAD.with(Cell::get)
}

/// The write half, shared by the senders and the flushing task.
pub(super) struct Output<W> {
    state: Mutex<State<W>>,
    /// Wakes the flushing task.
    kick: Notify,
    closed: Arc<CloseSlot>,
}

struct State<W> {
    /// The stream; dropped once shut, which closes it (a pipe's shutdown only flushes).
    w: Option<W>,
    /// What was accepted before `buf` and is not yet written: large payloads kept as they
    /// came (not copied), each after the bytes that came before it.
    queued: VecDeque<Queued>,
    /// Bytes accepted and not yet written, after `queued`.
    buf: Vec<u8>,
    /// How much of the first of `queued` (else of `buf`) is written.
    done: usize,
    /// The flushing task has been asked to run: senders only append.
    gathering: bool,
    /// Closing: the task writes what is left, then shuts the stream.
    closing: bool,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// Something to write that came before the buffer.
enum Queued {
    Bytes(Vec<u8>),
    Payload(Box<RawValue>),
}

impl Queued {
    fn bytes(&self) -> &[u8] {
        match self {
            Queued::Bytes(b) => b,
            Queued::Payload(p) => p.get().as_bytes(),
        }
    }
}

/// What a drain gave.
enum Drained {
    /// Everything is written.
    All,
    /// Everything is written and the stream is shut.
    Shut,
}

impl<W: AsyncWrite + Unpin + Send + 'static> Output<W> {
    pub(super) fn new(w: W, closed: Arc<CloseSlot>) -> Arc<Self> {
        Arc::new(Output {
            state: Mutex::new(State {
                w: Some(w),
                queued: VecDeque::new(),
                buf: Vec::with_capacity(8 * 1024),
                done: 0,
                gathering: false,
                closing: false,
                task: None,
            }),
            kick: Notify::new(),
            closed,
        })
    }

    /// Takes one frame's bytes, appended by `encode`. Never waits; `Err` once the stream
    /// is closed or failed (the reason is recorded).
    pub(super) fn push(self: &Arc<Self>, encode: impl FnOnce(&mut Vec<u8>)) -> Result<(), ()> {
        self.accept(|st| encode(&mut st.buf))
    }

    /// Takes one frame written around its large payload: `head`, then `payload` itself,
    /// kept as it is rather than copied, then `tail`. As [`Output::push`] otherwise.
    pub(super) fn push_payload(
        self: &Arc<Self>,
        head: Vec<u8>,
        payload: Box<RawValue>,
        tail: &[u8],
    ) -> Result<(), ()> {
        self.accept(|st| {
            if st.queued.is_empty() && st.buf.is_empty() {
                st.queued.push_back(Queued::Bytes(head));
            } else {
                st.buf.extend_from_slice(&head);
                let before = std::mem::replace(&mut st.buf, Vec::with_capacity(8 * 1024));
                st.queued.push_back(Queued::Bytes(before));
            }
            st.queued.push_back(Queued::Payload(payload));
            st.buf.extend_from_slice(tail);
        })
    }

    /// Takes what `add` puts in the state, and writes it now if the stream is free.
    fn accept(self: &Arc<Self>, add: impl FnOnce(&mut State<W>)) -> Result<(), ()> {
        let mut st = self.state.lock();
        if st.closing {
            return Err(());
        }
        add(&mut st);
        if st.gathering {
            return Ok(());
        }
        // Free: as much as the stream takes now, without waiting.
        let mut now = Context::from_waker(Waker::noop());
        match st.poll_drain(&mut now) {
            Poll::Ready(Err(e)) => {
                self.closed.record(write_failure(&e));
                return Err(());
            }
            // All written, and nothing else is on its way from this thread's reader:
            // the next frame may go straight out as well.
            Poll::Ready(Ok(_)) if !more_ahead() => return Ok(()),
            _ => {}
        }
        st.gathering = true;
        if st.task.is_none() {
            st.task = Some(tokio::spawn(flush(self.clone())));
        }
        drop(st);
        self.kick.notify_one();
        Ok(())
    }

    /// Writes what is buffered (waiting at most [`CLOSE_FLUSH`] for a peer that stopped
    /// reading) and shuts the stream.
    pub(super) async fn close(self: &Arc<Self>) {
        let task = {
            let mut st = self.state.lock();
            st.closing = true;
            st.gathering = true;
            st.task.take()
        };
        let mut task = task.unwrap_or_else(|| tokio::spawn(flush(self.clone())));
        self.kick.notify_one();
        if tokio::time::timeout(CLOSE_FLUSH, &mut task).await.is_err() {
            task.abort();
        }
        // A peer that stopped reading still sees the stream close.
        self.state.lock().w = None;
    }
}

impl<W> Output<W> {
    /// The transport is gone without closing: the flushing task, which keeps the stream
    /// while it waits to be kicked, is told to write what is left and shut it.
    pub(super) fn abandon(&self) {
        {
            let mut st = self.state.lock();
            st.closing = true;
            st.gathering = true;
        }
        self.kick.notify_one();
    }
}

impl<W: AsyncWrite + Unpin> State<W> {
    /// Writes the buffer out, and shuts the stream if closing.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Drained>> {
        let Some(w) = self.w.as_mut() else {
            return Poll::Ready(Ok(Drained::Shut));
        };
        loop {
            let pending = self.queued.front().map_or(&self.buf[..], Queued::bytes);
            if self.done >= pending.len() {
                if self.queued.pop_front().is_none() {
                    break;
                }
                self.done = 0;
                continue;
            }
            let n = match Pin::new(&mut *w).poll_write(cx, &pending[self.done..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            };
            self.done += n;
        }
        std::task::ready!(Pin::new(&mut *w).poll_flush(cx))?;
        self.buf.clear();
        self.done = 0;
        if self.buf.capacity() > KEEP_BUFFER_BYTES {
            self.buf = Vec::with_capacity(8 * 1024);
        }
        if self.closing {
            std::task::ready!(Pin::new(&mut *w).poll_shutdown(cx))?;
            self.w = None;
            return Poll::Ready(Ok(Drained::Shut));
        }
        Poll::Ready(Ok(Drained::All))
    }
}

/// The flushing task: whenever kicked, writes everything gathered, then lets senders
/// write directly again.
async fn flush<W: AsyncWrite + Unpin + Send + 'static>(out: Arc<Output<W>>) {
    loop {
        out.kick.notified().await;
        let drained = std::future::poll_fn(|cx| {
            let mut st = out.state.lock();
            st.poll_drain(cx).map_ok(|d| {
                st.gathering = false;
                d
            })
        })
        .await;
        match drained {
            Ok(Drained::All) => {}
            Ok(Drained::Shut) => return,
            Err(e) => {
                out.closed.record(write_failure(&e));
                return;
            }
        }
    }
}

fn write_failure(e: &io::Error) -> CloseReason {
    match e.kind() {
        io::ErrorKind::BrokenPipe => CloseReason::PeerClosed,
        _ => CloseReason::Io(e.to_string()),
    }
}
