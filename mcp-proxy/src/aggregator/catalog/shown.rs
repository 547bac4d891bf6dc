//! The tools hosts are shown, made once per change of the catalog: each under its exposed
//! name, rewritten in its text once (`pages::exposed_text`), so that a list is a copy of
//! texts already written and not a renaming of every tool at every list. Only the text is
//! kept: the listing holds the decoded tool.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde_json::value::RawValue;

use super::Catalog;
use crate::aggregator::id::UpstreamId;
use crate::aggregator::pages::exposed_text;

/// A tool as hosts without upstream sessions of their own are shown it.
pub(in crate::aggregator) struct ShownTool {
    /// The name hosts call it by.
    pub(in crate::aggregator) exposed: String,
    /// The upstream that listed it.
    pub(in crate::aggregator) upstream: UpstreamId,
    /// Its definition's text as hosts see it (exposed name, `taskSupport` as the gateway
    /// serves it).
    pub(in crate::aggregator) text: Arc<RawValue>,
}

impl Catalog {
    /// The tools shown now, in catalog order (see [`Catalog::tool_entries`]), made again
    /// only when the catalog changed.
    pub(in crate::aggregator) fn shown_tools(&self) -> Arc<[ShownTool]> {
        let generation = self.generation.load(Ordering::SeqCst);
        self.shown.get_or_make(generation, || {
            self.tool_entries()
                .into_iter()
                .map(|(exposed, upstream, t)| ShownTool {
                    text: exposed_text(&exposed, &t),
                    exposed,
                    upstream,
                })
                .collect()
        })
    }
}
