//! An embedder's `SessionManager`, given through `HttpOptions::session_manager`, keeps the
//! legacy sessions of an endpoint served on 127.0.0.1: each `initialize` is admitted by
//! it, each use of a session is told to it, an unknown id is looked up in it, a `DELETE`
//! closes the record, its sweeper asks it to expire, and its refusal is the client's
//! answer.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_server::http::{
    serve, Admitted, HttpOptions, SessionActivity, SessionManager, SessionRecord, SessionRefused,
    SessionStoreError, SessionTable, StreamableHttp,
};
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

/// One request on a connection of its own.
async fn send(addr: SocketAddr, method: &str, session: Option<&str>, body: &Value) -> Answer {
    let s = TcpStream::connect(addr).await.expect("connect");
    raw_http::exchange(s, addr, method, session, "", body).await
}

#[tokio::test]
async fn an_embedders_session_manager_keeps_the_endpoints_sessions() {
    let table = SessionTable::new(&HttpOptions::default());
    let manager = Arc::new(Counting {
        table,
        down: AtomicBool::new(false),
        creates: AtomicUsize::new(0),
        finds: AtomicUsize::new(0),
        touches: AtomicUsize::new(0),
        expires: AtomicUsize::new(0),
        closes: AtomicUsize::new(0),
    });
    let options = HttpOptions::default().session_manager(manager.clone());
    let http = StreamableHttp::new(Server::new(mcp_examples::echo_tools()), options);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(serve(listener, http.clone()));

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

    let finds = manager.finds.load(Ordering::SeqCst);
    let unknown = send(addr, "POST", Some("0123456789abcdef"), &call).await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    assert_eq!(manager.finds.load(Ordering::SeqCst), finds + 1);

    assert_eq!(
        send(addr, "DELETE", Some(&id), &Value::Null).await.status,
        200
    );
    assert_eq!(manager.closes.load(Ordering::SeqCst), 1);
    assert_eq!(manager.count().await, Ok(0));
    assert_eq!(http.session_count(), 0);

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
