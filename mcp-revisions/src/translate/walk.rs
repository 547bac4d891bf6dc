//! The table-driven walk over raw JSON: objects, arrays of objects, content blocks,
//! sampling content, `_meta` and input requests.
//!
//! Every step says whether it changed anything (`bool`, or `Some(new text)`), so whatever
//! it did not change is written back as it came. Each subtree is entered only when its
//! text holds a trigger for the target ([`super::triggers`]).

use std::borrow::Cow;

use mcp_types::raw::{self, RawObject};
use serde_json::value::RawValue;

use super::triggers::{self, Node};
use super::{TranslateError, Translator, SAMPLING_ARRAYS};
use crate::policy::text_block;
use crate::shapes::{self, Container, ContentKind, ObjectShape, Shape};
use crate::{meta_keys, spec_data};

/// Blocks in place of one, each kept as it came or rewritten.
type Blocks<'b> = Vec<Cow<'b, RawValue>>;

impl Translator<'_> {
    /// Walks an object of type `shape`: its conversions, then the members the target lacks
    /// removed, then its known members entered. Returns whether it changed.
    pub(super) fn walk_object(
        &self,
        shape: &ObjectShape,
        obj: &mut RawObject<'_>,
    ) -> Result<bool, TranslateError> {
        let mut changed = self.convert(shape, obj);
        changed |= self.policy.adjust(shape, obj, self.from, self.to);
        let to = self.to;
        let before = obj.len();
        obj.retain(|k, _| shape.field(k).is_none_or(|f| f.revisions.contains(to)));
        changed |= obj.len() != before;
        for (k, v) in obj.iter_mut() {
            let Some(f) = shape.field(k) else { continue };
            if let Some(new) = self.walk_value(f.shape, v)? {
                *v = Cow::Owned(new);
                changed = true;
            }
        }
        Ok(changed)
    }

    /// Whether the walk must read this subtree: the shortcut is on and nothing in its text
    /// concerns the target, or it may not be skipped.
    fn must_enter(&self, node: Node, v: &RawValue) -> bool {
        !self.shortcut || triggers::of(node, self.to).found_in(v.get())
    }

    /// Walks a member's value; `Some` holds its new text when it changed.
    pub(super) fn walk_value(
        &self,
        shape: Shape,
        v: &RawValue,
    ) -> Result<Option<Box<RawValue>>, TranslateError> {
        let Some(node) = Node::of(shape) else {
            return Ok(None);
        };
        if !self.must_enter(node, v) {
            return Ok(None);
        }
        match shape {
            Shape::Opaque => Ok(None),
            Shape::Meta => edit(v, |m| Ok(self.meta(m))),
            Shape::Object(o, Container::One) => edit(v, |m| self.walk_object(o, m)),
            Shape::Object(o, Container::Array) => self.objects(o, v),
            Shape::Content(kinds, Container::Array) => {
                let Some(items) = items_of(v) else {
                    return Ok(None);
                };
                Ok(self.content_blocks(kinds, &items)?.map(|b| array_of(&b)))
            }
            Shape::Content(kinds, Container::One) => {
                Ok(self.content_blocks(kinds, &[v])?.map(|mut blocks| {
                    if blocks.is_empty() {
                        text_block("")
                    } else {
                        blocks.swap_remove(0).into_owned()
                    }
                }))
            }
            Shape::SamplingContent(kinds) => self.sampling_content(kinds, v),
            Shape::InputRequests => edit(v, |r| self.input_requests(r)),
        }
    }

    /// An array of objects of one type: only the items with a trigger are read.
    fn objects(
        &self,
        o: &'static ObjectShape,
        v: &RawValue,
    ) -> Result<Option<Box<RawValue>>, TranslateError> {
        let Some(items) = items_of(v) else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(items.len());
        let mut changed = false;
        for item in items {
            let new = if self.must_enter(Node::Object(o), item) {
                edit(item, |m| self.walk_object(o, m))?
            } else {
                None
            };
            changed |= new.is_some();
            out.push(new.map_or(Cow::Borrowed(item), Cow::Owned));
        }
        Ok(changed.then(|| array_of(&out)))
    }

    /// Content blocks at a position allowing `kinds`; `Some` holds the blocks in their
    /// place when any changed.
    fn content_blocks<'b>(
        &self,
        kinds: &'static [ContentKind],
        items: &[&'b RawValue],
    ) -> Result<Option<Blocks<'b>>, TranslateError> {
        let mut out = Vec::with_capacity(items.len());
        let mut changed = false;
        for &item in items {
            let replaced = if raw::is_object(item) && self.must_enter(Node::Content(kinds), item) {
                self.content_block(kinds, item)?
            } else {
                None
            };
            match replaced {
                None => out.push(Cow::Borrowed(item)),
                Some(blocks) => {
                    changed = true;
                    out.extend(blocks.into_iter().map(Cow::Owned));
                }
            }
        }
        Ok(changed.then_some(out))
    }

    /// One block: walked as its type if the target allows it here, converted by the policy
    /// if the target does not, kept if no revision knows its type (not ours to judge).
    fn content_block(
        &self,
        kinds: &'static [ContentKind],
        item: &RawValue,
    ) -> Result<Option<Vec<Box<RawValue>>>, TranslateError> {
        let Ok(mut block) = RawObject::from_raw(item) else {
            return Ok(None);
        };
        let (kind, known_anywhere) = {
            let tag = block.get_str("type").unwrap_or_default();
            let known = spec_data::BLOCK_CONTENT
                .iter()
                .chain(&spec_data::SAMPLING_CONTENT)
                .any(|k| k.tag == tag);
            (kinds.iter().find(|k| k.tag == tag), known)
        };
        match kind {
            Some(k) if k.revisions.contains(self.to) => {
                let changed = self.walk_object(k.shape, &mut block)?;
                Ok(changed.then(|| vec![block.to_raw()]))
            }
            None if !known_anywhere => Ok(None),
            _ => {
                let allowed: Vec<&str> = kinds
                    .iter()
                    .filter(|k| k.revisions.contains(self.to))
                    .map(|k| k.tag)
                    .collect();
                let replacements = self
                    .policy
                    .convert_content(&block, &allowed, self.from, self.to);
                let mut out = Vec::with_capacity(replacements.len());
                for r in replacements {
                    out.extend(self.replacement(kinds, r)?);
                }
                Ok(Some(out))
            }
        }
    }

    /// A block the policy put in place of another: kept only if the target can carry it
    /// here (so conversions never loop), and walked like any other.
    fn replacement(
        &self,
        kinds: &'static [ContentKind],
        block: Box<RawValue>,
    ) -> Result<Option<Box<RawValue>>, TranslateError> {
        let Ok(mut obj) = RawObject::from_raw(&block) else {
            return Ok(None);
        };
        let kind = {
            let tag = obj.get_str("type").unwrap_or_default();
            kinds
                .iter()
                .find(|k| k.tag == tag && k.revisions.contains(self.to))
        };
        let Some(kind) = kind else {
            return Ok(None);
        };
        let walked = self
            .walk_object(kind.shape, &mut obj)?
            .then(|| obj.to_raw());
        drop(obj);
        Ok(Some(walked.unwrap_or(block)))
    }

    /// Sampling content: one block, or from 2025-11-25 an array of blocks. Where the target
    /// takes one block, several text blocks join into one; anything else cannot be said.
    fn sampling_content(
        &self,
        kinds: &'static [ContentKind],
        v: &RawValue,
    ) -> Result<Option<Box<RawValue>>, TranslateError> {
        let is_array = raw::is_array(v);
        let items = if is_array {
            match items_of(v) {
                Some(items) => items,
                None => return Ok(None),
            }
        } else {
            vec![v]
        };
        let converted = self.content_blocks(kinds, &items)?;
        if is_array && SAMPLING_ARRAYS.contains(self.to) {
            return Ok(converted.map(|b| array_of(&b)));
        }
        if !is_array && converted.is_none() {
            return Ok(None);
        }
        let mut blocks =
            converted.unwrap_or_else(|| items.iter().map(|i| Cow::Borrowed(*i)).collect());
        if blocks.len() == 1 {
            return Ok(Some(blocks.swap_remove(0).into_owned()));
        }
        let mut texts = Vec::with_capacity(blocks.len());
        for b in &blocks {
            let text = RawObject::from_raw(b)
                .ok()
                .filter(|o| o.get_str("type").as_deref() == Some("text"))
                .map(|o| o.get_str("text").map(Cow::into_owned));
            match text {
                Some(t) => texts.extend(t),
                None => {
                    return Err(TranslateError::NoEquivalent {
                        what: "sampling content with several non-text blocks".into(),
                        revision: self.to,
                        reason: "before 2025-11-25 a sampling message holds exactly one block",
                    })
                }
            }
        }
        Ok(Some(text_block(&texts.join("\n"))))
    }

    /// 2026-07-28 `inputRequests`: each request's params walked as its method's.
    fn input_requests(&self, requests: &mut RawObject<'_>) -> Result<bool, TranslateError> {
        let mut changed = false;
        for (_, request) in requests.iter_mut() {
            let new = edit(request, |r| {
                let spec = r.get_str("method").and_then(|m| shapes::method(&m));
                match spec {
                    Some(spec) => r.edit_object("params", |p| self.walk_object(spec.params, p)),
                    None => Ok(false),
                }
            })?;
            if let Some(new) = new {
                *request = Cow::Owned(new);
                changed = true;
            }
        }
        Ok(changed)
    }

    /// Drops the MCP `_meta` keys the target does not define; others (vendors') stay.
    pub(super) fn meta(&self, m: &mut RawObject<'_>) -> bool {
        let to = self.to;
        let before = m.len();
        m.retain(|k, _| meta_keys::revisions_of(k).is_none_or(|r| r.contains(to)));
        m.len() != before
    }
}

/// Edits `v` as an object; `Some` holds its new text when `f` changed it. A value that is
/// not an object is left alone (validating is not translation's job).
pub(super) fn edit(
    v: &RawValue,
    f: impl FnOnce(&mut RawObject<'_>) -> Result<bool, TranslateError>,
) -> Result<Option<Box<RawValue>>, TranslateError> {
    if !raw::is_object(v) {
        return Ok(None);
    }
    let Ok(mut obj) = RawObject::from_raw(v) else {
        return Ok(None);
    };
    Ok(f(&mut obj)?.then(|| obj.to_raw()))
}

/// [`RawObject::edit_object`] for edits that cannot fail.
pub(super) fn edit_member(
    obj: &mut RawObject<'_>,
    key: &str,
    f: impl FnOnce(&mut RawObject<'_>) -> bool,
) -> bool {
    obj.edit_object(key, |m| Ok::<_, std::convert::Infallible>(f(m)))
        .unwrap_or_else(|never| match never {})
}

/// Member `key` as an object, created from `default` when absent, then edited by `f`.
/// Returns whether anything changed; a member that is not an object is left alone.
pub(super) fn with_object(
    obj: &mut RawObject<'_>,
    key: &'static str,
    default: &RawValue,
    f: impl FnOnce(&mut RawObject<'_>) -> bool,
) -> bool {
    if obj.contains_key(key) {
        return edit_member(obj, key, f);
    }
    let Ok(mut fresh) = RawObject::from_raw(default) else {
        return false;
    };
    f(&mut fresh);
    let fresh = fresh.to_raw();
    obj.insert(key, fresh);
    true
}

/// The items of an array value; `None` if it is not one.
fn items_of(v: &RawValue) -> Option<Vec<&RawValue>> {
    if raw::is_array(v) {
        raw::array(v).ok()
    } else {
        None
    }
}

/// Items written back as an array.
fn array_of(items: &[Cow<'_, RawValue>]) -> Box<RawValue> {
    let refs: Vec<&RawValue> = items.iter().map(|i| &**i).collect();
    raw::to_array(&refs)
}
