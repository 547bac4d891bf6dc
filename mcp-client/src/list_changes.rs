//! Which of a server's lists it said changed (`notifications/*/list_changed`), kept until
//! asked: the typed notifications a [`crate::Client`] broadcasts carry no method for
//! these, and a relay must tell its own clients exactly which list the server announced.

use std::sync::atomic::{AtomicU8, Ordering};

use mcp_types::protocol::method;

const TOOLS: u8 = 1;
const PROMPTS: u8 = 2;
const RESOURCES: u8 = 4;

/// The lists a server announced as changed since they were last taken
/// ([`crate::Client::take_list_changes`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListChanges {
    /// `notifications/tools/list_changed` came.
    pub tools: bool,
    /// `notifications/prompts/list_changed` came.
    pub prompts: bool,
    /// `notifications/resources/list_changed` came.
    pub resources: bool,
}

impl ListChanges {
    /// Whether any list was announced.
    pub fn any(self) -> bool {
        self.tools || self.prompts || self.resources
    }
}

/// The announcements not taken yet, one bit per list.
#[derive(Default)]
pub(crate) struct Announced(AtomicU8);

impl Announced {
    /// Notes a notification's `method` if it announces a list change.
    pub(crate) fn note(&self, notification: &str) {
        let bit = match notification {
            method::TOOLS_LIST_CHANGED => TOOLS,
            method::PROMPTS_LIST_CHANGED => PROMPTS,
            method::RESOURCES_LIST_CHANGED => RESOURCES,
            _ => return,
        };
        self.0.fetch_or(bit, Ordering::Relaxed);
    }

    /// What was announced since the last take.
    pub(crate) fn take(&self) -> ListChanges {
        let bits = self.0.swap(0, Ordering::Relaxed);
        ListChanges {
            tools: bits & TOOLS != 0,
            prompts: bits & PROMPTS != 0,
            resources: bits & RESOURCES != 0,
        }
    }
}
