//! What replicas tell each other: an upstream's lists changed (heard on one replica's own
//! connection to it), so that the hosts of every replica hear of it, each told by its own
//! replica, through its own views.

use mcp_server::http::PeerNotices;
use mcp_server::seal::ReplicaId;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::catalog::ListsChanged;
use super::Aggregator;

/// The notice that upstream `key`'s lists `changed`.
pub(super) fn notice(key: &str, changed: ListsChanged) -> Value {
    json!({
        "listsChanged": {
            "upstream": key,
            "tools": changed.tools,
            "prompts": changed.prompts,
            "resources": changed.resources,
        }
    })
}

/// The notice that a consent of upstream `key`'s users (elicitation `id`) completed.
pub(crate) fn elicitation_notice(key: &str, id: &str) -> Value {
    json!({"elicitationComplete": {"upstream": key, "elicitationId": id}})
}

/// What an elicitation notice says: the upstream's key and the elicitation's id.
fn read_elicitation(notice: &RawValue) -> Option<(String, String)> {
    #[derive(serde::Deserialize)]
    struct Notice {
        #[serde(rename = "elicitationComplete")]
        complete: Complete,
    }
    #[derive(serde::Deserialize)]
    struct Complete {
        upstream: String,
        #[serde(rename = "elicitationId")]
        id: String,
    }
    let n: Notice = serde_json::from_str(notice.get()).ok()?;
    Some((n.complete.upstream, n.complete.id))
}

/// What a notice says: the upstream's key and the lists.
fn read(notice: &RawValue) -> Option<(String, ListsChanged)> {
    #[derive(serde::Deserialize)]
    struct Notice {
        #[serde(rename = "listsChanged")]
        lists_changed: Lists,
    }
    #[derive(serde::Deserialize)]
    struct Lists {
        upstream: String,
        #[serde(default)]
        tools: bool,
        #[serde(default)]
        prompts: bool,
        #[serde(default)]
        resources: bool,
    }
    let n: Notice = serde_json::from_str(notice.get()).ok()?;
    let l = n.lists_changed;
    let changed = ListsChanged {
        tools: l.tools,
        prompts: l.prompts,
        resources: l.resources,
    };
    Some((l.upstream, changed))
}

impl PeerNotices for Aggregator {
    fn received(&self, from: ReplicaId, notice: &RawValue) {
        if let Some((key, id)) = read_elicitation(notice) {
            let credentials = self
                .inner
                .pool
                .id_of(&key)
                .and_then(|i| self.inner.pool.get(i).config.per_user.clone());
            if let Some(per_user) = credentials {
                tracing::debug!(replica = %from, upstream = %key, "a consent completed on another replica");
                tokio::spawn(async move { per_user.credentials.elicitation_completed(&id).await });
            }
            return;
        }
        let Some((key, changed)) = read(notice) else {
            tracing::warn!(replica = %from, "a replica's notice this one does not read");
            return;
        };
        // An upstream this replica does not have (configurations differ): nobody to tell.
        if let Some(i) = self.inner.pool.id_of(&key) {
            tracing::debug!(replica = %from, upstream = %key, "lists changed on another replica");
            self.inner.announcer.announce(i, changed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_reads_back_as_written() {
        let changed = ListsChanged {
            tools: true,
            resources: true,
            ..Default::default()
        };
        let text = serde_json::value::to_raw_value(&notice("files", changed)).expect("raw");
        assert_eq!(read(&text), Some(("files".into(), changed)));
        let junk = serde_json::value::to_raw_value(&json!({"other": 1})).expect("raw");
        assert_eq!(read(&junk), None);
        let done = serde_json::value::to_raw_value(&elicitation_notice("desk", "e1")).expect("raw");
        assert_eq!(read_elicitation(&done), Some(("desk".into(), "e1".into())));
        assert_eq!(read(&done), None);
        assert_eq!(read_elicitation(&junk), None);
    }
}
