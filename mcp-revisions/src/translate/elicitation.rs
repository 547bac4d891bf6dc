//! Elicitation forms: 2025-11-25 added URL mode, defaults, titled and multi-select enums.

use std::borrow::Cow;

use mcp_types::raw::{self, RawObject};
use mcp_types::Revision;
use serde_json::value::RawValue;

use super::TranslateError;
use crate::shapes::RevisionSet;

/// Revisions whose form schemas have only the 2025-06-18 primitives.
const SIMPLE_FORMS: RevisionSet = RevisionSet::parse("..X..");

/// Whether elicitation payloads going to `to` need this module. No token list can say
/// which JSON Schema keywords a form holds, so such payloads are always read.
pub(super) fn changes(to: Revision) -> bool {
    SIMPLE_FORMS.contains(to)
}

/// Members each 2025-06-18 primitive schema may carry, by `type`.
fn simple_members(kind: &str, is_enum: bool) -> &'static [&'static str] {
    match (kind, is_enum) {
        ("string", true) => &["type", "title", "description", "enum", "enumNames"],
        ("string", false) => &[
            "type",
            "title",
            "description",
            "minLength",
            "maxLength",
            "format",
        ],
        ("number" | "integer", _) => &["type", "title", "description", "minimum", "maximum"],
        ("boolean", _) => &["type", "title", "description", "default"],
        _ => &[],
    }
}

fn no(to: Revision, what: &str, reason: &'static str) -> TranslateError {
    TranslateError::NoEquivalent {
        what: what.to_owned(),
        revision: to,
        reason,
    }
}

pub(super) fn params(obj: &mut RawObject<'_>, to: Revision) -> Result<bool, TranslateError> {
    if !SIMPLE_FORMS.contains(to) {
        return Ok(false);
    }
    if obj.get_str("mode").as_deref() == Some("url") {
        return Err(no(
            to,
            "URL-mode elicitation",
            "URL mode arrived in 2025-11-25",
        ));
    }
    let removed_mode = obj.remove("mode").is_some();
    let simplified = obj.edit_object("requestedSchema", |schema| {
        schema.edit_object("properties", |props| simple_properties(props, to))
    })?;
    Ok(removed_mode || simplified)
}

/// Every form field made a 2025-06-18 primitive, or the reason one cannot be.
fn simple_properties(props: &mut RawObject<'_>, to: Revision) -> Result<bool, TranslateError> {
    let mut changed = false;
    for (name, prop) in props.iter_mut() {
        if !raw::is_object(prop) {
            continue;
        }
        let new = {
            let Ok(mut p) = RawObject::from_raw(prop) else {
                continue;
            };
            if !simple_property(name, &mut p, to)? {
                continue;
            }
            p.to_raw()
        };
        *prop = Cow::Owned(new);
        changed = true;
    }
    Ok(changed)
}

fn simple_property(
    name: &str,
    p: &mut RawObject<'_>,
    to: Revision,
) -> Result<bool, TranslateError> {
    let kind = p.get_str("type").map(Cow::into_owned).unwrap_or_default();
    if kind == "array" {
        return Err(no(
            to,
            &format!("multi-select form field `{name}`"),
            "multi-select enums arrived in 2025-11-25",
        ));
    }
    let mut changed = false;
    // A titled single-select becomes the 2025-06-18 enum with enumNames.
    if let Some(options) = p.remove("oneOf") {
        changed = true;
        if let Ok(items) = raw::array(&options) {
            let parsed: Vec<Option<RawObject<'_>>> =
                items.iter().map(|o| RawObject::from_raw(o).ok()).collect();
            let pick = |k: &str| {
                let picked: Vec<&RawValue> = parsed
                    .iter()
                    .map(|o| o.as_ref().and_then(|o| o.get(k)).unwrap_or(RawValue::NULL))
                    .collect();
                raw::to_array(&picked)
            };
            let (values, names) = (pick("const"), pick("title"));
            p.insert("enum", values);
            p.insert("enumNames", names);
        }
    }
    let allowed = simple_members(&kind, p.contains_key("enum"));
    let before = p.len();
    p.retain(|k, _| allowed.contains(&k));
    Ok(changed || p.len() != before)
}

pub(super) fn result(obj: &RawObject<'_>, to: Revision) -> Result<(), TranslateError> {
    if !SIMPLE_FORMS.contains(to) {
        return Ok(());
    }
    let arrays = obj
        .get("content")
        .filter(|c| raw::is_object(c))
        .and_then(|c| RawObject::from_raw(c).ok())
        .is_some_and(|c| c.iter().any(|(_, v)| raw::is_array(v)));
    if arrays {
        return Err(no(
            to,
            "a multi-select answer",
            "2025-06-18 form answers are strings, numbers and booleans",
        ));
    }
    Ok(())
}
