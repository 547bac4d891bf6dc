//! Who hears of a list change: the listener an aggregator was given (everyone, or each
//! host only of what it sees), told which merged lists changed and for whom; and, with
//! replicas, the other replicas, whose hosts hear of an upstream's change too.

use std::sync::Arc;

use mcp_server::{HostSessionId, ListChanged};
use parking_lot::Mutex;

use super::catalog::ListsChanged;
use super::id::UpstreamId;

/// Called when a merged list changes, with who may hear of it.
pub(super) type ChangeListener = Arc<dyn Fn(ListChanged, Heard) + Send + Sync>;

/// Who hears of a list change.
#[derive(Clone, Copy, Debug)]
pub(super) enum Heard {
    /// The hosts that see this upstream's listing in the catalog (not those that see one of
    /// their own upstream session's in its place).
    Upstream(UpstreamId),
    /// Only this host: its own session of an upstream changed.
    Host(HostSessionId),
}

/// Told of each change of an upstream's lists heard here, to pass on to other replicas.
pub(super) type PeerTeller = Box<dyn Fn(UpstreamId, ListsChanged) + Send + Sync>;

/// Tells the listener, if there is one, of each list that changed.
#[derive(Default)]
pub(super) struct Announcer {
    listener: Mutex<Option<ChangeListener>>,
    peers: Option<PeerTeller>,
}

impl Announcer {
    /// Tells `f` of every change from now on, in place of any listener before it.
    pub(super) fn listen(&self, f: ChangeListener) {
        *self.listener.lock() = Some(f);
    }

    /// An announcer that also tells `peers` of each upstream's change heard here.
    pub(super) fn with_peers(peers: PeerTeller) -> Self {
        Announcer {
            listener: Mutex::new(None),
            peers: Some(peers),
        }
    }

    /// Tells hosts which lists of upstream `i` changed, and only those.
    pub(super) fn announce(&self, i: UpstreamId, changed: ListsChanged) {
        self.announce_as(changed, Heard::Upstream(i));
    }

    /// [`Announcer::announce`] of a change upstream `i` made while connected (it said so,
    /// or its lists read differently), which the other replicas' hosts hear of too: their
    /// own connection to it (a process of their own, for a stdio one) may not change.
    /// What a replica learns at connecting is its own, and no news to the others.
    pub(super) fn announce_change(&self, i: UpstreamId, changed: ListsChanged) {
        if let Some(tell) = self.peers.as_ref().filter(|_| changed.any()) {
            tell(i, changed);
        }
        self.announce(i, changed);
    }

    /// Tells `host` alone which lists of its own session of an upstream changed.
    pub(super) fn announce_to(&self, host: HostSessionId, changed: ListsChanged) {
        self.announce_as(changed, Heard::Host(host));
    }

    fn announce_as(&self, changed: ListsChanged, heard: Heard) {
        let lists = [
            (changed.tools, ListChanged::Tools),
            (changed.prompts, ListChanged::Prompts),
            (changed.resources, ListChanged::Resources),
        ];
        let mut listener = None;
        for (_, c) in lists.into_iter().filter(|(did, _)| *did) {
            // Cloned out of the lock once: the listener may take long, or listen anew.
            let f = listener.get_or_insert_with(|| self.listener.lock().clone());
            if let Some(f) = f {
                f(c, heard);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_lists_that_changed_are_told_and_to_whom() {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let announcer = Announcer::default();
        // Nobody listens yet: nothing to tell, and nothing fails.
        let ids = super::super::test_parts::ids(1);
        let changed = ListsChanged {
            tools: true,
            resources: true,
            ..Default::default()
        };
        announcer.announce(ids[0], changed);
        let sink = heard.clone();
        announcer.listen(Arc::new(move |what, who| sink.lock().push((what, who))));
        announcer.announce(ids[0], changed);
        let got: Vec<_> = heard.lock().drain(..).collect();
        assert_eq!(got.len(), 2);
        assert!(matches!(got[0], (ListChanged::Tools, Heard::Upstream(i)) if i == ids[0]));
        assert!(matches!(
            got[1],
            (ListChanged::Resources, Heard::Upstream(_))
        ));
        announcer.announce(ids[0], ListsChanged::default());
        assert!(heard.lock().is_empty(), "no change, no word");
    }

    #[test]
    fn a_change_an_upstream_made_goes_to_the_peers_and_nothing_else_does() {
        let told = Arc::new(Mutex::new(Vec::new()));
        let sink = told.clone();
        let announcer = Announcer::with_peers(Box::new(move |i, c| sink.lock().push((i, c))));
        let ids = super::super::test_parts::ids(1);
        let changed = ListsChanged {
            prompts: true,
            ..Default::default()
        };
        announcer.announce_change(ids[0], changed);
        announcer.announce_change(ids[0], ListsChanged::default());
        // What another replica told, or a connection's first listing, is not passed on.
        announcer.announce(ids[0], changed);
        assert_eq!(*told.lock(), [(ids[0], changed)]);
    }
}
