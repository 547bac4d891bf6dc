//! Resource subscriptions: which host subscriber ([`Subscriber`]: a legacy host session, or
//! a 2026-07-28 `subscriptions/listen` stream) subscribed to which URI on which upstream
//! connection, and the relay of that connection's `notifications/resources/updated` to
//! exactly those subscribers.
//!
//! A connection is subscribed upstream once per URI however many hosts share it: its
//! first subscriber sends `resources/subscribe`, its last one to leave `resources/unsubscribe`.
//! A host with an upstream session of its own subscribes on that session. A subscriber's
//! entries go when it unsubscribes or its session (or stream) ends; a subscriber holds at
//! most [`AggregatorOptions::max_subscriptions`](super::AggregatorOptions) of them. When an
//! upstream connection ends, its subscriptions end with it (hosts subscribe again). A
//! 2026-07-28 upstream has no `resources/subscribe`: it is subscribed to a URI by a
//! `subscriptions/listen` stream of the gateway's for that URI, cancelled with the last
//! subscriber.
//!
//! The catalog lists resources under their upstream's own URIs, so the URI a host
//! subscribed to is the upstream's, and an update goes out with the URI as the upstream
//! wrote it.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_client::{CallOptions, Client, ClientError};
use mcp_server::{Subscriber, SubscriberId};
use mcp_types::protocol::*;
use mcp_types::{codes, ErrorObject};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::sync::Notify;

use super::answers::upstream_error;
use super::pool::Upstream;
use crate::sessions::Link;
use crate::upstream_questions::Calls;

/// One upstream connection's subscriptions.
struct Conn {
    /// Names it among the table's connections, never reused.
    id: u64,
    /// The upstream's key, for errors and logs.
    upstream: Arc<str>,
    client: Client,
    /// The connection's calls: a connection holding subscriptions is not idle.
    calls: Arc<Calls>,
    /// Subscribing and unsubscribing upstream, one at a time on this connection.
    ops: tokio::sync::Mutex<()>,
    /// URI → the subscribers that subscribed to it here.
    uris: Mutex<HashMap<String, BTreeSet<SubscriberId>>>,
    /// A 2026-07-28 upstream's `subscriptions/listen` stream per URI: its
    /// `subscriptionId`, and what cancels it.
    streams: Mutex<HashMap<String, (Value, Arc<Notify>)>>,
}

/// What one subscriber holds: `(connection id, URI)` pairs.
struct Held {
    subscriber: Subscriber,
    subs: HashSet<(u64, String)>,
}

#[derive(Default)]
struct State {
    conns: Vec<Arc<Conn>>,
    subscribers: HashMap<SubscriberId, Held>,
}

/// The subscription table.
pub(super) struct Subscriptions {
    /// Most subscriptions one subscriber may hold.
    max: usize,
    next: AtomicU64,
    state: Mutex<State>,
}

/// The error a subscriber beyond its cap gets.
fn too_many(max: usize) -> ErrorObject {
    ErrorObject::new(
        codes::INVALID_REQUEST,
        format!(
            "Too many resource subscriptions: this session already holds its limit of {max}; \
             unsubscribe from one first"
        ),
    )
    .with_data(json!({"maxSubscriptions": max}))
}

/// Whether an update of `updated` concerns a subscription to `subscribed`: the same URI, or
/// one of its sub-resources (the spec lets an update name a sub-resource of the one
/// subscribed to), judged at a path boundary.
fn covers(subscribed: &str, updated: &str) -> bool {
    match updated.strip_prefix(subscribed) {
        Some("") => true,
        Some(rest) => subscribed.ends_with('/') || rest.starts_with('/'),
        None => false,
    }
}

impl Subscriptions {
    pub(super) fn new(max: usize) -> Self {
        Subscriptions {
            max,
            next: AtomicU64::new(1),
            state: Mutex::new(State::default()),
        }
    }

    /// How many subscriptions are held, over every subscriber.
    pub(super) fn len(&self) -> usize {
        self.state
            .lock()
            .subscribers
            .values()
            .map(|h| h.subs.len())
            .sum()
    }

    /// The table's entry for `link`, made (and its updates watched) if it has none.
    fn conn(self: &Arc<Self>, upstream: &str, link: Link) -> Arc<Conn> {
        let mut state = self.state.lock();
        let found = state
            .conns
            .iter()
            .find(|c| Arc::ptr_eq(&c.calls, &link.calls) && c.client.close_reason().is_none())
            .cloned();
        if let Some(c) = found {
            return c;
        }
        let conn = Arc::new(Conn {
            id: self.next.fetch_add(1, Ordering::Relaxed),
            upstream: upstream.into(),
            // Listening before the first `resources/subscribe` goes: no update is missed.
            client: link.client,
            calls: link.calls,
            ops: tokio::sync::Mutex::new(()),
            uris: Mutex::new(HashMap::new()),
            streams: Mutex::new(HashMap::new()),
        });
        state.conns.push(conn.clone());
        let notes = conn.client.notifications();
        tokio::spawn(self.clone().watch(conn.clone(), notes));
        conn
    }

    /// Subscribes `subscriber` to `uri` on `link`'s connection (upstream only if no one
    /// is subscribed to it there yet).
    pub(super) async fn subscribe(
        self: &Arc<Self>,
        upstream: &str,
        link: Link,
        subscriber: Subscriber,
        uri: String,
    ) -> Result<(), ErrorObject> {
        let conn = self.conn(upstream, link);
        let op = conn.ops.lock().await;
        let id = subscriber.id();
        let fresh_subscriber = {
            let mut state = self.state.lock();
            let fresh = !state.subscribers.contains_key(&id);
            let held = state.subscribers.entry(id).or_insert_with(|| Held {
                subscriber: subscriber.clone(),
                subs: HashSet::new(),
            });
            if held.subs.contains(&(conn.id, uri.clone())) {
                return Ok(());
            }
            if held.subs.len() >= self.max {
                return Err(too_many(self.max));
            }
            held.subs.insert((conn.id, uri.clone()));
            fresh
        };
        if fresh_subscriber {
            let me = self.clone();
            let s = subscriber.clone();
            tokio::spawn(async move {
                s.ended().await;
                me.drop_subscriber(s.id()).await;
            });
        }
        let first = conn.add(&uri, id);
        if first {
            if let Err(e) = conn.open(&uri).await {
                conn.remove(&uri, id);
                {
                    let mut state = self.state.lock();
                    if let Some(h) = state.subscribers.get_mut(&id) {
                        h.subs.remove(&(conn.id, uri.clone()));
                    }
                }
                return Err(upstream_error(&conn.upstream, e));
            }
        }
        drop(op);
        if subscriber.is_ended() {
            // It ended while subscribing, perhaps after its entries were dropped.
            self.drop_subscriber(id).await;
        }
        tracing::debug!(upstream = %conn.upstream, subscriber = %id, uri, first, "resource subscribed");
        Ok(())
    }

    /// Takes `subscriber`'s subscriptions to `uri` off every connection it holds them on.
    pub(super) async fn unsubscribe(&self, subscriber: SubscriberId, uri: &str) {
        let conns = {
            let mut state = self.state.lock();
            let State {
                conns, subscribers, ..
            } = &mut *state;
            let Some(held) = subscribers.get_mut(&subscriber) else {
                return;
            };
            let ids: Vec<u64> = held
                .subs
                .iter()
                .filter(|(_, u)| u == uri)
                .map(|(c, _)| *c)
                .collect();
            for c in &ids {
                held.subs.remove(&(*c, uri.to_owned()));
            }
            conns
                .iter()
                .filter(|c| ids.contains(&c.id))
                .cloned()
                .collect::<Vec<_>>()
        };
        for conn in conns {
            release(&conn, subscriber, uri).await;
        }
    }

    /// Everything `subscriber` held goes: it ended.
    async fn drop_subscriber(&self, subscriber: SubscriberId) {
        let (held, conns) = {
            let mut s = self.state.lock();
            (s.subscribers.remove(&subscriber), s.conns.clone())
        };
        let Some(held) = held else { return };
        for (c, uri) in held.subs {
            if let Some(conn) = conns.iter().find(|x| x.id == c) {
                release(conn, subscriber, &uri).await;
            }
        }
        tracing::debug!(subscriber = %subscriber, "subscriber gone; its subscriptions dropped");
    }

    /// Relays `conn`'s resource updates until the connection ends; then its entries go.
    async fn watch(
        self: Arc<Self>,
        conn: Arc<Conn>,
        mut notes: tokio::sync::broadcast::Receiver<TypedNotification>,
    ) {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            let note = tokio::select! {
                n = notes.recv() => n,
                // The connection's end shows on the client, not on the channel.
                () = tokio::time::sleep(Duration::from_secs(1)) => {
                    if conn.client.close_reason().is_some() {
                        break;
                    }
                    continue;
                }
            };
            match note {
                Ok(TypedNotification::ResourceUpdated(p)) => self.deliver(&conn, p).await,
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => break,
            }
        }
        {
            let mut state = self.state.lock();
            state.conns.retain(|c| c.id != conn.id);
            for held in state.subscribers.values_mut() {
                held.subs.retain(|(c, _)| *c != conn.id);
            }
        }
        conn.calls.hold(false);
        tracing::debug!(upstream = %conn.upstream, "connection ended; its resource subscriptions with it");
    }

    /// Sends an update of `uri` to exactly the subscribers of it (or of a resource it is
    /// part of) on `conn`.
    /// On a 2026-07-28 upstream, an update counts only on the stream of a URI it covers
    /// (the upstream may send one on several streams).
    async fn deliver(&self, conn: &Conn, p: ResourceUpdatedNotificationParams) {
        let uri = p.uri.as_str();
        let Some(stream) = conn.stream_of(&p) else {
            tracing::debug!(upstream = %conn.upstream, uri, "resource update on no stream of ours");
            return;
        };
        let ids: BTreeSet<SubscriberId> = conn
            .uris
            .lock()
            .iter()
            .filter(|(s, _)| covers(s, uri))
            .filter(|(s, _)| stream.as_ref().is_none_or(|only| only == *s))
            .flat_map(|(_, ids)| ids.iter().copied())
            .collect();
        let targets: Vec<Subscriber> = {
            let s = self.state.lock();
            ids.iter()
                .filter_map(|id| s.subscribers.get(id).map(|h| h.subscriber.clone()))
                .collect()
        };
        if targets.is_empty() {
            tracing::debug!(upstream = %conn.upstream, uri, "resource update no subscriber holds");
        }
        for s in targets {
            if let Err(e) = s
                .notify(method::RESOURCES_UPDATED, json!({"uri": uri}))
                .await
            {
                tracing::debug!(subscriber = %s.id(), uri, "resource update not delivered: {e}");
            }
        }
    }
}

impl Conn {
    /// Which subscription an update came on: `Some(None)` on a connection without listen
    /// streams (a legacy one), `Some(Some(uri))` for the stream of `uri` named by its
    /// `subscriptionId`, `None` for an update on no stream of ours.
    fn stream_of(&self, p: &ResourceUpdatedNotificationParams) -> Option<Option<String>> {
        let streams = self.streams.lock();
        if streams.is_empty() {
            return Some(None);
        }
        let id = p.meta.as_ref()?.get(mcp_types::meta::SUBSCRIPTION_ID)?;
        streams
            .iter()
            .find(|(_, (sid, _))| sid == id)
            .map(|(uri, _)| Some(uri.clone()))
    }

    /// Adds `id` to `uri`'s subscribers; true when it is the first.
    fn add(&self, uri: &str, id: SubscriberId) -> bool {
        let mut uris = self.uris.lock();
        let set = uris.entry(uri.to_owned()).or_default();
        let first = set.is_empty();
        set.insert(id);
        self.calls.hold(true);
        first
    }

    /// Removes `id` from `uri`'s subscribers; true when it was the last.
    fn remove(&self, uri: &str, id: SubscriberId) -> bool {
        let mut uris = self.uris.lock();
        let Some(set) = uris.get_mut(uri) else {
            return false;
        };
        let last = set.remove(&id) && set.is_empty();
        if set.is_empty() {
            uris.remove(uri);
        }
        self.calls.hold(!uris.is_empty());
        last
    }
}

/// Takes `subscriber` off `uri` on `conn`, unsubscribing upstream when it was the last.
async fn release(conn: &Conn, subscriber: SubscriberId, uri: &str) {
    let _op = conn.ops.lock().await;
    if conn.remove(uri, subscriber) && conn.client.close_reason().is_none() {
        conn.close(uri).await;
    }
}

/// The `subscriptionId` of a listen stream's acknowledgement granting `uri`, if one arrives
/// among `notes` within [`ACK_WAIT`] (opens on one connection go one at a time, so it is
/// the stream just opened).
async fn acknowledged(
    mut notes: tokio::sync::broadcast::Receiver<TypedNotification>,
    uri: &str,
) -> Option<Value> {
    let wait = async {
        loop {
            match notes.recv().await {
                Ok(TypedNotification::SubscriptionsAcknowledged(a)) => {
                    let granted = a.notifications.resource_subscriptions.unwrap_or_default();
                    let id = a
                        .meta
                        .and_then(|m| m.get(mcp_types::meta::SUBSCRIPTION_ID).cloned());
                    if let Some(id) = id.filter(|_| granted.iter().any(|u| u == uri)) {
                        return Some(id);
                    }
                }
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            }
        }
    };
    tokio::time::timeout(ACK_WAIT, wait).await.ok().flatten()
}

/// How long a 2026-07-28 upstream has to acknowledge a resource's listen stream.
const ACK_WAIT: Duration = Duration::from_secs(5);

/// Whether `revision` has `method_name` (the method table's data).
fn has_method(method_name: &str, revision: mcp_types::Revision) -> bool {
    mcp_revisions::shapes::method(method_name).is_some_and(|m| m.revisions.contains(revision))
}

impl Conn {
    /// Subscribes the upstream to `uri`: `resources/subscribe` where its revision has it,
    /// else (2026-07-28) a `subscriptions/listen` stream of its own for `uri`, whose
    /// updates arrive among the connection's notifications.
    async fn open(&self, uri: &str) -> Result<(), ClientError> {
        if has_method(method::RESOURCES_SUBSCRIBE, self.client.revision()) {
            return self
                .client
                .request(
                    method::RESOURCES_SUBSCRIBE,
                    json!({"uri": uri}),
                    &CallOptions::default(),
                )
                .await
                .map(|_| ());
        }
        let cancel = Arc::new(Notify::new());
        let params = SubscriptionsListenRequestParams {
            notifications: SubscriptionFilter {
                resource_subscriptions: Some(vec![uri.to_owned()]),
                ..Default::default()
            },
            ..Default::default()
        };
        let opts = CallOptions::default()
            .timeout(Duration::from_secs(u64::from(u32::MAX)))
            .cancel(cancel.clone());
        let params = serde_json::to_value(&params)
            .map_err(|e| ClientError::Unavailable(format!("listen params: {e}")))?;
        // Its acknowledgement says whether the upstream took the URI.
        let notes = self.client.notifications();
        let (client, upstream, what) = (self.client.clone(), self.upstream.clone(), uri.to_owned());
        tokio::spawn(async move {
            let out = client
                .request(method::SUBSCRIPTIONS_LISTEN, params, &opts)
                .await;
            tracing::debug!(%upstream, uri = what, ended = ?out.err(), "upstream listen stream for a resource ended");
        });
        let Some(id) = acknowledged(notes, uri).await else {
            cancel.notify_one();
            return Err(ClientError::Unavailable(format!(
                "upstream `{}` did not acknowledge a subscription to {uri}",
                self.upstream
            )));
        };
        self.streams.lock().insert(uri.to_owned(), (id, cancel));
        Ok(())
    }

    /// Unsubscribes the upstream from `uri`: `resources/unsubscribe`, or the end of its
    /// listen stream.
    async fn close(&self, uri: &str) {
        let stream = self.streams.lock().remove(uri);
        if let Some((_, cancel)) = stream {
            cancel.notify_one();
            return;
        }
        let out = self
            .client
            .request(
                method::RESOURCES_UNSUBSCRIBE,
                json!({"uri": uri}),
                &CallOptions::default(),
            )
            .await;
        if let Err(e) = out {
            tracing::warn!(upstream = %self.upstream, uri, "resources/unsubscribe failed: {e}");
        }
    }
}

impl Upstream {
    /// Whether it can honour a resource subscription: it is connected, declares
    /// `resources.subscribe`, and speaks a revision with a way to subscribe
    /// (`resources/subscribe`, or `subscriptions/listen`: the method table's data).
    pub(super) fn subscribes(&self) -> bool {
        self.client().is_some_and(|c| {
            let r = c.revision();
            let declared = c.server().capabilities.resources.as_ref();
            declared.and_then(|d| d.subscribe) == Some(true)
                && (has_method(method::RESOURCES_SUBSCRIBE, r)
                    || has_method(method::SUBSCRIPTIONS_LISTEN, r))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::covers;

    #[test]
    fn an_update_covers_its_uri_and_its_sub_resources_only() {
        assert!(covers("file:///a", "file:///a"));
        assert!(covers("file:///a", "file:///a/b"));
        assert!(covers("file:///a/", "file:///a/b"));
        assert!(!covers("file:///a", "file:///ab"));
        assert!(!covers("file:///a/b", "file:///a"));
        assert!(!covers("test://x", "test://y"));
    }
}
