//! Checks against the official schemas (read from `$MCP_SPEC_DIR`, else
//! `../shared/spec` beside the repository; skipped with a note when absent):
//!
//! - every fixture (`mcp-types/tests/fixtures`) and every official 2026-07-28
//!   example, translated to each of the five revisions, validates against that
//!   revision's `schema.json`, or fails with the error that says why it cannot exist
//!   there;
//! - nothing newer than the target remains, judged from the schemas themselves;
//! - the revision table in `spec_data` says what the schemas say.

use std::collections::BTreeSet;

use mcp_revisions::shapes::{self, MethodKind};
use mcp_revisions::{spec_data, TranslateError, Translator};
use mcp_types::protocol::method;
use mcp_types::{Message, Revision};
use serde_json::Value;

macro_rules! require_spec {
    () => {
        match spec_dir() {
            Some(d) => Schemas::load(&d),
            None => {
                eprintln!("SKIPPED: no MCP spec folder (set MCP_SPEC_DIR or place shared/spec beside the repo)");
                return;
            }
        }
    };
}

#[path = "common/schemas.rs"]
mod schemas;
use schemas::{spec_dir, Doc, Schemas};

#[path = "common/corpus.rs"]
mod corpus;
use corpus::corpora;

#[path = "../../mcp-types/tests/common/mod.rs"]
mod common;
use common::result_method;

/// Where a translated value must validate: a schema document and a definition in it.
enum Target<'a> {
    Def(&'a Doc, String),
    /// The revision has nothing to validate this against (e.g. `tasks/result`'s payload).
    Generic,
}

fn result_def<'a>(s: &'a Schemas, to: Revision, method: &str, source_def: &str) -> Target<'a> {
    if to == Revision::V2026_07_28 && method.starts_with("tasks/") {
        let name = if method == method::TASKS_GET {
            "GetTaskResult"
        } else {
            "CancelTaskResult"
        };
        return Target::Def(&s.tasks_ext, name.into());
    }
    let doc = s.doc(to);
    if source_def == "CreateTaskResult" {
        return if to == Revision::V2026_07_28 {
            Target::Def(&s.tasks_ext, "CreateTaskResult".into())
        } else {
            Target::Def(doc, "CreateTaskResult".into())
        };
    }
    if method == method::TASKS_RESULT {
        return Target::Generic;
    }
    if source_def.starts_with("InputRequiredResult") {
        return Target::Def(doc, "InputRequiredResult".into());
    }
    let Some(req) = doc.method_def(method) else {
        return Target::Generic;
    };
    let name = format!("{}Result", req.trim_end_matches("Request"));
    for candidate in [name.as_str(), "EmptyResult", "Result"] {
        if doc.def(candidate).is_some() {
            return Target::Def(doc, candidate.into());
        }
    }
    Target::Generic
}

fn message_def<'a>(
    s: &'a Schemas,
    to: Revision,
    msg: &Message,
    answers: Option<&str>,
    source_def: &str,
) -> Target<'a> {
    match msg {
        Message::Request(r) => method_target(s, to, &r.method),
        Message::Notification(n) => method_target(s, to, &n.method),
        Message::Response(_) => match answers.map(|m| result_def(s, to, m, source_def)) {
            Some(Target::Def(doc, def)) => Target::Def(doc, format!("RESPONSE:{def}")),
            _ => Target::Generic,
        },
        Message::Error(_) => {
            let name = if to >= Revision::V2025_11_25 {
                "JSONRPCErrorResponse"
            } else {
                "JSONRPCError"
            };
            Target::Def(s.doc(to), name.into())
        }
    }
}

fn method_target<'a>(s: &'a Schemas, to: Revision, method: &str) -> Target<'a> {
    if to == Revision::V2026_07_28 && method.contains("tasks") {
        if let Some(d) = s.tasks_ext.method_def(method) {
            return Target::Def(&s.tasks_ext, d.to_owned());
        }
    }
    match s.doc(to).method_def(method) {
        Some(d) => Target::Def(s.doc(to), d.to_owned()),
        None => Target::Generic,
    }
}

/// What a fixture is, and so how it is translated.
enum Kind {
    Message(Message, Option<&'static str>),
    Result(&'static str),
    TaskCreated,
    Object,
    /// Params-only and other fragments: covered through the messages that carry them.
    NotTranslated,
}

fn kind_of(def: &str, v: &Value) -> Kind {
    if v.get("jsonrpc").is_some() {
        let msg = Message::parse(&serde_json::to_vec(v).expect("bytes"))
            .expect("fixture is a JSON-RPC message");
        return Kind::Message(msg, result_method(def));
    }
    if def == "CreateTaskResult" {
        return Kind::TaskCreated;
    }
    if let Some(m) = result_method(def) {
        return Kind::Result(m);
    }
    if ["Tool", "Prompt", "Resource", "ResourceTemplate"].contains(&def) {
        return Kind::Object;
    }
    Kind::NotTranslated
}

/// An error is acceptable only where the target revision really cannot carry the message.
fn expected_error(
    err: &TranslateError,
    s: &Schemas,
    to: Revision,
    method: Option<&str>,
) -> Result<(), String> {
    match err {
        TranslateError::MethodNotInRevision { method, .. } => {
            // 2026-07-28 defines these request types only for use inside InputRequiredResult.
            let input_request_only = to == Revision::V2026_07_28
                && [
                    method::SAMPLING_CREATE_MESSAGE,
                    method::ELICITATION_CREATE,
                    method::ROOTS_LIST,
                ]
                .contains(&method.as_str());
            let in_schema = (s.doc(to).method_def(method).is_some() && !input_request_only)
                || (to == Revision::V2026_07_28
                    && method.contains("tasks")
                    && s.tasks_ext.method_def(method).is_some());
            if in_schema {
                Err(format!(
                    "said `{method}` is not in {to}, but its schema has it"
                ))
            } else {
                Ok(())
            }
        }
        TranslateError::NoEquivalent { what, .. } => {
            let _ = method;
            let legacy = to.era() == mcp_types::Era::Legacy;
            let allowed = match what.as_str() {
                "InputRequiredResult" => legacy,
                "a task created for a request" => to < Revision::V2025_11_25,
                "sampling content with several non-text blocks" => to < Revision::V2025_11_25,
                "URL-mode elicitation" | "a multi-select answer" => to == Revision::V2025_06_18,
                w if w.starts_with("multi-select form field") => to == Revision::V2025_06_18,
                "the result of `tasks/get`" | "the result of `tasks/cancel`" => {
                    to >= Revision::V2025_11_25
                }
                w if w.contains("for a task in this status") => to == Revision::V2026_07_28,
                "a cancellation without a requestId" => to != Revision::V2025_11_25,
                _ => false,
            };
            if allowed {
                Ok(())
            } else {
                Err(format!("refused for a reason not on the list: {err}"))
            }
        }
        other => Err(format!("unexpected error: {other}")),
    }
}

/// Members the target's schema does not define at this position but some revision's
/// schema defines for the same definition: what "newer than the target" means.
struct NewerCheck<'a> {
    s: &'a Schemas,
    to: Revision,
    found: Vec<String>,
}

const ENVELOPE: [&str; 2] = ["jsonrpc", "id"];
const OPAQUE: [&str; 7] = [
    "inputSchema",
    "outputSchema",
    "requestedSchema",
    "arguments",
    "structuredContent",
    "input",
    "metadata",
];

impl NewerCheck<'_> {
    /// Props of (def, subpath) in every revision.
    fn props_elsewhere(&self, def: &str, path: &[String]) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for doc in &self.s.docs {
            if let Some(d) = doc.def(def) {
                let mut schema = d;
                let mut ok = true;
                for p in path {
                    match doc.props(schema).get(p.as_str()) {
                        Some(next) => schema = next,
                        None => {
                            ok = false;
                            break;
                        }
                    }
                }
                if ok {
                    out.extend(doc.props(schema).keys().map(|k| k.to_string()));
                }
            }
        }
        out
    }

    fn walk(
        &mut self,
        doc: &Doc,
        schema: &Value,
        def: &str,
        path: Vec<String>,
        v: &Value,
        at: &str,
    ) {
        let (schema, def, path) = match schema.get("$ref").and_then(Value::as_str) {
            Some(r) => {
                let name = r.rsplit('/').next().unwrap_or_default().to_owned();
                match doc.def(&name) {
                    Some(d) => (d, name, Vec::new()),
                    None => return,
                }
            }
            None => (schema, def.to_owned(), path),
        };
        if let Some(branches) = schema.get("anyOf").and_then(Value::as_array) {
            if let Some(b) = pick_branch(doc, branches, v) {
                self.walk(doc, b, &def, path, v, at);
            }
            return;
        }
        match v {
            Value::Array(items) => {
                if let Some(item_schema) = schema.get("items") {
                    for (i, item) in items.iter().enumerate() {
                        self.walk(
                            doc,
                            item_schema,
                            &def,
                            path.clone(),
                            item,
                            &format!("{at}/{i}"),
                        );
                    }
                }
            }
            Value::Object(obj) => {
                let props = doc.props(schema);
                if props.is_empty() {
                    if let Some(ap) = schema
                        .get("additionalProperties")
                        .filter(|a| a.get("$ref").is_some())
                    {
                        for (k, item) in obj {
                            self.walk(doc, ap, &def, path.clone(), item, &format!("{at}/{k}"));
                        }
                    }
                    return;
                }
                let elsewhere = self.props_elsewhere(&def, &path);
                for (k, item) in obj {
                    if path.is_empty() && ENVELOPE.contains(&k.as_str()) {
                        // Older schemas declare these on the base JSON-RPC types only.
                        continue;
                    }
                    match props.get(k.as_str()) {
                        Some(sub) if !OPAQUE.contains(&k.as_str()) => {
                            if k == "_meta" {
                                self.meta(item, &format!("{at}/_meta"));
                            } else {
                                let mut p = path.clone();
                                p.push(k.clone());
                                self.walk(doc, sub, &def, p, item, &format!("{at}/{k}"));
                            }
                        }
                        Some(_) => {}
                        None if k == "_meta" => self.meta(item, &format!("{at}/_meta")),
                        None if elsewhere.contains(k.as_str()) => self.found.push(format!(
                            "{at}/{k} (a {def} member other revisions define, not {})",
                            self.to
                        )),
                        None => {}
                    }
                }
            }
            _ => {}
        }
    }

    fn meta(&mut self, v: &Value, at: &str) {
        let Some(obj) = v.as_object() else { return };
        for k in obj.keys() {
            let newer_key = k.starts_with("io.modelcontextprotocol/");
            let defined_in_target = match k.as_str() {
                "io.modelcontextprotocol/related-task"
                | "io.modelcontextprotocol/model-immediate-response" => {
                    self.to == Revision::V2025_11_25
                }
                _ => self.to == Revision::V2026_07_28,
            };
            if newer_key && !defined_in_target {
                self.found.push(format!(
                    "{at}/{k} (a _meta key {} does not define)",
                    self.to
                ));
            }
        }
    }
}

/// The anyOf branch a value is: by `type` const, else by the most members in common.
fn pick_branch<'a>(doc: &'a Doc, branches: &'a [Value], v: &Value) -> Option<&'a Value> {
    if let Some(tag) = v.get("type").and_then(Value::as_str) {
        if let Some(b) = branches.iter().find(|b| {
            doc.props(b)
                .get("type")
                .and_then(|t| t.get("const"))
                .and_then(Value::as_str)
                == Some(tag)
        }) {
            return Some(b);
        }
    }
    let keys: BTreeSet<&str> = v
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    branches
        .iter()
        .filter(|b| {
            matches!(
                (doc.resolve(b).get("type").and_then(Value::as_str), v),
                (Some("array"), Value::Array(_)) | (Some("object") | None, Value::Object(_))
            )
        })
        .max_by_key(|b| doc.props(b).keys().filter(|k| keys.contains(*k)).count())
}

fn translate_one(
    kind: &Kind,
    from: Revision,
    to: Revision,
    v: &Value,
    def: &str,
) -> Result<Value, TranslateError> {
    let t = Translator::new(from, to);
    match kind {
        Kind::Message(msg, answers) => t
            .message(msg, *answers)
            .map(|m| serde_json::from_slice(&m.to_bytes()).expect("json")),
        Kind::Result(m) => t.result(m, v.clone()),
        Kind::TaskCreated => t.task_created_result(v.clone()),
        Kind::Object => t.object(def, v.clone()),
        Kind::NotTranslated => Ok(v.clone()),
    }
}

#[test]
fn every_fixture_translated_to_every_revision_validates_and_carries_nothing_newer() {
    let s = require_spec!();
    let mut failures = Vec::new();
    let (mut validated, mut refused, mut not_translated, mut source_invalid) = (0, 0, 0, 0);
    for (from, def, path) in corpora(&s.dir) {
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
        let kind = kind_of(&def, &v);
        if matches!(kind, Kind::NotTranslated) {
            not_translated += 1;
            continue;
        }
        for to in Revision::ALL {
            let here = format!("{} ({from} -> {to})", path.display());
            let method = match &kind {
                Kind::Message(m, a) => m.method().map(str::to_owned).or(a.map(str::to_owned)),
                Kind::Result(m) => Some(m.to_string()),
                _ => None,
            };
            let out = match translate_one(&kind, from, to, &v, &def) {
                Ok(out) => out,
                Err(e) => {
                    refused += 1;
                    if std::env::var_os("MCP_TEST_VERBOSE").is_some() {
                        eprintln!("refused: {here}: {e}");
                    }
                    if let Err(why) = expected_error(&e, &s, to, method.as_deref()) {
                        failures.push(format!("{here}: {why}"));
                    }
                    continue;
                }
            };
            let target = match &kind {
                Kind::Message(_, answers) => {
                    // Judged by what came out: a renamed method is looked up under its new name.
                    let translated = Message::parse(&serde_json::to_vec(&out).expect("bytes"))
                        .expect("translation writes a JSON-RPC message");
                    message_def(&s, to, &translated, *answers, &def)
                }
                Kind::Result(m) => result_def(&s, to, m, &def),
                Kind::TaskCreated => result_def(&s, to, "tools/call", "CreateTaskResult"),
                Kind::Object => Target::Def(s.doc(to), def.clone()),
                Kind::NotTranslated => unreachable!(),
            };
            let (doc, tdef) = match target {
                Target::Def(doc, tdef) => (doc, tdef),
                Target::Generic if def == "GetTaskPayloadResult" => continue,
                Target::Generic => {
                    failures.push(format!(
                        "{here}: nothing in the {to} schema to validate the output against"
                    ));
                    continue;
                }
            };
            let (tdef, value) = match tdef.strip_prefix("RESPONSE:") {
                Some(d) => (
                    d.to_owned(),
                    out.get("result").cloned().unwrap_or(Value::Null),
                ),
                None => (tdef.clone(), out.clone()),
            };
            if let Err(e) = doc.validate(&tdef, &value) {
                if from == to {
                    // Passed through untouched: the source itself disagrees with its schema.
                    eprintln!("note: {here} does not validate against its own schema: {e}");
                    source_invalid += 1;
                } else {
                    failures.push(format!("{here}: invalid as {tdef}: {e}"));
                }
                continue;
            }
            if std::ptr::eq(doc, s.doc(to)) {
                let mut check = NewerCheck {
                    s: &s,
                    to,
                    found: Vec::new(),
                };
                let schema = doc.def(&tdef).expect("def");
                check.walk(doc, schema, &tdef, Vec::new(), &value, "");
                for f in check.found {
                    failures.push(format!("{here}: newer than target: {f}"));
                }
            }
            validated += 1;
        }
    }
    eprintln!(
        "validated {validated} translations, {refused} refused as untranslatable, {not_translated} fragments not translated, \
         {source_invalid} sources invalid against their own schema"
    );
    assert!(
        source_invalid <= 1,
        "more official examples than known disagree with their schema"
    );
    assert!(validated > 600, "only {validated} translations validated");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn is_schema_def_name(name: &str) -> bool {
    !name.contains(' ') && !name.contains('_')
}

/// The members the schema of `r` gives the table's shape `name`, or `None` where it has no
/// such type. Inline shapes and unions merged under one name are checked through their parents.
fn schema_members<'a>(
    s: &'a Schemas,
    r: Revision,
    name: &str,
) -> Option<Option<BTreeSet<&'a str>>> {
    let doc = s.doc(r);
    let with_meta = |mut set: BTreeSet<&'a str>| {
        set.insert("_meta");
        set
    };
    let payload_of = name
        .strip_prefix("params ")
        .or_else(|| name.strip_prefix("result "));
    if payload_of.is_some_and(|m| shapes::method(m).is_none()) {
        return None; // an inline object of a method's payload, checked through its parent
    }
    if let Some(m) = name.strip_prefix("params ") {
        let def = doc.method_def(m)?;
        let params = doc.props(doc.def(def)?).get("params").copied();
        let members = params
            .map(|p| doc.props(p).keys().copied().collect())
            .unwrap_or_default();
        return Some(Some(with_meta(members)));
    }
    if let Some(m) = name.strip_prefix("result ") {
        let def = schemas::result_def_for(doc, m)?;
        return Some(Some(with_meta(
            doc.props(doc.def(&def)?).keys().copied().collect(),
        )));
    }
    let merged = [
        "ResourceContents",
        "CompleteReference",
        "ElicitRequestParams",
        "Annotations",
    ];
    if !is_schema_def_name(name) || merged.contains(&name) {
        return None;
    }
    Some(
        doc.def(name)
            .map(|d| doc.props(d).keys().copied().collect()),
    )
}

#[test]
fn spec_data_matches_the_schemas() {
    let s = require_spec!();
    let mut failures = Vec::new();
    let mut checked = 0;
    for shape in spec_data::OBJECTS.iter() {
        for r in Revision::ALL {
            let Some(schema) = schema_members(&s, r, shape.name) else {
                let is_payload = ["params ", "result "]
                    .iter()
                    .any(|p| shape.name.starts_with(p));
                let inline = shape
                    .name
                    .split_once(' ')
                    .is_some_and(|(_, m)| shapes::method(m).is_none());
                if is_payload && !inline && shape.revisions.contains(r) {
                    failures.push(format!(
                        "{}: table says it exists in {r}; schema has no such method",
                        shape.name
                    ));
                }
                continue;
            };
            let table: Option<BTreeSet<&str>> = shape.revisions.contains(r).then(|| {
                shape
                    .fields
                    .iter()
                    .filter(|f| f.revisions.contains(r))
                    .map(|f| f.name)
                    .collect()
            });
            checked += 1;
            if schema != table {
                failures.push(format!(
                    "{} in {r}: schema {schema:?}, table {table:?}",
                    shape.name
                ));
            }
        }
    }
    assert!(
        checked > 300,
        "only {checked} (type, revision) pairs checked"
    );
    for m in spec_data::METHODS {
        for r in Revision::ALL {
            let in_schema = s.doc(r).method_def(m.name).is_some();
            let input_request_only = r == Revision::V2026_07_28
                && [
                    method::SAMPLING_CREATE_MESSAGE,
                    method::ELICITATION_CREATE,
                    method::ROOTS_LIST,
                ]
                .contains(&m.name);
            if m.revisions.contains(r) != (in_schema && !input_request_only) {
                failures.push(format!(
                    "method {} in {r}: table {}, schema {in_schema}",
                    m.name,
                    m.revisions.contains(r)
                ));
            }
        }
        assert_eq!(
            m.result.is_some(),
            m.kind == MethodKind::Request,
            "{}",
            m.name
        );
    }
    assert!(shapes::method("tools/call").is_some());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
