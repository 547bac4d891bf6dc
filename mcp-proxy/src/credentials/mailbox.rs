//! [`ElicitationMailbox`]: which host to tell when a URL-mode elicitation it was sent
//! completes (`notifications/elicitation/complete`, 2025-11-25: only to the client that
//! was sent the elicitation, and only with its id).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mcp_server::Subscriber;
use parking_lot::Mutex;
use serde_json::json;

/// Most elicitations awaited at once; the oldest is dropped first.
const MAX_WAITING: usize = 10_000;

/// The hosts waiting for elicitations to complete, by elicitation id, each for as long as
/// its connect link is good.
#[derive(Default)]
pub struct ElicitationMailbox {
    waiting: Mutex<HashMap<String, (Subscriber, Instant)>>,
}

impl std::fmt::Debug for ElicitationMailbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElicitationMailbox")
            .field("waiting", &self.waiting.lock().len())
            .finish()
    }
}

impl ElicitationMailbox {
    /// `host` is told when elicitation `id` completes, if that is within `life`.
    pub fn watch(&self, id: &str, host: Subscriber, life: Duration) {
        let mut waiting = self.waiting.lock();
        let now = Instant::now();
        waiting.retain(|_, (h, until)| *until > now && !h.is_ended());
        if waiting.len() >= MAX_WAITING {
            let oldest = waiting
                .iter()
                .min_by_key(|(_, (_, until))| *until)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                waiting.remove(&k);
            }
        }
        waiting.insert(id.to_owned(), (host, now + life));
    }

    /// Elicitation `id` completed: its host (if still waiting here) is told; whether one
    /// was.
    pub async fn complete(&self, id: &str) -> bool {
        let host = self.waiting.lock().remove(id);
        let Some((host, _)) = host.filter(|(_, until)| *until > Instant::now()) else {
            return false;
        };
        let params = json!({"elicitationId": id});
        match host
            .notify(mcp_types::protocol::method::ELICITATION_COMPLETE, params)
            .await
        {
            Ok(()) => true,
            Err(e) => {
                tracing::debug!("elicitation completion not delivered: {e}");
                false
            }
        }
    }
}
