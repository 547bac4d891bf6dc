//! How meaning is kept when a message goes to a revision that cannot say it the
//! same way. [`DowngradePolicy`] holds each conversion as a method with a
//! spec-faithful default, so a proxy can swap one choice without forking the rest.

use mcp_types::Revision;
use serde_json::{json, Map, Value};

use crate::shapes::ObjectShape;

/// The conversions applied when translating between revisions.
///
/// Each method gets the object being translated (already known to be of the type
/// named) and edits it in place; the table-driven walk in [`crate::translate`] then
/// removes whatever members the target revision lacks. Defaults are in
/// [`SpecPolicy`]; override one method to change one choice.
pub trait DowngradePolicy: Send + Sync {
    /// A `structuredContent` value is about to be lost (target before 2025-06-18).
    /// Default: add its JSON as a text block, unless an equal text duplicate exists.
    fn structured_content_dropped(&self, result: &mut Map<String, Value>, value: &Value) {
        if !has_text_duplicate(result, value) {
            if let Some(Value::Array(content)) = result.get_mut("content") {
                content.push(json!({"type": "text", "text": value.to_string()}));
            }
        }
    }

    /// A non-object `structuredContent` (legal only in 2026-07-28) goes to 2025-06-18 or
    /// 2025-11-25, which require an object. Default: wrap as `{"value": …}`, matching
    /// [`DowngradePolicy::wrap_output_schema`].
    fn wrap_structured_content(&self, value: Value) -> Value {
        json!({ "value": value })
    }

    /// An `outputSchema` whose root is not `type: "object"` (legal only in 2026-07-28) goes
    /// to 2025-06-18 or 2025-11-25. It must describe exactly the `structuredContent` that
    /// [`DowngradePolicy::wrap_structured_content`] produces: non-object values arrive as
    /// `{"value": …}`, objects as they are. Default: a schema that never admits an object
    /// gets `{"value": schema}`; one that may admit objects (no `type`, a type list with
    /// `object`, `true`) also keeps itself as an alternative.
    fn wrap_output_schema(&self, schema: Value) -> Value {
        let wrapped = json!({"properties": {"value": schema}, "required": ["value"]});
        let may_be_object = match schema.get("type") {
            Some(Value::String(t)) => t == "object",
            Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
            Some(_) => false,
            None => !matches!(schema, Value::Bool(false)),
        };
        if may_be_object {
            json!({"type": "object", "anyOf": [wrapped, schema]})
        } else {
            let mut w = wrapped;
            w["type"] = json!("object");
            w
        }
    }

    /// A tool `title` is about to be lost (target before 2025-06-18). Default: move it
    /// into `annotations.title` where the target has annotations and none is set.
    fn tool_title_dropped(&self, tool: &mut Map<String, Value>, title: Value, to: Revision) {
        if crate::spec_data::TOOL.has("annotations", to) {
            let annotations = tool.entry("annotations").or_insert_with(|| json!({}));
            if let Value::Object(a) = annotations {
                a.entry("title").or_insert(title);
            }
        }
    }

    /// A content block whose `type` the target does not have in this position; `allowed`
    /// lists the types it does have there. Return the blocks to put in its place (empty to
    /// drop it; a block of a type not in `allowed` is dropped). Default: `resource_link`
    /// becomes a text block naming the URI; `audio` an embedded resource holding the data
    /// where `resource` is allowed, else a text block with the data as a `data:` URI;
    /// anything else (sampling `tool_use`/`tool_result`) a text block with its JSON.
    fn convert_content(
        &self,
        block: Map<String, Value>,
        allowed: &[&str],
        from: Revision,
        to: Revision,
    ) -> Vec<Value> {
        let _ = (from, to);
        let kind = block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let annotations = block.get("annotations").cloned();
        let mut out = match kind.as_str() {
            "resource_link" => {
                let s = |k: &str| block.get(k).and_then(Value::as_str);
                let mut text = format!(
                    "Resource link: {} <{}>",
                    s("title").or(s("name")).unwrap_or("resource"),
                    s("uri").unwrap_or_default()
                );
                if let Some(m) = s("mimeType") {
                    text.push_str(&format!(" ({m})"));
                }
                if let Some(d) = s("description") {
                    text.push_str(&format!("\n{d}"));
                }
                json!({"type": "text", "text": text})
            }
            "audio" if allowed.contains(&"resource") => json!({
                "type": "resource",
                "resource": {
                    "uri": AUDIO_URI,
                    "mimeType": block.get("mimeType").cloned().unwrap_or(Value::Null),
                    "blob": block.get("data").cloned().unwrap_or(Value::Null),
                }
            }),
            "audio" => {
                let s = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or_default();
                json!({"type": "text", "text": format!("[audio] data:{};base64,{}", s("mimeType"), s("data"))})
            }
            _ => {
                let mut shown = block.clone();
                shown.remove("_meta");
                json!({"type": "text", "text": format!("[{kind} content] {}", Value::Object(shown))})
            }
        };
        if let (Some(a), Value::Object(o)) = (annotations, &mut out) {
            o.insert("annotations".into(), a);
        }
        vec![out]
    }

    /// The error code to send a peer of revision `to` in place of `code`, which `to` does
    /// not allow. Default: the replacement the spec names (`-32002` became `-32602` in
    /// 2026-07-28), else `-32603`.
    fn error_code(&self, code: i64, from: Revision, to: Revision) -> i64 {
        let _ = from;
        crate::errors::replacement(code, to).unwrap_or(code)
    }

    /// Called on every object before its members are filtered for the target, for
    /// conversions no member table can express. Default: nothing.
    fn adjust(
        &self,
        shape: &ObjectShape,
        object: &mut Map<String, Value>,
        from: Revision,
        to: Revision,
    ) {
        let _ = (shape, object, from, to);
    }
}

/// The URI given to audio turned into an embedded resource for 2024-11-05.
pub const AUDIO_URI: &str = "urn:mcp:content:audio";

/// The default, spec-faithful policy.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpecPolicy;

impl DowngradePolicy for SpecPolicy {}

/// Whether `content` already has a text block whose text is `value` as JSON.
pub fn has_text_duplicate(result: &Map<String, Value>, value: &Value) -> bool {
    let Some(Value::Array(content)) = result.get("content") else {
        return false;
    };
    content.iter().any(|b| {
        b.get("type").and_then(Value::as_str) == Some("text")
            && b.get("text")
                .and_then(Value::as_str)
                .and_then(|t| serde_json::from_str::<Value>(t).ok())
                .is_some_and(|v| &v == value)
    })
}
