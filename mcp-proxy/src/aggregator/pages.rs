//! The merged lists as hosts get them (TOOL-07): each item as its upstream listed it,
//! renamed in place where it is exposed under another name, written into one page of
//! the union model, which each host's session translates to its revision.

use mcp_server::{ListKind, RawResult};
use mcp_types::protocol::{Prompt, TaskSupport, Tool};
use std::sync::Arc;

use mcp_types::raw::{Exact, RawObject};
use mcp_types::{codes, ErrorObject};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;

/// An item listed by name (a tool, a prompt), which hosts may be shown under another.
pub(super) trait Named {
    /// Its `name`.
    fn name(&self) -> &str;
    /// Its `name`, to change.
    fn name_mut(&mut self) -> &mut String;
}

impl Named for Tool {
    fn name(&self) -> &str {
        &self.name
    }
    fn name_mut(&mut self) -> &mut String {
        &mut self.name
    }
}

impl Named for Prompt {
    fn name(&self) -> &str {
        &self.name
    }
    fn name_mut(&mut self) -> &mut String {
        &mut self.name
    }
}

/// `item` shown under `name`: its `name` member rewritten in its place (and in the
/// decoded value), every other member as listed; `item` itself when that is its name.
pub(super) fn renamed<T: Named + Serialize + Clone>(item: Exact<T>, name: &str) -> Exact<T> {
    if item.name() == name {
        return item;
    }
    match item.with_member("name", name, |t| *t.name_mut() = name.to_owned()) {
        Ok(shown) => shown,
        Err(e) => {
            // Not reached for an item read as an object; kept under its own name.
            tracing::warn!("an item could not be renamed to {name:?}: {e}");
            item
        }
    }
}

/// A tool as hosts see it: its exposed name, and `taskSupport: "optional"` where the
/// upstream says `"required"` (the gateway runs such a tool as a task itself for a host
/// that calls it plainly, and relays the task to a host that asks for one).
pub(super) fn as_exposed(exposed: String, t: Exact<Tool>) -> Exact<Tool> {
    if t.task_support() == TaskSupport::Required {
        let shown = t.edit_typed(|t| {
            t.name = exposed.clone();
            if let Some(e) = &mut t.execution {
                e.task_support = Some(TaskSupport::Optional);
            }
        });
        return shown.unwrap_or(t);
    }
    renamed(t, &exposed)
}

/// The text of `t` as hosts see it under `exposed` ([`as_exposed`]), written without
/// decoding it again where only its name changes.
pub(super) fn exposed_text(exposed: &str, t: &Exact<Tool>) -> Arc<RawValue> {
    if t.task_support() != TaskSupport::Required {
        if t.name == exposed {
            return Arc::from(t.raw().to_owned());
        }
        if let Ok(mut o) = RawObject::from_raw(t.raw()) {
            o.insert_str("name", exposed);
            return Arc::from(o.to_raw());
        }
    }
    Arc::from(as_exposed(exposed.to_owned(), t.clone()).raw().to_owned())
}

/// An item of a page: the text it is written as.
pub(super) trait ItemText {
    /// Its JSON text.
    fn text(&self) -> &RawValue;
}

impl<T> ItemText for Exact<T> {
    fn text(&self) -> &RawValue {
        self.raw()
    }
}

impl ItemText for Arc<RawValue> {
    fn text(&self) -> &RawValue {
        self
    }
}

/// One page of list `kind`: its items as they are, and the cursor of the next page.
pub(super) fn page_result<T: ItemText>(
    kind: ListKind,
    items: &[T],
    next_cursor: Option<&str>,
) -> Result<RawResult, ErrorObject> {
    let page = Page {
        key: kind.items_key(),
        items,
        next_cursor,
    };
    // Written once, as the items' texts and the cursor's literal: nothing is read again.
    let body = serde_json::value::to_raw_value(&page).map_err(|e| {
        ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("Internal error: a list page: {e}"),
        )
    })?;
    Ok(RawResult {
        revision: None,
        body,
    })
}

/// A page of a list, for writing.
struct Page<'a, T> {
    key: &'static str,
    items: &'a [T],
    next_cursor: Option<&'a str>,
}

/// A page's items, each written as its text.
struct Items<'a, T>(&'a [T]);

impl<T: ItemText> Serialize for Items<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(ItemText::text))
    }
}

impl<T: ItemText> Serialize for Page<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(1 + usize::from(self.next_cursor.is_some())))?;
        m.serialize_entry(self.key, &Items(self.items))?;
        if let Some(c) = self.next_cursor {
            m.serialize_entry("nextCursor", c)?;
        }
        m.end()
    }
}

/// A page decoded, for the typed list methods.
pub(super) fn typed_page<R: DeserializeOwned>(page: RawResult) -> Result<R, ErrorObject> {
    serde_json::from_str(page.body.get()).map_err(|e| {
        ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("Internal error: a list page: {e}"),
        )
    })
}
