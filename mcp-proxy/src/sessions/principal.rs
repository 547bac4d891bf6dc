//! The upstream connections of principals ([`crate::credentials::PerUser`]): one per
//! principal and upstream, carrying that principal's tokens, opened at its first request
//! there, shared by that principal's hosts and no one else's, capped, and closed after
//! it has been idle.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_server::auth::Principal;
use parking_lot::Mutex;
use tokio::sync::OnceCell;

use super::{shutting_down, Link, LinkError};
use crate::credentials::{CredentialError, PerUser, PrincipalAuth};

struct Entry {
    link: Arc<OnceCell<Link>>,
    auth: Arc<PrincipalAuth>,
    last_used: Instant,
}

impl Entry {
    fn open(&self) -> Option<&Link> {
        self.link
            .get()
            .filter(|l| l.client.close_reason().is_none())
    }

    fn busy(&self) -> bool {
        self.link
            .get()
            .is_some_and(|l| l.calls.in_flight() > 0 || l.calls.is_held())
    }
}

/// A principal's place: its connection's cell, its credentials, and whether it is new.
struct Place {
    link: Arc<OnceCell<Link>>,
    auth: Arc<PrincipalAuth>,
    fresh: bool,
}

/// Why a principal's request got no connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PrincipalLinkError {
    /// No token for the principal.
    #[error("{0}")]
    Credentials(#[from] CredentialError),
    /// No connection.
    #[error("{0}")]
    Link(#[from] LinkError),
}

/// One upstream's connections of principals, by [`Principal::identity`].
pub(crate) struct PrincipalLinks {
    max: usize,
    idle: Duration,
    entries: Mutex<HashMap<String, Entry>>,
    closed: AtomicBool,
}

impl PrincipalLinks {
    pub(crate) fn new(per_user: &PerUser) -> Self {
        PrincipalLinks {
            max: per_user.max_principals.max(1),
            idle: per_user.idle_timeout,
            entries: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
        }
    }

    /// `principal`'s open connection if its token is good now (no waiting).
    pub(crate) fn ready(&self, principal: &Principal) -> Option<Link> {
        let mut entries = self.entries.lock();
        let e = entries.get_mut(&principal.identity())?;
        let link = e.open().filter(|_| e.auth.ready())?.clone();
        e.last_used = Instant::now();
        Some(link)
    }

    /// `principal`'s connection with a good token: the token asked for when the one held
    /// is not good, the connection opened by `open` (with the principal's credentials,
    /// made by `auth`) when it has none or its upstream ended it.
    pub(crate) async fn get_or_open<A, F, Fut>(
        self: &Arc<Self>,
        upstream: &str,
        principal: &Arc<Principal>,
        auth: A,
        open: F,
    ) -> Result<Link, PrincipalLinkError>
    where
        A: FnOnce() -> PrincipalAuth,
        F: FnOnce(Arc<PrincipalAuth>) -> Fut,
        Fut: std::future::Future<Output = Result<Link, crate::upstream_error::UpstreamError>>,
    {
        let identity = principal.identity();
        let Place {
            link: cell,
            auth: credentials,
            fresh,
        } = self.entry(upstream, &identity, auth)?;
        if credentials.ready() {
            credentials.note(principal);
        } else if let Err(e) = credentials.refresh(principal).await {
            // A principal that gets no token holds no place.
            if !cell.initialized() {
                self.forget(&identity, &cell);
            }
            return Err(e.into());
        }
        let opened = cell
            .get_or_try_init(|| async {
                let link = open(credentials.clone())
                    .await
                    .map_err(LinkError::Connect)?;
                tracing::info!(upstream, "upstream connection opened for a principal");
                Ok::<_, LinkError>(link)
            })
            .await;
        match opened {
            Ok(link) if self.closed.load(Ordering::SeqCst) => {
                let link = link.clone();
                self.forget(&identity, &cell);
                link.client.close().await;
                Err(shutting_down().into())
            }
            Ok(link) => {
                if fresh {
                    self.watch(upstream.into(), identity, cell.clone());
                }
                Ok(link.clone())
            }
            Err(e) => {
                self.forget(&identity, &cell);
                Err(e.into())
            }
        }
    }

    /// The entry of `identity` (made, with `auth`, if it has none or its connection
    /// ended) and whether it is new. At the bound, the principal idle longest makes room.
    fn entry(
        &self,
        upstream: &str,
        identity: &str,
        auth: impl FnOnce() -> PrincipalAuth,
    ) -> Result<Place, LinkError> {
        let mut entries = self.entries.lock();
        if self.closed.load(Ordering::SeqCst) {
            return Err(shutting_down());
        }
        if let Some(e) = entries.get_mut(identity) {
            let gone = e
                .link
                .get()
                .is_some_and(|l| l.client.close_reason().is_some());
            if !gone {
                e.last_used = Instant::now();
                return Ok(Place {
                    link: e.link.clone(),
                    auth: e.auth.clone(),
                    fresh: false,
                });
            }
            entries.remove(identity);
        }
        if entries.len() >= self.max {
            let idle = entries
                .iter()
                .filter(|(_, e)| !e.busy() && e.link.initialized())
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone());
            let Some(k) = idle else {
                tracing::warn!(upstream, max = self.max, "principal refused: upstream connections of principals at their limit, none idle");
                return Err(LinkError::Full {
                    upstream: upstream.into(),
                    max: self.max,
                });
            };
            if let Some(link) = entries.remove(&k).and_then(|e| e.link.get().cloned()) {
                tracing::info!(
                    upstream,
                    "closing the connection of the principal idle longest to make room"
                );
                tokio::spawn(async move { link.client.close().await });
            }
        }
        let e = Entry {
            link: Arc::new(OnceCell::new()),
            auth: Arc::new(auth()),
            last_used: Instant::now(),
        };
        let out = Place {
            link: e.link.clone(),
            auth: e.auth.clone(),
            fresh: true,
        };
        entries.insert(identity.to_owned(), e);
        Ok(out)
    }

    /// Removes `identity`'s entry if it is still `cell`.
    fn forget(&self, identity: &str, cell: &Arc<OnceCell<Link>>) -> Option<Link> {
        let mut entries = self.entries.lock();
        if entries
            .get(identity)
            .is_some_and(|e| Arc::ptr_eq(&e.link, cell))
        {
            return entries.remove(identity).and_then(|e| e.link.get().cloned());
        }
        None
    }

    /// Closes `identity`'s connection once it has been idle too long.
    fn watch(self: &Arc<Self>, upstream: String, identity: String, cell: Arc<OnceCell<Link>>) {
        let me = Arc::downgrade(self);
        let idle = self.idle;
        tokio::spawn(async move {
            loop {
                let Some(links) = me.upgrade() else { return };
                let Some(mut wake) = links.idle_deadline(&identity, &cell, idle) else {
                    return;
                };
                drop(links);
                if wake <= Instant::now() {
                    wake = Instant::now() + idle;
                }
                tokio::time::sleep_until(wake.into()).await;
                let Some(links) = me.upgrade() else { return };
                if links.is_idle(&identity, &cell, idle) {
                    if let Some(link) = links.forget(&identity, &cell) {
                        tracing::info!(upstream, "upstream connection of a principal closed: idle");
                        link.client.close().await;
                    }
                    return;
                }
            }
        });
    }

    fn idle_deadline(
        &self,
        identity: &str,
        cell: &Arc<OnceCell<Link>>,
        idle: Duration,
    ) -> Option<Instant> {
        let entries = self.entries.lock();
        let e = entries
            .get(identity)
            .filter(|e| Arc::ptr_eq(&e.link, cell))?;
        Some(e.last_used + idle)
    }

    fn is_idle(&self, identity: &str, cell: &Arc<OnceCell<Link>>, idle: Duration) -> bool {
        let entries = self.entries.lock();
        let Some(e) = entries.get(identity).filter(|e| Arc::ptr_eq(&e.link, cell)) else {
            return false;
        };
        e.open().is_none() || (!e.busy() && e.last_used.elapsed() >= idle)
    }

    /// How many principals have a connection open (or opening).
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// How many host calls are in flight on principals' connections.
    pub(crate) fn in_flight(&self) -> usize {
        self.entries
            .lock()
            .values()
            .filter_map(|e| e.link.get())
            .map(|l| l.calls.in_flight())
            .sum()
    }

    /// Closes every principal's connection, all at once, and opens none after.
    pub(crate) async fn close_all(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let links: Vec<Link> = self
            .entries
            .lock()
            .drain()
            .filter_map(|(_, e)| e.link.get().cloned())
            .collect();
        super::close_at_once(links).await;
    }
}
