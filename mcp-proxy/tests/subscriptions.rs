//! Resource subscriptions through the gateway: hosts subscribe to resources of a legacy
//! upstream, and each host hears exactly the `notifications/resources/updated` of what it
//! subscribed to, none of another host's and none after it unsubscribed or left. On a
//! shared upstream connection the upstream is subscribed once per URI however many hosts
//! hold it; with sessions per host each host's session carries its own. A 2026-07-28 host
//! subscribes on its `subscriptions/listen` stream.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::{CallOptions, Client, ClientError, ClientOptions, EraChoice, NoHandler};
use mcp_proxy::{Aggregator, AggregatorOptions, SessionMode};
use mcp_server::{RequestContext, ServerHandler, Subscriber};
use mcp_types::protocol::*;
use mcp_types::{codes, ErrorObject, Revision};
use serde_json::{json, Value};
use tokio::sync::broadcast::Receiver;

mod common;
use common::*;

const X: &str = "test://x";
const Y: &str = "test://y";
/// Every host subscribes to it: an update of it marks the end of a round.
const END: &str = "test://end";

/// A subscriber of the upstream and the URIs it subscribed to.
type Held = (Subscriber, Vec<String>);

/// An upstream (legacy, or 2026-07-28 where a test says) with resources X, Y and END that records every `resources/subscribe`
/// and `resources/unsubscribe` it gets, and sends each update to every connection that
/// ever subscribed to anything there, subscribed to that URI or not: the gateway, not the
/// upstream, must keep hosts apart.
#[derive(Clone, Default)]
struct Upstream {
    /// Each subscriber, with what it subscribed to.
    subscribers: Arc<Mutex<Vec<Held>>>,
    heard: Arc<Mutex<Vec<(bool, String)>>>,
    /// Told of each (un)subscription heard.
    told: Arc<tokio::sync::Notify>,
    /// Whether it declares `resources.subscribe`.
    no_subscribe: bool,
}

impl Upstream {
    /// Sends an update of each of `uris`, in order, to every subscriber, then of END to
    /// those subscribed to it (once per upstream connection).
    async fn emit(&self, uris: &[&str]) {
        let subscribers = self.subscribers.lock().expect("lock").clone();
        for uri in uris.iter().chain([&END]) {
            for (s, held) in &subscribers {
                if *uri == END && !held.iter().any(|h| h == END) {
                    continue;
                }
                let _ = s
                    .notify(method::RESOURCES_UPDATED, json!({"uri": uri}))
                    .await;
            }
        }
    }

    /// How many times it was subscribed (`true`) or unsubscribed to `uri`.
    fn count(&self, subscribe: bool, uri: &str) -> usize {
        let heard = self.heard.lock().expect("lock");
        heard
            .iter()
            .filter(|(s, u)| *s == subscribe && u == uri)
            .count()
    }

    /// Waits (up to five seconds) until it has been unsubscribed from `uri` `n` times.
    async fn unsubscribed(&self, uri: &str, n: usize) -> usize {
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                // Registered before the count is read: an unsubscription after it wakes us.
                let told = self.told.notified();
                tokio::pin!(told);
                told.as_mut().enable();
                if self.count(false, uri) >= n {
                    return;
                }
                told.await;
            }
        })
        .await;
        self.count(false, uri)
    }
}

#[async_trait::async_trait]
impl ServerHandler for Upstream {
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities {
            resources: Some(ResourcesCapability {
                subscribe: (!self.no_subscribe).then_some(true),
                ..Default::default()
            }),
            ..tools_only()
        }
    }

    async fn list_tools(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        listing([object_tool("noop")])
    }

    async fn list_resources(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListResourcesResult, ErrorObject> {
        let resource = |uri: &str| Resource {
            uri: uri.into(),
            name: uri.into(),
            ..Default::default()
        };
        Ok(ListResourcesResult {
            resources: vec![resource(X), resource(Y), resource(END)],
            ..Default::default()
        })
    }

    async fn subscribe(
        &self,
        ctx: &RequestContext,
        p: ResourceRequestParams,
        subscribe: bool,
    ) -> Result<(), ErrorObject> {
        self.heard
            .lock()
            .expect("lock")
            .push((subscribe, p.uri.clone()));
        self.told.notify_waiters();
        let s = ctx.subscriber().expect("a session or stream to send to");
        let mut all = self.subscribers.lock().expect("lock");
        match all.iter_mut().find(|(x, _)| x.id() == s.id()) {
            Some((_, held)) => held.push(p.uri),
            None => all.push((s, vec![p.uri])),
        }
        Ok(())
    }
}

async fn gateway(up: &Upstream, session: SessionMode, options: AggregatorOptions) -> Aggregator {
    gateway_of(up, Revision::V2025_06_18, session, options).await
}

async fn gateway_of(
    up: &Upstream,
    revision: Revision,
    session: SessionMode,
    options: AggregatorOptions,
) -> Aggregator {
    let config = in_process("up", up.clone())
        .revision(revision)
        .session(session);
    Aggregator::start(vec![config], options)
        .await
        .expect("start")
}

/// A host, and what it hears from the gateway.
async fn host_of(
    agg: &Aggregator,
    options: ClientOptions,
) -> (Client, Receiver<TypedNotification>) {
    let client = host(agg, NoHandler, options).await;
    let notes = client.notifications();
    (client, notes)
}

fn legacy() -> ClientOptions {
    ClientOptions::default().era(EraChoice::Legacy(Revision::V2025_06_18))
}

async fn subscribe(host: &Client, uri: &str, on: bool) -> Result<(), ClientError> {
    let m = if on {
        method::RESOURCES_SUBSCRIBE
    } else {
        method::RESOURCES_UNSUBSCRIBE
    };
    host.request(m, json!({"uri": uri}), &CallOptions::default())
        .await
        .map(|_| ())
}

/// The updates a host heard before the next one of END (which ends a round).
async fn round(notes: &mut Receiver<TypedNotification>) -> Vec<String> {
    let heard = listened(notes).await;
    heard.into_iter().map(|(uri, _)| uri).collect()
}

#[tokio::test]
async fn on_a_shared_connection_each_host_hears_only_its_own_subscriptions() {
    let up = Upstream::default();
    let agg = gateway(&up, SessionMode::Shared, Default::default()).await;
    let (a, mut na) = host_of(&agg, legacy()).await;
    let (b, mut nb) = host_of(&agg, legacy()).await;
    let declared = a
        .server()
        .capabilities
        .resources
        .clone()
        .expect("resources");
    assert_eq!(declared.subscribe, Some(true));

    for (h, uri) in [(&a, X), (&a, END), (&b, Y), (&b, END)] {
        subscribe(h, uri, true).await.expect("subscribed");
    }
    // Two hosts hold END: the shared connection is subscribed to it once.
    assert_eq!(
        (up.count(true, X), up.count(true, Y), up.count(true, END)),
        (1, 1, 1)
    );
    up.emit(&[X, Y]).await;
    assert_eq!(round(&mut na).await, [X]);
    assert_eq!(round(&mut nb).await, [Y]);

    // Both hold X: still one upstream subscription, and each hears it.
    subscribe(&b, X, true).await.expect("subscribed");
    assert_eq!(up.count(true, X), 1);
    up.emit(&[X]).await;
    assert_eq!(round(&mut na).await, [X]);
    assert_eq!(round(&mut nb).await, [X]);

    // A leaves X: B still holds it upstream, and only B hears it.
    subscribe(&a, X, false).await.expect("unsubscribed");
    assert_eq!(up.count(false, X), 0);
    up.emit(&[X, Y]).await;
    assert_eq!(round(&mut na).await, Vec::<String>::new());
    assert_eq!(round(&mut nb).await, [X, Y]);

    // The last one leaves: the upstream is unsubscribed, and nobody hears X.
    subscribe(&b, X, false).await.expect("unsubscribed");
    assert_eq!(up.count(false, X), 1);
    up.emit(&[X]).await;
    assert_eq!(round(&mut na).await, Vec::<String>::new());
    assert_eq!(round(&mut nb).await, Vec::<String>::new());
    assert_eq!(agg.resource_subscriptions(), 3);

    // B goes: what only B held is unsubscribed, END (A still holds it) is not.
    b.close().await;
    assert_eq!(up.unsubscribed(Y, 1).await, 1);
    assert_eq!(up.count(false, END), 0);
    assert_eq!(agg.resource_subscriptions(), 1);
    up.emit(&[Y]).await;
    assert_eq!(round(&mut na).await, Vec::<String>::new());
    a.close().await;
    assert_eq!(up.unsubscribed(END, 1).await, 1);
    assert_eq!(agg.resource_subscriptions(), 0);
    agg.shutdown().await;
}

#[tokio::test]
async fn with_sessions_per_host_each_session_carries_its_own_subscriptions() {
    let up = Upstream::default();
    let agg = gateway(&up, SessionMode::default(), Default::default()).await;
    // A takes the connection opened at start; B gets an upstream session of its own.
    let (a, mut na) = host_of(
        &agg,
        answering_all(EraChoice::Legacy(Revision::V2025_06_18)),
    )
    .await;
    let (b, mut nb) = host_of(&agg, legacy()).await;
    for (h, uri) in [(&a, X), (&a, END), (&b, Y), (&b, END)] {
        subscribe(h, uri, true).await.expect("subscribed");
    }
    assert_eq!(up.subscribers.lock().expect("lock").len(), 2);
    assert_eq!(
        up.count(true, END),
        2,
        "each host's session subscribes itself"
    );
    // The upstream sends every update on both sessions; each host hears its own.
    up.emit(&[X, Y]).await;
    assert_eq!(round(&mut na).await, [X]);
    assert_eq!(round(&mut nb).await, [Y]);

    subscribe(&b, X, true).await.expect("subscribed");
    assert_eq!(up.count(true, X), 2);
    subscribe(&a, X, false).await.expect("unsubscribed");
    assert_eq!(up.count(false, X), 1, "A's own session leaves X");
    up.emit(&[X]).await;
    assert_eq!(round(&mut na).await, Vec::<String>::new());
    assert_eq!(round(&mut nb).await, [X]);

    // B goes: its upstream session ends with it, subscriptions and all, and its entries go.
    b.close().await;
    assert!(
        settled(|| agg.resource_subscriptions() == 1).await,
        "A's END is left"
    );
    assert!(
        settled(|| up
            .subscribers
            .lock()
            .expect("lock")
            .iter()
            .filter(|(s, _)| s.is_ended())
            .count()
            == 1)
        .await,
        "B's upstream session ended"
    );
    up.emit(&[X, Y]).await;
    assert_eq!(round(&mut na).await, Vec::<String>::new());
    a.close().await;
    agg.shutdown().await;
}

/// Whether `cond` holds within five seconds (the gateway's own bookkeeping: no event).
async fn settled(cond: impl Fn() -> bool) -> bool {
    mcp_examples::wait_until(Duration::from_secs(5), || std::future::ready(cond())).await
}

#[tokio::test]
async fn a_host_beyond_its_subscription_cap_gets_a_clear_error() {
    let up = Upstream::default();
    let options = AggregatorOptions::default().max_subscriptions(2);
    let agg = gateway(&up, SessionMode::Shared, options).await;
    let (a, _na) = host_of(&agg, legacy()).await;
    subscribe(&a, X, true).await.expect("first");
    subscribe(&a, Y, true).await.expect("second");
    subscribe(&a, X, true).await.expect("again: still two");
    match subscribe(&a, END, true).await {
        Err(ClientError::Server(e)) => {
            assert_eq!(e.code, codes::INVALID_REQUEST);
            assert!(e.message.contains("limit of 2"), "{}", e.message);
        }
        other => panic!("expected the cap's error, got {other:?}"),
    }
    assert_eq!(up.count(true, END), 0, "nothing went upstream");
    subscribe(&a, X, false).await.expect("unsubscribed");
    subscribe(&a, END, true).await.expect("room again");
    a.close().await;
    agg.shutdown().await;
}

#[tokio::test]
async fn nothing_is_declared_or_subscribed_when_no_upstream_can() {
    let up = Upstream {
        no_subscribe: true,
        ..Default::default()
    };
    let agg = gateway(&up, SessionMode::Shared, Default::default()).await;
    let (a, _na) = host_of(&agg, legacy()).await;
    let declared = a
        .server()
        .capabilities
        .resources
        .clone()
        .expect("resources");
    assert_eq!(declared.subscribe, None);
    assert!(subscribe(&a, X, true).await.is_err());
    assert_eq!(up.count(true, X), 0);
    a.close().await;
    agg.shutdown().await;
}

/// The updates a host heard before the next END, each with the listen stream's
/// `subscriptionId` it carried (a 2026-07-28 host's; `None` for a legacy host).
async fn listened(notes: &mut Receiver<TypedNotification>) -> Vec<(String, Option<Value>)> {
    let mut heard = Vec::new();
    loop {
        let note = tokio::time::timeout(Duration::from_secs(5), notes.recv())
            .await
            .expect("the round's END update arrives")
            .expect("notifications");
        if let TypedNotification::ResourceUpdated(p) = note {
            if p.uri == END {
                return heard;
            }
            let id = p
                .meta
                .and_then(|m| m.get(mcp_types::meta::SUBSCRIPTION_ID).cloned());
            heard.push((p.uri, id));
        }
    }
}

#[tokio::test]
async fn a_2026_host_subscribes_on_its_listen_stream() {
    let up = Upstream::default();
    let agg = gateway(&up, SessionMode::Shared, Default::default()).await;
    let modern = ClientOptions::default().era(EraChoice::Modern);
    let (m, mut nm) = host_of(&agg, modern).await;
    let (b, mut nb) = host_of(&agg, legacy()).await;
    let declared = m
        .server()
        .capabilities
        .resources
        .clone()
        .expect("resources");
    assert_eq!(declared.subscribe, Some(true));
    subscribe(&b, Y, true).await.expect("subscribed");
    subscribe(&b, END, true).await.expect("subscribed");

    let stream = m.listen(SubscriptionFilter {
        resource_subscriptions: Some(vec![X.into(), END.into(), "test://unknown".into()]),
        ..Default::default()
    });
    let ack = loop {
        let note = tokio::time::timeout(Duration::from_secs(5), nm.recv())
            .await
            .expect("acknowledged")
            .expect("notifications");
        if let TypedNotification::SubscriptionsAcknowledged(a) = note {
            break a;
        }
    };
    // What the gateway cannot subscribe to is left out of the acknowledgement.
    assert_eq!(
        ack.notifications.resource_subscriptions,
        Some(vec![X.to_owned(), END.to_owned()])
    );
    let tag = ack
        .meta
        .as_ref()
        .and_then(|m| m.get(mcp_types::meta::SUBSCRIPTION_ID))
        .cloned();
    assert!(tag.is_some(), "the acknowledgement names its subscription");

    up.emit(&[X, Y]).await;
    assert_eq!(listened(&mut nm).await, [(X.to_owned(), tag)]);
    assert_eq!(round(&mut nb).await, [Y]);

    // The stream goes with its host: the upstream is unsubscribed from X, not from END.
    m.close().await;
    stream.abort();
    assert_eq!(up.unsubscribed(X, 1).await, 1);
    assert_eq!(up.count(false, END), 0);
    up.emit(&[X]).await;
    assert_eq!(round(&mut nb).await, Vec::<String>::new());
    b.close().await;
    agg.shutdown().await;
}

#[tokio::test]
async fn a_2026_upstream_is_subscribed_by_a_listen_stream_per_resource() {
    let up = Upstream::default();
    let agg = gateway_of(
        &up,
        Revision::V2026_07_28,
        SessionMode::Shared,
        Default::default(),
    )
    .await;
    let (a, mut na) = host_of(&agg, legacy()).await;
    let (b, mut nb) = host_of(&agg, legacy()).await;
    let declared = a
        .server()
        .capabilities
        .resources
        .clone()
        .expect("resources");
    assert_eq!(declared.subscribe, Some(true));
    for (h, uri) in [(&a, X), (&a, END), (&b, Y), (&b, END), (&b, X)] {
        subscribe(h, uri, true).await.expect("subscribed");
    }
    // One stream per URI, however many hosts hold it.
    assert_eq!(
        (up.count(true, X), up.count(true, Y), up.count(true, END)),
        (1, 1, 1)
    );
    up.emit(&[X, Y]).await;
    assert_eq!(round(&mut na).await, [X]);
    assert_eq!(round(&mut nb).await, [X, Y]);

    subscribe(&a, X, false).await.expect("unsubscribed");
    subscribe(&b, X, false).await.expect("unsubscribed");
    // The last one out cancels X's stream, which unsubscribes it upstream.
    assert_eq!(up.unsubscribed(X, 1).await, 1);
    up.emit(&[X]).await;
    assert_eq!(round(&mut na).await, Vec::<String>::new());
    assert_eq!(round(&mut nb).await, Vec::<String>::new());
    a.close().await;
    b.close().await;
    assert_eq!(up.unsubscribed(Y, 1).await, 1);
    assert_eq!(up.unsubscribed(END, 1).await, 1);
    agg.shutdown().await;
}
