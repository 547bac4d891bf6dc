//! What the dispatcher surface ([`crate::dispatcher`]) reaches of the aggregator: the
//! catalog as the request's principal sees it, and the call relay with every gate.

use async_trait::async_trait;
use mcp_server::{Outcome, RequestContext};
use mcp_types::protocol::*;
use mcp_types::raw::{Exact, RawObject};
use mcp_types::{codes, ErrorObject};
use serde_json::{Map, Value};

use super::Aggregator;
use crate::dispatcher::{Catalogue, Namespace};

#[async_trait]
impl Catalogue for Aggregator {
    fn namespaces(&self, ctx: &RequestContext) -> Vec<Namespace> {
        let seen = self.inner.visibility.seen(ctx);
        self.inner
            .pool
            .upstreams()
            .iter()
            .filter(|u| seen.reaches_key(&u.config.key))
            .map(|u| Namespace {
                name: u.namespace.clone(),
                upstream: u.config.key.clone(),
                available: u.client().is_some(),
            })
            .collect()
    }

    fn tools(&self, ctx: &RequestContext) -> Vec<(String, Exact<Tool>)> {
        self.inner
            .own
            .namespaced_tools_seen(ctx, &self.inner.visibility.seen(ctx))
    }

    fn search(
        &self,
        ctx: &RequestContext,
        query: &str,
        skip: usize,
        limit: usize,
    ) -> Vec<(String, Exact<Tool>)> {
        let seen = self.inner.visibility.seen(ctx);
        self.inner
            .finder
            .search(&self.inner.own, ctx, &seen, query, skip, limit)
            .into_iter()
            .map(|(i, t)| (self.inner.pool.get(i).namespace.clone(), t))
            .collect()
    }

    async fn call(
        &self,
        ctx: &RequestContext,
        name: &str,
        arguments: Option<Map<String, Value>>,
        meta: Option<Map<String, Value>>,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        self.call_exposed(ctx, name, arguments, meta).await
    }
}

impl Aggregator {
    /// A call to the tool hosts know as `name`, from typed arguments: the call relay's,
    /// answered typed.
    pub(super) async fn call_exposed(
        &self,
        ctx: &RequestContext,
        name: &str,
        arguments: Option<Map<String, Value>>,
        meta: Option<Map<String, Value>>,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        let internal = |e: serde_json::Error| {
            ErrorObject::new(codes::INTERNAL_ERROR, format!("Internal error: {e}"))
        };
        let mut params = RawObject::new();
        params.insert_str("name", name);
        if let Some(a) = &arguments {
            params.insert_json("arguments", a).map_err(internal)?;
        }
        if let Some(m) = &meta {
            params.insert_json("_meta", m).map_err(internal)?;
        }
        Ok(match self.inner.relay.relay_call(ctx, &params).await? {
            Outcome::Complete(r) => {
                Outcome::Complete(serde_json::from_str(r.body.get()).map_err(|e| {
                    ErrorObject::new(
                        codes::INTERNAL_ERROR,
                        format!("upstream result for {name} is invalid: {e}"),
                    )
                })?)
            }
            Outcome::InputRequired(ir) => Outcome::InputRequired(ir),
            Outcome::Task(t) => Outcome::Task(t),
        })
    }
}
