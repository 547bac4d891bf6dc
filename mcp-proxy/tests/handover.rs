//! A legacy session outlives the replica that opened it: two replicas over HTTP share a
//! state store (the registry, and each session's record), and a host reaches them
//! through a front that sends its connections to one replica at a time. The host opens
//! its session on replica 1, sets a log level and subscribes to a resource; replica 1 is
//! killed (its listener, its connections, its heartbeat), and the host's next request,
//! landing on replica 2, is served under the same session id, with no new
//! `initialize`: its log level still reaches the upstream, and an update of the resource
//! still reaches it. Another principal presenting the id takes nothing over; an id the
//! store has no record of gets `404`. And when the store lost a session's record and the
//! registry its holder's entry (`FLUSHALL`) while the holder still serves, a request
//! landing elsewhere still reaches the holder; once the holder is gone too, `404`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::http::HttpConfig;
use mcp_client::{CallOptions, Client, ClientOptions, EraChoice, NoHandler};
use mcp_proxy::placement::GatewayPlacement;
use mcp_proxy::store::{
    MemoryStore, ReplicaEntry, SessionState, StateStore, StoreError, StoreHandover, StorePeers,
};
use mcp_proxy::{Aggregator, AggregatorOptions};
use mcp_server::auth::{ApiKey, ApiKeys, Authorization, Principal, ProtectedResource};
use mcp_server::http::{serve, HttpOptions, Peers, StreamableHttp};
use mcp_server::seal::{ReplicaId, SealKey, Sealer};
use mcp_server::{RequestContext, ServerHandler, Subscriber};
use mcp_types::protocol::*;
use mcp_types::{ErrorObject, Revision};
use serde_json::{json, Map};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

mod common;
use common::{in_process, listing, object_tool, tools_only};

const WATCHED: &str = "test://watched";
const ALICE: &str = "alice-key-0123456789";
const BOB: &str = "bob-key-0123456789";

/// An upstream (2026-07-28) with one resource it sends updates of to whoever subscribed,
/// and tools to send one (`touch`) and to log a line (`log`: a 2026 server logs only for a
/// request that names a level).
#[derive(Clone, Default)]
struct Upstream {
    subscribers: Arc<Mutex<Vec<Subscriber>>>,
}

#[async_trait::async_trait]
impl ServerHandler for Upstream {
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities {
            resources: Some(ResourcesCapability {
                subscribe: Some(true),
                ..Default::default()
            }),
            logging: Some(Map::new()),
            ..tools_only()
        }
    }

    async fn list_tools(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        listing([object_tool("touch"), object_tool("log")])
    }

    async fn call_tool(
        &self,
        ctx: &RequestContext,
        p: CallToolRequestParams,
    ) -> Result<mcp_server::Outcome<CallToolResult>, ErrorObject> {
        if p.name == "log" {
            ctx.log(LoggingLevel::Info, None, json!("logged")).await;
        } else {
            let subscribers = self.subscribers.lock().expect("lock").clone();
            for s in subscribers {
                let _ = s
                    .notify(method::RESOURCES_UPDATED, json!({"uri": WATCHED}))
                    .await;
            }
        }
        Ok(mcp_server::Outcome::Complete(CallToolResult::default()))
    }

    async fn list_resources(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListResourcesResult, ErrorObject> {
        Ok(ListResourcesResult {
            resources: vec![Resource {
                uri: WATCHED.into(),
                name: "watched".into(),
                ..Default::default()
            }],
            ..Default::default()
        })
    }

    async fn subscribe(
        &self,
        ctx: &RequestContext,
        _: ResourceRequestParams,
        subscribe: bool,
    ) -> Result<(), ErrorObject> {
        if let (true, Some(s)) = (subscribe, ctx.subscriber()) {
            self.subscribers.lock().expect("lock").push(s);
        }
        Ok(())
    }
}

/// A replica's view of the registry, which a test can make lose another replica (as a
/// registry emptied by `FLUSHALL` has, until that replica announces itself again).
struct Forgetful {
    registry: Arc<StorePeers>,
    forgotten: Mutex<Option<ReplicaId>>,
}

impl Peers for Forgetful {
    fn address(&self, replica: ReplicaId) -> Option<http::Uri> {
        let forgotten = *self.forgotten.lock().expect("lock") == Some(replica);
        (!forgotten)
            .then(|| self.registry.address(replica))
            .flatten()
    }

    fn replicas(&self) -> Vec<ReplicaId> {
        self.registry.replicas()
    }

    fn last_known(&self, replica: ReplicaId) -> Option<http::Uri> {
        self.registry.last_known(replica)
    }
}

/// One replica: what serves, and what to stop to kill it. Everything reaches it through its
/// door (hosts and the other replica alike), which its death closes.
struct Replica {
    agg: Aggregator,
    addr: std::net::SocketAddr,
    door: Front,
    peers: Arc<Forgetful>,
    serving: JoinHandle<()>,
    beating: JoinHandle<()>,
}

impl Replica {
    /// Killed: no listener, no connection, no heartbeat, its aggregator gone.
    async fn kill(self) {
        self.door.close();
        self.serving.abort();
        self.beating.abort();
        self.agg.shutdown().await;
    }
}

/// Replicas 1 and 2 of one gateway, sharing `store` and a sealing key.
async fn replicas(store: Arc<dyn StateStore>) -> [Replica; 2] {
    let mut bound = Vec::new();
    let mut registries = Vec::new();
    for n in 1..=2u16 {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let door = Front::to(l.local_addr().expect("addr")).await;
        let me = ReplicaEntry::new(ReplicaId(n), format!("http://{}", door.addr), "same config");
        registries.push(StorePeers::new(store.clone(), me, Duration::from_secs(3)));
        bound.push((n, l, door));
    }
    for r in &registries {
        r.beat().await.expect("announced");
    }
    let mut out = Vec::new();
    for ((n, listener, door), registry) in bound.into_iter().zip(registries) {
        registry.beat().await.expect("every replica known");
        let key = SealKey::new("shared", &[9; 32]).expect("key");
        let sealer = Arc::new(Sealer::new(vec![key], ReplicaId(n)).expect("sealer"));
        let upstream = in_process("up", Upstream::default()).revision(Revision::V2026_07_28);
        let options = AggregatorOptions::default().sealer(sealer.clone());
        let agg = Aggregator::start(vec![upstream], options)
            .await
            .expect("starts");
        let handover = StoreHandover::new(
            store.clone(),
            ReplicaId(n),
            Duration::from_secs(60),
            registry.lease(),
        );
        let keys = ApiKeys::new()
            .with(ApiKey::new("alice", ALICE, Principal::new("alice")))
            .with(ApiKey::new("bob", BOB, Principal::new("bob")));
        let resource = ProtectedResource::new("http://127.0.0.1/mcp").expect("resource");
        let peers = Arc::new(Forgetful {
            registry: registry.clone(),
            forgotten: Mutex::new(None),
        });
        let http = HttpOptions::default()
            .sealer(sealer.clone())
            .peers(peers.clone())
            .placement(Arc::new(GatewayPlacement::new(sealer)))
            .session_handover(handover)
            .authorization(Authorization::new(keys, resource));
        let endpoint = StreamableHttp::new(agg.server(Default::default()), http);
        out.push(Replica {
            agg,
            addr: door.addr,
            door,
            peers,
            serving: tokio::spawn(async move {
                let _ = serve(listener, endpoint).await;
            }),
            beating: registry.start(),
        });
    }
    let [one, two]: [Replica; 2] = out.try_into().ok().expect("two");
    [one, two]
}

/// A TCP front: each new connection goes to the backend chosen now; choosing another cuts
/// every connection made so far (as a replica's death would).
struct Front {
    addr: std::net::SocketAddr,
    backend: Arc<Mutex<std::net::SocketAddr>>,
    conns: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
    /// Its accepting: aborted, its listener goes, and connecting is refused.
    accepting: tokio::task::AbortHandle,
}

impl Front {
    /// How many connections it holds now.
    fn connections(&self) -> usize {
        self.conns.lock().expect("lock").len()
    }

    /// Cuts every connection, and refuses every new one from now on.
    fn close(&self) {
        self.accepting.abort();
        for c in self.conns.lock().expect("lock").drain(..) {
            c.abort();
        }
    }
}

impl Front {
    async fn to(backend: std::net::SocketAddr) -> Front {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = l.local_addr().expect("addr");
        let backend = Arc::new(Mutex::new(backend));
        let conns: Arc<Mutex<Vec<tokio::task::AbortHandle>>> = Arc::default();
        let (b, c) = (backend.clone(), conns.clone());
        let accepting = tokio::spawn(async move {
            while let Ok((mut client, _)) = l.accept().await {
                let to = *b.lock().expect("lock");
                let relay = tokio::spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(to).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                c.lock().expect("lock").push(relay.abort_handle());
            }
        });
        Front {
            addr,
            backend,
            conns,
            accepting: accepting.abort_handle(),
        }
    }

    fn switch(&self, backend: std::net::SocketAddr) {
        *self.backend.lock().expect("lock") = backend;
        for c in self.conns.lock().expect("lock").drain(..) {
            c.abort();
        }
    }
}

/// A legacy host (2025-11-25) with API key `key` at `url`, counting new sessions it had
/// to start because the server ended one.
async fn legacy_host(url: &str, key: &str, renewals: Arc<AtomicU64>) -> Client {
    let mut config = HttpConfig::new(url).on_session_renewed(Arc::new(move |_| {
        renewals.fetch_add(1, Ordering::SeqCst);
    }));
    config
        .headers
        .push(("Authorization".into(), format!("Bearer {key}")));
    let options = ClientOptions::default().era(EraChoice::Legacy(Revision::V2025_11_25));
    mcp_client::connect_http(config, NoHandler, options)
        .await
        .expect("connects")
}

/// Waits (five seconds at most) for a notification `what` accepts.
async fn hears(
    notes: &mut tokio::sync::broadcast::Receiver<TypedNotification>,
    what: impl Fn(&TypedNotification) -> bool,
) -> bool {
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match notes.recv().await {
                Ok(n) if what(&n) => return true,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(_) => return false,
            }
        }
    })
    .await
    .unwrap_or(false)
}

fn updated(n: &TypedNotification) -> bool {
    matches!(n, TypedNotification::ResourceUpdated(p) if p.uri == WATCHED)
}

fn logged(n: &TypedNotification) -> bool {
    matches!(n, TypedNotification::Log(p) if p.data == json!("logged"))
}

#[tokio::test]
async fn a_legacy_session_carries_on_at_another_replica_when_its_own_is_killed() {
    let recorded = Arc::new(Recorded::default());
    let store: Arc<dyn StateStore> = recorded.clone();
    let [one, two] = replicas(store).await;
    let front = Front::to(one.addr).await;
    let url = format!("http://{}/mcp", front.addr);
    let renewals = Arc::new(AtomicU64::new(0));
    let host = legacy_host(&url, ALICE, renewals.clone()).await;
    let mut notes = host.notifications();
    let none = CallOptions::default();
    host.request(method::LOGGING_SET_LEVEL, json!({"level": "info"}), &none)
        .await
        .expect("level set");
    host.request(method::RESOURCES_SUBSCRIBE, json!({"uri": WATCHED}), &none)
        .await
        .expect("subscribed");
    host.call_tool("up__touch", Map::new())
        .await
        .expect("touched");
    assert!(hears(&mut notes, updated).await, "the update, on replica 1");
    host.call_tool("up__log", Map::new()).await.expect("logged");
    assert!(
        hears(&mut notes, logged).await,
        "the log line, on replica 1"
    );
    // The record is written off the request path: wait for it.
    let written = mcp_examples::wait_until(Duration::from_secs(5), || async {
        let session = recorded.one_session().await;
        session.is_some_and(|s| !s.subscriptions.is_empty() && s.log_level.is_some())
    })
    .await;
    assert!(
        written,
        "the session's record names its subscription and level"
    );

    one.kill().await;
    front.switch(two.addr);
    // The host's stream for notifications broke with replica 1; it opens it again, now on
    // replica 2, which takes the session over for it.
    let taken = mcp_examples::wait_until(Duration::from_secs(5), || async {
        let session = recorded.one_session().await;
        session.is_some_and(|s| s.owner == ReplicaId(2))
    })
    .await;
    assert!(taken, "replica 2 took the session over");
    host.call_tool("up__log", Map::new())
        .await
        .expect("served on replica 2");
    assert!(hears(&mut notes, logged).await, "the level survived");
    host.call_tool("up__touch", Map::new())
        .await
        .expect("touched on replica 2");
    assert!(
        hears(&mut notes, updated).await,
        "the subscription survived"
    );
    assert_eq!(renewals.load(Ordering::SeqCst), 0, "no new initialize");
    let record = recorded.one_session().await.expect("a record");
    assert_eq!((record.owner, record.epoch), (ReplicaId(2), 1));

    // Bob, holding Alice's session id, takes nothing over: 404 (his own request gets no
    // session), and the session stays Alice's.
    let id = record.id.clone();
    let bobs = raw_post(front.addr, BOB, &id).await;
    assert_eq!(bobs, 404, "another principal's request for the session");
    // An id nobody recorded: 404.
    let mut forged = id.clone().into_bytes();
    forged[40] = if forged[40] == b'A' { b'B' } else { b'A' };
    let forged = String::from_utf8(forged).expect("ascii");
    assert_eq!(raw_post(front.addr, ALICE, &forged).await, 404);
    host.call_tool("up__log", Map::new())
        .await
        .expect("still Alice's");
    two.kill().await;
}

#[tokio::test]
async fn a_holder_the_registry_and_the_store_both_lost_serves_on_until_it_is_gone() {
    let recorded = Arc::new(Recorded::default());
    let store: Arc<dyn StateStore> = recorded.clone();
    let [one, two] = replicas(store.clone()).await;
    let front = Front::to(one.addr).await;
    let url = format!("http://{}/mcp", front.addr);
    let renewals = Arc::new(AtomicU64::new(0));
    let host = legacy_host(&url, ALICE, renewals.clone()).await;
    host.call_tool("up__log", Map::new()).await.expect("called");
    let written = mcp_examples::wait_until(Duration::from_secs(5), || async {
        recorded.one_session().await.is_some()
    })
    .await;
    assert!(written, "the session is recorded");
    let id = recorded.one_session().await.expect("a record").id;
    // The store loses the record and replica 2 the registry's entry of replica 1, which
    // still serves: a request landing on 2 still reaches it.
    store
        .remove_session(&id, ReplicaId(1))
        .await
        .expect("removed");
    *two.peers.forgotten.lock().expect("lock") = Some(ReplicaId(1));
    front.switch(two.addr);
    // The host opens its stream for notifications again (through replica 2): by then it
    // has seen its connections cut.
    let again =
        mcp_examples::wait_until(Duration::from_secs(5), || async { front.connections() > 0 })
            .await;
    assert!(again, "the host connects again");
    for _ in 0..5 {
        host.call_tool("up__log", Map::new())
            .await
            .expect("served by replica 1 through replica 2");
    }
    assert_eq!(renewals.load(Ordering::SeqCst), 0, "the session stayed");
    assert_eq!(recorded.one_session().await, None, "nobody took it over");
    // Replica 1 gone too: nobody can serve the session, so 404 and a new one.
    one.kill().await;
    host.call_tool("up__log", Map::new())
        .await
        .expect("served in a new session");
    assert_eq!(renewals.load(Ordering::SeqCst), 1, "initialized again");
    two.kill().await;
}

/// A memory store that remembers the id of every session record written.
#[derive(Default)]
struct Recorded {
    store: MemoryStore,
    ids: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl StateStore for Recorded {
    async fn announce(&self, e: &ReplicaEntry, ttl: Duration) -> Result<(), StoreError> {
        self.store.announce(e, ttl).await
    }
    async fn leave(&self, replica: ReplicaId) -> Result<(), StoreError> {
        self.store.leave(replica).await
    }
    async fn replicas(&self) -> Result<Vec<ReplicaEntry>, StoreError> {
        self.store.replicas().await
    }
    async fn put_session(&self, s: &SessionState, ttl: Duration) -> Result<bool, StoreError> {
        {
            let mut ids = self.ids.lock().expect("lock");
            if !ids.contains(&s.id) {
                ids.push(s.id.clone());
            }
        }
        self.store.put_session(s, ttl).await
    }
    async fn session(&self, id: &str) -> Result<Option<SessionState>, StoreError> {
        self.store.session(id).await
    }
    async fn claim_session(
        &self,
        id: &str,
        epoch: u64,
        owner: ReplicaId,
        ttl: Duration,
    ) -> Result<Option<SessionState>, StoreError> {
        self.store.claim_session(id, epoch, owner, ttl).await
    }
    async fn remove_session(&self, id: &str, owner: ReplicaId) -> Result<(), StoreError> {
        self.store.remove_session(id, owner).await
    }
}

impl Recorded {
    /// The record of the one session written, if there is one.
    async fn one_session(&self) -> Option<SessionState> {
        let ids = self.ids.lock().expect("lock").clone();
        assert!(ids.len() <= 1, "one session: {ids:?}");
        self.store.session(ids.first()?).await.ok().flatten()
    }
}

/// The status of a `ping` POSTed to the front at `addr` in session `id` with API key `key`.
async fn raw_post(addr: std::net::SocketAddr, key: &str, id: &str) -> u16 {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n\
         Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-11-25\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream"
    );
    let addr = addr.to_string();
    tokio::task::spawn_blocking(move || common::raw_http::exchange(&addr, &head, &body).0)
        .await
        .expect("joined")
}
