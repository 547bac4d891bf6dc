//! The accept loop and each connection's bounds: `TCP_NODELAY`, a cap on connections
//! open at once (past it, new ones wait in the listen backlog), a header-read timeout
//! (hyper's, with a tokio timer), an idle timeout, and accept errors (out of file
//! descriptors, …) logged and waited out, never the end of the loop; and the graceful
//! stop ([`serve_with_shutdown`]): no new connections, the requests being served
//! finished, up to a drain timeout.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

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
/// At `max_connections` open, it stops accepting until one closes: new connections wait
/// in the kernel's listen backlog, costing no file descriptor. An accept error is logged
/// and the loop goes on, after a pause (50 ms, doubling to 500 ms while errors follow
/// each other) when the error is about the process (out of file descriptors or memory)
/// rather than the one connection. It does not return; [`serve_with_shutdown`] is the
/// same with a graceful stop.
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
    /// The answer to one request.
    fn answer(&self, req: Request<Incoming>) -> impl Future<Output = Response<HttpBody>> + Send;
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

    fn answer(&self, req: Request<Incoming>) -> impl Future<Output = Response<HttpBody>> + Send {
        self.handle(req)
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

/// Accepts connections until dropped.
async fn accept_loop<E: Endpoint>(
    listener: TcpListener,
    http: E,
    slots: Arc<Semaphore>,
    stop: watch::Receiver<Stop>,
) {
    let mut backoff = BACKOFF_MIN;
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            // The semaphore is never closed.
            continue;
        };
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
                tracing::warn!("accept failed: {e}; retrying in {backoff:?}");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
                continue;
            }
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(%peer, "cannot set TCP_NODELAY: {e}");
        }
        let stop = stop.clone();
        tokio::spawn(connection(stream, peer, http.clone(), slot, stop));
    }
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
/// longer than the idle timeout, or the server stops (`stop`: gracefully, then at once).
/// `slot` is its place under the connection cap.
async fn connection<E: Endpoint>(
    stream: TcpStream,
    peer: std::net::SocketAddr,
    http: E,
    slot: OwnedSemaphorePermit,
    mut stop: watch::Receiver<Stop>,
) {
    let b = http.bounds();
    let (idle_timeout, header_timeout) = (b.idle_timeout, b.header_read_timeout);
    let state = Arc::new(ConnState::new());
    let io = TokioIo::new(Watched {
        inner: stream,
        state: state.clone(),
    });
    let in_service = state.clone();
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let (http, active) = (http.clone(), Active::new(&in_service));
        async move {
            let response = http.answer(req).await;
            Ok::<_, Infallible>(response.map(|body| Tracked {
                body,
                _active: active,
            }))
        }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .serve_connection(io, service);
    tokio::pin!(conn);
    let (mut draining, mut watching) = (false, true);
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
    drop(slot);
}

/// What one connection is doing: when bytes last moved, whether a write waits for the
/// client to read, and how many requests are being served.
struct ConnState {
    start: Instant,
    /// Milliseconds from `start` to the last byte moved.
    progress_ms: AtomicU64,
    write_blocked: AtomicBool,
    active: AtomicUsize,
}

impl ConnState {
    fn new() -> ConnState {
        ConnState {
            start: Instant::now(),
            progress_ms: AtomicU64::new(0),
            write_blocked: AtomicBool::new(false),
            active: AtomicUsize::new(0),
        }
    }

    fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.progress_ms.store(ms, Ordering::Relaxed);
    }

    fn last_progress(&self) -> Instant {
        self.start + Duration::from_millis(self.progress_ms.load(Ordering::Relaxed))
    }

    /// Whether nothing moved for `timeout` while nothing is served, or while the
    /// response waits for a client that does not read.
    fn idle(&self, timeout: Duration) -> bool {
        self.last_progress().elapsed() >= timeout
            && (self.active.load(Ordering::SeqCst) == 0
                || self.write_blocked.load(Ordering::Relaxed))
    }
}

/// One request being served on a connection, until its response body is dropped.
struct Active(Arc<ConnState>);

impl Active {
    fn new(state: &Arc<ConnState>) -> Active {
        state.active.fetch_add(1, Ordering::SeqCst);
        Active(state.clone())
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
        self.0.touch();
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
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if r.is_ready() {
            self.state.touch();
        }
        r
    }
}

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
