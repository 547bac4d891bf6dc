//! The 2025-11-25 tasks feature and the 2026-07-28 tasks extension, mapped onto each other.

use std::borrow::Cow;

use mcp_types::protocol::method;
use mcp_types::raw::{self, RawObject};
use mcp_types::Revision;
use serde_json::value::RawValue;

use super::{invalid, TranslateError};

/// Methods of the extension (`io.modelcontextprotocol/tasks`), which the core 2026 schema omits.
const EXTENSION_METHODS: [&str; 4] = [
    method::TASKS_GET,
    method::TASKS_CANCEL,
    method::TASKS_UPDATE,
    method::TASKS_NOTIFICATION,
];
/// Member renames between the two task shapes: (2025-11-25, extension).
const RENAMES: [(&str, &str); 2] = [("ttl", "ttlMs"), ("pollInterval", "pollIntervalMs")];
/// What the extension carries inline on a task and 2025-11-25 fetches separately.
const INLINE_ONLY: [&str; 4] = ["inputRequests", "result", "error", "resultType"];

pub(super) fn in_extension(name: &str, rev: Revision) -> bool {
    rev == Revision::V2026_07_28 && EXTENSION_METHODS.contains(&name)
}

pub(super) fn is_task_method(name: &str) -> bool {
    name.starts_with("tasks/") || name == method::TASKS_STATUS || name == method::TASKS_NOTIFICATION
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

/// Renames the members whose names differ between the eras, in place.
pub(super) fn rename(obj: &mut RawObject<'_>, to: Revision) -> bool {
    let mut changed = false;
    for (legacy, ext) in RENAMES {
        let (old, new) = if to == Revision::V2026_07_28 {
            (legacy, ext)
        } else {
            (ext, legacy)
        };
        if obj.contains_key(old) {
            obj.rename(old, new);
            changed = true;
        }
    }
    changed
}

fn remove_all(obj: &mut RawObject<'_>, keys: &[&str]) -> bool {
    let before = obj.len();
    obj.retain(|k, _| !keys.contains(&k));
    obj.len() != before
}

/// Task-method params (and task status notification params, which are a task).
pub(super) fn params(
    name: &str,
    obj: &mut RawObject<'_>,
    to: Revision,
) -> Result<bool, TranslateError> {
    let is_status = name == method::TASKS_STATUS || name == method::TASKS_NOTIFICATION;
    if is_status && to == Revision::V2026_07_28 {
        let status = obj.get_str("status");
        if !matches!(status.as_deref(), Some("working" | "cancelled")) {
            return Err(TranslateError::NoEquivalent {
                what: format!("`{name}` for a task in this status"),
                revision: to,
                reason: "the extension's notification carries the task's input requests, result or error inline",
            });
        }
    }
    let mut changed = rename(obj, to);
    if to != Revision::V2026_07_28 {
        changed |= remove_all(obj, &INLINE_ONLY);
    }
    Ok(changed)
}

pub(super) fn result(
    method: &str,
    obj: &mut RawObject<'_>,
    from: Revision,
    to: Revision,
) -> Result<bool, TranslateError> {
    let no = |reason| TranslateError::NoEquivalent {
        what: format!("the result of `{method}`"),
        revision: to,
        reason,
    };
    match (method, to) {
        (method::TASKS_GET, Revision::V2026_07_28) => {
            // A status whose outcome the extension carries inline needs that outcome.
            let inline = match obj.get_str("status").as_deref() {
                Some("completed") => Some("result"),
                Some("failed") => Some("error"),
                Some("input_required") => Some("inputRequests"),
                _ => None,
            };
            if inline.is_some_and(|k| !obj.contains_key(k)) {
                return Err(no("the extension's tasks/get carries the outcome inline; fetch it with tasks/result and bridge"));
            }
            rename(obj, to);
            obj.insert_str("resultType", "complete");
            Ok(true)
        }
        (method::TASKS_CANCEL | method::TASKS_UPDATE, Revision::V2026_07_28) => {
            obj.retain(|k, _| k == "_meta");
            obj.insert_str("resultType", "complete");
            Ok(true)
        }
        // A task's state (a canonical value carries one) answers a 2025-11-25 cancel.
        (method::TASKS_CANCEL, _)
            if from == Revision::V2026_07_28 && !obj.contains_key("taskId") =>
        {
            Err(no("2025-11-25 answers tasks/cancel with the task's state, which the extension's acknowledgement lacks"))
        }
        (method::TASKS_GET | method::TASKS_CANCEL, _) => {
            Ok(rename(obj, to) | remove_all(obj, &INLINE_ONLY))
        }
        _ => Ok(false),
    }
}

fn no_tasks(to: Revision) -> TranslateError {
    TranslateError::NoEquivalent {
        what: "a task created for a request".into(),
        revision: to,
        reason: "only 2025-11-25 and the 2026-07-28 tasks extension have tasks",
    }
}

/// Extension `resultType: "task"` → 2025-11-25 `CreateTaskResult`.
pub(super) fn created_from_extension(
    obj: &mut RawObject<'_>,
    to: Revision,
) -> Result<(), TranslateError> {
    if to != Revision::V2025_11_25 {
        return Err(no_tasks(to));
    }
    let meta = obj.remove("_meta");
    obj.remove("resultType");
    rename(obj, to);
    let task = std::mem::take(obj).to_raw();
    obj.insert("task", task);
    if let Some(m) = meta {
        obj.insert("_meta", m);
    }
    Ok(())
}

/// 2025-11-25 `CreateTaskResult` → extension `resultType: "task"`.
pub(super) fn created_to_extension(
    obj: &mut RawObject<'_>,
    to: Revision,
) -> Result<(), TranslateError> {
    if to != Revision::V2026_07_28 {
        return Err(no_tasks(to));
    }
    let task = obj
        .remove("task")
        .filter(|t| raw::is_object(t))
        .and_then(|t| object_of(t).ok());
    let Some(mut task) = task else {
        return Err(invalid(
            "result",
            method::TOOLS_CALL,
            "CreateTaskResult without a `task` object",
        ));
    };
    rename(&mut task, to);
    let meta = obj.remove("_meta");
    *obj = task;
    obj.insert_str("resultType", "task");
    if let Some(m) = meta {
        obj.insert("_meta", m);
    }
    Ok(())
}

/// A member's value read as an object for as long as the member's text lives.
fn object_of(v: Cow<'_, RawValue>) -> Result<RawObject<'_>, serde_json::Error> {
    match v {
        Cow::Borrowed(r) => RawObject::from_raw(r),
        Cow::Owned(b) => RawObject::from_raw(&b).map(RawObject::into_owned),
    }
}
