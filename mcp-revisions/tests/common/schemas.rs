//! Reading the official MCP schemas in tests: where they are, their definitions, and
//! validation against one definition. Shared by the corpus tests of mcp-revisions and the
//! client/server tests of the examples crate (included with `#[path]`).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mcp_types::Revision;
use serde_json::{Map, Value};

/// `$MCP_SPEC_DIR`, else `shared/spec` beside the repository, if it holds the schemas.
pub fn spec_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("MCP_SPEC_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/spec"));
    dir.join("2026-07-28/schema.json").is_file().then_some(dir)
}

/// One schema document and its definitions.
pub struct Doc {
    pub root: Value,
    pub defs_key: &'static str,
}

impl Doc {
    pub fn load(path: &Path) -> Doc {
        let root: Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("schema")).expect("json");
        let defs_key = if root.get("$defs").is_some() {
            "$defs"
        } else {
            "definitions"
        };
        Doc { root, defs_key }
    }

    pub fn defs(&self) -> &Map<String, Value> {
        self.root[self.defs_key].as_object().expect("defs")
    }

    pub fn def(&self, name: &str) -> Option<&Value> {
        self.defs().get(name)
    }

    pub fn resolve<'a>(&'a self, s: &'a Value) -> &'a Value {
        let mut s = s;
        while let Some(r) = s.get("$ref").and_then(Value::as_str) {
            match self.def(r.rsplit('/').next().unwrap_or_default()) {
                Some(d) => s = d,
                None => break,
            }
        }
        s
    }

    /// Properties of an object schema, allOf parts merged.
    pub fn props<'a>(&'a self, s: &'a Value) -> BTreeMap<&'a str, &'a Value> {
        let s = self.resolve(s);
        let mut out: BTreeMap<&str, &Value> = s
            .get("properties")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.as_str(), v)).collect())
            .unwrap_or_default();
        for part in s
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.extend(self.props(part));
        }
        // A union of object definitions is one object on the wire: its members are theirs.
        if let Some(branches) = s.get("anyOf").and_then(Value::as_array) {
            if branches.iter().all(|b| b.get("$ref").is_some()) {
                for b in branches {
                    out.extend(self.props(b));
                }
            }
        }
        out
    }

    /// The definition of the request or notification named `method`.
    pub fn method_def(&self, method: &str) -> Option<&str> {
        // Unions (`ClientRequest`, …) are not the method's own definition.
        self.defs()
            .iter()
            .filter(|(_, d)| d.get("anyOf").is_none())
            .find_map(|(name, d)| {
                (self
                    .props(d)
                    .get("method")
                    .and_then(|m| m.get("const"))
                    .and_then(Value::as_str)
                    == Some(method))
                .then_some(name.as_str())
            })
    }

    pub fn validate(&self, def: &str, value: &Value) -> Result<(), String> {
        let mut schema = self.root.clone();
        schema["$ref"] = Value::String(format!("#/{}/{def}", self.defs_key));
        let validator = jsonschema::validator_for(&schema).map_err(|e| format!("schema: {e}"))?;
        let errors: Vec<String> = validator
            .iter_errors(value)
            .take(3)
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    }
}

pub struct Schemas {
    pub dir: PathBuf,
    pub docs: Vec<Doc>,
    pub tasks_ext: Doc,
}

impl Schemas {
    pub fn load(dir: &Path) -> Schemas {
        Schemas {
            dir: dir.to_owned(),
            docs: Revision::ALL
                .iter()
                .map(|r| Doc::load(&dir.join(r.as_str()).join("schema.json")))
                .collect(),
            tasks_ext: Doc::load(
                &dir.join("2026-07-28/extensions/tasks/ext-tasks/schema/draft/schema.json"),
            ),
        }
    }

    pub fn doc(&self, r: Revision) -> &Doc {
        &self.docs[r.index()]
    }
}

/// The definition a result of `method` is, in `doc` (a revision's schema): by the request's
/// name (`CallToolRequest` -> `CallToolResult`), else `EmptyResult`, else `Result`.
pub fn result_def_for(doc: &Doc, method: &str) -> Option<String> {
    let req = doc.method_def(method)?;
    let name = format!("{}Result", req.trim_end_matches("Request"));
    let found = [name.as_str(), "EmptyResult", "Result"]
        .into_iter()
        .find(|n| doc.def(n).is_some());
    found.map(str::to_owned)
}

/// The schema of `revision` in `schemas`.
pub fn doc_for(schemas: &Schemas, revision: Revision) -> &Doc {
    &schemas.docs[revision.index()]
}

/// Keeps `Map` in scope for includers that build values.
pub type Object = Map<String, Value>;
