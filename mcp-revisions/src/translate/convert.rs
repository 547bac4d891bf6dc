//! Conversions tied to one type that the member table cannot express, and what going up
//! to 2026-07-28 adds. Each one that reads the input has its token in `triggers.rs`.

use mcp_types::protocol::TASKS_EXTENSION;
use mcp_types::raw::{self, RawObject};
use mcp_types::{meta, Revision};
use serde_json::value::RawValue;

use super::walk::with_object;
use super::{Translator, ELICITATION_MODES, OBJECT_ONLY_STRUCTURED};
use crate::shapes::ObjectShape;
use crate::spec_data;

impl Translator<'_> {
    /// The type-specific conversions of `shape`; returns whether any changed `obj`.
    pub(super) fn convert(&self, shape: &ObjectShape, obj: &mut RawObject<'_>) -> bool {
        let to = self.to;
        let mut changed = false;
        if std::ptr::eq(shape, &spec_data::TOOL) {
            changed |= self.tool(shape, obj);
        }
        if std::ptr::eq(shape, &spec_data::CLIENT_CAPABILITIES)
            && !ELICITATION_MODES.contains(to)
            && url_only_elicitation(obj)
        {
            // Before 2025-11-25 elicitation means form mode: a URL-only client must not claim it.
            obj.remove("elicitation");
            changed = true;
        }
        if shape.field("structuredContent").is_some() {
            changed |= self.structured_content(shape, obj);
        }
        if shape.name.starts_with("result ") && to == Revision::V2026_07_28 {
            changed |= fill_2026_result(shape, obj);
        }
        changed
    }

    fn tool(&self, shape: &ObjectShape, obj: &mut RawObject<'_>) -> bool {
        let to = self.to;
        let mut changed = false;
        if !shape.has("title", to) {
            if let Some(title) = obj.remove("title") {
                self.policy.tool_title_dropped(obj, title, to);
                changed = true;
            }
        }
        if OBJECT_ONLY_STRUCTURED.contains(to) {
            if let Some(schema) = obj.get("outputSchema") {
                if !is_object_schema(schema) {
                    let wrapped = self.policy.wrap_output_schema(schema);
                    obj.insert("outputSchema", wrapped);
                    changed = true;
                }
            }
        }
        changed
    }

    fn structured_content(&self, shape: &ObjectShape, obj: &mut RawObject<'_>) -> bool {
        if !shape.has("structuredContent", self.to) {
            let Some(value) = obj.remove("structuredContent") else {
                return false;
            };
            self.policy.structured_content_dropped(obj, &value);
            return true;
        }
        if !OBJECT_ONLY_STRUCTURED.contains(self.to) {
            return false;
        }
        match obj.get("structuredContent") {
            Some(value) if !raw::is_object(value) => {
                let wrapped = self.policy.wrap_structured_content(value);
                obj.insert("structuredContent", wrapped);
                true
            }
            _ => false,
        }
    }

    /// The client capabilities a 2026 request declares: the configured ones, else `{}`.
    fn capabilities(&self) -> Box<RawValue> {
        self.client_capabilities
            .clone()
            .unwrap_or_else(|| RawObject::new().to_raw())
    }

    /// Adds what every 2026-07-28 request carries in `_meta`: the protocol version and the
    /// client's capabilities (what the sender said is kept).
    pub(super) fn add_request_meta(&self, params: &mut RawObject<'_>) -> bool {
        let caps = self.capabilities();
        let empty = RawObject::new().to_raw();
        with_object(params, "_meta", &empty, |m| {
            let mut changed = false;
            if !m.contains_key(meta::PROTOCOL_VERSION) {
                m.insert_str(meta::PROTOCOL_VERSION, Revision::V2026_07_28.as_str());
                changed = true;
            }
            if !m.contains_key(meta::CLIENT_CAPABILITIES) {
                m.insert(meta::CLIENT_CAPABILITIES, caps);
                changed = true;
            }
            changed
        })
    }

    /// The extension replaces `params.task`: declaring it lets the server answer with a task.
    pub(super) fn declare_tasks_extension(&self, params: &mut RawObject<'_>) -> bool {
        let caps = self.capabilities();
        let empty = RawObject::new().to_raw();
        with_object(params, "_meta", &empty, |m| {
            with_object(m, meta::CLIENT_CAPABILITIES, &caps, |c| {
                with_object(c, "extensions", &empty, |e| {
                    let missing = !e.contains_key(TASKS_EXTENSION);
                    if missing {
                        e.insert(TASKS_EXTENSION, empty.clone());
                    }
                    missing
                })
            })
        })
    }
}

/// Sets `protocolVersion` to the target's (initialize speaks the version it goes to).
pub(super) fn set_protocol_version(obj: &mut RawObject<'_>, to: Revision) -> bool {
    let version = raw::string(to.as_str());
    if obj.get("protocolVersion").map(RawValue::get) == Some(version.get()) {
        return false;
    }
    obj.insert("protocolVersion", version);
    true
}

/// Whether an `outputSchema` says `type: "object"` at its root.
fn is_object_schema(schema: &RawValue) -> bool {
    raw::is_object(schema)
        && RawObject::from_raw(schema).is_ok_and(|s| s.get_str("type").as_deref() == Some("object"))
}

/// Whether client capabilities claim elicitation in URL mode only.
fn url_only_elicitation(caps: &RawObject<'_>) -> bool {
    caps.get("elicitation")
        .filter(|e| raw::is_object(e))
        .and_then(|e| RawObject::from_raw(e).ok())
        .is_some_and(|e| e.contains_key("url") && !e.contains_key("form"))
}

/// Up to 2026-07-28: what the newer revision requires of a result, where it said nothing.
fn fill_2026_result(shape: &ObjectShape, obj: &mut RawObject<'_>) -> bool {
    let to = Revision::V2026_07_28;
    let mut changed = false;
    if shape.has("resultType", to) && !obj.contains_key("resultType") {
        obj.insert_str("resultType", "complete");
        changed = true;
    }
    if shape.has("ttlMs", to) {
        // Immediately stale and private: the only safe reading of a result that said nothing.
        if !obj.contains_key("ttlMs") {
            changed |= obj.insert_json("ttlMs", &0).is_ok();
        }
        if !obj.contains_key("cacheScope") {
            obj.insert_str("cacheScope", "private");
            changed = true;
        }
    }
    changed
}
