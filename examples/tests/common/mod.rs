//! Helpers shared by the examples crate's end-to-end tests.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mcp_types::transport::{CloseReason, Closed, Incoming, Transport};
use mcp_types::{Frame, Message, RequestId, Revision};
use serde_json::Value;

#[path = "../../../mcp-revisions/tests/common/schemas.rs"]
mod schemas;

/// Records every message a side sends and, if asked, every message it receives.
pub struct Recording<T> {
    pub inner: T,
    pub sent: Arc<Mutex<Vec<Message>>>,
    pub received: Option<Arc<Mutex<Vec<Message>>>>,
}

#[async_trait]
impl<T: Transport> Transport for Recording<T> {
    async fn send(&self, frame: &Frame) -> Result<(), Closed> {
        if let Ok(mut s) = self.sent.lock() {
            s.extend(frame.clone().into_messages());
        }
        self.inner.send(frame).await
    }
    async fn recv(&self) -> Result<Incoming, Closed> {
        let got = self.inner.recv().await;
        if let (Some(log), Ok(Incoming::Frame(f))) = (&self.received, &got) {
            if let Ok(mut r) = log.lock() {
                r.extend(f.clone().into_messages());
            }
        }
        got
    }
    async fn close(&self) {
        self.inner.close().await
    }
    fn close_reason(&self) -> Option<CloseReason> {
        self.inner.close_reason()
    }
}

/// Every message written validates against `revision`'s schema.
pub fn validate_all(revision: Revision, client_sent: &[Message], server_sent: &[Message]) {
    let Some(dir) = schemas::spec_dir() else {
        eprintln!("SKIPPED schema validation: no MCP spec folder (set MCP_SPEC_DIR)");
        return;
    };
    let all = schemas::Schemas::load(&dir);
    let doc = schemas::doc_for(&all, revision);
    let mut failures = Vec::new();
    for (sent, answered_by) in [(client_sent, server_sent), (server_sent, client_sent)] {
        let methods: HashMap<RequestId, String> = answered_by
            .iter()
            .filter_map(|m| match m {
                Message::Request(r) => Some((r.id.clone(), r.method.clone())),
                _ => None,
            })
            .collect();
        for msg in sent {
            let v: Value = serde_json::from_slice(&msg.to_bytes()).expect("json");
            let (def, value) = match msg {
                Message::Request(r) => (doc.method_def(&r.method).map(str::to_owned), v.clone()),
                Message::Notification(n) => {
                    (doc.method_def(&n.method).map(str::to_owned), v.clone())
                }
                Message::Response(r) => {
                    let m = methods.get(&r.id).cloned().unwrap_or_default();
                    let def = if v["result"]["resultType"] == "input_required" {
                        Some("InputRequiredResult".to_owned())
                    } else {
                        schemas::result_def_for(doc, &m)
                    };
                    (def, v["result"].clone())
                }
                Message::Error(_) => {
                    let d = if revision >= Revision::V2025_11_25 {
                        "JSONRPCErrorResponse"
                    } else {
                        "JSONRPCError"
                    };
                    (Some(d.to_owned()), v.clone())
                }
            };
            match def {
                Some(d) => {
                    if let Err(e) = doc.validate(&d, &value) {
                        failures.push(format!("{revision}: {v} is not a valid {d}: {e}"));
                    }
                }
                None => failures.push(format!("{revision}: {v}: no schema definition for it")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
