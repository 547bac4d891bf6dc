//! Content blocks: what tools, prompts and sampling return.
//!
//! [`ContentBlock`] is an open enum: a block whose `type` this crate does not
//! know is kept whole in [`ContentBlock::Unknown`] instead of failing the message.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::common::Annotations;
use super::resources::Resource;
use crate::meta::Meta;
use crate::model::wire_object;

wire_object! {
    /// `type: "text"`.
    pub struct TextContent {
        /// The text.
        req text: String,
        /// Display hints.
        opt annotations: Annotations,
        /// Metadata (2025-06-18+).
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// `type: "image"` or `type: "audio"` (2025-03-26+): base64 data with a MIME type.
    pub struct BinaryContent {
        /// Base64-encoded bytes.
        req data: String,
        /// MIME type of the bytes.
        req mime_type: String,
        /// Display hints.
        opt annotations: Annotations,
        /// Metadata (2025-06-18+).
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

/// `type: "resource_link"` (2025-06-18+): a resource the client may read, by URI. The spec
/// defines it as a [`Resource`] with a `type`.
pub type ResourceLink = Resource;

wire_object! {
    /// The contents of a resource: `text` or base64 `blob`.
    pub struct ResourceContents {
        /// The resource URI.
        req uri: String,
        /// MIME type.
        opt mime_type: String,
        /// Text contents.
        opt text: String,
        /// Base64 binary contents.
        opt blob: String,
        /// Metadata (2025-06-18+).
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// `type: "resource"`: a resource embedded in the message.
    pub struct EmbeddedResource {
        /// The contents.
        req resource: ResourceContents,
        /// Display hints.
        opt annotations: Annotations,
        /// Metadata (2025-06-18+).
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// `type: "tool_use"` (sampling, 2025-11-25+): the model asks to call a tool.
    pub struct ToolUseContent {
        /// Id the matching `tool_result` refers to.
        req id: String,
        /// Tool name.
        req name: String,
        /// Tool arguments.
        req input: Value,
        /// Metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

wire_object! {
    /// `type: "tool_result"` (sampling, 2025-11-25+): the result of a `tool_use`.
    pub struct ToolResultContent {
        /// The `tool_use` id this answers.
        req tool_use_id: String,
        /// Unstructured result.
        req content: Vec<ContentBlock>,
        /// Structured result; `null` is kept distinct from absent.
        #[serde(deserialize_with = "crate::serde_util::present")]
        opt structured_content: Value,
        /// Whether the tool failed.
        opt is_error: bool,
        /// Metadata.
        #[serde(rename = "_meta")]
        opt meta: Meta,
    }
}

/// One content block, by its `type`.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// `text`
    Text(TextContent),
    /// `image`
    Image(BinaryContent),
    /// `audio` (2025-03-26+)
    Audio(BinaryContent),
    /// `resource_link` (2025-06-18+)
    ResourceLink(ResourceLink),
    /// `resource`
    Resource(EmbeddedResource),
    /// `tool_use` (sampling, 2025-11-25+)
    ToolUse(ToolUseContent),
    /// `tool_result` (sampling, 2025-11-25+)
    ToolResult(ToolResultContent),
    /// A block of a type this crate does not know, `type` member included.
    Unknown(Map<String, Value>),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent {
            text: text.into(),
            ..Default::default()
        })
    }

    /// The wire `type` of this block.
    pub fn kind(&self) -> &str {
        match self {
            ContentBlock::Text(_) => "text",
            ContentBlock::Image(_) => "image",
            ContentBlock::Audio(_) => "audio",
            ContentBlock::ResourceLink(_) => "resource_link",
            ContentBlock::Resource(_) => "resource",
            ContentBlock::ToolUse(_) => "tool_use",
            ContentBlock::ToolResult(_) => "tool_result",
            ContentBlock::Unknown(m) => m.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }
}

impl Default for ContentBlock {
    fn default() -> Self {
        ContentBlock::text("")
    }
}

#[derive(Serialize)]
struct Tagged<'a, T> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(flatten)]
    inner: &'a T,
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let kind = self.kind();
        match self {
            ContentBlock::Text(c) => Tagged { kind, inner: c }.serialize(s),
            ContentBlock::Image(c) | ContentBlock::Audio(c) => {
                Tagged { kind, inner: c }.serialize(s)
            }
            ContentBlock::ResourceLink(c) => Tagged { kind, inner: c }.serialize(s),
            ContentBlock::Resource(c) => Tagged { kind, inner: c }.serialize(s),
            ContentBlock::ToolUse(c) => Tagged { kind, inner: c }.serialize(s),
            ContentBlock::ToolResult(c) => Tagged { kind, inner: c }.serialize(s),
            ContentBlock::Unknown(m) => m.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut map = Map::<String, Value>::deserialize(d)?;
        let kind = match map.get("type") {
            Some(Value::String(s)) => s.clone(),
            _ => return Err(D::Error::custom("content block without a string `type`")),
        };
        fn body<T: serde::de::DeserializeOwned, E: serde::de::Error>(
            mut map: Map<String, Value>,
        ) -> Result<T, E> {
            map.remove("type");
            serde_json::from_value(Value::Object(map)).map_err(E::custom)
        }
        Ok(match kind.as_str() {
            "text" => ContentBlock::Text(body(map)?),
            "image" => ContentBlock::Image(body(map)?),
            "audio" => ContentBlock::Audio(body(map)?),
            "resource_link" => ContentBlock::ResourceLink(body(map)?),
            "resource" => ContentBlock::Resource(body(map)?),
            "tool_use" => ContentBlock::ToolUse(body(map)?),
            "tool_result" => ContentBlock::ToolResult(body(map)?),
            _ => {
                map.entry("type").or_insert(Value::String(kind));
                ContentBlock::Unknown(map)
            }
        })
    }
}

/// Sampling content: one block, or (2025-11-25+) an array of blocks.
// Boxing the single block would cost an allocation on every sampling message.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SamplingContent {
    /// A single block.
    One(ContentBlock),
    /// Several blocks.
    Many(Vec<ContentBlock>),
}

impl Default for SamplingContent {
    fn default() -> Self {
        SamplingContent::Many(Vec::new())
    }
}

impl<'de> Deserialize<'de> for SamplingContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            v @ Value::Array(_) => serde_json::from_value(v).map(SamplingContent::Many),
            v => serde_json::from_value(v).map(SamplingContent::One),
        }
        .map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_block_types_are_kept_whole() {
        let v = serde_json::json!({"type": "hologram", "frames": [1, 2], "_meta": {"a": 1}});
        let block: ContentBlock = serde_json::from_value(v.clone()).expect("decodes");
        assert_eq!(block.kind(), "hologram");
        assert_eq!(serde_json::to_value(&block).expect("encodes"), v);
    }

    #[test]
    fn known_blocks_keep_unknown_members() {
        let v = serde_json::json!({"type": "text", "text": "hi", "x-vendor": {"k": [null]}});
        let block: ContentBlock = serde_json::from_value(v.clone()).expect("decodes");
        assert!(matches!(block, ContentBlock::Text(_)));
        assert_eq!(serde_json::to_value(&block).expect("encodes"), v);
    }

    #[test]
    fn a_block_without_type_is_an_error_not_a_panic() {
        assert!(serde_json::from_value::<ContentBlock>(serde_json::json!({"text": "x"})).is_err());
        assert!(
            serde_json::from_value::<ContentBlock>(serde_json::json!({"type": "text"})).is_err()
        );
    }
}
