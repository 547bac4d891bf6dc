//! Reading the members of the file's objects, with errors that say where.

use std::collections::BTreeMap;

use serde_json::Value;

use super::keys;

/// Where in the file something is wrong, and what.
pub(super) struct Problem {
    pub(super) location: String,
    pub(super) problem: String,
}

impl Problem {
    pub(super) fn new(location: impl Into<String>, problem: impl Into<String>) -> Self {
        Problem {
            location: location.into(),
            problem: problem.into(),
        }
    }
}

/// The members of one JSON object, read with errors that say where.
pub(super) struct Fields<'a> {
    pub(super) obj: &'a serde_json::Map<String, Value>,
    /// `mcpServers.<key>` or `gateway`.
    pub(super) at: String,
}

impl Fields<'_> {
    pub(super) fn at(&self, field: &str) -> String {
        match field {
            "" => self.at.clone(),
            f => format!("{}.{f}", self.at),
        }
    }

    pub(super) fn problem(&self, field: &str, problem: impl Into<String>) -> Problem {
        Problem::new(self.at(field), problem)
    }

    pub(super) fn string(&self, field: &str) -> Result<Option<String>, Problem> {
        match self.obj.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(v)) => Ok(Some(v.clone())),
            Some(_) => Err(self.problem(field, "must be a string")),
        }
    }

    /// An array of tool-name patterns, each checked.
    pub(super) fn patterns(&self, field: &str) -> Result<Vec<String>, Problem> {
        let patterns = self.strings(field)?;
        match patterns.iter().find_map(|p| keys::bad_pattern(p)) {
            Some(problem) => Err(self.problem(field, problem)),
            None => Ok(patterns),
        }
    }

    pub(super) fn strings(&self, field: &str) -> Result<Vec<String>, Problem> {
        let bad = || self.problem(field, "must be an array of strings");
        match self.obj.get(field) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| v.as_str().map(str::to_owned).ok_or_else(bad))
                .collect(),
            Some(_) => Err(bad()),
        }
    }

    pub(super) fn map(&self, field: &str) -> Result<BTreeMap<String, String>, Problem> {
        match self.obj.get(field) {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| {
                    v.as_str()
                        .map(|s| (k.clone(), s.to_owned()))
                        .ok_or_else(|| self.problem(field, format!("`{k}` must be a string")))
                })
                .collect(),
            Some(_) => Err(self.problem(field, "must be an object of strings")),
        }
    }

    /// A positive integer member, if present.
    pub(super) fn positive(&self, field: &str) -> Result<Option<u64>, Problem> {
        match self.obj.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_u64().filter(|n| *n >= 1) {
                Some(n) => Ok(Some(n)),
                None => Err(self.problem(field, "must be a positive integer")),
            },
        }
    }

    pub(super) fn flag(&self, field: &str) -> Result<bool, Problem> {
        match self.obj.get(field) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(self.problem(field, "must be true or false")),
        }
    }
}
