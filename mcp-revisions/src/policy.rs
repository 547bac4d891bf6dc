//! How meaning is kept when a message goes to a revision that cannot say it the
//! same way. [`DowngradePolicy`] holds each conversion as a method with a
//! spec-faithful default, so a proxy can swap one choice without forking the rest.
//!
//! Conversions work on raw JSON ([`RawObject`], [`RawValue`]): what they carry over keeps
//! its exact text, numbers and key order as the sender wrote them.

use std::borrow::Cow;

use mcp_types::raw::{self, RawObject};
use mcp_types::Revision;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::shapes::ObjectShape;

/// The conversions applied when translating between revisions.
///
/// Each method gets the object being translated (already known to be of the type
/// named) and edits it in place; the table-driven walk in [`crate::Translator`] then
/// removes whatever members the target revision lacks. Defaults are in
/// [`SpecPolicy`]; override one method to change one choice.
pub trait DowngradePolicy: Send + Sync {
    /// A `structuredContent` value is about to be lost (target before 2025-06-18).
    /// Default: add its JSON as a text block, unless an equal text duplicate exists. The
    /// text is the value exactly as it came (numbers, key order), made one line if it was
    /// written over several.
    fn structured_content_dropped(&self, result: &mut RawObject<'_>, value: &RawValue) {
        let Some(content) = result.get("content").filter(|c| raw::is_array(c)) else {
            return;
        };
        if has_text_duplicate_raw(content, value) {
            return;
        }
        let text = if value.get().contains(['\n', '\r']) {
            raw::compact(value)
        } else {
            Cow::Borrowed(value)
        };
        let block = text_block(text.get());
        let Ok(mut items) = raw::array(content) else {
            return;
        };
        items.push(&block);
        let content = raw::to_array(&items);
        result.insert("content", content);
    }

    /// A non-object `structuredContent` (legal only in 2026-07-28) goes to 2025-06-18 or
    /// 2025-11-25, which require an object. Default: wrap as `{"value": …}` (the value's
    /// text kept), matching [`DowngradePolicy::wrap_output_schema`].
    fn wrap_structured_content(&self, value: &RawValue) -> Box<RawValue> {
        object_of([("value", Cow::Borrowed(value))])
    }

    /// An `outputSchema` whose root is not `type: "object"` (legal only in 2026-07-28) goes
    /// to 2025-06-18 or 2025-11-25. It must describe exactly the `structuredContent` that
    /// [`DowngradePolicy::wrap_structured_content`] produces: non-object values arrive as
    /// `{"value": …}`, objects as they are. Default: a schema that never admits an object
    /// gets `{"value": schema}`; one that may admit objects (no `type`, a type list with
    /// `object`, `true`) also keeps itself as an alternative.
    fn wrap_output_schema(&self, schema: &RawValue) -> Box<RawValue> {
        let properties = object_of([("value", Cow::Borrowed(schema))]);
        let value = raw::string("value");
        let required = raw::to_array(&[&*value]);
        let object = raw::string("object");
        if may_admit_objects(schema) {
            let wrapped = object_of([
                ("properties", Cow::Owned(properties)),
                ("required", Cow::Owned(required)),
            ]);
            let any_of = raw::to_array(&[&*wrapped, schema]);
            object_of([("type", Cow::Owned(object)), ("anyOf", Cow::Owned(any_of))])
        } else {
            object_of([
                ("type", Cow::Owned(object)),
                ("properties", Cow::Owned(properties)),
                ("required", Cow::Owned(required)),
            ])
        }
    }

    /// A tool `title` is about to be lost (target before 2025-06-18). Default: move it
    /// into `annotations.title` where the target has annotations and none is set.
    fn tool_title_dropped<'a>(
        &self,
        tool: &mut RawObject<'a>,
        title: Cow<'a, RawValue>,
        to: Revision,
    ) {
        if !crate::spec_data::TOOL.has("annotations", to) {
            return;
        }
        match tool.get("annotations") {
            None => {
                tool.insert("annotations", object_of([("title", title)]));
            }
            Some(a) if raw::is_object(a) => {
                // The annotations object is read from its own text: the title must outlive it.
                let title: Cow<'static, RawValue> = Cow::Owned(title.into_owned());
                let _ = tool.edit_object("annotations", |a| {
                    let missing = !a.contains_key("title");
                    if missing {
                        a.insert("title", title);
                    }
                    Ok::<_, std::convert::Infallible>(missing)
                });
            }
            Some(_) => {}
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
        block: &RawObject<'_>,
        allowed: &[&str],
        from: Revision,
        to: Revision,
    ) -> Vec<Box<RawValue>> {
        let _ = (from, to);
        let s = |k: &str| block.get_str(k);
        let kind = s("type").unwrap_or_default();
        let mut out = RawObject::new();
        match &*kind {
            "resource_link" => {
                let mut text = format!(
                    "Resource link: {} <{}>",
                    s("title").or(s("name")).as_deref().unwrap_or("resource"),
                    s("uri").unwrap_or_default()
                );
                if let Some(m) = s("mimeType") {
                    text.push_str(&format!(" ({m})"));
                }
                if let Some(d) = s("description") {
                    text.push_str(&format!("\n{d}"));
                }
                out.insert_str("type", "text");
                out.insert_str("text", &text);
            }
            "audio" if allowed.contains(&"resource") => {
                let member = |k: &str| Cow::Borrowed(block.get(k).unwrap_or(RawValue::NULL));
                let resource = object_of([
                    ("uri", Cow::Owned(raw::string(AUDIO_URI))),
                    ("mimeType", member("mimeType")),
                    ("blob", member("data")),
                ]);
                out.insert_str("type", "resource");
                out.insert("resource", resource);
            }
            "audio" => {
                let (mime, data) = (s("mimeType"), s("data"));
                let text = format!(
                    "[audio] data:{};base64,{}",
                    mime.unwrap_or_default(),
                    data.unwrap_or_default()
                );
                out.insert_str("type", "text");
                out.insert_str("text", &text);
            }
            _ => {
                let mut shown = block.clone();
                shown.remove("_meta");
                out.insert_str("type", "text");
                out.insert_str(
                    "text",
                    &format!("[{kind} content] {}", shown.to_raw().get()),
                );
            }
        }
        if let Some(a) = block.get("annotations") {
            out.insert("annotations", a);
        }
        vec![out.to_raw()]
    }

    /// The error code to send a peer of revision `to` in place of `code`, which `to` does
    /// not allow. Default: the replacement the spec names (`-32002` became `-32602` in
    /// 2026-07-28), else `-32603`.
    fn error_code(&self, code: i64, from: Revision, to: Revision) -> i64 {
        let _ = from;
        crate::errors::replacement(code, to).unwrap_or(code)
    }

    /// Called on every object the walk enters, before its members are filtered for the
    /// target, for conversions no member table can express. Returns whether it changed
    /// anything (an unchanged object keeps its text). Default: nothing. A policy that
    /// overrides this must also say so in [`DowngradePolicy::adjusts_objects`].
    fn adjust(
        &self,
        shape: &ObjectShape,
        object: &mut RawObject<'_>,
        from: Revision,
        to: Revision,
    ) -> bool {
        let _ = (shape, object, from, to);
        false
    }

    /// Whether [`DowngradePolicy::adjust`] may change objects. The translator leaves a
    /// subtree unread when nothing in it concerns the target; an `adjust` that acts on
    /// anything needs every object read, so it turns that shortcut off. Default: `false`.
    fn adjusts_objects(&self) -> bool {
        false
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

/// [`has_text_duplicate`] on raw JSON: whether the `content` array already has a text
/// block whose text is `value` as JSON (the same text, or text decoding to an equal value).
pub fn has_text_duplicate_raw(content: &RawValue, value: &RawValue) -> bool {
    let mut decoded: Option<Option<Value>> = None;
    let mut found = false;
    // A content array that is not one has no duplicate.
    let _ = raw::for_each_item(content, |block| {
        let text = RawObject::from_raw(block)
            .ok()
            .filter(|b| b.get_str("type").as_deref() == Some("text"))
            .and_then(|b| b.get_str("text").map(Cow::into_owned));
        if let Some(text) = text {
            found = text == value.get() || {
                let wanted = decoded.get_or_insert_with(|| serde_json::from_str(value.get()).ok());
                let as_json = serde_json::from_str::<Value>(&text).ok();
                wanted.is_some() && as_json == *wanted
            };
        }
        !found
    });
    found
}

/// A text block holding `text`.
pub(crate) fn text_block(text: &str) -> Box<RawValue> {
    object_of([
        ("type", Cow::Owned(raw::string("text"))),
        ("text", Cow::Owned(raw::string(text))),
    ])
}

/// An object of the given members, in order.
fn object_of<'a, const N: usize>(members: [(&'a str, Cow<'a, RawValue>); N]) -> Box<RawValue> {
    members
        .into_iter()
        .map(|(k, v)| (Cow::Borrowed(k), v))
        .collect::<RawObject<'_>>()
        .to_raw()
}

/// Whether a JSON Schema may admit an object: no `type`, `object` among its types, or a
/// boolean schema other than `false`.
fn may_admit_objects(schema: &RawValue) -> bool {
    if !raw::is_object(schema) {
        return schema.get() != "false";
    }
    let Ok(s) = RawObject::from_raw(schema) else {
        return true;
    };
    match s.get("type") {
        None => true,
        Some(t) if raw::is_array(t) => raw::array(t)
            .unwrap_or_default()
            .iter()
            .any(|t| raw::as_str(t).as_deref() == Some("object")),
        Some(t) => raw::as_str(t).as_deref() == Some("object"),
    }
}
