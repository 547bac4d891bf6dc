//! An embedder's `SessionManager`, given through `HttpOptions::session_manager`, keeps the
//! legacy sessions of an endpoint served on 127.0.0.1: each `initialize` is admitted by
//! it, each use of a session is told to it, an unknown id is looked up in it, a `DELETE`
//! closes the record, its sweeper asks it to expire, and its refusal is the client's
//! answer. Session ids are sealed: one the deployment did not issue never reaches it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_server::http::{
    serve, Admitted, HttpOptions, SessionActivity, SessionManager, SessionRecord, SessionRefused,
    SessionStoreError, SessionTable, StreamableHttp,
};
use mcp_server::seal::{Purpose, ReplicaId, SealKey, Sealer};
use mcp_server::Server;
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};

mod raw_http;
use raw_http::{initialize, Answer};

/// The in-memory table, counting what it is asked, and refusing every session while
/// `down` is set, as a store out of reach would.
struct Counting {
    table: SessionTable,
    down: AtomicBool,
    creates: AtomicUsize,
    finds: AtomicUsize,
    touches: AtomicUsize,
    expires: AtomicUsize,
    closes: AtomicUsize,
}

#[async_trait]
impl SessionManager for Counting {
    fn idle_timeout(&self) -> Duration {
        self.table.idle_timeout()
    }

    async fn create(
        &self,
        record: SessionRecord,
        activity: Arc<dyn SessionActivity>,
    ) -> Result<Admitted, SessionRefused> {
        self.creates.fetch_add(1, Ordering::SeqCst);
        if self.down.load(Ordering::SeqCst) {
            let e = SessionStoreError::Unavailable("the test's store is down".into());
            return Err(SessionRefused::Store(e));
        }
        self.table.create(record, activity).await
    }

    async fn find(&self, id: &str) -> Result<Option<SessionRecord>, SessionStoreError> {
        self.finds.fetch_add(1, Ordering::SeqCst);
        self.table.find(id).await
    }

    fn touch(&self, id: &str) {
        self.touches.fetch_add(1, Ordering::SeqCst);
        self.table.touch(id);
    }

    async fn expire(&self) -> Result<Vec<String>, SessionStoreError> {
        self.expires.fetch_add(1, Ordering::SeqCst);
        self.table.expire().await
    }

    async fn close(&self, id: &str) -> Result<bool, SessionStoreError> {
        self.closes.fetch_add(1, Ordering::SeqCst);
        self.table.close(id).await
    }

    async fn count(&self) -> Result<usize, SessionStoreError> {
        self.table.count().await
    }

    async fn list(&self, limit: usize) -> Result<Vec<SessionRecord>, SessionStoreError> {
        self.table.list(limit).await
    }
}

impl Counting {
    fn new() -> Arc<Counting> {
        Arc::new(Counting {
            table: SessionTable::new(&HttpOptions::default()),
            down: AtomicBool::new(false),
            creates: AtomicUsize::new(0),
            finds: AtomicUsize::new(0),
            touches: AtomicUsize::new(0),
            expires: AtomicUsize::new(0),
            closes: AtomicUsize::new(0),
        })
    }
}

/// An endpoint on 127.0.0.1 keeping its sessions with `manager`, sealing ids with `sealer`.
async fn endpoint(manager: Arc<Counting>, sealer: Option<Sealer>) -> (SocketAddr, StreamableHttp) {
    let mut options = HttpOptions::default().session_manager(manager);
    if let Some(s) = sealer {
        options = options.sealer(Arc::new(s));
    }
    let http = StreamableHttp::new(Server::new(mcp_examples::echo_tools()), options);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(serve(listener, http.clone()));
    (addr, http)
}

/// One request on a connection of its own.
async fn send(addr: SocketAddr, method: &str, session: Option<&str>, body: &Value) -> Answer {
    let s = TcpStream::connect(addr).await.expect("connect");
    raw_http::exchange(s, addr, method, session, "", body).await
}

#[tokio::test]
async fn an_embedders_session_manager_keeps_the_endpoints_sessions() {
    let manager = Counting::new();
    let (addr, http) = endpoint(manager.clone(), None).await;

    let opened = send(addr, "POST", None, &initialize(1)).await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    let id = opened.session.expect("a session id");
    assert_eq!(manager.creates.load(Ordering::SeqCst), 1);
    assert_eq!(manager.count().await, Ok(1));
    let record = manager
        .find(&id)
        .await
        .expect("in memory")
        .expect("its record");
    assert!(record.client.is_some(), "the client's address");

    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(send(addr, "POST", Some(&id), &note).await.status, 202);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}}});
    let a = send(addr, "POST", Some(&id), &call).await;
    assert_eq!(a.body["result"]["content"][0]["text"], "hi", "{}", a.body);
    assert!(manager.touches.load(Ordering::SeqCst) >= 2);

    assert_eq!(
        send(addr, "DELETE", Some(&id), &Value::Null).await.status,
        200
    );
    assert_eq!(manager.closes.load(Ordering::SeqCst), 1);
    assert_eq!(manager.count().await, Ok(0));
    assert_eq!(http.session_count(), 0);

    // An id this endpoint issued and no longer holds is looked up in the manager (another
    // process may hold it); one it never issued is refused without asking.
    let finds = manager.finds.load(Ordering::SeqCst);
    let ended = send(addr, "POST", Some(&id), &call).await;
    assert_eq!(ended.status, 404, "{}", ended.body);
    assert_eq!(manager.finds.load(Ordering::SeqCst), finds + 1);
    let forged = send(addr, "POST", Some("0123456789abcdef"), &call).await;
    assert_eq!(forged.status, 404, "{}", forged.body);
    assert_eq!(manager.finds.load(Ordering::SeqCst), finds + 1);

    // Its refusal is the client's answer: a store out of reach is `503`.
    manager.down.store(true, Ordering::SeqCst);
    let refused = send(addr, "POST", None, &initialize(3)).await;
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert_eq!(refused.body["id"], 3, "{}", refused.body);
    assert_eq!(refused.body["error"]["code"], -32000, "{}", refused.body);
    assert!(refused.session.is_none());
    assert_eq!(http.session_count(), 0);

    // The sweeper's first round comes as the first session is admitted.
    let swept = async {
        while manager.expires.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), swept)
        .await
        .expect("the sweeper asks the manager to expire sessions");
}

fn key(name: &str, fill: u8) -> SealKey {
    SealKey::new(name, &[fill; 32]).expect("a key")
}

#[tokio::test]
async fn a_session_id_the_deployment_did_not_issue_is_404_and_never_looked_up() {
    // This endpoint seals with `new` and still opens `old`'s ids (a rotation).
    let sealer = Sealer::new(vec![key("new", 1), key("old", 2)], ReplicaId(1)).expect("sealer");
    let manager = Counting::new();
    let (addr, _http) = endpoint(manager.clone(), Some(sealer)).await;
    let opened = send(addr, "POST", None, &initialize(1)).await;
    let id = opened.session.expect("a session id");
    assert!(id.len() <= 96, "{id}");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(send(addr, "POST", Some(&id), &note).await.status, 202);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}}});

    let mut tampered = id.clone().into_bytes();
    tampered[40] = if tampered[40] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).expect("ascii");
    let session_payload = [0u8; 24];
    let retired = Sealer::new(vec![key("retired", 3)], ReplicaId(1)).expect("sealer");
    let foreign = Sealer::random().expect("random");
    let bad = [
        ("tampered", tampered),
        ("truncated", id[..60].to_string()),
        ("not base64", "not an id at all!".to_string()),
        ("over 256 bytes", "A".repeat(300)),
        (
            "another deployment's key",
            foreign
                .seal(Purpose::Session, 0, &session_payload)
                .expect("sealed"),
        ),
        (
            "a retired key",
            retired
                .seal(Purpose::Session, 0, &session_payload)
                .expect("sealed"),
        ),
        (
            "a task id's key",
            Sealer::new(vec![key("new", 1)], ReplicaId(1))
                .expect("sealer")
                .seal(Purpose::Task, 0, &session_payload)
                .expect("sealed"),
        ),
    ];
    for (what, bad_id) in &bad {
        let answer = send(addr, "POST", Some(bad_id), &call).await;
        assert_eq!(answer.status, 404, "{what}: {}", answer.body);
    }
    assert_eq!(
        manager.finds.load(Ordering::SeqCst),
        0,
        "no bad id reached the manager"
    );

    // A listed older key's id is the deployment's: the manager is asked where it lives.
    let old = Sealer::new(vec![key("old", 2)], ReplicaId(2)).expect("sealer");
    let elsewhere = old
        .seal(Purpose::Session, 0, &session_payload)
        .expect("sealed");
    assert_eq!(
        send(addr, "POST", Some(&elsewhere), &call).await.status,
        404
    );
    assert_eq!(manager.finds.load(Ordering::SeqCst), 1);

    // And the session itself was never disturbed.
    let a = send(addr, "POST", Some(&id), &call).await;
    assert_eq!(a.body["result"]["content"][0]["text"], "hi", "{}", a.body);
}
