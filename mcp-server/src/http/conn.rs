//! The accept loop and each connection's bounds: `TCP_NODELAY`, a cap on connections
//! open at once (past it, new ones wait in the listen backlog, and an idle keep-alive
//! connection is closed to make room: [`super::room`]), a header-read timeout (hyper's,
//! with a tokio timer; a `408` written to a connection that owes one), an idle timeout,
//! and accept errors (out of file descriptors, …) logged and waited out while an idle
//! connection is closed for its descriptor, never the end of the loop; and the graceful
//! stop ([`serve_with_shutdown`]): no new connections, the requests being served
//! finished, up to a drain timeout.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

use super::room::{ConnState, Entered, Room};
use super::{HttpBody, StreamableHttp};

/// The first wait after an accept error; doubled on each error in a row, up to
/// [`BACKOFF_MAX`].
const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_millis(500);

/// Serves `http` on `listener` (HTTP/1.1), with the connection bounds of its
/// [`super::HttpOptions`]. Every accepted connection has `TCP_NODELAY`: an answer
/// written in more than one piece must not wait for the client's delayed acknowledgement
/// of the first.
///
/// At `max_connections` open, it takes one more connection and holds it, unread, until
/// there is room; the rest wait in the kernel's listen backlog, costing no file
/// descriptor (make the listener with a backlog that fits a burst: [`super::bind`] asks
/// for [`super::HttpOptions::listen_backlog`]). Room is made by closing the keep-alive
/// connection idle longest (one that has had its answers and has nothing of a next
/// request read), else the next to become so, else by one ending: so a client past the
/// cap waits and is served, never closed unanswered. A connection whose request head
/// does not come within the header timeout is closed, with a `408` written first unless
/// it was idle after an answer. An accept error is logged and the loop goes on, after a
/// pause (50 ms, doubling to 500 ms while errors follow each other, cut short when a
/// connection closes) when the error is about the process (out of file descriptors or
/// memory) rather than the one connection; out of descriptors, an idle connection is
/// closed for one the same way. It does not return; [`serve_with_shutdown`] is the same
/// with a graceful stop.
pub async fn serve(listener: TcpListener, http: StreamableHttp) -> io::Result<()> {
    serve_with_shutdown(listener, http, std::future::pending::<()>(), Duration::MAX).await
}

/// [`serve`] until `shutdown` resolves, then a graceful stop: the listener is closed, so
/// new connections are refused; each open connection finishes the request it is serving
/// and closes once its response is written (an idle keep-alive connection closes at
/// once); connections still open `drain` after the stop began (a response still being
/// written, an SSE stream) are closed. Returns when every connection is closed.
pub async fn serve_with_shutdown(
    listener: TcpListener,
    http: StreamableHttp,
    shutdown: impl Future<Output = ()>,
    drain: Duration,
) -> io::Result<()> {
    serve_endpoint(listener, http, shutdown, drain).await
}

/// The bounds of every connection to an endpoint.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bounds {
    pub(super) max_connections: usize,
    pub(super) header_read_timeout: Duration,
    pub(super) idle_timeout: Duration,
}

/// What the connections of a listener are served by: the MCP endpoint, or the admin
/// endpoint of [`super::admin`].
pub(super) trait Endpoint: Clone + Send + Sync + 'static {
    /// The bounds of its connections.
    fn bounds(&self) -> Bounds;
    /// The answer to one request from the client at `peer`.
    fn answer(
        &self,
        req: Request<Incoming>,
        peer: SocketAddr,
    ) -> impl Future<Output = Response<HttpBody>> + Send;
}

impl Endpoint for StreamableHttp {
    fn bounds(&self) -> Bounds {
        let o = self.options();
        Bounds {
            max_connections: o.max_connections,
            header_read_timeout: o.header_read_timeout,
            idle_timeout: o.idle_timeout,
        }
    }

    fn answer(
        &self,
        req: Request<Incoming>,
        peer: SocketAddr,
    ) -> impl Future<Output = Response<HttpBody>> + Send {
        self.handle_from(req, Some(peer))
    }
}

/// [`serve_with_shutdown`] for any endpoint.
pub(super) async fn serve_endpoint<E: Endpoint>(
    listener: TcpListener,
    http: E,
    shutdown: impl Future<Output = ()>,
    drain: Duration,
) -> io::Result<()> {
    // At most `u32::MAX`, so the stop can take every slot back at once.
    let cap = http.bounds().max_connections.clamp(1, MAX_SLOTS);
    let slots = Arc::new(Semaphore::new(cap));
    let (stop, stopping) = watch::channel(Stop::Serving);
    tokio::select! {
        () = accept_loop(listener, http, slots.clone(), stopping) => {}
        () = shutdown => {}
    }
    // The listener went with the loop.
    let _ = stop.send(Stop::Draining);
    let all = u32::try_from(cap).unwrap_or(u32::MAX);
    match tokio::time::timeout(drain, slots.acquire_many(all)).await {
        Ok(_) => tracing::debug!("every connection drained"),
        Err(_) => {
            tracing::warn!("connections still open {drain:?} after the stop began; closing them");
            let _ = stop.send(Stop::Now);
            let _ = slots.acquire_many(all).await;
        }
    }
    Ok(())
}

/// A listener on `addr` whose kernel queue holds up to `backlog` connections not yet
/// accepted (the kernel caps it: `net.core.somaxconn` on Linux). std's and tokio's
/// `bind` ask for 128, which a burst of clients overflows: the kernel then drops their
/// handshakes, and they wait out SYN retransmits (1 s, 3 s, 7 s, ...) instead of their
/// turn.
pub(super) fn listen(addr: SocketAddr, backlog: u32) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // As std and tokio do: a restarted server rebinds its port at once.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(backlog)
}

/// The most connections [`serve`] keeps open at once, whatever the options say.
const MAX_SLOTS: usize = u32::MAX as usize;

/// Where the server is in a graceful stop.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stop {
    Serving,
    /// Finish what is being served, take nothing new.
    Draining,
    /// The drain timeout passed: close.
    Now,
}

/// Accepts connections until dropped. At the cap it still takes the next connection
/// (one past the cap, so the loop knows someone waits) and holds it unread until there
/// is room: an idle connection is closed for it ([`Room::make_room`]), or one ends.
async fn accept_loop<E: Endpoint>(
    listener: TcpListener,
    http: E,
    slots: Arc<Semaphore>,
    stop: watch::Receiver<Stop>,
) {
    let room = Arc::new(Room::default());
    let mut backoff = BACKOFF_MIN;
    loop {
        let free = slots.clone().try_acquire_owned().ok();
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => {
                backoff = BACKOFF_MIN;
                accepted
            }
            Err(e) if per_connection(&e) => {
                tracing::debug!("accept: {e}");
                continue;
            }
            Err(e) => {
                out_of_room(&e, &room, backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
                continue;
            }
        };
        let slot = match free {
            Some(slot) => slot,
            None => {
                room.make_room();
                let slot = slots.clone().acquire_owned().await;
                room.settled();
                let Ok(slot) = slot else {
                    // The semaphore is never closed.
                    continue;
                };
                slot
            }
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(%peer, "cannot set TCP_NODELAY: {e}");
        }
        let entered = room.enter();
        let stop = stop.clone();
        tokio::spawn(connection(
            stream,
            peer,
            http.clone(),
            (slot, entered),
            stop,
        ));
    }
}

/// After an accept error about the process (out of file descriptors or memory): an idle
/// connection is closed to free its descriptor, and the loop waits for a connection to
/// close or `backoff`, whichever comes first.
async fn out_of_room(e: &io::Error, room: &Room, backoff: Duration) {
    let gone = room.gone();
    tokio::pin!(gone);
    gone.as_mut().enable();
    if room.make_room() {
        tracing::debug!("accept failed: {e}; closing an idle connection");
    } else {
        tracing::warn!("accept failed: {e}; retrying in {backoff:?}");
    }
    tokio::select! {
        () = gone => {}
        () = tokio::time::sleep(backoff) => {}
    }
    room.settled();
}

/// An accept error about one connection (gone before it was accepted), not about the
/// listener or the process.
fn per_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
    )
}

/// Serves one connection until it ends, its header-read timeout passes, it is idle for
/// longer than the idle timeout, it is closed to make room for another, or the server
/// stops (`stop`: gracefully, then at once). `place` is its slot under the connection
/// cap and its entry among the open connections.
async fn connection<E: Endpoint>(
    stream: TcpStream,
    peer: SocketAddr,
    http: E,
    place: (OwnedSemaphorePermit, (Arc<ConnState>, Entered)),
    mut stop: watch::Receiver<Stop>,
) {
    let (slot, (state, entered)) = place;
    let b = http.bounds();
    let (idle_timeout, header_timeout) = (b.idle_timeout, b.header_read_timeout);
    let io = TokioIo::new(Watched {
        inner: stream,
        state: state.clone(),
    });
    let service = counted(http, peer, state.clone());
    // Boxed so that it can be dropped (closing the socket) before its slot is given back.
    let mut conn = Box::pin(
        hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(header_timeout)
            .serve_connection(io, service),
    );
    let (mut draining, mut watching) = (false, true);
    // Waits for the whole connection, not one turn of the loop: registering costs a lock.
    let mut asked_to_go = Box::pin(state.evict.notified());
    loop {
        if !draining && *stop.borrow_and_update() != Stop::Serving {
            // Finish the response being written, then close.
            conn.as_mut().graceful_shutdown();
            draining = true;
        }
        let deadline = tokio::time::Instant::from_std(state.last_progress() + idle_timeout);
        tokio::select! {
            ended = conn.as_mut() => {
                if let Err(e) = ended {
                    if e.is_timeout() && state.owes_timeout_answer() {
                        // Written as the socket is dropped with the connection.
                        state.timed_out.store(true, Ordering::Relaxed);
                    }
                    tracing::debug!(%peer, "connection ended: {e}");
                }
                break;
            }
            () = tokio::time::sleep_until(deadline) => {
                if state.idle(idle_timeout) {
                    tracing::debug!(%peer, "closing an idle connection");
                    break;
                }
            }
            () = asked_to_go.as_mut(), if !draining => {
                if entered.room().take_eviction(&state) {
                    // Gracefully: hyper closes an idle connection at once, and one whose
                    // response is still being written once it is.
                    tracing::debug!(%peer, "closing an idle connection to make room");
                    conn.as_mut().graceful_shutdown();
                    draining = true;
                }
                asked_to_go.set(state.evict.notified());
            }
            changed = stop.changed(), if watching => match changed {
                // The server's future was dropped without a stop: serve on, as before.
                Err(_) => watching = false,
                Ok(()) if *stop.borrow() == Stop::Now => {
                    tracing::debug!(%peer, "closing a connection still open at the drain timeout");
                    break;
                }
                Ok(()) => {}
            },
        }
    }
    drop(conn);
    drop(entered);
    drop(slot);
}

/// `http` answering the requests of a connection from `peer`, each counted in `state` from its head
/// being read to its response body being dropped.
fn counted<E: Endpoint>(
    http: E,
    peer: SocketAddr,
    state: Arc<ConnState>,
) -> impl hyper::service::Service<
    Request<Incoming>,
    Response = Response<Tracked>,
    Error = Infallible,
    Future: Send,
> + Send {
    hyper::service::service_fn(move |req: Request<Incoming>| {
        let (http, active) = (http.clone(), Active::new(&state));
        async move {
            let response = http.answer(req, peer).await;
            Ok::<_, Infallible>(response.map(|body| Tracked {
                body,
                _active: active,
            }))
        }
    })
}

/// One request being served on a connection, until its response body is dropped.
struct Active(Arc<ConnState>);

impl Active {
    fn new(state: &Arc<ConnState>) -> Active {
        state.begin();
        Active(state.clone())
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// A response body that keeps its request counted as served while it lasts.
struct Tracked {
    body: HttpBody,
    _active: Active,
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A socket that notes when bytes move and when a write waits.
struct Watched {
    inner: TcpStream,
    state: Arc<ConnState>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if r.is_ready() {
            if buf.filled().len() > before {
                self.state.read_some();
            } else {
                self.state.touch();
            }
        }
        r
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if self.state.timed_out.load(Ordering::Relaxed) {
            // One small write into an idle socket's empty send buffer: it fits, or the
            // client is gone and there is no one to tell.
            let _ = self.inner.try_write(&TIMEOUT_ANSWER);
        }
    }
}

/// What a connection whose request head did not come in time is told as it is closed
/// (RFC 9110's `408`, which a client may get before it sent anything), so that a client
/// sending its request late reads why instead of finding the connection gone.
static TIMEOUT_ANSWER: std::sync::LazyLock<Vec<u8>> = std::sync::LazyLock::new(|| {
    let body = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request timeout: no complete request head in time; send it on a new connection"}}"#;
    format!(
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
});

impl Watched {
    fn wrote<T>(&self, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        let blocked = r.is_pending();
        self.state.write_blocked.store(blocked, Ordering::Relaxed);
        if !blocked {
            self.state.touch();
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.wrote(r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.wrote(r)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
