//! [`WithStore`]: a replica's readiness and metrics with its state store's state beside
//! them. A store out of reach does not make a replica unready (a load balancer would then
//! take every replica out at once, while each still serves what needs no store); it is
//! said in `/readyz`'s details and in the metric `mcp_gateway_state_store_up`, and the
//! legacy sessions taken over from replicas gone are counted.

use std::sync::Arc;

use mcp_server::http::{Health, Metrics, Readiness};
use serde_json::json;

use super::handover::StoreHandover;
use super::lease::Lease;

/// `inner`'s readiness and metrics, with the state store's (see the module).
pub struct WithStore<T> {
    inner: T,
    lease: Arc<Lease>,
    handover: Option<Arc<StoreHandover>>,
}

impl<T> std::fmt::Debug for WithStore<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WithStore").finish_non_exhaustive()
    }
}

impl<T> WithStore<T> {
    /// `inner`, and the store whose heartbeats renew `lease` (see
    /// [`super::StorePeers::lease`]), whose `handover` moves legacy sessions, if any.
    pub fn new(inner: T, lease: Arc<Lease>, handover: Option<Arc<StoreHandover>>) -> Self {
        WithStore {
            inner,
            lease,
            handover,
        }
    }

    fn reachable(&self) -> bool {
        self.lease.current().is_some() && !self.lease.unreachable()
    }
}

impl<T: Health> Health for WithStore<T> {
    fn readiness(&self) -> Readiness {
        let mut r = self.inner.readiness();
        let store = json!({
            "reachable": self.reachable(),
            "sessionsTakenOver": self.handover.as_ref().map(|h| h.taken_over()),
        });
        if let Some(detail) = r.detail.as_object_mut() {
            detail.insert("stateStore".into(), store);
        }
        r
    }
}

impl<T: Metrics> Metrics for WithStore<T> {
    fn render(&self) -> String {
        let mut out = self.inner.render();
        // OpenMetrics ends with `# EOF`: these go before it.
        let eof = out.ends_with("# EOF\n");
        if eof {
            out.truncate(out.len() - "# EOF\n".len());
        }
        let up = u8::from(self.reachable());
        out.push_str(&format!(
            "# HELP mcp_gateway_state_store_up Whether the state store answered this replica's last heartbeat.\n\
             # TYPE mcp_gateway_state_store_up gauge\nmcp_gateway_state_store_up {up}\n"
        ));
        if let Some(h) = &self.handover {
            out.push_str(&format!(
                "# HELP mcp_gateway_sessions_taken_over Legacy sessions this replica took over from replicas gone.\n\
                 # TYPE mcp_gateway_sessions_taken_over counter\n\
                 mcp_gateway_sessions_taken_over_total {}\n",
                h.taken_over()
            ));
        }
        if eof {
            out.push_str("# EOF\n");
        }
        out
    }

    fn content_type(&self) -> &'static str {
        self.inner.content_type()
    }
}
