//! The client the official conformance suite drives: it reads the scenario from
//! `MCP_CONFORMANCE_SCENARIO`, the wire revision from `MCP_CONFORMANCE_PROTOCOL_VERSION`,
//! the server URL from its last argument, and does what the scenario asks.
//!
//! ```text
//! MCP_CONFORMANCE_SCENARIO=tools_call cargo run --example conformance-client -- http://127.0.0.1:PORT/mcp
//! ```

use async_trait::async_trait;
use mcp_client::http::{HttpConfig, HttpTransport};
use mcp_client::{Client, ClientError, ClientHandler, ClientOptions, EraChoice};
use mcp_types::protocol::*;
use mcp_types::{ErrorObject, Revision};
use serde_json::{json, Map, Value};

/// Answers what a server asks the way a cooperative user would: forms filled with their
/// defaults (or a plain value of the right type), a short model reply, one root.
struct Cooperative;

fn value_for(schema: &Value) -> Value {
    if let Some(d) = schema.get("default") {
        return d.clone();
    }
    if let Some(first) = schema.get("enum").and_then(|e| e.get(0)) {
        return first.clone();
    }
    if let Some(first) = schema
        .get("oneOf")
        .and_then(|e| e.get(0))
        .and_then(|o| o.get("const"))
    {
        return first.clone();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("boolean") => json!(true),
        Some("integer") => json!(1),
        Some("number") => json!(1.5),
        Some("array") => json!([]),
        _ => json!("test"),
    }
}

#[async_trait]
impl ClientHandler for Cooperative {
    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let props = params
            .requested_schema
            .as_ref()
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let content: Map<String, Value> = props
            .iter()
            .map(|(k, s)| (k.clone(), value_for(s)))
            .collect();
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
            ..Default::default()
        })
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        Ok(CreateMessageResult {
            role: Role::Assistant,
            content: SamplingContent::One(ContentBlock::text("Hello from the conformance client.")),
            model: "test-model".into(),
            stop_reason: Some("endTurn".into()),
            ..Default::default()
        })
    }

    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        Ok(ListRootsResult {
            roots: vec![Root {
                uri: "file:///test/root".into(),
                name: Some("Test Root".into()),
                ..Default::default()
            }],
            ..Default::default()
        })
    }
}

/// Arguments for a tool from its schema: each required property with a plain value.
fn arguments_for(tool: &Tool) -> Map<String, Value> {
    let schema: Value = tool
        .input_schema
        .as_ref()
        .and_then(|s| s.to_value().ok())
        .unwrap_or_default();
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    props
        .iter()
        .filter(|(k, _)| required.contains(&k.as_str()))
        .map(|(k, s)| (k.clone(), value_for(s)))
        .collect()
}

/// The OAuth client the `auth/*` scenarios test: dynamic registration or the suite's
/// client metadata document, pre-registered credentials when the scenario's context gives
/// them (a secret, or a key to sign assertions with), and an authorization server that
/// grants without a user. The `client-credentials` scenarios are machine clients.
fn oauth_client(scenario: &str) -> Result<mcp_client::auth::OAuth, String> {
    use mcp_client::auth::{
        ClientIdentity, ClientKey, FollowRedirects, IdJagExchange, OAuth, OAuthOptions,
        StaticAssertion,
    };
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_default();
    let text = |k: &str| context.get(k).and_then(Value::as_str);
    let mut options = OAuthOptions::new(
        "mcp-rs conformance client",
        "http://localhost:3000/callback",
    );
    options.client_metadata_url =
        Some("https://conformance-test.local/client-metadata.json".into());
    // DPoP-bound tokens wherever the authorization server takes DPoP proofs.
    options.dpop = true;
    options.client = match (
        text("client_id"),
        text("client_secret"),
        text("private_key_pem"),
    ) {
        (Some(id), Some(secret), _) => Some(ClientIdentity::with_secret(id, secret)),
        (Some(id), None, Some(pem)) => {
            let alg = text("signing_algorithm").unwrap_or("ES256");
            let key = ClientKey::from_pem(pem, alg).map_err(|e| e.to_string())?;
            Some(ClientIdentity::private_key_jwt(id, key))
        }
        (Some(id), None, None) => Some(ClientIdentity::public(id)),
        _ => None,
    };
    tracing::debug!(scenario, "authorizing as the suite's OAuth client");
    Ok(match (scenario, text("valid_jwt")) {
        (s, _) if s.starts_with("auth/client-credentials") => OAuth::client_credentials(options),
        _ if text("idp_id_token").is_some() => {
            let idp = IdJagExchange::new(
                text("idp_issuer").unwrap_or_default(),
                text("idp_token_endpoint").unwrap_or_default(),
                ClientIdentity::public(text("idp_client_id").unwrap_or_default()),
                text("idp_id_token").unwrap_or_default(),
            );
            OAuth::jwt_bearer(options, idp)
        }
        (_, Some(workload)) => OAuth::jwt_bearer(options, StaticAssertion(workload.to_owned())),
        _ => OAuth::new(options, FollowRedirects),
    })
}

async fn run(scenario: &str, url: &str, revision: Revision) -> Result<(), ClientError> {
    let era = if revision == Revision::V2026_07_28 {
        EraChoice::Modern
    } else {
        EraChoice::Legacy(revision)
    };
    let options = ClientOptions::default()
        .with_elicitation()
        .with_sampling()
        .with_roots()
        .era(era);
    let mut config = HttpConfig::new(url);
    if scenario.starts_with("auth/") {
        let oauth = oauth_client(scenario).map_err(ClientError::Negotiation)?;
        config.auth = Some(std::sync::Arc::new(oauth));
    }
    let transport =
        HttpTransport::new(config).map_err(|e| ClientError::Negotiation(e.to_string()))?;
    let client = Client::connect(transport, Cooperative, options).await?;
    let obj = |v: Value| v.as_object().cloned().unwrap_or_default();
    match scenario {
        "initialize" => {}
        "tools_call" => {
            client.list_tools().await?;
            client
                .call_tool("add_numbers", obj(json!({"a": 5, "b": 3})))
                .await?;
        }
        "elicitation-sep1034-client-defaults" => {
            client
                .call_tool("test_client_elicitation_defaults", Map::new())
                .await?;
        }
        "sse-retry" => {
            client.call_tool("test_reconnection", Map::new()).await?;
        }
        "sep-2322-client-request-state" => {
            for t in [
                "test_mrtr_echo_state",
                "test_mrtr_no_state",
                "test_mrtr_unrelated",
                "test_mrtr_no_result_type",
            ] {
                client.call_tool(t, Map::new()).await?;
            }
        }
        "http-standard-headers" => {
            for t in client.list_tools().await? {
                let args = arguments_for(&t);
                client.call_tool(&t.name, args).await?;
            }
            for r in client.list_resources().await? {
                client.read_resource(&r.uri).await?;
            }
            for p in client.list_prompts().await? {
                client.get_prompt(&p.name, Map::new()).await?;
            }
        }
        "http-custom-headers" => {
            client.list_tools().await?;
            let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
                .ok()
                .and_then(|c| serde_json::from_str(&c).ok())
                .unwrap_or_default();
            for call in context
                .get("toolCalls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
                let args = call.get("arguments").cloned().map(obj).unwrap_or_default();
                client.call_tool(name, args).await?;
            }
        }
        "http-invalid-tool-headers" => {
            // Tools with invalid x-mcp-header annotations are dropped by the client; call the rest.
            for t in client.list_tools().await? {
                let args = arguments_for(&t);
                client.call_tool(&t.name, args).await?;
            }
        }
        "json-schema-2020-12-preservation" => {
            let tools = client.list_tools().await?;
            if let Some(schema) = tools
                .iter()
                .find(|t| t.name == "json_schema_2020_12_tool")
                .and_then(|t| t.input_schema.clone())
            {
                client
                    .call_tool("json_schema_echo", obj(json!({"schema": schema})))
                    .await?;
            }
        }
        _ => {
            // request-metadata, json-schema-ref-no-deref and anything new: list, and call what is listed.
            for t in client.list_tools().await? {
                let args = arguments_for(&t);
                let _ = client.call_tool(&t.name, args).await;
            }
        }
    }
    client.close().await;
    Ok(())
}

#[tokio::main]
async fn main() {
    mcp_examples::init_logging();
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let revision = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
        .ok()
        .and_then(|v| Revision::parse(&v).ok())
        .unwrap_or(Revision::LATEST_LEGACY);
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance-client URL (with MCP_CONFORMANCE_SCENARIO set)");
        std::process::exit(2);
    };
    if let Err(e) = run(&scenario, &url, revision).await {
        eprintln!("conformance-client: {scenario}: {e}");
        std::process::exit(1);
    }
}
