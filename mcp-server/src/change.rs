//! A list change as it travels to every session of a server: what changed and, when not
//! every client may hear of it, who may (a gateway's per-principal views).

use std::sync::Arc;

use crate::auth::Principal;
use crate::{HostSessionId, ListChanged};

/// Who may hear of a change: a client whose principal (none for a connection without
/// credentials) and host session (none for a lone 2026 HTTP request) it accepts.
pub(crate) type ListAudience =
    Arc<dyn Fn(Option<&Principal>, Option<HostSessionId>) -> bool + Send + Sync>;

/// One list change on its way to the sessions.
#[derive(Clone)]
pub(crate) struct Change {
    pub(crate) what: ListChanged,
    pub(crate) audience: Option<ListAudience>,
}

impl Change {
    /// Whether a client of `principal`, in host session `host`, hears of it.
    pub(crate) fn reaches(
        &self,
        principal: Option<&Principal>,
        host: Option<HostSessionId>,
    ) -> bool {
        self.audience.as_ref().is_none_or(|a| a(principal, host))
    }
}
