//! Where the gateway's own state lives among replicas ([`GatewayPlacement`]): a call parked
//! for a host's answers is held by the replica that parked it, named by its sealed
//! `requestState`; a task by the replica that relayed it, named by its sealed task id. The
//! HTTP endpoint asks this of each request (`HttpOptions::placement`) and forwards the
//! request to that replica; legacy sessions it places itself.

use std::sync::Arc;

use mcp_server::http::Placement;
use mcp_server::seal::{Purpose, ReplicaId, Sealer};
use mcp_types::protocol::method;
use mcp_types::raw::RawObject;
use mcp_types::Message;
use memchr::memmem;

use crate::upstream_questions::STATE_PREFIX;

/// Places the gateway's `requestState`s and task ids by the replica that sealed them.
#[derive(Debug, Clone)]
pub struct GatewayPlacement {
    sealer: Arc<Sealer>,
}

impl GatewayPlacement {
    /// Placement of what `sealer`'s deployment sealed (the gateway's
    /// [`crate::AggregatorOptions::sealer`]).
    pub fn new(sealer: Arc<Sealer>) -> Self {
        GatewayPlacement { sealer }
    }
}

impl Placement for GatewayPlacement {
    fn owner(&self, message: &Message) -> Option<ReplicaId> {
        let Message::Request(r) = message else {
            return None;
        };
        let params = r.params.as_deref()?;
        let (member, purpose) = match r.method.as_str() {
            method::TASKS_GET
            | method::TASKS_RESULT
            | method::TASKS_CANCEL
            | method::TASKS_UPDATE => ("taskId", Purpose::Task),
            // Any request may be a retry: look for the member's name before reading.
            _ if memmem::find(params.get().as_bytes(), b"\"requestState\"").is_some() => {
                ("requestState", Purpose::RequestState)
            }
            _ => return None,
        };
        let params = RawObject::from_raw(params).ok()?;
        let value = params.get_str(member)?;
        let token = match purpose {
            Purpose::RequestState => value.strip_prefix(STATE_PREFIX)?,
            _ => &value,
        };
        self.sealer.open(purpose, token).ok().map(|o| o.replica)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_server::seal::SealKey;
    use mcp_types::{Request, RequestId};
    use serde_json::json;

    fn request(m: &str, params: serde_json::Value) -> Message {
        let raw = serde_json::value::to_raw_value(&params).expect("raw");
        Message::Request(Request::raw(RequestId::from(1), m, Some(raw)))
    }

    #[test]
    fn a_state_or_a_task_is_placed_with_the_replica_that_sealed_it() {
        let key = || SealKey::new("k", &[4; 32]).expect("key");
        let two = Sealer::new(vec![key()], ReplicaId(2)).expect("sealer");
        let here = GatewayPlacement::new(Arc::new(
            Sealer::new(vec![key()], ReplicaId(1)).expect("sealer"),
        ));
        let state = format!(
            "{STATE_PREFIX}{}",
            two.seal(Purpose::RequestState, 0, &[0; 48])
                .expect("sealed")
        );
        let task = two.seal(Purpose::Task, 0, &[0; 30]).expect("sealed");
        let retry = request(
            method::TOOLS_CALL,
            json!({"name": "t", "requestState": state}),
        );
        assert_eq!(here.owner(&retry), Some(ReplicaId(2)));
        let poll = request(method::TASKS_GET, json!({"taskId": task}));
        assert_eq!(here.owner(&poll), Some(ReplicaId(2)));
        // Not the gateway's, or naming nothing: served where it lands.
        for unplaced in [
            request(method::TOOLS_CALL, json!({"name": "t"})),
            request(
                method::TOOLS_CALL,
                json!({"name": "t", "requestState": "an upstream's own"}),
            ),
            request(method::TASKS_GET, json!({"taskId": "1"})),
            request(method::TASKS_GET, json!({"taskId": state})),
            request(
                method::TOOLS_CALL,
                json!({"name": "t", "requestState": format!("{STATE_PREFIX}{task}")}),
            ),
        ] {
            assert_eq!(here.owner(&unplaced), None, "{unplaced:?}");
        }
    }
}
