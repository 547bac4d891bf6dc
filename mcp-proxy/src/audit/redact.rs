//! What of a call's arguments reaches the audit trail: secrets replaced by `"[REDACTED]"`
//! (by member name at any depth, or by JSON pointer), and a digest of the exact bytes the
//! host sent, so a record can be matched against a copy of the arguments without holding
//! them.
//!
//! Arguments longer than [`Redaction::max_bytes`] are not copied at all: `arguments` is
//! then `{"[TRUNCATED]": <length in bytes>}`, and the digest still covers every byte.
//! Arguments that do not parse, or nest deeper than serde_json's limit of 128 levels,
//! are written as `"[UNREADABLE]"`, digested all the same.

use ring::digest::{digest, SHA256};
use ring::hmac;
use serde_json::value::RawValue;
use serde_json::Value;

use super::chain::hex_into;
use super::member_names::{any_key_matches, normalise};

/// What a redacted value is replaced with, whatever its type.
pub const REDACTED: &str = "[REDACTED]";
/// What arguments that cannot be read are written as.
pub const UNREADABLE: &str = "[UNREADABLE]";
/// The one member of the object written in place of arguments too long to copy; its
/// value is their length in bytes.
pub const TRUNCATED: &str = "[TRUNCATED]";
/// The member names redacted unless [`Redaction::none`] is used. A member is redacted
/// when its name, lowercased and without `_` and `-`, contains one of these so normalised
/// (`access_token`, `X-Api-Key` and `githubToken` all are).
pub const DEFAULT_MEMBERS: [&str; 11] = [
    "password",
    "passwd",
    "secret",
    "token",
    "authorization",
    "api_key",
    "apikey",
    "cookie",
    "credential",
    "private_key",
    "client_secret",
];
/// Arguments longer than this (in bytes) are not copied into records by default.
pub const DEFAULT_MAX_BYTES: usize = 64 * 1024;
/// Deepest nesting walked: serde_json refuses deeper input when parsing, and this bounds
/// the walk should a value ever come from elsewhere.
const MAX_DEPTH: usize = 128;

/// Extra redaction for calls to one upstream, or one tool, or both.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedactionRule {
    /// The upstream's key the rule is for; `None` for every upstream.
    pub upstream: Option<String>,
    /// The tool (or prompt) the rule is for, by the upstream's own name or the name the
    /// gateway exposes; `None` for every tool.
    pub tool: Option<String>,
    /// Member names redacted at any depth, matched as the defaults are.
    pub members: Vec<String>,
    /// JSON pointers (RFC 6901) whose values are redacted.
    pub pointers: Vec<String>,
}

impl RedactionRule {
    /// A rule for every upstream and tool that redacts nothing yet.
    pub fn new() -> RedactionRule {
        RedactionRule::default()
    }

    /// For calls to the upstream `key` only.
    pub fn upstream(mut self, key: impl Into<String>) -> Self {
        self.upstream = Some(key.into());
        self
    }

    /// For calls to the tool `name` only (the upstream's name or the exposed one).
    pub fn tool(mut self, name: impl Into<String>) -> Self {
        self.tool = Some(name.into());
        self
    }

    /// Also redacts members named like `name`.
    pub fn member(mut self, name: impl Into<String>) -> Self {
        self.members.push(name.into());
        self
    }

    /// Also redacts the value at `pointer`.
    pub fn pointer(mut self, pointer: impl Into<String>) -> Self {
        self.pointers.push(pointer.into());
        self
    }
}

/// A rule ready to apply: names normalised, pointers split.
#[derive(Debug, Clone)]
struct Compiled {
    upstream: Option<String>,
    tool: Option<String>,
    members: Vec<String>,
    pointers: Vec<Vec<String>>,
}

impl Compiled {
    fn applies(&self, upstream: Option<&str>, names: &[&str]) -> bool {
        let upstream_ok = self.upstream.as_deref().is_none_or(|u| upstream == Some(u));
        let tool_ok = self.tool.as_deref().is_none_or(|t| names.contains(&t));
        upstream_ok && tool_ok
    }
}

/// How arguments are redacted and digested before they are written.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Redaction {
    members: Vec<String>,
    pointers: Vec<Vec<String>>,
    rules: Vec<Compiled>,
    key: Option<hmac::Key>,
    max_bytes: usize,
}

impl Default for Redaction {
    fn default() -> Self {
        Redaction::new()
    }
}

impl Redaction {
    /// The [`DEFAULT_MEMBERS`] redacted, SHA-256 digests, [`DEFAULT_MAX_BYTES`].
    pub fn new() -> Redaction {
        DEFAULT_MEMBERS
            .iter()
            .fold(Redaction::none(), |r, name| r.member(*name))
    }

    /// Nothing redacted until members, pointers or rules are added.
    pub fn none() -> Redaction {
        Redaction {
            members: Vec::new(),
            pointers: Vec::new(),
            rules: Vec::new(),
            key: None,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }

    /// Also redacts members named like `name`, at any depth. An empty name is ignored (it
    /// would match every member).
    pub fn member(mut self, name: impl AsRef<str>) -> Self {
        let name = normalise(name.as_ref());
        if !name.is_empty() && !self.members.contains(&name) {
            self.members.push(name);
        }
        self
    }

    /// Also redacts the value at `pointer` (RFC 6901: `/a/0/b`, `~1` for `/`, `~0` for
    /// `~`; `""` is the whole arguments). A pointer not starting with `/` is ignored, with
    /// a warning.
    pub fn pointer(mut self, pointer: impl AsRef<str>) -> Self {
        self.pointers.extend(parse_pointer(pointer.as_ref()));
        self
    }

    /// Also applies `rule` to the calls it is for.
    pub fn rule(mut self, rule: RedactionRule) -> Self {
        self.rules.push(Compiled {
            members: rule
                .members
                .iter()
                .map(|m| normalise(m))
                .filter(|m| !m.is_empty())
                .collect(),
            pointers: rule
                .pointers
                .iter()
                .filter_map(|p| parse_pointer(p))
                .collect(),
            upstream: rule.upstream,
            tool: rule.tool,
        });
        self
    }

    /// Digests are HMAC-SHA-256 under `key` (`hmac-sha256:<hex>`) rather than plain SHA-256:
    /// with a key, a digest of guessable arguments (a short password) cannot be matched by
    /// someone who reads the trail but does not hold the key.
    pub fn digest_key(mut self, key: Option<Vec<u8>>) -> Self {
        self.key = key.map(|k| hmac::Key::new(hmac::HMAC_SHA256, &k));
        self
    }

    /// Arguments longer than `max_bytes` are not copied into records (default 64 KiB).
    pub fn max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// The redacted arguments of a call to `upstream`'s tool known by `names` (the exposed
    /// name and the upstream's own), and the digest of `raw`'s exact bytes.
    pub fn apply(&self, upstream: Option<&str>, names: &[&str], raw: &RawValue) -> (Value, String) {
        let (redacted, digest) = self.redacted(upstream, names, raw.get());
        let value = match redacted {
            Redacted::AsSent => {
                serde_json::from_str(raw.get()).unwrap_or_else(|_| Value::String(UNREADABLE.into()))
            }
            Redacted::Edited(value) => value,
        };
        (value, digest.as_str().to_owned())
    }

    /// [`Redaction::apply`], saying [`Redacted::AsSent`] for arguments with nothing to
    /// redact (the common call), which are written as they came rather than read and
    /// written again.
    /// `text` is the arguments' JSON text as the host sent it.
    pub(crate) fn redacted(
        &self,
        upstream: Option<&str>,
        names: &[&str],
        text: &str,
    ) -> (Redacted, Digest) {
        let digest = self.digest_of(text.as_bytes());
        if text.len() > self.max_bytes {
            let mut marker = serde_json::Map::new();
            marker.insert(TRUNCATED.into(), Value::from(text.len()));
            return (Redacted::Edited(Value::Object(marker)), digest);
        }
        // A line break between tokens would end the record's line: such text is written
        // again, on one line.
        let one_line = memchr::memchr2(b'\n', b'\r', text.as_bytes()).is_none();
        // The common case, no per-tool rule nor pointer: nothing is allocated.
        if self.rules.is_empty() && self.pointers.is_empty() && one_line {
            let members = self.members.iter().map(String::as_str);
            if !any_key_matches(text, members) {
                return (Redacted::AsSent, digest);
            }
        }
        let rules: Vec<&Compiled> = self
            .rules
            .iter()
            .filter(|r| r.applies(upstream, names))
            .collect();
        let no_pointer = self.pointers.is_empty() && rules.iter().all(|r| r.pointers.is_empty());
        let members: Vec<&str> = self
            .members
            .iter()
            .chain(rules.iter().flat_map(|r| r.members.iter()))
            .map(String::as_str)
            .collect();
        if no_pointer && one_line && !any_key_matches(text, members.iter().copied()) {
            return (Redacted::AsSent, digest);
        }
        let Ok(mut value) = serde_json::from_str::<Value>(text) else {
            return (Redacted::Edited(Value::String(UNREADABLE.into())), digest);
        };
        let pointers = self
            .pointers
            .iter()
            .chain(rules.iter().flat_map(|r| r.pointers.iter()));
        for pointer in pointers {
            redact_pointer(&mut value, pointer);
        }
        if !members.is_empty() {
            redact_members(&mut value, &members, 0);
        }
        (Redacted::Edited(value), digest)
    }

    /// `sha256:<hex>`, or `hmac-sha256:<hex>` with a key, of `bytes`.
    pub fn digest(&self, bytes: &[u8]) -> String {
        self.digest_of(bytes).as_str().to_owned()
    }

    /// [`Redaction::digest`], held without allocating.
    pub(crate) fn digest_of(&self, bytes: &[u8]) -> Digest {
        let (prefix, sum) = match &self.key {
            Some(key) => (
                "hmac-sha256:",
                hmac::sign(key, bytes).as_ref().to_owned_array(),
            ),
            None => ("sha256:", digest(&SHA256, bytes).as_ref().to_owned_array()),
        };
        let mut text = [0u8; DIGEST_TEXT];
        text[..prefix.len()].copy_from_slice(prefix.as_bytes());
        let len = prefix.len() + 64;
        hex_into(&sum, &mut text[prefix.len()..len]);
        Digest { text, len }
    }
}

/// The longest digest's text: `hmac-sha256:` and 64 hex digits.
const DIGEST_TEXT: usize = 12 + 64;

/// A digest's text, `sha256:<hex>` or `hmac-sha256:<hex>`.
#[derive(Clone, Copy)]
pub(crate) struct Digest {
    text: [u8; DIGEST_TEXT],
    len: usize,
}

impl Digest {
    pub(crate) fn as_str(&self) -> &str {
        std::str::from_utf8(&self.text[..self.len]).unwrap_or("")
    }
}

/// A SHA-256 (32 bytes) as an array.
trait OwnedArray {
    fn to_owned_array(&self) -> [u8; 32];
}

impl OwnedArray for [u8] {
    fn to_owned_array(&self) -> [u8; 32] {
        let mut out = [0; 32];
        let n = self.len().min(32);
        out[..n].copy_from_slice(&self[..n]);
        out
    }
}

/// What [`Redaction::redacted`] made of a call's arguments.
pub(crate) enum Redacted {
    /// Nothing in them is redacted: they are written as the host sent them.
    AsSent,
    /// They are written as this.
    Edited(Value),
}

fn parse_pointer(pointer: &str) -> Option<Vec<String>> {
    if pointer.is_empty() {
        return Some(Vec::new());
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        tracing::warn!(
            pointer,
            "audit redaction: a JSON pointer must start with '/'; ignored"
        );
        return None;
    };
    Some(
        rest.split('/')
            .map(|token| token.replace("~1", "/").replace("~0", "~"))
            .collect(),
    )
}

fn redact_pointer(value: &mut Value, tokens: &[String]) {
    let mut at = value;
    for token in tokens {
        let next = match at {
            Value::Object(map) => map.get_mut(token),
            Value::Array(items) => array_index(token).and_then(|i| items.get_mut(i)),
            _ => None,
        };
        match next {
            Some(next) => at = next,
            None => return,
        }
    }
    *at = Value::String(REDACTED.into());
}

/// An RFC 6901 array index: digits, no leading zero.
fn array_index(token: &str) -> Option<usize> {
    let digits_only = !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit());
    if !digits_only || (token.len() > 1 && token.starts_with('0')) {
        return None;
    }
    token.parse().ok()
}

fn redact_members(value: &mut Value, members: &[&str], depth: usize) {
    if depth > MAX_DEPTH {
        *value = Value::String(UNREADABLE.into());
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                let key = normalise(key);
                if members.iter().any(|m| key.contains(m)) {
                    *item = Value::String(REDACTED.into());
                } else {
                    redact_members(item, members, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                redact_members(item, members, depth + 1);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::chain::hex;
    use serde_json::json;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    fn sha256_hex(bytes: &[u8]) -> String {
        hex(digest(&SHA256, bytes).as_ref())
    }

    #[test]
    fn default_members_are_redacted_at_any_depth_by_containment() {
        let text = r#"{"user":"a","password":"p1","access_token":{"x":1},"X-Api-Key":"k",
            "githubToken":"g","list":[{"Client-Secret":"c"},{"ok":[{"cookie_jar":"j"}]}],
            "passwd":null,"apikey":7,"private_key":true,"authorization":"Bearer b",
            "credentials":["a"],"mode":"read"}"#;
        let (value, digest) = Redaction::new().apply(None, &[], &raw(text));
        let r = REDACTED;
        assert_eq!(
            value,
            json!({"user":"a","password":r,"access_token":r,"X-Api-Key":r,"githubToken":r,
                "list":[{"Client-Secret":r},{"ok":[{"cookie_jar":r}]}],"passwd":r,"apikey":r,
                "private_key":r,"authorization":r,"credentials":r,"mode":"read"})
        );
        assert_eq!(digest, format!("sha256:{}", sha256_hex(text.as_bytes())));
    }

    #[test]
    fn none_redacts_nothing_until_told() {
        let text = r#"{"password":"p","note":{"Pin-Code":1}}"#;
        let (value, _) = Redaction::none().apply(None, &[], &raw(text));
        assert_eq!(value, json!({"password":"p","note":{"Pin-Code":1}}));
        let (value, _) = Redaction::none()
            .member("pin_code")
            .apply(None, &[], &raw(text));
        assert_eq!(value, json!({"password":"p","note":{"Pin-Code":REDACTED}}));
        let (value, _) = Redaction::none().member("").apply(None, &[], &raw(text));
        assert_eq!(value["password"], "p");
    }

    #[test]
    fn pointers_redact_exactly_their_value() {
        let text = r#"{"query":{"sql":"select 1","db":"main"},"a/b":{"m~n":1},"rows":[1,2,3]}"#;
        let redaction = Redaction::none()
            .pointer("/query/sql")
            .pointer("/a~1b/m~0n")
            .pointer("/rows/1")
            .pointer("/rows/01")
            .pointer("/missing/deeper")
            .pointer("no-slash");
        let (value, _) = redaction.apply(None, &[], &raw(text));
        assert_eq!(
            value,
            json!({"query":{"sql":REDACTED,"db":"main"},"a/b":{"m~n":REDACTED},"rows":[1,REDACTED,3]})
        );
        let (whole, _) = Redaction::none().pointer("").apply(None, &[], &raw(text));
        assert_eq!(whole, json!(REDACTED));
    }

    #[test]
    fn rules_apply_only_to_their_upstream_and_tool() {
        let redaction = Redaction::none()
            .rule(RedactionRule::new().upstream("db").member("sql"))
            .rule(RedactionRule::new().tool("fs/write").pointer("/content"))
            .rule(
                RedactionRule::new()
                    .upstream("web")
                    .tool("fetch")
                    .member("url"),
            );
        let text = r#"{"sql":"s","content":"c","url":"u"}"#;
        let check = |upstream, names: &[&str], expected: Value| {
            let (value, _) = redaction.apply(upstream, names, &raw(text));
            assert_eq!(value, expected, "{upstream:?} {names:?}");
        };
        let r = REDACTED;
        check(Some("db"), &["q"], json!({"sql":r,"content":"c","url":"u"}));
        check(
            Some("fs"),
            &["fs/write", "write"],
            json!({"sql":"s","content":r,"url":"u"}),
        );
        check(
            Some("fs"),
            &["write"],
            json!({"sql":"s","content":"c","url":"u"}),
        );
        check(
            Some("web"),
            &["web/fetch", "fetch"],
            json!({"sql":"s","content":"c","url":r}),
        );
        check(
            Some("web"),
            &["other"],
            json!({"sql":"s","content":"c","url":"u"}),
        );
        check(None, &["fetch"], json!({"sql":"s","content":"c","url":"u"}));
    }

    #[test]
    fn a_digest_key_makes_hmac_digests() {
        let text = r#"{"a":1}"#;
        let (_, digest) =
            Redaction::new()
                .digest_key(Some(b"k".to_vec()))
                .apply(None, &[], &raw(text));
        let key = hmac::Key::new(hmac::HMAC_SHA256, b"k");
        let expected = hex(hmac::sign(&key, text.as_bytes()).as_ref());
        assert_eq!(digest, format!("hmac-sha256:{expected}"));
    }

    #[test]
    fn long_arguments_are_not_copied_but_fully_digested() {
        let text = format!(r#"{{"blob":"{}"}}"#, "x".repeat(200));
        let redaction = Redaction::new().max_bytes(100);
        let (value, digest) = redaction.apply(None, &[], &raw(&text));
        assert_eq!(value, json!({TRUNCATED: text.len()}));
        assert_eq!(digest, format!("sha256:{}", sha256_hex(text.as_bytes())));
    }

    #[test]
    fn arguments_nested_too_deep_are_unreadable_but_digested() {
        let mut deep = json!(1);
        for _ in 0..200 {
            deep = json!([deep]);
        }
        let raw = serde_json::value::to_raw_value(&deep).unwrap();
        let (value, digest) = Redaction::new().apply(None, &[], &raw);
        assert_eq!(value, json!(UNREADABLE));
        assert_eq!(
            digest,
            format!("sha256:{}", sha256_hex(raw.get().as_bytes()))
        );

        let mut fine = json!({"password": "p"});
        for _ in 0..100 {
            fine = json!([fine]);
        }
        let raw = serde_json::value::to_raw_value(&fine).unwrap();
        let (value, _) = Redaction::new().apply(None, &[], &raw);
        assert!(!value.to_string().contains("\"p\""));
    }

    #[test]
    fn walking_stops_at_the_depth_bound() {
        let mut deep = json!({"token": "t"});
        for _ in 0..(MAX_DEPTH + 5) {
            deep = json!({"k": deep});
        }
        redact_members(&mut deep, &["token"], 0);
        assert!(!deep.to_string().contains("\"t\""));
    }

    #[test]
    fn arguments_are_written_as_sent_only_when_nothing_in_them_would_be_redacted() {
        let defaults = Redaction::new();
        let as_sent = |r: &Redaction, text: &str| {
            matches!(r.redacted(None, &[], raw(text).get()).0, Redacted::AsSent)
        };
        for text in [
            r#"{"text":"hello"}"#,
            r#"{"text": "the password is in the value, not a name"}"#,
            r#"{"a":{"b":[1,{"c":"\"password\": x"}]},"d":null}"#,
            r#"{"esc\u0061pe":"x","list":["token","secret"]}"#,
            r#"[{"x":1},{"y":"z"}]"#,
        ] {
            assert!(as_sent(&defaults, text), "{text}");
            let (value, _) = defaults.apply(None, &[], &raw(text));
            let sent: Value = serde_json::from_str(text).expect("JSON");
            assert_eq!(value, sent, "nothing redacted in {text}");
        }
        for text in [
            r#"{"password":"p"}"#,
            r#"{"nested":{"deeper":[{"X-Api-Key":"k"}]}}"#,
            r#"{"pass\u0077ord":"p"}"#,
            r#"{"githubToken" : "t"}"#,
            "{\"text\":\n\"two lines\"}",
        ] {
            assert!(
                !as_sent(&defaults, text),
                "{text} is read and written again"
            );
        }
        assert!(!as_sent(
            &Redaction::none().pointer("/text"),
            r#"{"text":"x"}"#
        ));
        assert!(as_sent(&Redaction::none(), r#"{"password":"p"}"#));
    }
}
