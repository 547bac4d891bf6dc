//! `search_tools` of the dispatcher surface over the catalog: one index of every tool
//! the catalog shows (made by the configured [`ToolSearch`], again after each list
//! change, at the first search that finds it old), searched with the caller's view as the
//! filter, so a principal is never shown a tool it cannot see. A host whose own sessions
//! (or whose user's own connections) list tools of their own is searched over an index of
//! its listing, made for that search.

use std::sync::Arc;

use mcp_server::RequestContext;
use mcp_types::protocol::Tool;
use mcp_types::raw::Exact;

use super::catalog::OfGeneration;
use super::id::UpstreamId;
use super::own_lists::OwnSessions;
use super::pages::as_exposed;
use super::visibility::Seen;
use crate::search::{Bm25, SearchDocument, SearchIndex, ToolSearch};

/// The tools of one listing and their index.
struct Indexed {
    /// `(exposed name, upstream, tool)`, in catalog order: the index's documents.
    entries: Vec<(String, UpstreamId, Exact<Tool>)>,
    index: Arc<dyn SearchIndex>,
}

/// The search over the catalog's tools (see the module).
pub(super) struct ToolFinder {
    ranking: Arc<dyn ToolSearch>,
    /// The index of the catalog's generation it was made of.
    kept: OfGeneration<Indexed>,
}

impl ToolFinder {
    /// A search ranked by `ranking` (BM25F when `None`).
    pub(super) fn new(ranking: Option<Arc<dyn ToolSearch>>) -> Self {
        ToolFinder {
            ranking: ranking.unwrap_or_else(|| Arc::new(Bm25::default())),
            kept: OfGeneration::default(),
        }
    }

    /// The tools `seen` sees that best match `query`, as the host of `ctx` sees the
    /// catalog, best first: `(upstream, tool under its exposed name)`, at most `limit`
    /// after the first `skip`.
    pub(super) fn search(
        &self,
        own: &OwnSessions,
        ctx: &RequestContext,
        seen: &Seen<'_>,
        query: &str,
        skip: usize,
        limit: usize,
    ) -> Vec<(UpstreamId, Exact<Tool>)> {
        if seen.nothing() || limit == 0 {
            return Vec::new();
        }
        let indexed = match own.has_any_own(ctx) {
            true => Arc::new(self.index(own.tool_entries_for(Some(ctx)))),
            false => self.catalog_index(own),
        };
        let admit = |d: usize| {
            let (exposed, i, _) = &indexed.entries[d];
            seen.everything() || seen.sees_tool(*i, exposed)
        };
        let hits = indexed
            .index
            .search(query, &admit, skip.saturating_add(limit));
        hits.into_iter()
            .skip(skip)
            .filter_map(|h| indexed.entries.get(h.document))
            .map(|(exposed, i, t)| (*i, as_exposed(exposed.clone(), t.clone())))
            .collect()
    }

    /// The index of the catalog as it is now, made again if it changed since.
    fn catalog_index(&self, own: &OwnSessions) -> Arc<Indexed> {
        self.kept.get_or_make(own.catalog_generation(), || {
            Arc::new(self.index(own.tool_entries_for(None)))
        })
    }

    fn index(&self, entries: Vec<(String, UpstreamId, Exact<Tool>)>) -> Indexed {
        let documents: Vec<SearchDocument> = entries
            .iter()
            .map(|(exposed, _, t)| document(exposed, t))
            .collect();
        Indexed {
            index: self.ranking.index(&documents),
            entries,
        }
    }
}

/// `t` as a search reads it, under the name hosts call it by.
fn document(exposed: &str, t: &Exact<Tool>) -> SearchDocument {
    let read = serde_json::to_value(t)
        .ok()
        .and_then(|v| SearchDocument::from_json(&v));
    let mut d = read.unwrap_or_else(|| SearchDocument::new(exposed));
    d.name = exposed.to_owned();
    d
}
