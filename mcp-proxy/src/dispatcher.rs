//! The dispatcher surface (TOOL-24): four tools in place of every upstream tool, so a
//! host's context carries four schemas however many upstreams the gateway has. A model
//! finds a tool among thousands with `search_tools` (ranked by [`crate::search`]) or
//! browses with `list_tools`; the upstream tools stay reachable, with the same policy,
//! through `call_tool`.

use async_trait::async_trait;
use mcp_server::{Outcome, RequestContext};
use mcp_types::protocol::*;
use mcp_types::raw::Exact;
use mcp_types::ErrorObject;
use serde_json::{json, Map, Value};

/// One upstream as the dispatcher lists it.
pub(crate) struct Namespace {
    /// Its namespace.
    pub(crate) name: String,
    /// Its configuration key.
    pub(crate) upstream: String,
    /// Whether it is connected.
    pub(crate) available: bool,
}

/// What the dispatcher reaches, for the principal of a request: the catalog it sees
/// and the call relay, with every gate (the aggregator is one).
#[async_trait]
pub(crate) trait Catalogue: Send + Sync {
    /// The upstreams the principal reaches, in catalog order.
    fn namespaces(&self, ctx: &RequestContext) -> Vec<Namespace>;
    /// `(namespace, tool)` of each tool the principal sees, in catalog order, with the
    /// names hosts call them by.
    fn tools(&self, ctx: &RequestContext) -> Vec<(String, Exact<Tool>)>;
    /// The tools the principal sees that best match `query`, best first: at most
    /// `limit` of them after the first `skip`.
    fn search(
        &self,
        ctx: &RequestContext,
        query: &str,
        skip: usize,
        limit: usize,
    ) -> Vec<(String, Exact<Tool>)>;
    /// Calls the tool hosts know as `name`, through the same gates as a direct call.
    async fn call(
        &self,
        ctx: &RequestContext,
        name: &str,
        arguments: Option<Map<String, Value>>,
        meta: Option<Map<String, Value>>,
    ) -> Result<Outcome<CallToolResult>, ErrorObject>;
}

/// Lists namespaces and their tools.
pub const LIST_TOOLS: &str = "list_tools";
/// Gives one tool's full definition.
pub const DESCRIBE_TOOL: &str = "describe_tool";
/// Calls one upstream tool.
pub const CALL_TOOL: &str = "call_tool";
/// Finds tools by what they do.
pub const SEARCH_TOOLS: &str = "search_tools";

/// Results per page of `search_tools`, unless it asks for fewer.
const SEARCH_PAGE: usize = 10;
/// Most results one page of `search_tools` gives.
const SEARCH_PAGE_MAX: usize = 50;
/// Longest one-line description a search result carries.
const SUMMARY_CHARS: usize = 160;

/// Whether `name` is one of the dispatcher's own tools.
pub(crate) fn is_own_tool(name: &str) -> bool {
    matches!(name, LIST_TOOLS | DESCRIBE_TOOL | CALL_TOOL | SEARCH_TOOLS)
}

/// The dispatcher tools, with honest titles and annotations (TOOL-04/05/19).
pub(crate) fn tools() -> Vec<Tool> {
    [
        json!({
            "name": SEARCH_TOOLS,
            "title": "Search gateway tools",
            "description": "Finds the tools that match what you need, best first: give a few words saying what you want done (\"create an issue in a repository\"). Returns names, titles and one-line descriptions; use describe_tool for a tool's parameters, then call_tool. Give `cursor` from a result's `nextCursor` for more.",
            "inputSchema": {"type": "object", "properties": {
                "query": {"type": "string", "description": "What the tool should do, in a few words."},
                "limit": {"type": "integer", "minimum": 1, "maximum": SEARCH_PAGE_MAX, "description": "Most results to return (default 10)."},
                "cursor": {"type": "string", "description": "A previous result's `nextCursor`, for the results after it."}
            }, "required": ["query"], "additionalProperties": false},
            "annotations": {"title": "Search gateway tools", "readOnlyHint": true, "openWorldHint": false}
        }),
        json!({
            "name": LIST_TOOLS,
            "title": "List gateway tools",
            "description": "Lists the namespaces this gateway serves and the tools in each (name and title). Give `namespace` to list only that one. Use describe_tool for a tool's parameters, then call_tool.",
            "inputSchema": {"type": "object", "properties": {
                "namespace": {"type": "string", "description": "Only this namespace."}
            }, "additionalProperties": false},
            "annotations": {"title": "List gateway tools", "readOnlyHint": true, "openWorldHint": false}
        }),
        json!({
            "name": DESCRIBE_TOOL,
            "title": "Describe a gateway tool",
            "description": "Returns the full definition of one tool listed by list_tools: description, input schema, output schema and annotations.",
            "inputSchema": {"type": "object", "properties": {
                "name": {"type": "string", "description": "The tool's name as list_tools gives it."}
            }, "required": ["name"], "additionalProperties": false},
            "annotations": {"title": "Describe a gateway tool", "readOnlyHint": true, "openWorldHint": false}
        }),
        json!({
            "name": CALL_TOOL,
            "title": "Call a gateway tool",
            "description": "Calls one tool listed by list_tools with arguments matching its input schema, and returns that tool's result. What it does depends on the tool called: treat it as able to change or delete data.",
            "inputSchema": {"type": "object", "properties": {
                "name": {"type": "string", "description": "The tool's name as list_tools gives it."},
                "arguments": {"type": "object", "description": "The tool's arguments."}
            }, "required": ["name"], "additionalProperties": false},
            // What the called tool does is unknown here: the spec defaults (destructive,
            // open world) are the honest hints.
            "annotations": {"title": "Call a gateway tool", "readOnlyHint": false, "openWorldHint": true}
        }),
    ]
    .into_iter()
    .filter_map(|v| serde_json::from_value(v).ok())
    .collect()
}

fn text_result(value: &Value) -> CallToolResult {
    CallToolResult {
        content: vec![ContentBlock::text(
            serde_json::to_string_pretty(value).unwrap_or_default(),
        )],
        ..Default::default()
    }
}

fn refused(text: String) -> Result<Outcome<CallToolResult>, ErrorObject> {
    Ok(Outcome::Complete(CallToolResult {
        content: vec![ContentBlock::text(text)],
        is_error: Some(true),
        ..Default::default()
    }))
}

fn string_arg<'a>(p: &'a CallToolRequestParams, key: &str) -> Option<&'a str> {
    p.arguments.as_ref()?.get(key)?.as_str()
}

/// Answers a call to a dispatcher tool; `None` when `p` names another tool.
pub(crate) async fn call(
    agg: &dyn Catalogue,
    ctx: &RequestContext,
    p: &CallToolRequestParams,
) -> Option<Result<Outcome<CallToolResult>, ErrorObject>> {
    Some(match p.name.as_str() {
        LIST_TOOLS => {
            let only = string_arg(p, "namespace");
            let tools = agg.tools(ctx);
            let namespaces: Vec<Value> = agg
                .namespaces(ctx)
                .into_iter()
                .filter(|n| only.is_none_or(|o| o == n.name))
                .map(|n| {
                    let listed: Vec<Value> = tools
                        .iter()
                        .filter(|(ns, _)| *ns == n.name)
                        .map(|(_, t)| json!({"name": t.name, "title": t.display_name()}))
                        .collect();
                    json!({"namespace": n.name, "upstream": n.upstream,
                           "available": n.available, "tools": listed})
                })
                .collect();
            match (only, namespaces.is_empty()) {
                (Some(o), true) => refused(format!(
                    "No namespace {o:?}; call list_tools without arguments to see them all."
                )),
                _ => Ok(Outcome::Complete(text_result(
                    &json!({"namespaces": namespaces}),
                ))),
            }
        }
        SEARCH_TOOLS => search(agg, ctx, p),
        DESCRIBE_TOOL => {
            let Some(name) = string_arg(p, "name") else {
                return Some(refused("describe_tool needs `name` (a string).".into()));
            };
            match agg.tools(ctx).into_iter().find(|(_, t)| t.name == name) {
                Some((_, t)) => Ok(Outcome::Complete(text_result(&json!(t)))),
                None => refused(format!("No tool {name:?}; call list_tools to see them.")),
            }
        }
        CALL_TOOL => {
            let Some(name) = string_arg(p, "name") else {
                return Some(refused("call_tool needs `name` (a string).".into()));
            };
            let arguments = match p.arguments.as_ref().and_then(|a| a.get("arguments")) {
                None | Some(Value::Null) => Some(Map::new()),
                Some(Value::Object(a)) => Some(a.clone()),
                Some(_) => {
                    return Some(refused("call_tool: `arguments` must be an object.".into()))
                }
            };
            match agg.call(ctx, name, arguments, p.meta.clone()).await {
                // An unknown or denied name is the model's mistake, not a protocol error.
                Err(e) if e.code == mcp_types::codes::INVALID_PARAMS => refused(e.message),
                other => other,
            }
        }
        _ => return None,
    })
}

/// `search_tools`: a page of the best matches for the query, with the cursor of the next.
fn search(
    agg: &dyn Catalogue,
    ctx: &RequestContext,
    p: &CallToolRequestParams,
) -> Result<Outcome<CallToolResult>, ErrorObject> {
    let Some(query) = string_arg(p, "query") else {
        return refused("search_tools needs `query` (a string).".into());
    };
    let args = p.arguments.as_ref();
    let limit = match args.and_then(|a| a.get("limit")) {
        None | Some(Value::Null) => SEARCH_PAGE,
        Some(v) => match v
            .as_u64()
            .filter(|n| (1..=SEARCH_PAGE_MAX as u64).contains(n))
        {
            Some(n) => n as usize,
            None => {
                return refused(format!(
                    "search_tools: `limit` must be an integer from 1 to {SEARCH_PAGE_MAX}."
                ))
            }
        },
    };
    let skip = match args.and_then(|a| a.get("cursor")) {
        None | Some(Value::Null) => 0,
        Some(v) => match v.as_str().and_then(|c| c.parse::<usize>().ok()) {
            Some(n) => n,
            None => return refused("search_tools: `cursor` is not one it gave.".into()),
        },
    };
    // One more than the page: whether there is a next page.
    let mut found = agg.search(ctx, query, skip, limit + 1);
    let more = found.len() > limit;
    found.truncate(limit);
    let tools: Vec<Value> = found
        .iter()
        .map(|(ns, t)| {
            json!({"name": t.name, "title": t.display_name(), "namespace": ns,
                   "description": summary(t.description.as_deref())})
        })
        .collect();
    let mut out = json!({"tools": tools});
    if more {
        out["nextCursor"] = json!((skip + limit).to_string());
    }
    Ok(Outcome::Complete(text_result(&out)))
}

/// The first line of `description`, at most [`SUMMARY_CHARS`] characters.
fn summary(description: Option<&str>) -> String {
    let line = description
        .unwrap_or("")
        .lines()
        .next()
        .unwrap_or("")
        .trim();
    match line.char_indices().nth(SUMMARY_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}
