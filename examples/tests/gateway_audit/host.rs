//! The hosts of the audit run: our client over Streamable HTTP with an API key, keeping
//! every message it sends.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_client::http::{HttpConfig, HttpTransport};
use mcp_client::{CallOptions, Client, ClientHandler, ClientOptions, EraChoice, NoHandler};
use mcp_types::protocol::{ElicitAction, ElicitRequestParams, ElicitResult};
use mcp_types::raw::RawObject;
use mcp_types::transport::{CloseReason, Closed, Incoming, Transport, TrySendError};
use mcp_types::{ErrorObject, Frame, Message};
use serde_json::{json, Value};

use super::trail::*;

/// A Streamable HTTP transport that keeps every message its client sends (to read the
/// ids and the exact params it wrote).
pub(crate) struct Wire {
    pub(crate) inner: HttpTransport,
    pub(crate) sent: Arc<Mutex<Vec<Message>>>,
}

impl Wire {
    pub(crate) fn keep(&self, frame: &Frame) {
        if let Ok(mut s) = self.sent.lock() {
            s.extend(frame.clone().into_messages());
        }
    }
}

#[async_trait]
impl Transport for Wire {
    async fn send(&self, frame: Frame) -> Result<(), Closed> {
        self.keep(&frame);
        self.inner.send(frame).await
    }
    fn try_send(&self, frame: Frame) -> Result<(), TrySendError> {
        self.keep(&frame);
        self.inner.try_send(frame)
    }
    async fn recv(&self) -> Result<Incoming, Closed> {
        self.inner.recv().await
    }
    async fn close(&self) {
        self.inner.close().await
    }
    fn close_reason(&self) -> Option<CloseReason> {
        self.inner.close_reason()
    }
    fn mirrors_tool_headers(&self) -> bool {
        self.inner.mirrors_tool_headers()
    }
    fn tools_listed(&self, tools: &[mcp_types::protocol::Tool]) {
        self.inner.tools_listed(tools)
    }
    fn max_message_bytes(&self) -> Option<usize> {
        self.inner.max_message_bytes()
    }
}

/// A host whose user declines whatever it is asked.
pub(crate) struct Decline;

#[async_trait]
impl ClientHandler for Decline {
    async fn elicit(&self, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        Ok(ElicitResult {
            action: ElicitAction::Decline,
            ..Default::default()
        })
    }
}

/// A host of the gateway: our client with its principal's API key, and what it sent.
pub(crate) struct Host {
    pub(crate) who: &'static str,
    pub(crate) client: Client,
    pub(crate) sent: Arc<Mutex<Vec<Message>>>,
    pub(crate) calls: Vec<Call>,
    pub(crate) traces: u32,
    /// A 2026 host that elicits: its requests go through the client's rounds.
    pub(crate) rounds: bool,
}

impl Host {
    /// `who`'s host, in `era`; `elicits`: it declares elicitation, and declines.
    pub(crate) async fn connect(
        url: &str,
        who: &'static str,
        era: EraChoice,
        elicits: bool,
    ) -> Host {
        let config = HttpConfig::new(url).headers(vec![(
            "Authorization".into(),
            format!("Bearer {}", key_of(who)),
        )]);
        let sent = Arc::new(Mutex::new(Vec::new()));
        let wire = Wire {
            inner: HttpTransport::new(config).expect("transport"),
            sent: sent.clone(),
        };
        let options = ClientOptions::default()
            .era(era)
            .request_timeout(Some(Duration::from_secs(20)));
        let connecting = match elicits {
            true => Client::connect(wire, Decline, options.with_elicitation()).await,
            false => Client::connect(wire, NoHandler, options).await,
        };
        let client = connecting.unwrap_or_else(|e| panic!("{who} connects: {e}"));
        Host {
            who,
            client,
            sent,
            calls: Vec::new(),
            traces: 0,
            rounds: elicits && era == EraChoice::Modern,
        }
    }

    /// The [`MATRIX`] of requests, in order; `limited`: the rate-limited tool it calls
    /// twice.
    pub(crate) async fn matrix(&mut self, limited: &'static str) {
        let s = self.secret_tag();
        self.call("ok", "shop__ok", Some(r#"{"n":1}"#), false).await;
        // Not as serde_json writes it (spaces, members out of order): the digest must be
        // of these bytes.
        let secrets = format!(
            r#"{{"query": {{"sql": "SELECT sql_SECRET_{s}", "limit": 5}}, "password": "p-SECRET-{s}", "auth": {{"token": "t-SECRET-{s}", "user": "u-{s}"}}, "ssn": "ssn-SECRET-{s}", "note": "n-visible-{s}", "keep": "visible"}}"#
        );
        self.call("secrets", "shop__secrets", Some(&secrets), true)
            .await;
        let special = format!(r#"{{"note":"n-SECRET-{s}","keep":"visible"}}"#);
        self.call("special", "shop__special", Some(&special), true)
            .await;
        self.call("view", "shop__hidden", Some(r#"{"x":1}"#), true)
            .await;
        self.call("unknown", "shop__nope", Some("{}"), true).await;
        self.call("pin", "shop__pinned", Some("{}"), true).await;
        self.call("confirm", "shop__danger", Some(r#"{"id":7}"#), true)
            .await;
        self.call("limited", limited, Some("{}"), true).await;
        self.call("limited again", limited, Some("{}"), true).await;
        self.call("rpc error", "shop__rpcfail", Some("{}"), true)
            .await;
        self.call("is error", "shop__iserror", Some("{}"), true)
            .await;
        let prompt = Some(r#"{"who": "Ada"}"#);
        self.request("prompt", "prompts/get", "name", "shop__greet", prompt, true)
            .await;
        let uri = "shop://catalog";
        self.request("resource", "resources/read", "uri", uri, None, true)
            .await;
    }

    /// Calls the tool that needs confirmation and the changed pinned one; the user
    /// declines both.
    pub(crate) async fn declines(&mut self) {
        self.call("asked confirm", "shop__danger", Some(r#"{"id":8}"#), true)
            .await;
        self.call("asked pin", "shop__pinned", Some("{}"), true)
            .await;
    }

    /// What marks this host's secret values.
    pub(crate) fn secret_tag(&self) -> &'static str {
        match self.who {
            "alice" => "A",
            "bob" => "B",
            "carol" => "C",
            _ => "D",
        }
    }

    pub(crate) async fn call(
        &mut self,
        label: &'static str,
        tool: &str,
        arguments: Option<&str>,
        traced: bool,
    ) {
        self.request(label, "tools/call", "name", tool, arguments, traced)
            .await;
    }

    /// Sends `method` with params `{"<key>": name, "arguments": …, "_meta": {traceparent}}`
    /// written here as text (a 2026 host that elicits sends them through the client's
    /// rounds, which answer its questions and retry), and notes what went on the wire and
    /// what came back.
    async fn request(
        &mut self,
        label: &'static str,
        method: &'static str,
        key: &str,
        name: &str,
        arguments: Option<&str>,
        traced: bool,
    ) {
        let mut text = format!("{{\"{key}\":{}", json!(name));
        if let Some(a) = arguments {
            text.push_str(",\"arguments\":");
            text.push_str(a);
        }
        let mut trace = None;
        if traced {
            self.traces += 1;
            let prefix = match self.who {
                "alice" => "a11ce",
                "bob" => "b0b00",
                "carol" => "ca201",
                _ => "da4e0",
            };
            let id = format!("{prefix}{:027x}", self.traces);
            text.push_str(&format!(
                ",\"_meta\":{{\"traceparent\":\"00-{id}-00f067aa0ba902b7-01\"}}"
            ));
            trace = Some(id);
        }
        text.push('}');
        let before = self.sent.lock().expect("lock").len();
        let rounds = self.rounds;
        let options = CallOptions::default();
        let answer = match rounds {
            true => {
                let params: Value = serde_json::from_str(&text).expect("params");
                self.client.request(method, params, &options).await
            }
            false => {
                let params = RawObject::parse(&text).expect("params");
                let raw = self.client.request_raw(method, params, &options).await;
                raw.map(|r| serde_json::from_str::<Value>(r.get()).expect("a JSON result"))
            }
        }
        .map_err(|e| e.to_string());
        let sent: Vec<mcp_types::jsonrpc::Request> = self.sent.lock().expect("lock")[before..]
            .iter()
            .filter_map(|m| match m {
                Message::Request(r) if r.method == method => Some(r.clone()),
                _ => None,
            })
            .collect();
        let params = sent
            .first()
            .and_then(|r| r.params.as_deref())
            .unwrap_or_else(|| panic!("{}: {label} was sent", self.who));
        let on_wire = RawObject::from_raw(params)
            .expect("params object")
            .get("arguments")
            .map(|a| a.get().to_owned());
        if !rounds {
            assert_eq!(sent.len(), 1, "{}: {label} went as one request", self.who);
            assert_eq!(
                on_wire.as_deref(),
                arguments,
                "{}: the client sent the arguments as written",
                self.who
            );
        }
        self.calls.push(Call {
            who: self.who,
            label,
            method,
            name: name.to_owned(),
            ids: sent.iter().map(|r| r.id.to_string()).collect(),
            arguments: on_wire,
            trace,
            answer,
        });
    }
}

// ---------------------------------------------------------------------------------------
// Reading the trail.
// ---------------------------------------------------------------------------------------
