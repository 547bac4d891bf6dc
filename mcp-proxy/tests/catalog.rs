//! The merged catalog: resources and templates page like tools; an upstream whose tools
//! cannot be listed is reported as failing, not as one with no tools; careless tool
//! definitions reach every host as object schemas (TOOL-08).

use mcp_client::{ClientOptions, EraChoice};
use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig};
use mcp_server::{RequestContext, ServerHandler};
use mcp_types::protocol::*;
use mcp_types::{ErrorObject, Revision};
use serde_json::json;

mod common;
use common::*;

/// Five resources and three templates; or, `broken`, a `tools/list` that always fails.
struct Library {
    broken: bool,
}

#[async_trait::async_trait]
impl ServerHandler for Library {
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities {
            resources: Some(Default::default()),
            ..tools_only()
        }
    }

    async fn list_tools(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        if self.broken {
            return Err(ErrorObject::new(-32603, "the tool index is corrupt"));
        }
        Ok(ListToolsResult::default())
    }

    async fn list_resources(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListResourcesResult, ErrorObject> {
        Ok(ListResourcesResult {
            resources: (0..5)
                .map(|n| Resource {
                    uri: format!("book://{n}"),
                    name: format!("book {n}"),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
    }

    async fn list_resource_templates(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListResourceTemplatesResult, ErrorObject> {
        Ok(ListResourceTemplatesResult {
            resource_templates: (0..3)
                .map(|n| ResourceTemplate {
                    uri_template: format!("shelf{n}://{{id}}"),
                    name: format!("shelf {n}"),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
    }
}

fn library(broken: bool) -> UpstreamConfig {
    in_process("lib", Library { broken })
}

#[tokio::test]
async fn resources_and_templates_page_like_tools() {
    let options = AggregatorOptions::default().page_size(2);
    let agg = Aggregator::start(vec![library(false)], options)
        .await
        .expect("start");
    let client = host(&agg, mcp_client::NoHandler, Default::default()).await;
    let uris: Vec<String> = client
        .list_resources()
        .await
        .expect("every page")
        .into_iter()
        .map(|r| r.uri)
        .collect();
    assert_eq!(
        uris,
        (0..5).map(|n| format!("book://{n}")).collect::<Vec<_>>()
    );
    let templates = client.list_resource_templates().await.expect("templates");
    assert_eq!(templates.len(), 3);
    let first = client
        .request("resources/list", json!({}), &Default::default())
        .await
        .expect("page 1");
    assert_eq!(first["resources"].as_array().map(Vec::len), Some(2));
    let cursor = first["nextCursor"].as_str().expect("a next page");
    let second = client
        .request(
            "resources/list",
            json!({"cursor": cursor}),
            &Default::default(),
        )
        .await
        .expect("page 2");
    assert_eq!(second["resources"][0]["uri"], "book://2", "{second}");
    // A cursor names a place in its own list only.
    let elsewhere = client
        .request(
            "resources/templates/list",
            json!({"cursor": cursor}),
            &Default::default(),
        )
        .await;
    match elsewhere {
        Err(mcp_client::ClientError::Server(e)) => {
            assert_eq!(e.code, -32602, "{}", e.message);
            assert!(e.message.contains("list changed"), "{}", e.message);
        }
        other => panic!("a resources cursor paged the templates: {other:?}"),
    }
    client.close().await;
    agg.shutdown().await;
}

#[tokio::test]
async fn an_upstream_whose_tools_cannot_be_listed_is_failing_not_empty() {
    let agg = Aggregator::start(vec![library(true)], AggregatorOptions::default())
        .await
        .expect("a failing upstream does not stop the aggregator");
    let status = &agg.status()[0];
    assert!(!status.connected, "{status:?}");
    let error = status.last_error.as_ref().expect("why it failed");
    assert_eq!(error.kind(), "protocol", "{error}");
    let why = error.to_string();
    assert!(
        why.contains("tools/list failed") && why.contains("the tool index is corrupt"),
        "{why}"
    );
    agg.shutdown().await;
}

/// A legacy stdio upstream that lists careless definitions; a call answers with the tool's
/// name and its arguments as they came.
fn careless_script() -> String {
    common::python::python_upstream(
        "careless",
        "",
        json!([
            {"name": "nul", "inputSchema": null},
            {"name": "empty", "inputSchema": {}},
            {"name": "missing"},
            {"name": "untyped", "inputSchema": {"properties": {"x": {"type": "number"}}}},
            {"name": "scalar", "inputSchema": {"type": "string"}},
        ]),
        r#"p = msg["params"]
send({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": p["name"] + " " + json.dumps(p.get("arguments"))}]}})"#,
    )
}

#[tokio::test]
async fn careless_input_schemas_reach_every_host_as_object_schemas_and_stay_callable() {
    let careless = UpstreamConfig::new(
        "careless",
        mcp_proxy::UpstreamTransport::Stdio(mcp_client::StdioCommand::new(
            "python3",
            ["-c", &careless_script()],
        )),
    );
    let agg = Aggregator::start(vec![careless], AggregatorOptions::default())
        .await
        .expect("start");
    let no_parameters = json!({"type": "object", "additionalProperties": false});
    let eras = [
        EraChoice::Legacy(Revision::V2024_11_05),
        EraChoice::Legacy(Revision::V2025_03_26),
        EraChoice::Legacy(Revision::V2025_06_18),
        EraChoice::Legacy(Revision::V2025_11_25),
        EraChoice::Modern,
    ];
    for era in eras {
        let h = host(
            &agg,
            mcp_client::NoHandler,
            ClientOptions::default().era(era),
        )
        .await;
        let tools = h.list_tools().await.expect("tools/list");
        let schemas: Vec<(String, serde_json::Value)> = tools
            .into_iter()
            .map(|t| {
                let schema = t.input_schema.map(|s| s.to_value().expect("json"));
                (t.name, schema.unwrap_or_default())
            })
            .collect();
        assert_eq!(
            schemas,
            [
                ("careless__nul".to_owned(), no_parameters.clone()),
                ("careless__empty".to_owned(), no_parameters.clone()),
                ("careless__missing".to_owned(), no_parameters.clone()),
                (
                    "careless__untyped".to_owned(),
                    json!({"properties": {"x": {"type": "number"}}, "type": "object"})
                ),
            ],
            "{era:?}: object schemas, and no tool whose arguments cannot be an object"
        );
        for name in ["nul", "empty", "missing"] {
            let r = h
                .call_tool(&format!("careless__{name}"), serde_json::Map::new())
                .await
                .expect("answered");
            assert_eq!(text(&r.result), format!("{name} {{}}"), "{era:?}");
        }
        let mut args = serde_json::Map::new();
        args.insert("x".into(), json!(1.5));
        let r = h
            .call_tool("careless__untyped", args)
            .await
            .expect("answered");
        assert_eq!(text(&r.result), r#"untyped {"x": 1.5}"#, "{era:?}");
        h.close().await;
    }
    agg.shutdown().await;
}

/// Every page of `tools/list` a host gets, each page's tool names.
async fn pages(client: &mcp_client::Client) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = client
            .request("tools/list", params, &Default::default())
            .await
            .expect("a page");
        let names = page["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["name"].as_str().expect("a name").to_owned())
            .collect();
        pages.push(names);
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return pages,
        }
    }
}

#[tokio::test]
async fn a_large_catalog_comes_in_pages_of_the_default_size_each_tool_once_in_order() {
    let size = AggregatorOptions::DEFAULT_PAGE_SIZE;
    let n = 2 * size + 34;
    let tools = (0..n).map(|i| json!({"name": format!("t{i}"), "inputSchema": {"type": "object"}}));
    let big = in_process("big", Ran(tools.collect()));
    let agg = Aggregator::start(vec![big], Default::default())
        .await
        .expect("start");
    let client = host(&agg, mcp_client::NoHandler, Default::default()).await;
    let first = pages(&client).await;
    let lens: Vec<usize> = first.iter().map(Vec::len).collect();
    assert_eq!(lens, [size, size, 34], "pages of the default size");
    let names: Vec<String> = first.concat();
    let want: Vec<String> = (0..n).map(|i| format!("big__t{i}")).collect();
    assert_eq!(names, want, "every tool once, in the upstream's order");
    assert_eq!(pages(&client).await, first, "the same pages again");
    let typed = client
        .list_tools()
        .await
        .expect("the typed list follows pages");
    assert_eq!(typed.len(), n);
    client.close().await;
    agg.shutdown().await;
}
