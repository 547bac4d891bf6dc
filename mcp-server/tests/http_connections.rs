//! The serving edge's connections are bounded: headers sent a byte at a time (slowloris)
//! are cut off at the header timeout while other connections are served, an idle
//! connection is closed, connections past the cap wait in the backlog until one closes,
//! a burst of keep-alive clients past the cap is served (idle ones closed to make room),
//! a connection whose request never came is told `408`, and running out of file
//! descriptors neither ends the server nor leaves a client unanswered. Real sockets on
//! 127.0.0.1; the `prlimit` tests run this test binary again as the server.

use std::io::{BufRead, BufReader as StdBufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_examples::OutputLog;
use mcp_server::http::{bind, HttpOptions};
use mcp_server::{NoArgs, Outcome, Server};
use mcp_types::protocol::{CallToolResult, ContentBlock};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

async fn start(options: HttpOptions) -> SocketAddr {
    start_gated(options, Arc::new(Notify::new())).await
}

/// A server whose tool `slow` answers once `gate` is notified.
async fn start_gated(options: HttpOptions, gate: Arc<Notify>) -> SocketAddr {
    let mut tools = mcp_examples::echo_tools();
    tools.tool(
        "slow",
        "Answers once the test lets it.",
        move |_: NoArgs, _ctx| {
            let gate = gate.clone();
            async move {
                gate.notified().await;
                Ok(Outcome::Complete(CallToolResult {
                    content: vec![ContentBlock::text("late")],
                    ..Default::default()
                }))
            }
        },
    );
    let server = Server::new(tools);
    let (addr, _task) = bind("127.0.0.1:0".parse().expect("addr"), server, options)
        .await
        .expect("bind");
    addr
}

fn post_text(addr: SocketAddr, body: &str, close: bool) -> String {
    post_in(addr, body, close, "")
}

/// A POST with `extra` header lines (each ending in CRLF).
fn post_in(addr: SocketAddr, body: &str, close: bool, extra: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: {}\r\n{}{extra}\r\n{body}",
        body.len(),
        if close { "Connection: close\r\n" } else { "" },
    )
}

/// One response's head and body (`Content-Length` framing), read from `s`.
async fn read_response(s: &mut TcpStream) -> (String, String) {
    match try_read_response(s).await.expect("read") {
        Ok(answer) => answer,
        Err(partial) => panic!("closed before a response: {partial:?}"),
    }
}

/// One response's head and body, or what came before the connection closed.
async fn try_read_response(s: &mut TcpStream) -> std::io::Result<Result<(String, String), String>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Ok(Err(String::from_utf8_lossy(&buf).into_owned()));
        }
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).into_owned();
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            continue;
        };
        let len = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse::<usize>().ok())?
            })
            .unwrap_or(0);
        if body.len() >= len {
            return Ok(Ok((head.to_owned(), body[..len].to_owned())));
        }
    }
}

/// An `initialize` on a fresh connection; its status line.
async fn initialize_on_new_connection(addr: SocketAddr) -> String {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(post_text(addr, INITIALIZE, true).as_bytes())
        .await
        .expect("write");
    status(&read_response(&mut s).await.0)
}

fn status(head: &str) -> String {
    head.lines().next().unwrap_or_default().to_owned()
}

/// Waits until the server closes `s` (a read of 0 or an error); how long that took.
async fn closed_within(s: &mut TcpStream, limit: Duration) -> Duration {
    let started = Instant::now();
    let mut chunk = [0u8; 1024];
    loop {
        match tokio::time::timeout_at(
            tokio::time::Instant::from_std(started + limit),
            s.read(&mut chunk),
        )
        .await
        {
            Err(_) => panic!("still open after {limit:?}"),
            Ok(Ok(0)) | Ok(Err(_)) => return started.elapsed(),
            Ok(Ok(_)) => {}
        }
    }
}

#[tokio::test]
async fn headers_sent_a_byte_at_a_time_are_cut_off_while_others_are_served() {
    let addr = start(HttpOptions::default().header_read_timeout(Duration::from_millis(400))).await;
    let mut slow = TcpStream::connect(addr).await.expect("connect");
    let started = Instant::now();
    let (begun, trickling) = tokio::sync::oneshot::channel();
    let trickle = tokio::spawn(async move {
        let mut begun = Some(begun);
        for b in post_text(addr, INITIALIZE, false).bytes() {
            if slow.write_all(&[b]).await.is_err() {
                break;
            }
            if let Some(begun) = begun.take() {
                let _ = begun.send(());
            }
            // The slow client is the behaviour under test: a byte every 50 ms on a real
            // socket, against the server's real header timer (bounded at 3 s below).
            tokio::time::sleep(Duration::from_millis(50)).await;
            if started.elapsed() > Duration::from_secs(3) {
                break;
            }
        }
        slow
    });
    // Meanwhile, once the trickle has begun, a normal call on its own connection is served.
    trickling.await.expect("the trickle began");
    assert_eq!(initialize_on_new_connection(addr).await, "HTTP/1.1 200 OK");
    let mut slow = trickle.await.expect("joined");
    let took = started.elapsed() + closed_within(&mut slow, Duration::from_millis(500)).await;
    assert!(
        took < Duration::from_millis(1500),
        "a trickling client was cut off only after {took:?}"
    );
}

#[tokio::test]
async fn an_idle_connection_is_closed_but_a_long_call_is_not() {
    let options = HttpOptions::default().idle_timeout(Duration::from_millis(300));
    let gate = Arc::new(Notify::new());
    let addr = start_gated(options, gate.clone()).await;
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(post_text(addr, INITIALIZE, false).as_bytes())
        .await
        .expect("write");
    let (head, _) = read_response(&mut s).await;
    assert_eq!(status(&head), "HTTP/1.1 200 OK");
    let session = head
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id: "))
        .expect("a session")
        .to_owned();
    // A call with nothing on the wire for longer than the idle timeout completes.
    let call =
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}"#;
    let extra = format!("Mcp-Session-Id: {session}\r\n");
    s.write_all(post_in(addr, call, false, &extra).as_bytes())
        .await
        .expect("write");
    // Twice the idle timeout with the call running: neither answered nor closed.
    let mut byte = [0u8; 1];
    let quiet = tokio::time::timeout(Duration::from_millis(600), s.peek(&mut byte)).await;
    assert!(quiet.is_err(), "answered or closed mid-call: {quiet:?}");
    gate.notify_one();
    let (head, body) = read_response(&mut s).await;
    assert_eq!(status(&head), "HTTP/1.1 200 OK");
    assert!(body.contains("late"), "{body}");
    // Kept alive, then idle: closed by the idle timeout (the header timeout is 10 s).
    let took = closed_within(&mut s, Duration::from_secs(2)).await;
    assert!(
        took >= Duration::from_millis(250),
        "closed too soon: {took:?}"
    );
}

#[tokio::test]
async fn connections_past_the_cap_wait_until_one_closes() {
    let addr = start(HttpOptions::default().max_connections(2)).await;
    let first = TcpStream::connect(addr).await.expect("connect");
    let _second = TcpStream::connect(addr).await.expect("connect");
    // Both are in the kernel's accept queue, which is first in, first out: the third is
    // accepted after them, whenever the server gets to it.
    let mut third = tokio::spawn(initialize_on_new_connection(addr));
    let early = tokio::time::timeout(Duration::from_millis(300), &mut third).await;
    assert!(early.is_err(), "served past the cap: {early:?}");
    drop(first);
    let status = tokio::time::timeout(Duration::from_secs(2), third)
        .await
        .expect("served once a connection closed")
        .expect("joined");
    assert_eq!(status, "HTTP/1.1 200 OK");
}

/// Set in the child process the `prlimit` tests start.
const CHILD: &str = "MCP_HTTP_BOUNDS_CHILD";

/// In the child (under `prlimit`): serves on a port it prints until its stdin closes (the
/// parent kills it sooner, or ends and so closes the pipe).
#[tokio::test]
#[ignore = "run by the prlimit tests, in a child process"]
async fn serve_with_few_file_descriptors() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    mcp_examples::init_logging();
    let addr = start(HttpOptions::default()).await;
    println!("PORT {}", addr.port());
    let mut rest = Vec::new();
    let _ = tokio::io::stdin().read_to_end(&mut rest).await;
    println!("STILL SERVING");
}

/// This test binary run again as a server with at most `nofile` file descriptors; the
/// child, its address and its standard error.
fn serve_in_child(nofile: u32) -> (std::process::Child, SocketAddr, OutputLog) {
    let exe = std::env::current_exe().expect("the test binary");
    let mut child = Command::new("prlimit")
        .arg(format!("--nofile={nofile}:{nofile}"))
        .arg(exe)
        .args([
            "--exact",
            "serve_with_few_file_descriptors",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("prlimit runs");
    let log = OutputLog::read(child.stderr.take().expect("stderr"));
    let mut out = StdBufReader::new(child.stdout.take().expect("stdout"));
    let port = loop {
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).expect("read") > 0,
            "the child ended"
        );
        if let Some(p) = line.trim().strip_prefix("PORT ") {
            break p.parse::<u16>().expect("a port");
        }
    };
    (child, SocketAddr::from(([127, 0, 0, 1], port)), log)
}

#[tokio::test]
async fn accept_errors_do_not_end_the_server() {
    let (mut child, addr, mut log) = serve_in_child(40);
    // More idle connections than the child has descriptors: it runs out while accepting.
    let mut idle = Vec::new();
    for _ in 0..60 {
        idle.push(TcpStream::connect(addr).await.expect("connect (backlog)"));
    }
    let ran_out = log
        .says("Too many open files", Duration::from_secs(5))
        .await;
    assert!(
        ran_out,
        "the child never ran out of descriptors: {}",
        log.text()
    );
    assert!(
        child.try_wait().expect("wait").is_none(),
        "the server exited"
    );
    drop(idle);
    // Once they close, a fresh connection is served.
    let status = tokio::time::timeout(Duration::from_secs(3), initialize_on_new_connection(addr))
        .await
        .expect("served after the idle connections closed");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(
        child.try_wait().expect("wait").is_none(),
        "the server exited"
    );
    child.kill().expect("kill the child");
    let _ = child.wait();
    let log = log.all();
    assert!(
        log.contains("Too many open files"),
        "the child never ran out of descriptors: {log}"
    );
}

/// How one client's call ended.
#[derive(Debug, PartialEq)]
enum Ending {
    /// An HTTP answer: its status line and body.
    Answered(String, String),
    /// The connection closed before a whole answer came.
    Closed,
    /// The connection was reset.
    Reset,
    /// The kernel refused the connection.
    Refused,
}

/// A 2026-07-28 `tools/call` of `echo` with the text `c<i>`, on a keep-alive connection.
fn modern_call(addr: SocketAddr, i: usize) -> String {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"c{i}"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    );
    let headers =
        "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n";
    post_in(addr, &body, false, headers)
}

/// One client: connects, sends call `i` and reads how it ended. The connection is
/// given back, still open, for the caller to hold.
async fn call_once(addr: SocketAddr, i: usize) -> (Ending, Option<TcpStream>) {
    let mut s = match TcpStream::connect(addr).await {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            return (Ending::Refused, None)
        }
        Err(e) => panic!("connect {i}: {e}"),
    };
    let broken = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::ConnectionReset => Ending::Reset,
        _ => Ending::Closed,
    };
    if let Err(e) = s.write_all(modern_call(addr, i).as_bytes()).await {
        return (broken(e), None);
    }
    match try_read_response(&mut s).await {
        Ok(Ok((head, body))) => (Ending::Answered(status(&head), body), Some(s)),
        Ok(Err(_)) => (Ending::Closed, None),
        Err(e) => (broken(e), None),
    }
}

/// Starts `count` clients at once, each calling once and keeping its connection open;
/// how each ended, and the connections, kept open until the caller drops them.
async fn burst(addr: SocketAddr, count: usize) -> (Vec<Ending>, Vec<TcpStream>) {
    let clients: Vec<_> = (0..count)
        .map(|i| tokio::spawn(call_once(addr, i)))
        .collect();
    let (mut endings, mut open) = (Vec::new(), Vec::new());
    for c in clients {
        let (ending, s) = c.await.expect("joined");
        endings.push(ending);
        open.extend(s);
    }
    (endings, open)
}

/// The calls not answered with their own echo, by index.
fn not_answered_right(endings: &[Ending]) -> Vec<(usize, &Ending)> {
    endings
        .iter()
        .enumerate()
        .filter(|(i, e)| {
            !matches!(e, Ending::Answered(status, body)
                if status == "HTTP/1.1 200 OK" && body.contains(&format!(r#""text":"c{i}""#)))
        })
        .collect()
}

#[tokio::test]
async fn a_burst_past_the_cap_is_served_while_clients_keep_their_connections() {
    let addr = start(HttpOptions::default().max_connections(16)).await;
    // Well within the header timeout (10 s): a slot freed by an idle connection timing
    // out does not count.
    let (endings, open) = tokio::time::timeout(Duration::from_secs(8), burst(addr, 200))
        .await
        .expect("every client answered within 8 s");
    assert_eq!(not_answered_right(&endings), Vec::new());
    assert_eq!(open.len(), 200);
}

#[tokio::test]
async fn a_connection_whose_request_never_came_is_told_408_an_idle_one_is_not() {
    let addr = start(HttpOptions::default().header_read_timeout(Duration::from_millis(300))).await;
    let mut silent = TcpStream::connect(addr).await.expect("connect");
    let mut served = TcpStream::connect(addr).await.expect("connect");
    served
        .write_all(post_text(addr, INITIALIZE, false).as_bytes())
        .await
        .expect("write");
    assert_eq!(
        status(&read_response(&mut served).await.0),
        "HTTP/1.1 200 OK"
    );
    let (head, body) = tokio::time::timeout(Duration::from_secs(2), read_response(&mut silent))
        .await
        .expect("told within 2 s");
    assert_eq!(status(&head), "HTTP/1.1 408 Request Timeout");
    assert!(
        head.to_ascii_lowercase().contains("connection: close"),
        "{head}"
    );
    assert!(body.contains("-32600"), "{body}");
    closed_within(&mut silent, Duration::from_secs(1)).await;
    // Idle after its answer: closed, with nothing more written.
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(2), served.read_to_end(&mut rest))
        .await
        .expect("closed within 2 s");
    assert!(read.is_ok() && rest.is_empty(), "{read:?} {rest:?}");
}

#[tokio::test]
async fn out_of_descriptors_every_client_of_a_burst_is_answered() {
    let (mut child, addr, log) = serve_in_child(64);
    let (endings, open) = tokio::time::timeout(Duration::from_secs(15), burst(addr, 200))
        .await
        .expect("every client's call ended within 15 s");
    let refused = endings
        .iter()
        .filter(|e| matches!(e, Ending::Refused))
        .count();
    let silent: Vec<_> = endings
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, Ending::Closed | Ending::Reset))
        .collect();
    assert!(
        child.try_wait().expect("wait").is_none(),
        "the server exited"
    );
    drop(open);
    child.kill().expect("kill the child");
    let _ = child.wait();
    let log = log.all();
    // Linux drops a handshake its full backlog cannot take (the client sends it again)
    // rather than refusing it: a refusal would be the kernel's, never a closed request.
    assert_eq!((silent, refused), (Vec::new(), 0), "{log}");
    assert_eq!(not_answered_right(&endings), Vec::new(), "{log}");
    assert!(
        log.contains("Too many open files"),
        "the child never ran out of descriptors: {log}"
    );
}

#[tokio::test]
async fn a_thousand_clients_at_once_past_the_default_cap_are_all_answered() {
    // The issue's numbers: 1,000 clients against the default cap of 512 connections, each
    // keeping its connection after its answer.
    let addr = start(HttpOptions::default()).await;
    let (endings, open) = tokio::time::timeout(Duration::from_secs(30), burst(addr, 1000))
        .await
        .expect("every client answered within 30 s");
    assert_eq!(not_answered_right(&endings), Vec::new());
    assert_eq!(open.len(), 1000);
}

#[tokio::test]
async fn five_thousand_clients_at_once_past_the_descriptor_limit_are_none_closed_silently() {
    // Fewer descriptors than clients, and than the connection cap (512): it runs out.
    let (mut child, addr, log) = serve_in_child(300);
    let (endings, open) = tokio::time::timeout(Duration::from_secs(60), burst(addr, 5000))
        .await
        .expect("every client's call ended within 60 s");
    let silent: Vec<_> = endings
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, Ending::Closed | Ending::Reset | Ending::Refused))
        .collect();
    assert!(
        child.try_wait().expect("wait").is_none(),
        "the server exited"
    );
    drop(open);
    child.kill().expect("kill the child");
    let _ = child.wait();
    let log = log.all();
    let tail = &log[log.len().saturating_sub(2000)..];
    assert_eq!(silent, Vec::new(), "{tail}");
    // Each client has an HTTP answer: its call's, or a status saying why not.
    let unanswered: Vec<_> = endings
        .iter()
        .filter(|e| !matches!(e, Ending::Answered(status, _) if status.starts_with("HTTP/1.1 ")))
        .collect();
    assert_eq!(unanswered, Vec::<&Ending>::new());
    assert!(
        log.contains("Too many open files"),
        "the child never ran out of descriptors: {tail}"
    );
}
