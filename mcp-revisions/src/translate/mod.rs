//! Translating messages between revisions.
//!
//! One table-driven walk ([`crate::spec_data`]) removes every member the target
//! revision does not define, and the [`DowngradePolicy`] keeps meaning where a
//! member or content type would otherwise vanish. Going up, what the newer revision
//! requires is filled in (`resultType`, `ttlMs`/`cacheScope`, request `_meta`).
//! Members no revision defines (vendor extensions) are kept.
//!
//! The walk reads raw JSON one level at a time ([`RawObject`]) and only where it must:
//! every member it does not change keeps its exact text (numbers, key order, escapes).
//! Before entering a subtree it asks [`triggers`] whether anything in its text could
//! concern the target; if not, the subtree is kept unread. A translation that changes
//! nothing returns its input borrowed. When `from == to` the message is returned as it is.

mod convert;
mod elicitation;
mod tasks;
mod triggers;
mod walk;

use std::borrow::Cow;

use mcp_types::jsonrpc::{Notification, Request, Response};
use mcp_types::protocol::method;
use mcp_types::raw::{self, RawObject};
use mcp_types::{Message, Revision};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::features;
use crate::policy::{DowngradePolicy, SpecPolicy};
use crate::shapes::{self, Container, MethodKind, RevisionSet, Shape};
use crate::spec_data;
use triggers::Node;

/// Revisions whose `structuredContent` and `outputSchema` must be objects.
const OBJECT_ONLY_STRUCTURED: RevisionSet = RevisionSet::parse("..XX.");

/// Revisions whose elicitation capability names its modes (`form`, `url`).
const ELICITATION_MODES: RevisionSet = RevisionSet::parse("...XX");

/// Revisions whose sampling content may be an array of blocks.
const SAMPLING_ARRAYS: RevisionSet = RevisionSet::parse("...XX");

/// Why a message could not be translated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// Whether subtrees without a trigger may be kept unread (see [`triggers`]).
    shortcut: bool,
    /// Raw once here rather than once per message.
    client_capabilities: Option<Box<RawValue>>,
    /// Whether requests going up to 2026-07-28 get the `_meta` envelope filled in.
    request_meta: bool,
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
            shortcut: true,
            client_capabilities: None,
            request_meta: true,
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
            shortcut: !policy.adjusts_objects(),
            client_capabilities: self.client_capabilities,
            request_meta: self.request_meta,
        }
    }

    /// Leaves a request's 2026-07-28 `_meta` envelope to the caller: a relay writes its own
    /// hop's envelope in the same edit as the rest of `_meta`, rather than have this
    /// translator fill it and the relay read it again.
    pub fn without_request_meta(mut self) -> Self {
        self.request_meta = false;
        self
    }

    /// Whether a request of `kind` gets the 2026-07-28 envelope filled in.
    fn fills_request_meta(&self, kind: MethodKind) -> bool {
        self.request_meta && kind == MethodKind::Request && features::per_request_meta(self.to)
    }

    /// The capabilities to declare in a request's `_meta` when translating up to
    /// 2026-07-28 (default: `{}`, "no optional capabilities").
    pub fn with_client_capabilities(mut self, capabilities: Value) -> Self {
        // A `Value` always encodes; were it not to, `{}` is the honest fallback.
        self.client_capabilities = serde_json::value::to_raw_value(&capabilities).ok();
        self
    }

    fn untouched(&self) -> bool {
        self.from == self.to && !self.canonical
    }

    /// Translates a whole message. Payloads keep their exact text wherever the translation
    /// does not change them.
    pub fn message(&self, msg: &Message, answers: Option<&str>) -> Result<Message, TranslateError> {
        if self.untouched() {
            return Ok(msg.clone());
        }
        Ok(match msg {
            Message::Request(r) => {
                let (method, params) =
                    self.request_parts(&r.method, r.params.as_deref(), MethodKind::Request)?;
                let mut out = Request::raw(r.id.clone(), method, params);
                out.extra = r.extra.clone();
                Message::Request(out)
            }
            Message::Notification(n) => {
                let (method, params) =
                    self.request_parts(&n.method, n.params.as_deref(), MethodKind::Notification)?;
                Message::Notification(Notification {
                    method,
                    params,
                    extra: n.extra.clone(),
                })
            }
            Message::Response(r) => {
                let method = answers.ok_or(TranslateError::MissingMethod)?;
                let result = match self.result_raw(method, &r.result)? {
                    Cow::Borrowed(_) => r.result.clone(),
                    Cow::Owned(out) => out,
                };
                Message::Response(Response {
                    id: r.id.clone(),
                    result,
                    extra: r.extra.clone(),
                })
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
        let empty = empty_object();
        let out = self.params_of(name, &method, params.unwrap_or(&empty), kind)?;
        let params = match out {
            Cow::Borrowed(_) => params.map(ToOwned::to_owned),
            // Absent params stay absent unless the translation put something in them.
            Cow::Owned(p) if params.is_none() && p.get() == "{}" => None,
            Cow::Owned(p) => Some(p),
        };
        Ok((method, params))
    }

    /// The name `name` has in the target revision, or why it has none.
    pub fn method_name(&self, name: &str) -> Result<String, TranslateError> {
        self.target_name(name).map(ToOwned::to_owned)
    }

    /// [`Translator::method_name`] without allocating: it runs on every translation.
    fn target_name<'n>(&self, name: &'n str) -> Result<&'n str, TranslateError> {
        if let Some(renamed) = tasks::renamed_method(name, self.from, self.to) {
            return Ok(renamed);
        }
        let exists = match shapes::method(name) {
            Some(spec) => spec.revisions.contains(self.to) || tasks::in_extension(name, self.to),
            None => !tasks::in_extension(name, self.from) || tasks::in_extension(name, self.to),
        };
        if exists {
            Ok(name)
        } else {
            Err(TranslateError::MethodNotInRevision {
                method: name.to_owned(),
                revision: self.to,
            })
        }
    }

    /// Translates the params of `method` (the method's name in the target may differ:
    /// see [`Translator::method_name`]). A wrapper over [`Translator::params_raw`].
    pub fn params(&self, method: &str, params: Value) -> Result<Value, TranslateError> {
        via_raw("params", method, params, |p| self.params_raw(method, p))
    }

    /// Translates raw params of `method` (request or notification); `Cow::Borrowed` when
    /// nothing changes.
    pub fn params_raw<'a>(
        &self,
        method: &str,
        params: &'a RawValue,
    ) -> Result<Cow<'a, RawValue>, TranslateError> {
        if self.untouched() {
            return Ok(Cow::Borrowed(params));
        }
        let target = self.target_name(method)?;
        let Some(spec) = shapes::method(method) else {
            if tasks::is_task_method(method) {
                return self.params_of(method, target, params, MethodKind::Notification);
            }
            return Ok(Cow::Borrowed(params));
        };
        self.params_of(method, target, params, spec.kind)
    }

    /// Translates params already read one level deep, in place; whether anything
    /// changed. Members the translation does not touch keep their text. Made for a relay
    /// that edits the same object for its own hop and writes it out once.
    pub fn params_in_place(
        &self,
        method: &str,
        params: &mut RawObject<'_>,
    ) -> Result<bool, TranslateError> {
        if self.untouched() {
            return Ok(false);
        }
        let target = self.target_name(method)?;
        let kind = match shapes::method(method) {
            Some(spec) => spec.kind,
            None if tasks::is_task_method(method) => MethodKind::Notification,
            None => return Ok(false),
        };
        let mut changed = self.params_object(method, target, params)?;
        if self.fills_request_meta(kind) {
            changed |= self.add_request_meta(params);
        }
        Ok(changed)
    }

    fn params_of<'a>(
        &self,
        name: &str,
        target: &str,
        params: &'a RawValue,
        kind: MethodKind,
    ) -> Result<Cow<'a, RawValue>, TranslateError> {
        if !raw::is_object(params) {
            return Err(invalid("params", name, "params must be an object"));
        }
        let add_meta = self.fills_request_meta(kind);
        if !add_meta && !self.params_need_walk(name, target, params) {
            return Ok(Cow::Borrowed(params));
        }
        let mut obj =
            RawObject::from_raw(params).map_err(|e| invalid("params", name, &e.to_string()))?;
        let mut changed = self.params_object(name, target, &mut obj)?;
        if add_meta {
            changed |= self.add_request_meta(&mut obj);
        }
        Ok(if changed {
            Cow::Owned(obj.to_raw())
        } else {
            Cow::Borrowed(params)
        })
    }

    /// Whether params must be read: a method-specific conversion, or a trigger in the text.
    fn params_need_walk(&self, name: &str, target: &str, params: &RawValue) -> bool {
        let special = tasks::is_task_method(name)
            || name == method::INITIALIZE
            || (name == method::CANCELLED && self.to != Revision::V2025_11_25)
            || (name == method::ELICITATION_CREATE && elicitation::changes(self.to));
        if special || !self.shortcut {
            return true;
        }
        shapes::method(target)
            .or_else(|| shapes::method(name))
            .is_some_and(|spec| {
                triggers::of(Node::Object(spec.params), self.to).found_in(params.get())
            })
    }

    fn params_object(
        &self,
        method: &str,
        target: &str,
        obj: &mut RawObject<'_>,
    ) -> Result<bool, TranslateError> {
        let mut changed = false;
        if tasks::is_task_method(method) {
            changed |= tasks::params(method, obj, self.to)?;
            if self.to == Revision::V2026_07_28 {
                // The extension's shapes are not in the core table; only `_meta` needs filtering.
                return Ok(changed | walk::edit_member(obj, "_meta", |m| self.meta(m)));
            }
        }
        match method {
            method::ELICITATION_CREATE => changed |= elicitation::params(obj, self.to)?,
            method::INITIALIZE => changed |= convert::set_protocol_version(obj, self.to),
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
            Some(spec) => changed |= self.walk_object(spec.params, obj)?,
            None => return Ok(changed),
        }
        if asks_for_task && self.to == Revision::V2026_07_28 {
            changed |= self.declare_tasks_extension(obj);
        }
        Ok(changed)
    }

    /// Translates the result of a request for `method`. A wrapper over
    /// [`Translator::result_raw`].
    pub fn result(&self, method: &str, result: Value) -> Result<Value, TranslateError> {
        if self.untouched() {
            return Ok(result);
        }
        via_raw("result", method, result, |r| self.result_raw(method, r))
    }

    /// Translates the raw result of a request for `method`; `Cow::Borrowed` when nothing
    /// changes.
    pub fn result_raw<'a>(
        &self,
        method: &str,
        result: &'a RawValue,
    ) -> Result<Cow<'a, RawValue>, TranslateError> {
        if self.untouched() {
            return Ok(Cow::Borrowed(result));
        }
        self.target_name(method)?;
        if !raw::is_object(result) {
            return Err(invalid("result", method, "a result must be an object"));
        }
        // First: the common case costs one scan of the text, not two.
        if let Some(cut) = self.complete_cut(method, result) {
            return Ok(Cow::Owned(cut));
        }
        if !self.result_needs_walk(method, result) {
            return Ok(Cow::Borrowed(result));
        }
        let mut obj =
            RawObject::from_raw(result).map_err(|e| invalid("result", method, &e.to_string()))?;
        Ok(if self.result_object(method, &mut obj)? {
            Cow::Owned(obj.to_raw())
        } else {
            Cow::Borrowed(result)
        })
    }

    fn result_needs_walk(&self, method: &str, result: &RawValue) -> bool {
        if self.special_result(method) || !self.shortcut {
            return true;
        }
        let shape = shapes::method(method).and_then(|m| m.result);
        triggers::of(Node::Result(shape), self.to).found_in(result.get())
    }

    /// Results a method-specific conversion rewrites.
    fn special_result(&self, method: &str) -> bool {
        tasks::is_task_method(method)
            || method == method::INITIALIZE
            || (method == method::ELICITATION_CREATE && elicitation::changes(self.to))
    }

    /// The common result going down from a revision with `resultType`: one that begins
    /// `{"resultType":"complete",` and holds nothing else the walk could change loses that
    /// member by a cut, and every other byte stays as it came. `None`: walk it.
    fn complete_cut(&self, method: &str, result: &RawValue) -> Option<Box<RawValue>> {
        let shape = shapes::method(method).and_then(|m| m.result)?;
        let dropped = shape.has("resultType", self.from) && !shape.has("resultType", self.to);
        if !dropped || self.special_result(method) || !self.shortcut {
            return None;
        }
        let cut = raw::without_leading_member(result, "resultType", "\"complete\"")?;
        let rest_changes = triggers::of(Node::Result(Some(shape)), self.to).found_in(cut.get());
        (!rest_changes).then_some(cut)
    }

    fn result_object(&self, method: &str, obj: &mut RawObject<'_>) -> Result<bool, TranslateError> {
        let (from, to) = (self.from, self.to);
        let result_type = obj.get_str("resultType");
        let (input_required, task) = (
            result_type.as_deref() == Some("input_required"),
            result_type.as_deref() == Some("task"),
        );
        drop(result_type);
        if input_required && from == Revision::V2026_07_28 {
            return self.input_required(obj);
        }
        if task && to == Revision::V2026_07_28 {
            // A server's own task (canonical) going to a 2026 client: the extension's names.
            return Ok(tasks::rename(obj, to));
        }
        if task && from == Revision::V2026_07_28 {
            tasks::created_from_extension(obj, to)?;
            self.walk_object(&spec_data::CREATE_TASK_RESULT, obj)?;
            return Ok(true);
        }
        if tasks::is_task_method(method) {
            let mut changed = tasks::result(method, obj, from, to)?;
            // The extension's task shapes are not in the core table; their members were mapped above.
            if to != Revision::V2026_07_28 {
                changed |= self.walk_result(method, obj)?;
            }
            return Ok(changed);
        }
        if method == method::ELICITATION_CREATE {
            elicitation::result(obj, to)?;
        }
        self.walk_result(method, obj)
    }

    fn walk_result(&self, method: &str, obj: &mut RawObject<'_>) -> Result<bool, TranslateError> {
        let mut changed = false;
        if method == method::INITIALIZE {
            changed |= convert::set_protocol_version(obj, self.to);
        }
        match shapes::method(method).and_then(|m| m.result) {
            Some(shape) => Ok(changed | self.walk_object(shape, obj)?),
            None => {
                if self.to == Revision::V2026_07_28 && !obj.contains_key("resultType") {
                    // Every 2026 result says what it is.
                    obj.insert_str("resultType", "complete");
                    changed = true;
                }
                Ok(changed)
            }
        }
    }

    /// Translates the answer to a 2025-11-25 task-augmented request (`CreateTaskResult`)
    /// or a 2026-07-28 extension `resultType: "task"` answer.
    pub fn task_created_result(&self, result: Value) -> Result<Value, TranslateError> {
        if self.untouched() {
            return Ok(result);
        }
        via_raw("result", method::TOOLS_CALL, result, |r| {
            let not_object =
                |_| invalid("result", method::TOOLS_CALL, "a result must be an object");
            let mut obj = RawObject::from_raw(r).map_err(not_object)?;
            if self.from == Revision::V2026_07_28 {
                tasks::created_from_extension(&mut obj, self.to)?;
            } else {
                tasks::created_to_extension(&mut obj, self.to)?;
            }
            if self.to != Revision::V2026_07_28 {
                self.walk_object(&spec_data::CREATE_TASK_RESULT, &mut obj)?;
            }
            Ok(Cow::Owned(obj.to_raw()))
        })
    }

    /// Translates a standalone object of a named type (`Tool`, `Prompt`, `Resource`, …).
    pub fn object(&self, type_name: &str, value: Value) -> Result<Value, TranslateError> {
        let shape = shapes::object(type_name)
            .ok_or_else(|| invalid("object", type_name, "unknown type"))?;
        if !shape.revisions.contains(self.to) {
            return Err(TranslateError::NoEquivalent {
                what: type_name.to_owned(),
                revision: self.to,
                reason: "the revision has no such type",
            });
        }
        via_raw("object", type_name, value, |v| {
            Ok(
                match self.walk_value(Shape::Object(shape, Container::One), v)? {
                    Some(out) => Cow::Owned(out),
                    None => Cow::Borrowed(v),
                },
            )
        })
    }

    fn input_required(&self, obj: &mut RawObject<'_>) -> Result<bool, TranslateError> {
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
}

/// A `Value` API over a raw one: the value goes in as text and comes back decoded only if
/// the translation changed it.
fn via_raw(
    what: &'static str,
    method: &str,
    value: Value,
    translate: impl for<'r> FnOnce(&'r RawValue) -> Result<Cow<'r, RawValue>, TranslateError>,
) -> Result<Value, TranslateError> {
    let text = serde_json::value::to_raw_value(&value)
        .map_err(|e| invalid(what, method, &e.to_string()))?;
    match translate(&text)? {
        Cow::Borrowed(_) => Ok(value),
        Cow::Owned(out) => {
            serde_json::from_str(out.get()).map_err(|e| invalid(what, method, &e.to_string()))
        }
    }
}

/// `{}`, for a request sent without params.
fn empty_object() -> Box<RawValue> {
    RawObject::new().to_raw()
}

fn invalid(what: &'static str, method: &str, reason: &str) -> TranslateError {
    TranslateError::Invalid {
        what,
        method: method.to_owned(),
        reason: reason.to_owned(),
    }
}
