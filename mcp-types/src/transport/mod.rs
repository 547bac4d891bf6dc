//! The one transport trait every client, server and proxy speaks through, plus
//! the implementations that need nothing but tokio: an in-memory duplex pair
//! ([`memory_pair`]) and newline-delimited JSON over any byte stream
//! ([`LineTransport`], stdio).
//!
//! A transport moves [`Frame`]s. It does not answer anything itself: a line that is
//! not JSON, or over the size limit, comes out of [`Transport::recv`] as
//! [`Incoming::Invalid`] carrying the error answer the session should send, and the
//! transport keeps working.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;
use serde_json::Value;

use crate::jsonrpc::{EnvelopeError, Frame};
use crate::{codes, ErrorObject};

mod encode;
mod hint;
mod line;
mod memory;
mod output;
mod stop;

pub use hint::{Fault, LineHint, LineShape};
pub use line::{LineTransport, DEFAULT_MAX_MESSAGE_BYTES};
pub use memory::{memory_pair, MemoryTransport};

/// Why a transport stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseReason {
    /// This side called [`Transport::close`].
    Closed,
    /// The peer closed its end (end of stream).
    PeerClosed,
    /// The peer process exited.
    ProcessExited {
        /// Exit code, if it exited normally.
        code: Option<i32>,
    },
    /// An I/O error ended the stream.
    Io(String),
    /// The server ended the session and no usable new one could be started (why).
    SessionEnded(String),
}

impl std::fmt::Display for CloseReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CloseReason::Closed => f.write_str("closed by this side"),
            CloseReason::PeerClosed => f.write_str("closed by the peer"),
            CloseReason::ProcessExited { code: Some(c) } => {
                write!(f, "peer process exited with status {c}")
            }
            CloseReason::ProcessExited { code: None } => f.write_str("peer process was killed"),
            CloseReason::Io(e) => write!(f, "I/O error: {e}"),
            CloseReason::SessionEnded(why) => write!(f, "the server ended the session: {why}"),
        }
    }
}

/// A transport that cannot carry any more messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("transport closed: {0}")]
pub struct Closed(pub CloseReason);

/// What one read from a transport yields.
#[derive(Debug)]
pub enum Incoming {
    /// A well-formed message or batch.
    Frame(Frame),
    /// Bytes that are not a JSON-RPC frame. Answer with `error` (id `null`) and carry on.
    Invalid {
        /// The error to answer with (`-32700` for bad JSON, `-32600` otherwise).
        error: ErrorObject,
        /// What the bytes seem to be, from a look at their beginning (the id of an answer
        /// cut short, say), for the request they may have been meant to answer; the
        /// default where a transport has no bytes to look at. Boxed: inline it would make
        /// every frame read a word longer to move.
        hint: Box<LineHint>,
    },
}

/// Why [`Transport::try_send`] did not send a frame.
#[derive(Debug)]
#[non_exhaustive]
pub enum TrySendError {
    /// The transport cannot take the frame without waiting: send it with
    /// [`Transport::send`].
    WouldWait(Box<Frame>),
    /// The transport is closed.
    Closed(Closed),
}

/// Moves JSON-RPC frames between two peers.
#[async_trait]
pub trait Transport: Send + Sync + 'static {
    /// Sends one frame. Taken by value: a transport may queue it (and write several in
    /// one go) without copying it.
    async fn send(&self, frame: Frame) -> Result<(), Closed>;

    /// Sends one frame if the transport can take it without waiting (a writer with a
    /// queue, say), so that code that may not wait (a callback on a read loop) can send.
    /// Default: [`TrySendError::WouldWait`], always.
    fn try_send(&self, frame: Frame) -> Result<(), TrySendError> {
        Err(TrySendError::WouldWait(Box::new(frame)))
    }

    /// Waits for the next frame. `Err` once the transport is closed, with the reason.
    /// Only one task should call this at a time.
    async fn recv(&self) -> Result<Incoming, Closed>;

    /// Every frame from now on, for the read loop that is this transport's one reader:
    /// what [`Transport::recv`] gives, called again and again, until it fails. One stream
    /// for the connection's life: a transport that receives by a future of its own type
    /// overrides this so that a frame costs no allocation (`recv`'s future is boxed anew
    /// for every frame). Default: `recv`, once per frame.
    fn frames(self: Arc<Self>) -> Frames {
        Box::pin(futures_util::stream::unfold(self, |t| async move {
            let frame = t.recv().await;
            Some((frame, t))
        }))
    }

    /// Closes this side. Pending and later `recv`s return `Err(Closed(CloseReason::Closed))`.
    async fn close(&self);

    /// Why the transport closed, once it has.
    fn close_reason(&self) -> Option<CloseReason>;

    /// Whether this transport mirrors tool arguments into HTTP headers (Streamable HTTP,
    /// 2026-07-28): a client on it drops tools whose `x-mcp-header` annotations break the
    /// spec's constraints (TOOL-09).
    fn mirrors_tool_headers(&self) -> bool {
        false
    }

    /// The tools the server listed, for a transport that mirrors their arguments.
    fn tools_listed(&self, _tools: &[crate::protocol::Tool]) {}

    /// The longest message the other side is taken to accept: a request longer than this
    /// fails at once ([`crate::rpc::RpcError::TooLarge`]) instead of being refused by the
    /// peer with an error that names no request. `None` (the default): no known limit.
    fn max_message_bytes(&self) -> Option<usize> {
        None
    }
}

/// The future an `async` method of [`Transport`] returns (as `async_trait` writes it).
type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What [`Transport::frames`] gives: each frame received, in order, and then the reason
/// the transport closed.
pub type Frames = Pin<Box<dyn futures_util::Stream<Item = Result<Incoming, Closed>> + Send>>;

/// [`Transport::frames`] of the transport an `Arc` points to, as that transport makes it.
fn pointee_frames<T: Transport + ?Sized>(pointer: Arc<Arc<T>>) -> Frames {
    Arc::clone(&*pointer).frames()
}

/// A pointer to a transport is that transport: every method goes to the one it points to,
/// so a transport can be shared (`Arc`) or chosen at run time (`Box<dyn Transport>`).
/// The `async` methods hand back the pointee's own future: wrapping it in one more box
/// would cost an allocation for every frame sent and received.
macro_rules! forward_transport {
    ($($pointer:ident $(, frames: $frames:ident)?);+) => {$(
        #[async_trait]
        impl<T: Transport + ?Sized> Transport for $pointer<T> {
            fn send<'life0, 'async_trait>(
                &'life0 self,
                frame: Frame,
            ) -> Boxed<'async_trait, Result<(), Closed>>
            where
                'life0: 'async_trait,
                Self: 'async_trait,
            {
                (**self).send(frame)
            }
            fn try_send(&self, frame: Frame) -> Result<(), TrySendError> {
                (**self).try_send(frame)
            }
            fn recv<'life0, 'async_trait>(&'life0 self) -> Boxed<'async_trait, Result<Incoming, Closed>>
            where
                'life0: 'async_trait,
                Self: 'async_trait,
            {
                (**self).recv()
            }
            fn close<'life0, 'async_trait>(&'life0 self) -> Boxed<'async_trait, ()>
            where
                'life0: 'async_trait,
                Self: 'async_trait,
            {
                (**self).close()
            }
            fn close_reason(&self) -> Option<CloseReason> {
                (**self).close_reason()
            }
            fn mirrors_tool_headers(&self) -> bool {
                (**self).mirrors_tool_headers()
            }
            fn tools_listed(&self, tools: &[crate::protocol::Tool]) {
                (**self).tools_listed(tools)
            }
            fn max_message_bytes(&self) -> Option<usize> {
                (**self).max_message_bytes()
            }
            $(fn frames(self: Arc<Self>) -> Frames {
                $frames(self)
            })?
        }
    )+};
}

// An `Arc` hands out its pointee's stream; a `Box` (owned, not shared) cannot, and
// receives by `recv`.
forward_transport!(Arc, frames: pointee_frames; Box);

/// [`Transport::send`] for a transport whose `try_send` never waits (it hands the frame
/// on at once: to a spawned request, a stream's queue), so the two cannot disagree.
pub fn send_without_waiting<T: Transport + ?Sized>(
    transport: &T,
    frame: Frame,
) -> Result<(), Closed> {
    transport.try_send(frame).map_err(|e| match e {
        TrySendError::Closed(c) => c,
        // Such a transport never asks to wait; if one did, the frame cannot go.
        TrySendError::WouldWait(_) => Closed(CloseReason::Closed),
    })
}

/// The error answer for bytes that did not parse as a frame.
pub fn invalid_frame_error(e: &EnvelopeError) -> ErrorObject {
    let message = match e {
        EnvelopeError::Parse(_) => "Parse error",
        EnvelopeError::Invalid(_) => "Invalid Request",
    };
    ErrorObject::new(e.code(), message).with_data(Value::String(e.to_string()))
}

/// The error answer for a message over the size limit.
pub fn oversized_error(limit: usize) -> ErrorObject {
    ErrorObject::new(codes::INVALID_REQUEST, "Invalid Request").with_data(Value::String(format!(
        "message exceeds the {limit}-byte limit"
    )))
}

/// Why a stream closed: the first reason recorded, refinable by a wrapper that knows more.
#[derive(Default)]
pub(crate) struct CloseSlot {
    reason: Mutex<Option<CloseReason>>,
    /// Whether a reason is recorded: every send and receive asks, and the answer is
    /// almost always no, which needs no lock.
    recorded: std::sync::atomic::AtomicBool,
}

impl CloseSlot {
    pub(crate) fn record(&self, reason: CloseReason) -> CloseReason {
        let mut g = self.reason.lock();
        self.recorded.store(true, Ordering::Release);
        g.get_or_insert(reason).clone()
    }

    pub(crate) fn refine(&self, reason: CloseReason) -> CloseReason {
        let mut g = self.reason.lock();
        if *g == Some(CloseReason::Closed) {
            return CloseReason::Closed;
        }
        self.recorded.store(true, Ordering::Release);
        *g = Some(reason.clone());
        reason
    }

    pub(crate) fn get(&self) -> Option<CloseReason> {
        if !self.recorded.load(Ordering::Acquire) {
            return None;
        }
        self.reason.lock().clone()
    }
}

/// What the transports' own tests share.
#[cfg(test)]
pub(crate) mod testing {
    use crate::jsonrpc::Frame;

    /// The frame `s` is; the tests write only valid ones.
    pub(crate) fn frame(s: &str) -> Frame {
        Frame::parse(s.as_bytes()).expect("frame")
    }
}
