//! A server's lists (tools, prompts, resources, resource templates), every page of them.
//!
//! Items are read as the server wrote them and kept so ([`Exact`]): a relay lists an
//! upstream once and passes each definition on with its key order, number literals and
//! unknown members intact (TOOL-07). The typed lists are the same, decoded.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use mcp_types::protocol::*;
use mcp_types::raw::{self, Exact, RawObject};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::{CallOptions, Client, ClientError, Listed, OutputSchema};

/// One page of a list, read one level deep.
struct Page<T> {
    items: Vec<Exact<T>>,
    next: Option<String>,
    ttl: Option<Duration>,
}

fn invalid(method: &str, reason: impl Into<String>) -> ClientError {
    ClientError::InvalidResult {
        method: method.into(),
        reason: reason.into(),
    }
}

/// The items (member `key`) of one page of `method`, its `nextCursor` and its `ttlMs`.
fn read_page<T: DeserializeOwned>(
    method: &str,
    key: &str,
    page: &RawValue,
) -> Result<Page<T>, ClientError> {
    let obj = RawObject::from_raw(page).map_err(|e| invalid(method, e.to_string()))?;
    let list = obj
        .get(key)
        .ok_or_else(|| invalid(method, format!("no `{key}`")))?;
    let items = raw::array(list)
        .map_err(|e| invalid(method, format!("`{key}`: {e}")))?
        .into_iter()
        .map(|item| Exact::read(item.to_owned()))
        .collect::<Result<Vec<Exact<T>>, _>>()
        .map_err(|e| invalid(method, format!("an item of `{key}`: {e}")))?;
    let next = match obj.get("nextCursor") {
        None => None,
        Some(c) if c.get() == "null" => None,
        Some(c) => Some(
            raw::as_str(c)
                .ok_or_else(|| invalid(method, "`nextCursor` is not a string"))?
                .into_owned(),
        ),
    };
    let ttl = obj
        .get_as::<Value>("ttlMs")
        .and_then(Result::ok)
        .and_then(|t| t.as_u64())
        .filter(|t| *t > 0)
        .map(Duration::from_millis);
    Ok(Page { items, next, ttl })
}

impl Client {
    /// Every item of list `method` (member `key` of its pages), following `nextCursor` to
    /// the end, each as the server wrote it. The first page's `ttlMs` stands for the list.
    async fn paginate<T: DeserializeOwned>(
        &self,
        method: &str,
        key: &str,
    ) -> Result<Listed<Exact<T>>, ClientError> {
        let mut all = Vec::new();
        let mut ttl = None;
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        loop {
            let mut params = RawObject::new();
            if let Some(c) = &cursor {
                params.insert_str("cursor", c);
            }
            let answer = self
                .request_raw(method, params, &CallOptions::default())
                .await?;
            let page = read_page::<T>(method, key, &answer)?;
            if cursor.is_none() {
                ttl = page.ttl;
            }
            all.extend(page.items);
            match page.next {
                // A cursor seen before would loop forever.
                Some(c) if seen.insert(c.clone()) => cursor = Some(c),
                Some(c) => {
                    return Err(invalid(method, format!("the server repeated cursor {c:?}")))
                }
                None => return Ok(Listed { items: all, ttl }),
            }
        }
    }

    /// Every tool, following `nextCursor` to the end. Output schemas are remembered to check
    /// later results.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, ClientError> {
        Ok(typed(self.list_tools_exact().await?.items))
    }

    /// [`Client::list_tools`], with how long the server said the list stays valid (2026
    /// `ttlMs`), from the same requests.
    pub async fn list_tools_listed(&self) -> Result<Listed<Tool>, ClientError> {
        let listed = self.list_tools_exact().await?;
        Ok(Listed {
            items: typed(listed.items),
            ttl: listed.ttl,
        })
    }

    /// [`Client::list_tools_listed`] with each tool as the server wrote it.
    pub async fn list_tools_exact(&self) -> Result<Listed<Exact<Tool>>, ClientError> {
        let Listed {
            items: mut tools,
            ttl,
        } = self.paginate::<Tool>(method::TOOLS_LIST, "tools").await?;
        let transport = self.peer.transport();
        if transport.mirrors_tool_headers() {
            // TOOL-09: over HTTP, a tool whose x-mcp-header annotations are invalid is dropped.
            tools.retain(|t| {
                match mcp_types::headers::listed_header_params(t.input_schema.as_ref()) {
                    Ok(_) => true,
                    Err(why) => {
                        tracing::warn!(tool = %t.name, "dropping tool with invalid x-mcp-header: {why}");
                        false
                    }
                }
            });
            let decoded: Vec<Tool> = tools.iter().map(|t| t.value().clone()).collect();
            transport.tools_listed(&decoded);
        }
        self.remember(&tools);
        Ok(Listed { items: tools, ttl })
    }

    /// What later calls need of a new tool listing: which tools must run as tasks, and
    /// each declared output schema.
    fn remember(&self, tools: &[Exact<Tool>]) {
        {
            let mut required = self.task_tools.lock();
            required.clear();
            let must = |t: &&Exact<Tool>| t.task_support() == TaskSupport::Required;
            required.extend(tools.iter().filter(must).map(|t| t.name.clone()));
        }
        {
            let mut m = self.output_schemas.lock();
            m.clear();
            for t in tools {
                // Decoded once per listing, for the checks of this tool's results.
                if let Some(s) = t.output_schema.as_ref().map(|s| s.to_value()) {
                    let s = s.unwrap_or(Value::Null);
                    m.insert(t.name.clone(), OutputSchema::Declared(Arc::new(s)));
                }
            }
        }
    }

    /// Every prompt.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        Ok(typed(self.list_prompts_exact().await?.items))
    }

    /// Every prompt, each as the server wrote it.
    pub async fn list_prompts_exact(&self) -> Result<Listed<Exact<Prompt>>, ClientError> {
        self.paginate(method::PROMPTS_LIST, "prompts").await
    }

    /// Every resource.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, ClientError> {
        Ok(typed(self.list_resources_exact().await?.items))
    }

    /// Every resource, each as the server wrote it.
    pub async fn list_resources_exact(&self) -> Result<Listed<Exact<Resource>>, ClientError> {
        self.paginate(method::RESOURCES_LIST, "resources").await
    }

    /// Every resource template.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        Ok(typed(self.list_resource_templates_exact().await?.items))
    }

    /// Every resource template, each as the server wrote it.
    pub async fn list_resource_templates_exact(
        &self,
    ) -> Result<Listed<Exact<ResourceTemplate>>, ClientError> {
        self.paginate(method::RESOURCES_TEMPLATES_LIST, "resourceTemplates")
            .await
    }
}

fn typed<T: Clone>(items: Vec<Exact<T>>) -> Vec<T> {
    items.into_iter().map(Exact::into_value).collect()
}
