//! The legacy session table makes room before it refuses: a full table of idle sessions
//! ends the one idle longest for a new host (its handler's host session ends, its id
//! gets `404`), a full table of sessions in use refuses with `503`, and one client (an
//! address, or a principal with authorization) holds at most its quota (`429` past it,
//! while another client still gets in; its own idle session goes first). The counts
//! reach `ServerStats::sessions`. Real sockets on 127.0.0.1 (and 127.0.0.2 for a second
//! address).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_server::auth::{ApiKey, ApiKeys, Authorization, Principal, ProtectedResource};
use mcp_server::http::{bind, HttpOptions};
use mcp_server::{HostSession, NoArgs, Outcome, Server, SessionCounts, ToolRegistry};
use mcp_types::protocol::{CallToolResult, ContentBlock};
use serde_json::{json, Value};
use tokio::net::TcpSocket;
use tokio::sync::{mpsc, Semaphore};

mod raw_http;
use raw_http::{initialize, Answer};

const A: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));
const B: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

/// What the tools let a test see and hold: each call's host session as it begins, and
/// `wait` calls held until the gate opens.
struct Probe {
    hosts: Arc<Mutex<Vec<HostSession>>>,
    entered: mpsc::UnboundedReceiver<()>,
    gate: Arc<Semaphore>,
}

fn tools() -> (ToolRegistry, Probe) {
    let hosts = Arc::new(Mutex::new(Vec::new()));
    let (tx, entered) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(0));
    let mut tools = ToolRegistry::new();
    let seen = hosts.clone();
    tools.tool(
        "note_host",
        "Notes its host session.",
        move |_: NoArgs, ctx| {
            if let (Ok(mut s), Some(h)) = (seen.lock(), ctx.host_session()) {
                s.push(h.clone());
            }
            async move { Ok(Outcome::Complete(text("noted"))) }
        },
    );
    let held = gate.clone();
    tools.tool("wait", "Waits for the gate.", move |_: NoArgs, _ctx| {
        let (gate, entered) = (held.clone(), tx.clone());
        async move {
            let _ = entered.send(());
            if let Ok(p) = gate.acquire().await {
                p.forget();
            }
            Ok(Outcome::Complete(text("through")))
        }
    });
    (
        tools,
        Probe {
            hosts,
            entered,
            gate,
        },
    )
}

fn text(t: &str) -> CallToolResult {
    CallToolResult {
        content: vec![ContentBlock::text(t)],
        ..Default::default()
    }
}

async fn start(options: HttpOptions) -> (SocketAddr, Server, Probe) {
    let (tools, probe) = tools();
    let server = Server::new(tools);
    let (addr, _task) = bind(
        "127.0.0.1:0".parse().expect("addr"),
        server.clone(),
        options,
    )
    .await
    .expect("bind");
    (addr, server, probe)
}

/// One POST from the address `from`, on a connection of its own.
async fn post(
    from: IpAddr,
    addr: SocketAddr,
    session: Option<&str>,
    key: Option<&str>,
    body: Value,
) -> Answer {
    let socket = TcpSocket::new_v4().expect("socket");
    socket
        .bind(SocketAddr::new(from, 0))
        .expect("bind the client");
    let s = socket.connect(addr).await.expect("connect");
    let auth = key.map_or_else(String::new, |k| format!("Authorization: Bearer {k}\r\n"));
    raw_http::exchange(s, addr, "POST", session, &auth, &body).await
}

fn call(id: i64, name: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": {}}})
}

/// Opens a session from `from` (with API key `key`); its id.
async fn open(from: IpAddr, addr: SocketAddr, key: Option<&str>) -> String {
    let a = post(from, addr, None, key, initialize(0)).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let id = a.session.expect("a session id");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(from, addr, Some(&id), key, note).await.status, 202);
    id
}

/// A `wait` call in `session`, running until the gate opens: the session is in use.
async fn hold(
    probe: &mut Probe,
    from: IpAddr,
    addr: SocketAddr,
    session: &str,
    key: Option<&str>,
) -> tokio::task::JoinHandle<Answer> {
    let (id, key) = (session.to_owned(), key.map(str::to_owned));
    let running =
        tokio::spawn(
            async move { post(from, addr, Some(&id), key.as_deref(), call(1, "wait")).await },
        );
    tokio::time::timeout(Duration::from_secs(5), probe.entered.recv())
        .await
        .expect("the call began")
        .expect("the tool is there");
    running
}

fn counts(server: &Server) -> SessionCounts {
    server.stats().sessions()
}

#[tokio::test]
async fn a_full_table_of_idle_sessions_makes_room_for_a_new_host() {
    let (addr, server, probe) = start(HttpOptions::default().max_sessions(8)).await;
    let mut ids = Vec::new();
    for i in 0..8 {
        let id = open(A, addr, None).await;
        let a = post(A, addr, Some(&id), None, call(i, "note_host")).await;
        assert_eq!(a.status, 200, "{}", a.body);
        ids.push(id);
    }
    let first_host = probe.hosts.lock().expect("lock")[0].clone();
    // Abandoned, all of them: a new host still gets in.
    let newcomer = open(A, addr, None).await;
    tokio::time::timeout(Duration::from_secs(2), first_host.ended())
        .await
        .expect("the session idle longest ends, as expiry would end it");
    let a = post(A, addr, Some(&ids[0]), None, call(20, "note_host")).await;
    assert_eq!(a.status, 404, "{}", a.body);
    for id in [&ids[1], &newcomer] {
        let a = post(A, addr, Some(id), None, call(21, "note_host")).await;
        assert_eq!(a.status, 200, "{}", a.body);
    }
    let c = counts(&server);
    assert_eq!(
        (c.evicted_table_full, c.refused_table_full),
        (1, 0),
        "{c:?}"
    );
}

#[tokio::test]
async fn a_full_table_of_sessions_in_use_refuses_with_503() {
    let (addr, server, mut probe) = start(HttpOptions::default().max_sessions(2)).await;
    let mut running = Vec::new();
    for _ in 0..2 {
        let id = open(A, addr, None).await;
        running.push(hold(&mut probe, A, addr, &id, None).await);
    }
    let a = post(A, addr, None, None, initialize(7)).await;
    assert_eq!(a.status, 503, "{}", a.body);
    assert!(a.session.is_none());
    assert_eq!(
        (a.body["id"].clone(), a.body["error"]["code"].clone()),
        (json!(7), json!(-32000)),
        "{}",
        a.body
    );
    assert!(
        a.body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("all 2 sessions are in use")),
        "{}",
        a.body
    );
    // The calls in those sessions were not disturbed; once they end, there is room.
    probe.gate.add_permits(2);
    for r in running {
        let a = r.await.expect("joined");
        assert_eq!(
            a.body["result"]["content"][0]["text"], "through",
            "{}",
            a.body
        );
    }
    open(A, addr, None).await;
    let c = counts(&server);
    assert_eq!(
        (c.refused_table_full, c.evicted_table_full),
        (1, 1),
        "{c:?}"
    );
}

#[tokio::test]
async fn an_address_holds_at_most_its_quota_and_makes_room_among_its_own() {
    let options = HttpOptions::default()
        .max_sessions(8)
        .max_sessions_per_client(2);
    let (addr, server, mut probe) = start(options).await;
    // B's session is the one idle longest of all.
    let b_first = open(B, addr, None).await;
    let a_sessions = [open(A, addr, None).await, open(A, addr, None).await];
    let mut running = Vec::new();
    for id in &a_sessions {
        running.push(hold(&mut probe, A, addr, id, None).await);
    }
    let a = post(A, addr, None, None, initialize(9)).await;
    assert_eq!(a.status, 429, "{}", a.body);
    assert_eq!(a.body["id"], 9, "{}", a.body);
    assert!(
        a.body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("client address holds 2")),
        "{}",
        a.body
    );
    // Another address still gets in.
    open(B, addr, None).await;
    // One at a time (the gate is first come, first served): the first is idle longest.
    for r in running {
        probe.gate.add_permits(1);
        assert_eq!(r.await.expect("joined").status, 200);
    }
    // With its sessions idle, A's third ends A's own oldest, not B's older one.
    open(A, addr, None).await;
    let gone = post(A, addr, Some(&a_sessions[0]), None, call(3, "note_host")).await;
    assert_eq!(gone.status, 404, "{}", gone.body);
    for (from, id) in [(A, &a_sessions[1]), (B, &b_first)] {
        assert_eq!(
            post(from, addr, Some(id), None, call(4, "note_host"))
                .await
                .status,
            200
        );
    }
    let c = counts(&server);
    assert_eq!(
        (
            c.refused_client_quota,
            c.evicted_client_quota,
            c.evicted_table_full
        ),
        (1, 1, 0),
        "{c:?}"
    );
}

#[tokio::test]
async fn a_principal_holds_at_most_its_quota_whatever_its_address() {
    let keys = ApiKeys::new()
        .with(ApiKey::new(
            "a",
            "key-alice-0123456789",
            Principal::new("alice"),
        ))
        .with(ApiKey::new(
            "b",
            "key-bob-0123456789",
            Principal::new("bob"),
        ));
    let resource = ProtectedResource::new("https://mcp.example.com/mcp").expect("resource");
    let options = HttpOptions::default()
        .max_sessions_per_client(2)
        .authorization(Authorization::new(keys, resource));
    let (addr, server, mut probe) = start(options).await;
    let alice = Some("key-alice-0123456789");
    let mut running = Vec::new();
    // From two addresses: the quota is the principal's.
    for from in [A, B] {
        let id = open(from, addr, alice).await;
        running.push(hold(&mut probe, from, addr, &id, alice).await);
    }
    let a = post(B, addr, None, alice, initialize(5)).await;
    assert_eq!(a.status, 429, "{}", a.body);
    assert!(
        a.body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("principal holds 2")),
        "{}",
        a.body
    );
    // Bob, from the same addresses, gets in.
    for from in [A, B] {
        open(from, addr, Some("key-bob-0123456789")).await;
    }
    probe.gate.add_permits(2);
    for r in running {
        assert_eq!(r.await.expect("joined").status, 200);
    }
    assert_eq!(counts(&server).refused_client_quota, 1);
}
