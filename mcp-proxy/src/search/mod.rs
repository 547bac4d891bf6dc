//! Tool search over the catalog (the dispatcher surface's `search_tools`).
//!
//! A [`ToolSearch`] builds a [`SearchIndex`] over the catalog's tools, each read as a
//! [`SearchDocument`] (its name, title, description and parameter names); the index
//! answers a request in words with the best-matching tools, best first, only among those
//! the caller may see. [`Bm25`] is the default ranking: BM25F over the four fields, on
//! the machine, with no model. A library user can plug in their own (an embedding index,
//! say) by implementing [`ToolSearch`].
//!
//! ```
//! use mcp_proxy::search::{Bm25, SearchDocument, ToolSearch};
//!
//! let tools = [
//!     SearchDocument::new("github__create_issue")
//!         .with_description("Create a new issue in a GitHub repository.")
//!         .with_parameters(["owner", "repo", "title", "body"]),
//!     SearchDocument::new("weather__forecast")
//!         .with_title("Weather forecast")
//!         .with_description("Get the weather forecast for a location."),
//! ];
//! let index = Bm25::default().index(&tools);
//! let hits = index.search("will it rain? check the weather", &|_| true, 5);
//! assert_eq!(hits[0].document, 1);
//! assert_eq!(hits.len(), 1);
//! ```

mod bm25;
mod params;
mod tokens;

use std::sync::Arc;

use serde_json::Value;

pub use params::Bm25;

/// One tool as a search reads it.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SearchDocument {
    /// The tool's name as the catalog lists it (`github__create_issue`).
    pub name: String,
    /// Its human-readable title, if it has one.
    pub title: Option<String>,
    /// Its description, if it has one.
    pub description: Option<String>,
    /// Its parameters' names (the input schema's top-level `properties`).
    pub parameters: Vec<String>,
}

impl SearchDocument {
    /// A document with a name and nothing else.
    pub fn new(name: impl Into<String>) -> Self {
        SearchDocument {
            name: name.into(),
            ..Default::default()
        }
    }

    /// With this title.
    #[must_use]
    pub fn with_title(mut self, t: impl Into<String>) -> Self {
        self.title = Some(t.into());
        self
    }

    /// With this description.
    #[must_use]
    pub fn with_description(mut self, d: impl Into<String>) -> Self {
        self.description = Some(d.into());
        self
    }

    /// With these parameter names (replacing any it had).
    #[must_use]
    pub fn with_parameters(mut self, p: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.parameters = p.into_iter().map(Into::into).collect();
        self
    }

    /// From a tool definition as JSON (`name`, `title` or else `annotations.title`,
    /// `description`, `inputSchema.properties` keys); None if it has no string `name`.
    /// Members of the wrong type are ignored.
    pub fn from_json(tool: &Value) -> Option<Self> {
        let name = tool.get("name")?.as_str()?;
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let title = text(tool.get("title"))
            .or_else(|| text(tool.get("annotations").and_then(|a| a.get("title"))));
        let parameters = tool
            .get("inputSchema")
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        Some(SearchDocument {
            name: name.to_owned(),
            title,
            description: text(tool.get("description")),
            parameters,
        })
    }
}

/// A ranked match: the document's index in the slice the index was built from, and its
/// score (higher is better).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchHit {
    /// The document's position in the slice given to [`ToolSearch::index`].
    pub document: usize,
    /// How well it matches; comparable only within one search's results.
    pub score: f32,
}

/// Builds an index over a catalog. The gateway builds one per catalog change; a library
/// user can plug in their own ranking (an embedding index, say).
pub trait ToolSearch: Send + Sync + 'static {
    /// An index over `documents`; hits name documents by their position in this slice.
    fn index(&self, documents: &[SearchDocument]) -> Arc<dyn SearchIndex>;
}

/// A built index.
pub trait SearchIndex: Send + Sync {
    /// The documents matching `query`, best first (ties: lower document index first), only
    /// those `admit` accepts, at most `limit`. A document matching no term of the query is
    /// never returned (what counts as a term is the ranking's: [`Bm25`] counts the
    /// synonyms of the query's words).
    fn search(&self, query: &str, admit: &dyn Fn(usize) -> bool, limit: usize) -> Vec<SearchHit>;

    /// How many documents it holds.
    fn len(&self) -> usize;

    /// Whether it holds none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn from_json_reads_the_four_fields() {
        let doc = SearchDocument::from_json(&json!({
            "name": "github__create_issue",
            "title": "Create issue",
            "description": "Create an issue.",
            "inputSchema": {"type": "object", "properties": {"owner": {}, "repo": {}}},
        }))
        .expect("a name");
        assert_eq!(
            doc,
            SearchDocument::new("github__create_issue")
                .with_title("Create issue")
                .with_description("Create an issue.")
                .with_parameters(["owner", "repo"])
        );
    }

    #[test]
    fn from_json_falls_back_to_the_annotations_title() {
        let doc = SearchDocument::from_json(&json!({
            "name": "q",
            "annotations": {"title": "Run query"},
        }))
        .expect("a name");
        assert_eq!(doc.title.as_deref(), Some("Run query"));
        assert!(doc.description.is_none());
        assert!(doc.parameters.is_empty());
    }

    #[test]
    fn from_json_needs_a_string_name_and_ignores_wrong_types() {
        assert_eq!(SearchDocument::from_json(&json!({"title": "x"})), None);
        assert_eq!(SearchDocument::from_json(&json!({"name": 3})), None);
        assert_eq!(SearchDocument::from_json(&json!("name")), None);
        let doc = SearchDocument::from_json(&json!({
            "name": "t", "title": 1, "description": [], "inputSchema": {"properties": []},
        }))
        .expect("a name");
        assert_eq!(doc, SearchDocument::new("t"));
    }
}
