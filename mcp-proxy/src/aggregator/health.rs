//! The gateway's readiness, for an HTTP endpoint's `/readyz`: ready while every upstream
//! marked `required` is connected; the details name each upstream's state, revision,
//! last error and restarts.

use mcp_server::http::{Health, Readiness};
use serde_json::json;

use super::Aggregator;

impl Health for Aggregator {
    fn readiness(&self) -> Readiness {
        let status = self.status();
        let ready = status.iter().all(|u| u.connected || !u.required);
        let upstreams: Vec<_> = status
            .iter()
            .map(|u| {
                json!({
                    "key": u.key,
                    "connected": u.connected,
                    "required": u.required,
                    "revision": u.revision.map(|r| r.as_str()),
                    "lastError": u.last_error.as_ref().map(ToString::to_string),
                    "lastErrorKind": u.last_error.as_ref().map(crate::upstream_error::UpstreamError::kind),
                    "restarts": u.restarts,
                    "sessionRenewals": u.session_renewals,
                    "hostSessions": u.host_sessions,
                    "principalConnections": u.principal_connections,
                    "pooledSessions": u.pooled_sessions,
                    "pooledWaiting": u.pooled_waiting,
                })
            })
            .collect();
        Readiness::new(ready, json!({ "upstreams": upstreams }))
    }
}
