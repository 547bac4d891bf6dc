//! `gateway.audit`: where each call's record goes, and what is kept out of it.
//!
//! ```json
//! "gateway": {
//!   "audit": {
//!     "file": "/var/log/mcp-gateway/audit.jsonl", "maxFileBytes": 67108864, "maxFiles": 10,
//!     "redact": {"members": ["ssn"], "pointers": ["/query/sql"],
//!                "rules": [{"upstream": "db", "tool": "run_query", "pointers": ["/params"]}]},
//!     "digestKeyEnv": "AUDIT_DIGEST_KEY"
//!   }
//! }
//! ```

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;

use super::values::{given, Count, Positive};
use super::{join, Problem};
use crate::audit::{
    AuditLog, AuditOptions, AuditSink, FileRotation, FileSink, Redaction, RedactionRule, StdoutSink,
};

/// `gateway.audit`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, expecting = "an object")]
pub(super) struct Audit {
    /// A JSON-lines file the records are appended to (created 0600), each record chained
    /// to the one before by its hash (`mcp-gateway audit verify` checks the chain).
    pub(super) file: Option<String>,
    /// Largest the file grows before it is rotated to `FILE.1` (default 67108864).
    #[serde(default, deserialize_with = "given")]
    pub(super) max_file_bytes: Option<Positive>,
    /// Rotated files kept, `FILE.1` the newest (default 10).
    #[serde(default, deserialize_with = "given")]
    pub(super) max_files: Option<Count<1, 1000>>,
    /// Also write the records to standard output (not with `--stdio`, whose standard
    /// output carries the protocol).
    pub(super) stdout: Option<bool>,
    /// What is kept out of the records' arguments (besides the default names:
    /// `password`, `token`, `secret`, `authorization`, `api_key`, …).
    #[serde(default, deserialize_with = "given")]
    pub(super) redact: Option<Redact>,
    /// The environment variable holding a key for the arguments' digest (HMAC-SHA-256;
    /// without one, SHA-256, which a guess of short arguments can be checked against).
    pub(super) digest_key_env: Option<String>,
}

/// `gateway.audit.redact`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, expecting = "an object")]
pub(super) struct Redact {
    /// Members redacted wherever they are in the arguments: a member whose name (case,
    /// `_` and `-` aside) contains one of these.
    pub(super) members: Option<Vec<String>>,
    /// JSON pointers (RFC 6901) into the arguments, redacted exactly there.
    pub(super) pointers: Option<Vec<String>>,
    /// Whether the default names are redacted too (default true).
    pub(super) defaults: Option<bool>,
    /// Redactions for one upstream, or one tool.
    pub(super) rules: Option<Vec<RedactRule>>,
}

/// One of `gateway.audit.redact.rules`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, expecting = "an object")]
pub(super) struct RedactRule {
    /// The upstream (its key) it is for; default: every one.
    pub(super) upstream: Option<String>,
    /// The tool it is for, by its exposed or its upstream's own name; default: every one.
    pub(super) tool: Option<String>,
    /// As `redact.members`, for these calls.
    pub(super) members: Option<Vec<String>>,
    /// As `redact.pointers`, for these calls.
    pub(super) pointers: Option<Vec<String>>,
}

/// What `gateway.audit` says, ready to open ([`AuditSettings::open`]): the log is opened
/// by whoever serves, once, so that a configuration reload keeps writing one chain.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuditSettings {
    /// The file, and how it is rotated.
    pub file: Option<(PathBuf, FileRotation)>,
    /// Whether records go to standard output too.
    pub stdout: bool,
    /// What is kept out of the records.
    pub redaction: Redaction,
}

impl AuditSettings {
    /// Opens the sinks and starts the log's writer; `extra`: sinks of the caller's own
    /// (OpenTelemetry logs, say).
    pub fn open(&self, extra: Vec<Box<dyn AuditSink>>) -> std::io::Result<AuditLog> {
        let mut sinks: Vec<Box<dyn AuditSink>> = Vec::new();
        if let Some((path, rotation)) = &self.file {
            sinks.push(Box::new(FileSink::open(path, rotation.clone())?));
        }
        if self.stdout {
            sinks.push(Box::new(StdoutSink::new()));
        }
        sinks.extend(extra);
        Ok(AuditLog::new(
            sinks,
            self.redaction.clone(),
            AuditOptions::default(),
        ))
    }
}

/// `gateway.audit`, read.
pub(super) fn audit(a: Audit) -> Result<AuditSettings, Problem> {
    let at = "gateway.audit";
    let Audit {
        file,
        max_file_bytes,
        max_files,
        stdout,
        redact,
        digest_key_env,
    } = a;
    let stdout = stdout == Some(true);
    if file.is_none() && !stdout {
        return Err(Problem::new(at, "give `file`, or `stdout`: true"));
    }
    let mut rotation = FileRotation::default();
    if let Some(b) = max_file_bytes {
        rotation.max_bytes = b.0;
    }
    if let Some(n) = max_files {
        rotation.max_files = n.usize();
    }
    let mut redaction = match redact.as_ref().and_then(|r| r.defaults) {
        Some(false) => Redaction::none(),
        _ => Redaction::new(),
    };
    if let Some(r) = redact {
        redaction = redacted(redaction, r, &join(at, "redact"))?;
    }
    if let Some(var) = digest_key_env {
        let key = std::env::var(&var).map_err(|_| {
            Problem::new(
                join(at, "digestKeyEnv"),
                format!("environment variable {var} is not set"),
            )
        })?;
        redaction = redaction.digest_key(Some(key.into_bytes()));
    }
    Ok(AuditSettings {
        file: file.map(|f| (PathBuf::from(f), rotation)),
        stdout,
        redaction,
    })
}

/// `redaction` with what `r` (at `at`) adds.
fn redacted(mut redaction: Redaction, r: Redact, at: &str) -> Result<Redaction, Problem> {
    for m in r.members.unwrap_or_default() {
        redaction = redaction.member(m);
    }
    for p in r.pointers.unwrap_or_default() {
        redaction = redaction.pointer(pointer(p, &join(at, "pointers"))?);
    }
    for (n, rule) in r.rules.unwrap_or_default().into_iter().enumerate() {
        let at = format!("{at}.rules[{n}]");
        let mut made = RedactionRule::new();
        made.upstream = rule.upstream;
        made.tool = rule.tool;
        made.members = rule.members.unwrap_or_default();
        made.pointers = rule
            .pointers
            .unwrap_or_default()
            .into_iter()
            .map(|p| pointer(p, &join(&at, "pointers")))
            .collect::<Result<_, _>>()?;
        redaction = redaction.rule(made);
    }
    Ok(redaction)
}

/// `p`, if it is a JSON pointer to a member (a pointer to the whole would redact all).
fn pointer(p: String, at: &str) -> Result<String, Problem> {
    match p.starts_with('/') {
        true => Ok(p),
        false => Err(Problem::new(
            at,
            format!("{p:?} is not a JSON pointer into the arguments (one starts with `/`)"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::with_gateway as read;

    #[test]
    fn an_audit_section_is_read_and_its_mistakes_are_named() {
        let g = read(
            r#"{"audit": {"file": "/var/log/a.jsonl", "maxFileBytes": 1000, "maxFiles": 3,
                         "redact": {"members": ["ssn"], "pointers": ["/q/sql"], "defaults": false,
                                    "rules": [{"upstream": "a", "pointers": ["/x"]}]}}}"#,
        )
        .expect("read");
        let a = g.audit.expect("audit");
        let (path, rotation) = a.file.expect("a file");
        assert_eq!(path, std::path::PathBuf::from("/var/log/a.jsonl"));
        assert_eq!((rotation.max_bytes, rotation.max_files), (1000, 3));
        assert!(!a.stdout);
        for (gateway, at, why) in [
            (r#"{"audit": {}}"#, "gateway.audit", "give `file`"),
            (
                r#"{"audit": {"file": "f", "redact": {"pointers": ["q/sql"]}}}"#,
                "gateway.audit.redact.pointers",
                "JSON pointer",
            ),
            (
                r#"{"audit": {"file": "f", "digestKeyEnv": "MCP_PROXY_TEST_UNSET_VAR"}}"#,
                "gateway.audit.digestKeyEnv",
                "not set",
            ),
            (
                r#"{"audit": {"file": "f", "maxFiles": 0}}"#,
                "maxFiles",
                "1 to 1000",
            ),
        ] {
            let e = read(gateway)
                .err()
                .unwrap_or_else(|| panic!("{gateway} was taken"));
            assert!(e.contains(at) && e.contains(why), "{gateway}: {e}");
        }
    }
}
