//! Translating messages between revisions.
//!
//! One table-driven walk ([`crate::spec_data`]) removes every member the target
//! revision does not define, and the [`DowngradePolicy`] keeps meaning where a
//! member or content type would otherwise vanish. Going up, what the newer revision
//! requires is filled in (`resultType`, `ttlMs`/`cacheScope`, request `_meta`).
//! Members no revision defines (vendor extensions) are kept. When `from == to` the
//! message is returned as it is, payload bytes untouched.

use mcp_types::protocol::{method, TASKS_EXTENSION};
use mcp_types::{meta, Message, Revision};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::policy::{DowngradePolicy, SpecPolicy};
use crate::shapes::{self, Container, ContentKind, MethodKind, ObjectShape, RevisionSet, Shape};
use crate::{meta_keys, spec_data};

/// Revisions whose `structuredContent` and `outputSchema` must be objects.
const OBJECT_ONLY_STRUCTURED: RevisionSet = RevisionSet::parse("..XX.");

/// Revisions whose elicitation capability names its modes (`form`, `url`).
const ELICITATION_MODES: RevisionSet = RevisionSet::parse("...XX");

/// Revisions whose sampling content may be an array of blocks.
const SAMPLING_ARRAYS: RevisionSet = RevisionSet::parse("...XX");

/// Why a message could not be translated.
#[derive(Debug, thiserror::Error)]
pub enum TranslateError {
    /// The method does not exist in the target revision (e.g. `initialize` for 2026-07-28).
    #[error("`{method}` does not exist in MCP {revision}")]
    MethodNotInRevision {
        /// The method.
        method: String,
        /// The target revision.
        revision: Revision,
    },
    /// A response was given without the method of the request it answers.
    #[error("a response can only be translated knowing the method of the request it answers")]
    MissingMethod,
    /// The message has no faithful equivalent in the target revision; a bridge (the
    /// proxy) must carry it some other way.
    #[error("{what} has no equivalent in MCP {revision}: {reason}")]
    NoEquivalent {
        /// What could not be expressed.
        what: String,
        /// The target revision.
        revision: Revision,
        /// Why.
        reason: &'static str,
    },
    /// The payload is not what its method calls for (not an object, not JSON).
    #[error("invalid {what} for `{method}`: {reason}")]
    Invalid {
        /// `params` or `result`.
        what: &'static str,
        /// The method.
        method: String,
        /// What is wrong.
        reason: String,
    },
}

/// Translates between two revisions with a policy.
pub struct Translator<'p> {
    from: Revision,
    to: Revision,
    /// Walk even when `from == to`: the input may hold members of any revision.
    canonical: bool,
    policy: &'p dyn DowngradePolicy,
    client_capabilities: Option<Value>,
}

/// Translates one message with the default policy. `answers` names the method of the
/// request a response answers (required for responses).
pub fn translate(
    msg: &Message,
    from: Revision,
    to: Revision,
    answers: Option<&str>,
) -> Result<Message, TranslateError> {
    Translator::new(from, to).message(msg, answers)
}

impl Translator<'static> {
    /// A translator with the default [`SpecPolicy`].
    pub fn new(from: Revision, to: Revision) -> Self {
        static DEFAULT: SpecPolicy = SpecPolicy;
        Translator {
            from,
            to,
            canonical: false,
            policy: &DEFAULT,
            client_capabilities: None,
        }
    }

    /// A translator for values built from `mcp-types`' union model (a server's own results),
    /// which may hold members of any revision: it always walks, even to the newest revision.
    pub fn canonical_to(to: Revision) -> Self {
        Translator {
            canonical: true,
            ..Translator::new(Revision::LATEST, to)
        }
    }
}

impl<'p> Translator<'p> {
    /// Uses `policy` for the conversions.
    pub fn with_policy<'q>(self, policy: &'q dyn DowngradePolicy) -> Translator<'q> {
        Translator {
            from: self.from,
            to: self.to,
            canonical: self.canonical,
            policy,
            client_capabilities: self.client_capabilities,
        }
    }

    /// The capabilities to declare in a request's `_meta` when translating up to
    /// 2026-07-28 (default: `{}`, "no optional capabilities").
    pub fn with_client_capabilities(mut self, capabilities: Value) -> Self {
        self.client_capabilities = Some(capabilities);
        self
    }

    /// Translates a whole message.
    pub fn message(&self, msg: &Message, answers: Option<&str>) -> Result<Message, TranslateError> {
        if self.from == self.to && !self.canonical {
            return Ok(msg.clone());
        }
        Ok(match msg {
            Message::Request(r) => {
                let (method, params) =
                    self.request_parts(&r.method, r.params.as_deref(), MethodKind::Request)?;
                let mut out = r.clone();
                out.method = method;
                out.params = params;
                Message::Request(out)
            }
            Message::Notification(n) => {
                let (method, params) =
                    self.request_parts(&n.method, n.params.as_deref(), MethodKind::Notification)?;
                let mut out = n.clone();
                out.method = method;
                out.params = params;
                Message::Notification(out)
            }
            Message::Response(r) => {
                let method = answers.ok_or(TranslateError::MissingMethod)?;
                let value = parse(r.result.get(), "result", method)?;
                let mut out = r.clone();
                out.result = to_raw(&self.result(method, value)?);
                Message::Response(out)
            }
            Message::Error(e) => {
                let mut out = e.clone();
                out.error.code = self.policy.error_code(e.error.code, self.from, self.to);
                Message::Error(out)
            }
        })
    }

    fn request_parts(
        &self,
        name: &str,
        params: Option<&RawValue>,
        kind: MethodKind,
    ) -> Result<(String, Option<Box<RawValue>>), TranslateError> {
        let method = self.method_name(name)?;
        let spec = shapes::method(name).or_else(|| shapes::method(&method));
        if spec.is_none() && !tasks::is_task_method(name) {
            // A vendor method: nothing to translate, nothing to drop.
            return Ok((method, params.map(ToOwned::to_owned)));
        }
        let mut value = match params {
            Some(p) => parse(p.get(), "params", name)?,
            None => Value::Object(Map::new()),
        };
        self.translate_params(name, &method, &mut value)?;
        if kind == MethodKind::Request && self.to == Revision::V2026_07_28 {
            self.add_request_meta(&mut value);
        }
        let empty = matches!(&value, Value::Object(m) if m.is_empty());
        Ok((
            method,
            if params.is_none() && empty {
                None
            } else {
                Some(to_raw(&value))
            },
        ))
    }

    /// The name `name` has in the target revision, or why it has none.
    pub fn method_name(&self, name: &str) -> Result<String, TranslateError> {
        if let Some(renamed) = tasks::renamed_method(name, self.from, self.to) {
            return Ok(renamed.to_owned());
        }
        let exists = match shapes::method(name) {
            Some(spec) => spec.revisions.contains(self.to) || tasks::in_extension(name, self.to),
            None => !tasks::in_extension(name, self.from) || tasks::in_extension(name, self.to),
        };
        if exists {
            Ok(name.to_owned())
        } else {
            Err(TranslateError::MethodNotInRevision {
                method: name.to_owned(),
                revision: self.to,
            })
        }
    }

    /// Translates the params of `method` (the method's name in the target may differ:
    /// see [`Translator::method_name`]).
    pub fn params(&self, method: &str, mut params: Value) -> Result<Value, TranslateError> {
        let target = self.method_name(method)?;
        if shapes::method(method).is_some() || tasks::is_task_method(method) {
            self.translate_params(method, &target, &mut params)?;
            let is_request = shapes::method(method).is_some_and(|s| s.kind == MethodKind::Request);
            if is_request && self.to == Revision::V2026_07_28 {
                self.add_request_meta(&mut params);
            }
        }
        Ok(params)
    }

    fn translate_params(
        &self,
        method: &str,
        target: &str,
        value: &mut Value,
    ) -> Result<(), TranslateError> {
        let Value::Object(obj) = value else {
            return Err(invalid("params", method, "params must be an object"));
        };
        if tasks::is_task_method(method) {
            tasks::params(method, obj, self.to)?;
            if self.to == Revision::V2026_07_28 {
                // The extension's shapes are not in the core table; only `_meta` needs filtering.
                if let Some(Value::Object(m)) = obj.get_mut("_meta") {
                    self.meta(m);
                }
                return Ok(());
            }
        }
        match method {
            method::ELICITATION_CREATE => elicitation::params(obj, self.from, self.to)?,
            method::INITIALIZE => {
                obj.insert("protocolVersion".into(), json!(self.to.as_str()));
            }
            method::CANCELLED
                if !obj.contains_key("requestId") && self.to != Revision::V2025_11_25 =>
            {
                return Err(TranslateError::NoEquivalent {
                    what: "a cancellation without a requestId".into(),
                    revision: self.to,
                    reason: "only 2025-11-25 lets notifications/cancelled omit requestId",
                });
            }
            _ => {}
        }
        let asks_for_task = method == method::TOOLS_CALL && obj.contains_key("task");
        match shapes::method(target).or_else(|| shapes::method(method)) {
            Some(spec) => self.walk_object(spec.params, obj)?,
            None => return Ok(()),
        }
        if asks_for_task && self.to == Revision::V2026_07_28 {
            // The extension replaces `params.task`: declaring it lets the server answer with a task.
            let meta = obj.entry("_meta").or_insert_with(|| json!({}));
            if let Value::Object(m) = meta {
                let caps = m.entry(meta::CLIENT_CAPABILITIES).or_insert_with(|| {
                    self.client_capabilities
                        .clone()
                        .unwrap_or_else(|| json!({}))
                });
                if let Value::Object(c) = caps {
                    let ext = c.entry("extensions").or_insert_with(|| json!({}));
                    if let Value::Object(e) = ext {
                        e.entry(TASKS_EXTENSION).or_insert_with(|| json!({}));
                    }
                }
            }
        }
        Ok(())
    }

    fn add_request_meta(&self, params: &mut Value) {
        let Value::Object(obj) = params else { return };
        let meta = obj.entry("_meta").or_insert_with(|| json!({}));
        if let Value::Object(m) = meta {
            m.entry(meta::PROTOCOL_VERSION)
                .or_insert_with(|| json!(Revision::V2026_07_28.as_str()));
            m.entry(meta::CLIENT_CAPABILITIES).or_insert_with(|| {
                self.client_capabilities
                    .clone()
                    .unwrap_or_else(|| json!({}))
            });
        }
    }

    /// Translates the result of a request for `method`.
    pub fn result(&self, method: &str, result: Value) -> Result<Value, TranslateError> {
        if self.from == self.to && !self.canonical {
            return Ok(result);
        }
        self.method_name(method)?;
        let Value::Object(mut obj) = result else {
            return Err(invalid("result", method, "a result must be an object"));
        };
        match obj.get("resultType").and_then(Value::as_str) {
            Some("input_required") if self.from == Revision::V2026_07_28 => {
                self.input_required(&mut obj)?;
            }
            // A server's own task (canonical) going to a 2026 client: the extension's names.
            Some("task") if self.to == Revision::V2026_07_28 => tasks::rename(&mut obj, self.to),
            Some("task") if self.from == Revision::V2026_07_28 => {
                tasks::created_from_extension(&mut obj, self.to)?;
                self.walk_object(&spec_data::CREATE_TASK_RESULT, &mut obj)?;
            }
            _ if tasks::is_task_method(method) => {
                tasks::result(method, &mut obj, self.from, self.to)?;
                // The extension's task shapes are not in the core table; their members were mapped above.
                if self.to != Revision::V2026_07_28 {
                    self.walk_result(method, &mut obj)?;
                }
            }
            _ => {
                if method == method::ELICITATION_CREATE {
                    elicitation::result(&obj, self.to)?;
                }
                self.walk_result(method, &mut obj)?
            }
        }
        Ok(Value::Object(obj))
    }

    fn walk_result(
        &self,
        method: &str,
        obj: &mut Map<String, Value>,
    ) -> Result<(), TranslateError> {
        if method == method::INITIALIZE {
            obj.insert("protocolVersion".into(), json!(self.to.as_str()));
        }
        match shapes::method(method).and_then(|m| m.result) {
            Some(shape) => self.walk_object(shape, obj),
            None => {
                if self.to == Revision::V2026_07_28 {
                    // Every 2026 result says what it is.
                    obj.entry("resultType").or_insert_with(|| json!("complete"));
                }
                Ok(())
            }
        }
    }

    /// Translates the answer to a 2025-11-25 task-augmented request (`CreateTaskResult`)
    /// or a 2026-07-28 extension `resultType: "task"` answer.
    pub fn task_created_result(&self, mut result: Value) -> Result<Value, TranslateError> {
        if self.from == self.to && !self.canonical {
            return Ok(result);
        }
        let Value::Object(obj) = &mut result else {
            return Err(invalid(
                "result",
                "tools/call",
                "a result must be an object",
            ));
        };
        if self.from == Revision::V2026_07_28 {
            tasks::created_from_extension(obj, self.to)?;
        } else {
            tasks::created_to_extension(obj, self.to)?;
        }
        if self.to != Revision::V2026_07_28 {
            self.walk_object(&spec_data::CREATE_TASK_RESULT, obj)?;
        }
        Ok(result)
    }

    /// Translates a standalone object of a named type (`Tool`, `Prompt`, `Resource`, …).
    pub fn object(&self, type_name: &str, mut value: Value) -> Result<Value, TranslateError> {
        let shape = shapes::object(type_name)
            .ok_or_else(|| invalid("object", type_name, "unknown type"))?;
        if !shape.revisions.contains(self.to) {
            return Err(TranslateError::NoEquivalent {
                what: type_name.to_owned(),
                revision: self.to,
                reason: "the revision has no such type",
            });
        }
        if let Value::Object(obj) = &mut value {
            self.walk_object(shape, obj)?;
        }
        Ok(value)
    }

    fn input_required(&self, obj: &mut Map<String, Value>) -> Result<(), TranslateError> {
        if self.to != Revision::V2026_07_28 {
            return Err(TranslateError::NoEquivalent {
                what: "InputRequiredResult".into(),
                revision: self.to,
                reason:
                    "legacy servers ask with server-to-client requests; bridge the input requests",
            });
        }
        self.walk_object(&spec_data::INPUT_REQUIRED_RESULT, obj)
    }

    fn walk_object(
        &self,
        shape: &ObjectShape,
        obj: &mut Map<String, Value>,
    ) -> Result<(), TranslateError> {
        self.convert(shape, obj)?;
        self.policy.adjust(shape, obj, self.from, self.to);
        let to = self.to;
        obj.retain(|k, _| shape.field(k).is_none_or(|f| f.revisions.contains(to)));
        for (k, v) in obj.iter_mut() {
            if let Some(f) = shape.field(k) {
                self.walk_value(f.shape, v)?;
            }
        }
        Ok(())
    }

    fn walk_value(&self, shape: Shape, v: &mut Value) -> Result<(), TranslateError> {
        match (shape, v) {
            (Shape::Opaque, _) => {}
            (Shape::Meta, Value::Object(m)) => self.meta(m),
            (Shape::Object(o, Container::One), Value::Object(m)) => self.walk_object(o, m)?,
            (Shape::Object(o, Container::Array), Value::Array(items)) => {
                for item in items {
                    if let Value::Object(m) = item {
                        self.walk_object(o, m)?;
                    }
                }
            }
            (Shape::Content(kinds, Container::Array), Value::Array(items)) => {
                *items = self.content_blocks(kinds, std::mem::take(items))?;
            }
            (Shape::Content(kinds, Container::One), v) => {
                let mut blocks = self.content_blocks(kinds, vec![v.take()])?;
                *v = if blocks.is_empty() {
                    json!({"type": "text", "text": ""})
                } else {
                    blocks.swap_remove(0)
                };
            }
            (Shape::SamplingContent(kinds), v) => self.sampling_content(kinds, v)?,
            (Shape::InputRequests, Value::Object(requests)) => {
                for request in requests.values_mut() {
                    let Value::Object(r) = request else { continue };
                    let spec = r
                        .get("method")
                        .and_then(Value::as_str)
                        .and_then(shapes::method);
                    if let (Some(spec), Some(Value::Object(p))) = (spec, r.get_mut("params")) {
                        self.walk_object(spec.params, p)?;
                    }
                }
            }
            // A value of the wrong JSON type: leave it; validation is not translation's job.
            _ => {}
        }
        Ok(())
    }

    fn content_blocks(
        &self,
        kinds: &'static [ContentKind],
        blocks: Vec<Value>,
    ) -> Result<Vec<Value>, TranslateError> {
        let mut out = Vec::with_capacity(blocks.len());
        for block in blocks {
            let Value::Object(mut b) = block else {
                out.push(block);
                continue;
            };
            let tag = b.get("type").and_then(Value::as_str).unwrap_or_default();
            let known_anywhere = kinds.iter().any(|k| k.tag == tag)
                || spec_data::BLOCK_CONTENT
                    .iter()
                    .chain(&spec_data::SAMPLING_CONTENT)
                    .any(|k| k.tag == tag);
            match kinds.iter().find(|k| k.tag == tag) {
                Some(k) if k.revisions.contains(self.to) => {
                    self.walk_object(k.shape, &mut b)?;
                    out.push(Value::Object(b));
                }
                // A type no revision defines: not ours to judge, so kept.
                None if !known_anywhere => out.push(Value::Object(b)),
                _ => {
                    let allowed: Vec<&str> = kinds
                        .iter()
                        .filter(|k| k.revisions.contains(self.to))
                        .map(|k| k.tag)
                        .collect();
                    for replacement in self.policy.convert_content(b, &allowed, self.from, self.to)
                    {
                        let Value::Object(mut r) = replacement else {
                            continue;
                        };
                        let rtag = r.get("type").and_then(Value::as_str).unwrap_or_default();
                        // Only replacements the target can carry are kept: no conversion loops.
                        if let Some(k) = kinds
                            .iter()
                            .find(|k| k.tag == rtag && k.revisions.contains(self.to))
                        {
                            self.walk_object(k.shape, &mut r)?;
                            out.push(Value::Object(r));
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    fn sampling_content(
        &self,
        kinds: &'static [ContentKind],
        v: &mut Value,
    ) -> Result<(), TranslateError> {
        let arrays_allowed = SAMPLING_ARRAYS.contains(self.to);
        let blocks = match v.take() {
            Value::Array(items) => items,
            single => vec![single],
        };
        let was_array = blocks.len() != 1;
        let mut blocks = self.content_blocks(kinds, blocks)?;
        *v = if was_array && arrays_allowed {
            Value::Array(blocks)
        } else if blocks.len() == 1 {
            blocks.swap_remove(0)
        } else if blocks
            .iter()
            .all(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        {
            let text: Vec<&str> = blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            json!({"type": "text", "text": text.join("\n")})
        } else {
            return Err(TranslateError::NoEquivalent {
                what: "sampling content with several non-text blocks".into(),
                revision: self.to,
                reason: "before 2025-11-25 a sampling message holds exactly one block",
            });
        };
        Ok(())
    }

    fn meta(&self, m: &mut Map<String, Value>) {
        let to = self.to;
        m.retain(|k, _| meta_keys::revisions_of(k).is_none_or(|r| r.contains(to)));
    }

    /// Conversions tied to one type that the member table cannot express.
    fn convert(
        &self,
        shape: &ObjectShape,
        obj: &mut Map<String, Value>,
    ) -> Result<(), TranslateError> {
        let to = self.to;
        if std::ptr::eq(shape, &spec_data::TOOL) {
            if !shape.has("title", to) {
                if let Some(title) = obj.remove("title") {
                    self.policy.tool_title_dropped(obj, title, to);
                }
            }
            if OBJECT_ONLY_STRUCTURED.contains(to) {
                if let Some(schema) = obj.get_mut("outputSchema") {
                    if schema.get("type").and_then(Value::as_str) != Some("object") {
                        *schema = self.policy.wrap_output_schema(schema.take());
                    }
                }
            }
        }
        if std::ptr::eq(shape, &spec_data::CLIENT_CAPABILITIES) && !ELICITATION_MODES.contains(to) {
            // Before 2025-11-25 elicitation means form mode: a URL-only client must not claim it.
            let url_only = matches!(obj.get("elicitation"), Some(Value::Object(e)) if e.contains_key("url") && !e.contains_key("form"));
            if url_only {
                obj.remove("elicitation");
            }
        }
        if shape.field("structuredContent").is_some() {
            if !shape.has("structuredContent", to) {
                if let Some(value) = obj.remove("structuredContent") {
                    self.policy.structured_content_dropped(obj, &value);
                }
            } else if OBJECT_ONLY_STRUCTURED.contains(to) {
                if let Some(value) = obj.get_mut("structuredContent") {
                    if !value.is_object() {
                        *value = self.policy.wrap_structured_content(value.take());
                    }
                }
            }
        }
        // Up to 2026-07-28: what the newer revision requires of a result.
        if shape.name.starts_with("result ") && to == Revision::V2026_07_28 {
            if shape.has("resultType", to) {
                obj.entry("resultType").or_insert_with(|| json!("complete"));
            }
            if shape.has("ttlMs", to) {
                // Immediately stale and private: the only safe reading of a result that said nothing.
                obj.entry("ttlMs").or_insert_with(|| json!(0));
                obj.entry("cacheScope").or_insert_with(|| json!("private"));
            }
        }
        Ok(())
    }
}

impl Translator<'_> {
    /// Translates raw params of `method`; `Cow::Borrowed` when nothing changes.
    pub fn params_raw<'a>(
        &self,
        method: &str,
        params: &'a RawValue,
    ) -> Result<std::borrow::Cow<'a, RawValue>, TranslateError> {
        if self.from == self.to && !self.canonical {
            return Ok(std::borrow::Cow::Borrowed(params));
        }
        let v = parse(params.get(), "params", method)?;
        Ok(std::borrow::Cow::Owned(to_raw(&self.params(method, v)?)))
    }

    /// Translates the raw result of a request for `method`; `Cow::Borrowed` when nothing
    /// changes.
    pub fn result_raw<'a>(
        &self,
        method: &str,
        result: &'a RawValue,
    ) -> Result<std::borrow::Cow<'a, RawValue>, TranslateError> {
        if self.from == self.to && !self.canonical {
            return Ok(std::borrow::Cow::Borrowed(result));
        }
        let v = parse(result.get(), "result", method)?;
        Ok(std::borrow::Cow::Owned(to_raw(&self.result(method, v)?)))
    }
}

fn parse(text: &str, what: &'static str, method: &str) -> Result<Value, TranslateError> {
    serde_json::from_str(text).map_err(|e| invalid(what, method, &e.to_string()))
}

fn to_raw(v: &Value) -> Box<RawValue> {
    // A Value always serializes.
    serde_json::value::to_raw_value(v).unwrap_or_default()
}

fn invalid(what: &'static str, method: &str, reason: &str) -> TranslateError {
    TranslateError::Invalid {
        what,
        method: method.to_owned(),
        reason: reason.to_owned(),
    }
}

/// Elicitation forms: 2025-11-25 added URL mode, defaults, titled and multi-select enums.
mod elicitation {
    use super::*;

    /// Revisions whose form schemas have only the 2025-06-18 primitives.
    const SIMPLE_FORMS: RevisionSet = RevisionSet::parse("..X..");

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

    pub(super) fn params(
        obj: &mut Map<String, Value>,
        _from: Revision,
        to: Revision,
    ) -> Result<(), TranslateError> {
        if !SIMPLE_FORMS.contains(to) {
            return Ok(());
        }
        if obj.get("mode").and_then(Value::as_str) == Some("url") {
            return Err(no(
                to,
                "URL-mode elicitation",
                "URL mode arrived in 2025-11-25",
            ));
        }
        obj.remove("mode");
        let Some(Value::Object(props)) = obj
            .get_mut("requestedSchema")
            .and_then(|s| s.get_mut("properties"))
        else {
            return Ok(());
        };
        for (name, prop) in props.iter_mut() {
            let Value::Object(p) = prop else { continue };
            let kind = p
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if kind == "array" {
                return Err(no(
                    to,
                    &format!("multi-select form field `{name}`"),
                    "multi-select enums arrived in 2025-11-25",
                ));
            }
            // A titled single-select becomes the 2025-06-18 enum with enumNames.
            if let Some(Value::Array(options)) = p.remove("oneOf") {
                let values: Vec<Value> = options
                    .iter()
                    .map(|o| o.get("const").cloned().unwrap_or(Value::Null))
                    .collect();
                let names: Vec<Value> = options
                    .iter()
                    .map(|o| o.get("title").cloned().unwrap_or(Value::Null))
                    .collect();
                p.insert("enum".into(), Value::Array(values));
                p.insert("enumNames".into(), Value::Array(names));
            }
            let allowed = simple_members(&kind, p.contains_key("enum"));
            p.retain(|k, _| allowed.contains(&k.as_str()));
        }
        Ok(())
    }

    pub(super) fn result(obj: &Map<String, Value>, to: Revision) -> Result<(), TranslateError> {
        if !SIMPLE_FORMS.contains(to) {
            return Ok(());
        }
        let arrays = obj
            .get("content")
            .and_then(Value::as_object)
            .is_some_and(|c| c.values().any(Value::is_array));
        if arrays {
            return Err(no(
                to,
                "a multi-select answer",
                "2025-06-18 form answers are strings, numbers and booleans",
            ));
        }
        Ok(())
    }
}

/// The 2025-11-25 tasks feature and the 2026-07-28 tasks extension, mapped onto each other.
mod tasks {
    use super::*;

    /// Methods of the extension (`io.modelcontextprotocol/tasks`), which the core 2026 schema omits.
    const EXTENSION_METHODS: [&str; 4] = [
        method::TASKS_GET,
        method::TASKS_CANCEL,
        method::TASKS_UPDATE,
        method::TASKS_NOTIFICATION,
    ];
    /// Member renames between the two task shapes: (2025-11-25, extension).
    const RENAMES: [(&str, &str); 2] = [("ttl", "ttlMs"), ("pollInterval", "pollIntervalMs")];

    pub(super) fn in_extension(name: &str, rev: Revision) -> bool {
        rev == Revision::V2026_07_28 && EXTENSION_METHODS.contains(&name)
    }

    pub(super) fn is_task_method(name: &str) -> bool {
        name.starts_with("tasks/")
            || name == method::TASKS_STATUS
            || name == method::TASKS_NOTIFICATION
    }

    pub(super) fn renamed_method(name: &str, from: Revision, to: Revision) -> Option<&'static str> {
        match (name, from, to) {
            (method::TASKS_STATUS, Revision::V2025_11_25, Revision::V2026_07_28) => {
                Some(method::TASKS_NOTIFICATION)
            }
            (method::TASKS_NOTIFICATION, Revision::V2026_07_28, Revision::V2025_11_25) => {
                Some(method::TASKS_STATUS)
            }
            _ => None,
        }
    }

    pub(super) fn rename(obj: &mut Map<String, Value>, to: Revision) {
        for (legacy, ext) in RENAMES {
            let (old, new) = if to == Revision::V2026_07_28 {
                (legacy, ext)
            } else {
                (ext, legacy)
            };
            if let Some(v) = obj.remove(old) {
                obj.insert(new.to_owned(), v);
            }
        }
    }

    /// Task-method params (and task status notification params, which are a task).
    pub(super) fn params(
        name: &str,
        obj: &mut Map<String, Value>,
        to: Revision,
    ) -> Result<(), TranslateError> {
        let is_status = name == method::TASKS_STATUS || name == method::TASKS_NOTIFICATION;
        if is_status && to == Revision::V2026_07_28 {
            match obj.get("status").and_then(Value::as_str) {
                Some("working" | "cancelled") => {}
                _ => {
                    return Err(TranslateError::NoEquivalent {
                        what: format!("`{name}` for a task in this status"),
                        revision: to,
                        reason: "the extension's notification carries the task's input requests, result or error inline",
                    })
                }
            }
        }
        rename(obj, to);
        if to != Revision::V2026_07_28 {
            for k in ["inputRequests", "result", "error", "resultType"] {
                obj.remove(k);
            }
        }
        Ok(())
    }

    pub(super) fn result(
        method: &str,
        obj: &mut Map<String, Value>,
        from: Revision,
        to: Revision,
    ) -> Result<(), TranslateError> {
        let no = |reason| TranslateError::NoEquivalent {
            what: format!("the result of `{method}`"),
            revision: to,
            reason,
        };
        match (method, to) {
            (method::TASKS_GET, Revision::V2026_07_28) => {
                // A status whose outcome the extension carries inline needs that outcome.
                let inline = match obj.get("status").and_then(Value::as_str) {
                    Some("completed") => Some("result"),
                    Some("failed") => Some("error"),
                    Some("input_required") => Some("inputRequests"),
                    _ => None,
                };
                if inline.is_some_and(|k| !obj.contains_key(k)) {
                    return Err(no("the extension's tasks/get carries the outcome inline; fetch it with tasks/result and bridge"));
                }
                rename(obj, to);
                obj.insert("resultType".into(), json!("complete"));
            }
            (method::TASKS_CANCEL | method::TASKS_UPDATE, Revision::V2026_07_28) => {
                obj.retain(|k, _| k == "_meta");
                obj.insert("resultType".into(), json!("complete"));
            }
            // A task's state (a canonical value carries one) answers a 2025-11-25 cancel.
            (method::TASKS_CANCEL, _)
                if from == Revision::V2026_07_28 && !obj.contains_key("taskId") =>
            {
                return Err(no("2025-11-25 answers tasks/cancel with the task's state, which the extension's acknowledgement lacks"));
            }
            (method::TASKS_GET | method::TASKS_CANCEL, _) => {
                rename(obj, to);
                for k in ["inputRequests", "result", "error", "resultType"] {
                    obj.remove(k);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Extension `resultType: "task"` → 2025-11-25 `CreateTaskResult`.
    pub(super) fn created_from_extension(
        obj: &mut Map<String, Value>,
        to: Revision,
    ) -> Result<(), TranslateError> {
        if to != Revision::V2025_11_25 {
            return Err(TranslateError::NoEquivalent {
                what: "a task created for a request".into(),
                revision: to,
                reason: "only 2025-11-25 and the 2026-07-28 tasks extension have tasks",
            });
        }
        let meta = obj.remove("_meta");
        obj.remove("resultType");
        rename(obj, to);
        let task = std::mem::take(obj);
        obj.insert("task".into(), Value::Object(task));
        if let Some(m) = meta {
            obj.insert("_meta".into(), m);
        }
        Ok(())
    }

    /// 2025-11-25 `CreateTaskResult` → extension `resultType: "task"`.
    pub(super) fn created_to_extension(
        obj: &mut Map<String, Value>,
        to: Revision,
    ) -> Result<(), TranslateError> {
        if to != Revision::V2026_07_28 {
            return Err(TranslateError::NoEquivalent {
                what: "a task created for a request".into(),
                revision: to,
                reason: "only 2025-11-25 and the 2026-07-28 tasks extension have tasks",
            });
        }
        let Some(Value::Object(mut task)) = obj.remove("task") else {
            return Err(invalid(
                "result",
                "tools/call",
                "CreateTaskResult without a `task` object",
            ));
        };
        rename(&mut task, to);
        let meta = obj.remove("_meta");
        *obj = task;
        obj.insert("resultType".into(), json!("task"));
        if let Some(m) = meta {
            obj.insert("_meta".into(), m);
        }
        Ok(())
    }
}
