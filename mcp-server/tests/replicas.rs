//! Three replicas of one endpoint on 127.0.0.1, sharing sealing keys and knowing each
//! other's addresses (`HttpOptions::sealer`, `HttpOptions::peers`): a legacy session
//! opened on one is used through the others — its requests forwarded to the replica that
//! holds it, answers streamed back — and ended through a third; a forged hop is refused;
//! a session whose replica is gone is `404` (the client initialises again), as it would be
//! on one endpoint. What one replica tells the others reaches them whatever their client
//! checks (credentials required, Host allow-list), and a forged notice does not.

use std::net::SocketAddr;
use std::sync::Arc;

use mcp_server::http::{serve, HttpOptions, PeerNotices, ReplicaLink, StaticPeers, StreamableHttp};
use mcp_server::seal::{Purpose, ReplicaId, SealKey, Sealer};
use mcp_server::Server;
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

mod raw_http;
use raw_http::{initialize, Answer};

struct Replica {
    addr: SocketAddr,
    http: StreamableHttp,
    task: JoinHandle<std::io::Result<()>>,
}

/// Three replicas, numbered 1 to 3, each knowing the others.
async fn replicas() -> Vec<Replica> {
    let mut listeners = Vec::new();
    let mut peers = StaticPeers::new();
    for n in 1..=3u16 {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = l.local_addr().expect("addr");
        peers = peers.with(ReplicaId(n), format!("http://{addr}").parse().expect("uri"));
        listeners.push((n, l, addr));
    }
    let peers = Arc::new(peers);
    let mut out = Vec::new();
    for (n, listener, addr) in listeners {
        let key = SealKey::new("shared", &[3; 32]).expect("key");
        let sealer = Sealer::new(vec![key], ReplicaId(n)).expect("sealer");
        let options = HttpOptions::default()
            .sealer(Arc::new(sealer))
            .peers(peers.clone());
        let http = StreamableHttp::new(Server::new(mcp_examples::echo_tools()), options);
        let task = tokio::spawn(serve(listener, http.clone()));
        out.push(Replica { addr, http, task });
    }
    out
}

async fn send(
    to: &Replica,
    method: &str,
    session: Option<&str>,
    extra: &str,
    body: &Value,
) -> Answer {
    let s = TcpStream::connect(to.addr).await.expect("connect");
    raw_http::exchange(s, to.addr, method, session, extra, body).await
}

fn call(id: i64, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text}}})
}

#[tokio::test]
async fn a_session_is_served_through_every_replica_by_the_one_that_holds_it() {
    let r = replicas().await;
    let opened = send(&r[0], "POST", None, "", &initialize(1)).await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    let id = opened.session.expect("a session id");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(send(&r[1], "POST", Some(&id), "", &note).await.status, 202);
    for (n, replica) in r.iter().enumerate() {
        let answer = send(replica, "POST", Some(&id), "", &call(10 + n as i64, "hi")).await;
        assert_eq!(answer.status, 200, "replica {}: {}", n + 1, answer.body);
        assert_eq!(answer.body["id"], 10 + n as i64, "{}", answer.body);
        assert_eq!(
            answer.body["result"]["content"][0]["text"], "hi",
            "{}",
            answer.body
        );
    }
    let held: Vec<usize> = r.iter().map(|x| x.http.session_count()).collect();
    assert_eq!(held, [1, 0, 0], "the session lives on replica 1 only");

    // Ended through replica 3: gone on replica 1, for everyone.
    assert_eq!(
        send(&r[2], "DELETE", Some(&id), "", &Value::Null)
            .await
            .status,
        200
    );
    assert_eq!(r[0].http.session_count(), 0);
    assert_eq!(
        send(&r[1], "POST", Some(&id), "", &call(20, "x"))
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn a_hop_not_signed_by_the_deployment_is_refused() {
    let r = replicas().await;
    let opened = send(&r[0], "POST", None, "", &initialize(1)).await;
    let id = opened.session.expect("a session id");
    let forged =
        "mcp-gateway-hop: v1 from=2 to=1 ts=1 mac=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\r\n";
    let refused = send(&r[0], "POST", Some(&id), forged, &call(2, "hi")).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let malformed = "mcp-gateway-hop: anything\r\n";
    assert_eq!(
        send(&r[1], "POST", Some(&id), malformed, &call(3, "hi"))
            .await
            .status,
        403
    );
    // The session itself is untouched.
    let answer = send(&r[2], "POST", Some(&id), "", &call(4, "still")).await;
    assert_eq!(
        answer.body["result"]["content"][0]["text"], "still",
        "{}",
        answer.body
    );
}

#[tokio::test]
async fn a_session_whose_replica_is_gone_or_unknown_is_not_found() {
    let r = replicas().await;
    let opened = send(&r[0], "POST", None, "", &initialize(1)).await;
    let id = opened.session.expect("a session id");
    r[0].task.abort();
    // Its listener closes with the accept loop: connecting to it is refused from then on.
    let gone = async {
        while TcpStream::connect(r[0].addr).await.is_ok() {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(5), gone)
        .await
        .expect("replica 1 stops listening");
    let answer = send(&r[1], "POST", Some(&id), "", &call(2, "hi")).await;
    assert_eq!(answer.status, 404, "{}", answer.body);
    // An id of a replica nobody knows of: served here, where it is not.
    let key = SealKey::new("shared", &[3; 32]).expect("key");
    let stranger = Sealer::new(vec![key], ReplicaId(9)).expect("sealer");
    let elsewhere = stranger
        .seal(Purpose::Session, 0, &[0; 24])
        .expect("sealed");
    assert_eq!(
        send(&r[2], "POST", Some(&elsewhere), "", &call(3, "hi"))
            .await
            .status,
        404
    );
}

/// What a replica was told.
#[derive(Default)]
struct Heard {
    notices: std::sync::Mutex<Vec<(ReplicaId, String)>>,
    told: tokio::sync::Notify,
}

impl PeerNotices for Heard {
    fn received(&self, from: ReplicaId, notice: &serde_json::value::RawValue) {
        if let Ok(mut n) = self.notices.lock() {
            n.push((from, notice.get().to_owned()));
        }
        self.told.notify_one();
    }
}

#[tokio::test]
async fn a_replicas_notice_reaches_the_others_past_their_client_checks_and_a_forged_one_does_not() {
    use mcp_server::auth::{ApiKey, ApiKeys, Authorization, Principal, ProtectedResource};
    let l1 = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let l2 = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let (a1, a2) = (
        l1.local_addr().expect("addr"),
        l2.local_addr().expect("addr"),
    );
    let peers = Arc::new(
        StaticPeers::new()
            .with(ReplicaId(1), format!("http://{a1}").parse().expect("uri"))
            .with(ReplicaId(2), format!("http://{a2}").parse().expect("uri")),
    );
    let sealer = |n| {
        let key = SealKey::new("shared", &[3; 32]).expect("key");
        Arc::new(Sealer::new(vec![key], ReplicaId(n)).expect("sealer"))
    };
    let heard = Arc::new(Heard::default());
    // Replica 2 takes clients only with a key, and only under its public name.
    let keys = ApiKeys::new().with(ApiKey::new(
        "k",
        "a-client-key-0123456789",
        Principal::new("c"),
    ));
    let resource = ProtectedResource::new("http://gw.example/mcp").expect("resource");
    let options = HttpOptions::default()
        .sealer(sealer(2))
        .peers(peers.clone())
        .peer_notices(heard.clone())
        .allowed_hosts(vec!["gw.example".into()])
        .authorization(Authorization::new(keys, resource));
    let two = StreamableHttp::new(Server::new(mcp_examples::echo_tools()), options);
    tokio::spawn(serve(l2, two));
    drop(l1);

    let link = ReplicaLink::new(peers.clone(), sealer(1), "/mcp");
    link.tell(json!({"listsChanged": {"upstream": "docs", "tools": true}}));
    tokio::time::timeout(std::time::Duration::from_secs(5), heard.told.notified())
        .await
        .expect("replica 2 is told");
    let got = heard.notices.lock().expect("lock").clone();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, ReplicaId(1));
    assert!(got[0].1.contains("docs"), "{}", got[0].1);

    // A notice with a made-up hop is refused, and not heard.
    let notice = json!({"jsonrpc": "2.0", "method": mcp_server::http::PEER_NOTICE, "params": {"forged": true}});
    let forged =
        "mcp-gateway-hop: v1 from=1 to=2 ts=1 mac=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\r\n";
    let s = TcpStream::connect(a2).await.expect("connect");
    let refused = raw_http::exchange(s, a2, "POST", None, forged, &notice).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(
        heard.notices.lock().expect("lock").len(),
        1,
        "only the deployment's notice"
    );
}
