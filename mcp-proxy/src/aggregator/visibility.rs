//! What the principal of a request sees of the catalog ([`crate::views`]): its tools,
//! the upstreams whose prompts and resources it reaches, and its surface.

use super::id::UpstreamId;
use mcp_server::RequestContext;
use mcp_types::protocol::Tool;
use mcp_types::raw::Exact;

use super::{as_exposed, Aggregator};
use crate::policy::Surface;
use crate::views::Scope;

impl Aggregator {
    /// What the request's principal sees.
    pub(crate) fn scope(&self, ctx: &RequestContext) -> Scope {
        Scope::of(self.inner.options.views.as_ref(), ctx.principal())
    }

    /// The surface the request's principal is served.
    pub(crate) fn surface_for(&self, ctx: &RequestContext) -> Surface {
        match &self.inner.options.views {
            None => self.inner.options.surface,
            Some(_) => self.scope(ctx).surface(self.inner.options.surface),
        }
    }

    /// Whether `scope` reaches upstream `i`.
    pub(crate) fn reaches(&self, scope: &Scope, i: UpstreamId) -> bool {
        scope.sees_upstream(&self.inner.upstreams[i].config.key)
    }

    /// Whether `scope` sees upstream `i`'s tool exposed as `exposed`.
    pub(crate) fn sees_tool(&self, scope: &Scope, i: UpstreamId, exposed: &str) -> bool {
        scope.sees_tool(&self.inner.upstreams[i].config.key, exposed)
    }

    /// `(namespace, tool with its exposed name)` of what `scope` sees, in catalog order, as
    /// the host of `ctx` sees the catalog (see [`Aggregator::tool_entries_for`]).
    pub(crate) fn namespaced_tools_seen(
        &self,
        ctx: &RequestContext,
        scope: &Scope,
    ) -> Vec<(String, Exact<Tool>)> {
        self.tool_entries_for(Some(ctx))
            .into_iter()
            .filter(|(exposed, i, _)| self.sees_tool(scope, *i, exposed))
            .map(|(exposed, i, t)| {
                let ns = self.inner.upstreams[i].namespace.clone();
                (ns, as_exposed(exposed, t))
            })
            .collect()
    }

    /// The tools `scope` sees, as the host of `ctx` sees them, in catalog order.
    pub(crate) fn tools_seen(&self, ctx: &RequestContext, scope: &Scope) -> Vec<Exact<Tool>> {
        match scope {
            Scope::Everything => self
                .tool_entries_for(Some(ctx))
                .into_iter()
                .map(|(exposed, _, t)| as_exposed(exposed, t))
                .collect(),
            _ => self
                .namespaced_tools_seen(ctx, scope)
                .into_iter()
                .map(|(_, t)| t)
                .collect(),
        }
    }
}
