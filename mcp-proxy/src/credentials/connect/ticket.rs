//! A connect link's ticket: whose consent, to which upstream, for which elicitation, until
//! when; sealed (AES-GCM under the grant keys), so it carries nothing readable and cannot
//! be altered, and used once.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::super::cipher::GrantKeys;
use super::super::grants::GrantVault;

/// What a ticket is sealed for (the associated data): a ticket opens as nothing else.
const PLACE: &str = "connect-ticket";

/// What a connect link says, once opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Ticket {
    /// The grant's place: the principal's digest and the upstream.
    pub(crate) place: String,
    /// The upstream's key.
    pub(crate) upstream: String,
    /// The elicitation it answers.
    pub(crate) elicitation: String,
    /// Unix seconds after which it is refused.
    pub(crate) expires: u64,
    /// Makes each ticket one of a kind, and marks it used.
    pub(crate) nonce: String,
}

/// Why a ticket was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TicketRefused {
    #[error("this link is not one of this gateway's, or it was altered")]
    Forged,
    #[error("this link has expired")]
    Expired,
    #[error("this link was used already")]
    Used,
    #[error("the gateway cannot check this link now; try again later")]
    Unavailable,
}

/// Seals tickets and marks them used (in the grant store, so that a link used at one
/// replica is used at all).
pub(crate) struct Tickets;

impl Tickets {
    pub(crate) fn new() -> Self {
        Tickets
    }

    /// `ticket`, sealed for a URL.
    pub(crate) fn seal(&self, keys: &GrantKeys, ticket: &Ticket) -> Option<String> {
        let plain = serde_json::to_vec(ticket).ok()?;
        keys.seal(PLACE, &plain).ok()
    }

    /// The ticket `text` seals, if genuine and in time (not marked used: see
    /// [`Tickets::use_once`]).
    pub(crate) fn open(
        &self,
        keys: &GrantKeys,
        text: &str,
        now: u64,
    ) -> Result<Ticket, TicketRefused> {
        let plain = keys.open(PLACE, text).map_err(|_| TicketRefused::Forged)?;
        let ticket: Ticket = serde_json::from_slice(&plain).map_err(|_| TicketRefused::Forged)?;
        if ticket.expires < now {
            return Err(TicketRefused::Expired);
        }
        Ok(ticket)
    }

    /// Marks `ticket` used for `life`: `Err` if it was already (or cannot be marked).
    pub(crate) async fn use_once(
        &self,
        vault: &GrantVault,
        ticket: &Ticket,
        life: Duration,
    ) -> Result<(), TicketRefused> {
        let key = format!("used:{}", ticket.nonce);
        match vault.store().mark_once(&key, life).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(TicketRefused::Used),
            Err(e) => {
                tracing::warn!("a connect link could not be marked used: {e}");
                Err(TicketRefused::Unavailable)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticket() -> Ticket {
        Ticket {
            place: "00ff:desk".into(),
            upstream: "desk".into(),
            elicitation: "e1".into(),
            expires: 1_000,
            nonce: "n1".into(),
        }
    }

    #[tokio::test]
    async fn a_ticket_opens_in_time_once_and_only_as_sealed() {
        let keys = GrantKeys::new(vec![("k".into(), [7; 32])]).expect("keys");
        let tickets = Tickets::new();
        let sealed = tickets.seal(&keys, &ticket()).expect("sealed");
        assert!(
            !sealed.contains("desk") && !sealed.contains("00ff"),
            "{sealed}"
        );
        assert_eq!(tickets.open(&keys, &sealed, 1_000), Ok(ticket()));
        assert_eq!(
            tickets.open(&keys, &sealed, 1_001),
            Err(TicketRefused::Expired)
        );
        let other = GrantKeys::new(vec![("k".into(), [8; 32])]).expect("keys");
        assert_eq!(tickets.open(&other, &sealed, 1), Err(TicketRefused::Forged));
        // A grant sealed with the same keys is no ticket (another place).
        let grant = keys.seal("00ff:desk", b"{}").expect("sealed");
        assert_eq!(tickets.open(&keys, &grant, 1), Err(TicketRefused::Forged));
        let life = Duration::from_secs(60);
        let store = std::sync::Arc::new(crate::credentials::MemoryGrants::default());
        let vault = GrantVault::new(
            store,
            GrantKeys::new(vec![("k".into(), [7; 32])]).expect("keys"),
        );
        assert_eq!(tickets.use_once(&vault, &ticket(), life).await, Ok(()));
        assert_eq!(
            tickets.use_once(&vault, &ticket(), life).await,
            Err(TicketRefused::Used)
        );
    }
}
