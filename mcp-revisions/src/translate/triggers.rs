//! The shortcut: which subtrees the walk may leave as they are without reading them.
//!
//! For every position the walk can descend into (an object type, a content position, a
//! `_meta` object, …) and every target revision, the set of quoted strings whose presence
//! in the subtree's text could make the walk change it: members the target lacks, `_meta`
//! keys it lacks, content `type` tags it does not allow there, and the names the type
//! conversions look for. Some conversions fire on anything (filling `resultType` going up to
//! 2026-07-28); those positions are marked `always`. A subtree whose text holds none of its
//! tokens is kept as it came, unparsed.
//!
//! A missed token would let a member the target cannot carry through, so the sets are
//! derived from the same table the walk reads and the same constants the conversions test.
//! A false alarm only costs a walk.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use mcp_types::raw;
use mcp_types::Revision;

use super::{ELICITATION_MODES, OBJECT_ONLY_STRUCTURED, SAMPLING_ARRAYS};
use crate::shapes::{ContentKind, ObjectShape, Shape};
use crate::{meta_keys, spec_data};

/// A position the walk descends into.
#[derive(Clone, Copy)]
pub(super) enum Node {
    /// An object of a known type.
    Object(&'static ObjectShape),
    /// A content block position (one block or an array of them).
    Content(&'static [ContentKind]),
    /// Sampling content: one block or an array of them.
    Sampling(&'static [ContentKind]),
    /// A `_meta` object.
    Meta,
    /// 2026-07-28 `inputRequests`.
    InputRequests,
    /// A method's result as a whole: its type's tokens and the `resultType` dispatch.
    Result(Option<&'static ObjectShape>),
}

impl Node {
    /// The node for a member of this shape; `None` for what the walk never enters.
    pub(super) fn of(shape: Shape) -> Option<Node> {
        Some(match shape {
            Shape::Opaque => return None,
            Shape::Meta => Node::Meta,
            Shape::Object(o, _) => Node::Object(o),
            Shape::Content(kinds, _) => Node::Content(kinds),
            Shape::SamplingContent(kinds) => Node::Sampling(kinds),
            Shape::InputRequests => Node::InputRequests,
        })
    }

    /// Identity in the cache: the static it points at, and which kind of node.
    fn key(self) -> (u8, usize) {
        match self {
            Node::Object(o) => (0, o as *const ObjectShape as usize),
            Node::Content(k) => (1, k.as_ptr() as usize),
            Node::Sampling(k) => (2, k.as_ptr() as usize),
            Node::Meta => (3, 0),
            Node::InputRequests => (4, 0),
            Node::Result(o) => (5, o.map_or(0, |o| o as *const ObjectShape as usize)),
        }
    }

    /// The positions the walk enters below this one, in revision `to`. Members the target
    /// lacks are removed, not entered, so they contribute only their names.
    fn children(self, to: Revision) -> Vec<Node> {
        match self {
            Node::Object(o) => o
                .fields
                .iter()
                .filter(|f| f.revisions.contains(to))
                .filter_map(|f| Node::of(f.shape))
                .collect(),
            Node::Content(kinds) | Node::Sampling(kinds) => kinds
                .iter()
                .filter(|k| k.revisions.contains(to))
                .map(|k| Node::Object(k.shape))
                .collect(),
            Node::InputRequests => spec_data::METHODS
                .iter()
                .map(|m| Node::Object(m.params))
                .collect(),
            Node::Meta => Vec::new(),
            Node::Result(o) => o.map(Node::Object).into_iter().collect(),
        }
    }

    /// What at this position alone can make the walk change it in revision `to`.
    fn local(self, to: Revision, tokens: &mut HashSet<&'static str>) -> bool {
        match self {
            Node::Object(o) => object_local(o, to, tokens),
            Node::Content(kinds) => {
                content_local(kinds, to, tokens);
                false
            }
            Node::Sampling(kinds) => {
                content_local(kinds, to, tokens);
                // A single-element array becomes one block: no token tells an array apart.
                !SAMPLING_ARRAYS.contains(to)
            }
            Node::Meta => {
                tokens.extend(
                    meta_keys::META_KEYS
                        .iter()
                        .filter(|(_, revs)| !revs.contains(to))
                        .map(|(k, _)| *k),
                );
                false
            }
            Node::InputRequests => false,
            Node::Result(o) => {
                // `resultType` routes a result to the task and input-required conversions.
                tokens.insert("resultType");
                // A result of no known type still gets `resultType` going up to 2026.
                o.is_none() && to == Revision::V2026_07_28
            }
        }
    }
}

/// Members and conversions of one object type; `true` when a conversion always fires.
fn object_local(o: &ObjectShape, to: Revision, tokens: &mut HashSet<&'static str>) -> bool {
    tokens.extend(
        o.fields
            .iter()
            .filter(|f| !f.revisions.contains(to))
            .map(|f| f.name),
    );
    // Each line below mirrors one test in `convert.rs`.
    if std::ptr::eq(o, &spec_data::TOOL) {
        if !o.has("title", to) {
            tokens.insert("title");
        }
        if OBJECT_ONLY_STRUCTURED.contains(to) {
            tokens.insert("outputSchema");
        }
    }
    if std::ptr::eq(o, &spec_data::CLIENT_CAPABILITIES) && !ELICITATION_MODES.contains(to) {
        tokens.insert("elicitation");
    }
    if o.field("structuredContent").is_some()
        && (!o.has("structuredContent", to) || OBJECT_ONLY_STRUCTURED.contains(to))
    {
        tokens.insert("structuredContent");
    }
    o.name.starts_with("result ")
        && to == Revision::V2026_07_28
        && (o.has("resultType", to) || o.has("ttlMs", to))
}

/// Block types known somewhere that this position does not allow in `to`.
fn content_local(kinds: &[ContentKind], to: Revision, tokens: &mut HashSet<&'static str>) {
    let allowed = |tag: &str| {
        kinds
            .iter()
            .any(|k| k.tag == tag && k.revisions.contains(to))
    };
    tokens.extend(
        kinds
            .iter()
            .chain(&spec_data::BLOCK_CONTENT)
            .chain(&spec_data::SAMPLING_CONTENT)
            .map(|k| k.tag)
            .filter(|t| !allowed(t)),
    );
}

/// The tokens of one position and everything below it, for one target revision.
#[derive(Debug, Default)]
pub(super) struct Triggers {
    /// A conversion below fires whatever the text says.
    always: bool,
    /// Tokens by length: `by_len[n]` holds the tokens of `n` bytes.
    by_len: Vec<Vec<&'static str>>,
}

impl Triggers {
    fn new(always: bool, tokens: HashSet<&'static str>) -> Triggers {
        let mut by_len: Vec<Vec<&'static str>> = Vec::new();
        for t in tokens {
            if by_len.len() <= t.len() {
                by_len.resize_with(t.len() + 1, Vec::new);
            }
            by_len[t.len()].push(t);
        }
        Triggers { always, by_len }
    }

    /// For what the walk may enter but the table does not know: always walk.
    const ALWAYS: Triggers = Triggers {
        always: true,
        by_len: Vec::new(),
    };

    /// Whether the walk may change a subtree with this text (valid JSON).
    pub(super) fn found_in(&self, text: &str) -> bool {
        self.always || (!self.by_len.is_empty() && self.scan(text))
    }

    /// Whether any string in `text` (keys and values alike) is one of the tokens.
    fn scan(&self, text: &str) -> bool {
        raw::strings(text).any(|s| match s {
            Ok((s, false)) => self.is_token(s),
            Ok((s, true)) => self.is_escaped_token(s),
            // Not JSON after all: let the walk judge it.
            Err(_) => true,
        })
    }

    fn is_token(&self, s: &[u8]) -> bool {
        self.by_len
            .get(s.len())
            .is_some_and(|ts| ts.iter().any(|t| t.as_bytes() == s))
    }

    /// A string written with escapes: tokens hold no quote, backslash or control
    /// character, so only `\uXXXX` and `\/` can spell one; such a string is decoded.
    fn is_escaped_token(&self, s: &[u8]) -> bool {
        // Six bytes at most per decoded character: longer text cannot spell a token.
        if s.len() > 6 * self.by_len.len() {
            return false;
        }
        let spells = s
            .windows(2)
            .any(|w| w[0] == b'\\' && (w[1] == b'u' || w[1] == b'/'));
        if !spells {
            return false;
        }
        let mut quoted = Vec::with_capacity(s.len() + 2);
        quoted.push(b'"');
        quoted.extend_from_slice(s);
        quoted.push(b'"');
        match serde_json::from_slice::<String>(&quoted) {
            Ok(decoded) => self.is_token(decoded.as_bytes()),
            Err(_) => true,
        }
    }
}

/// Keyed by addresses of the crate's own statics, looked up for every relayed message.
type Table = HashMap<(u8, usize), Triggers, crate::static_keys::BuildStaticKeyHasher>;

/// The triggers of `node` for target `to`, computed once per revision for every node.
pub(super) fn of(node: Node, to: Revision) -> &'static Triggers {
    static TABLES: [OnceLock<Table>; 5] = [const { OnceLock::new() }; 5];
    static UNKNOWN: Triggers = Triggers::ALWAYS;
    TABLES[to.index()]
        .get_or_init(|| table(to))
        .get(&node.key())
        .unwrap_or(&UNKNOWN)
}

fn table(to: Revision) -> Table {
    let mut roots: Vec<Node> = spec_data::OBJECTS.iter().map(|o| Node::Object(o)).collect();
    for m in spec_data::METHODS {
        roots.push(Node::Object(m.params));
        roots.push(Node::Result(m.result));
    }
    roots.push(Node::Result(None));
    let mut out = Table::default();
    let mut pending = roots;
    while let Some(node) = pending.pop() {
        if out.contains_key(&node.key()) {
            continue;
        }
        pending.extend(node.children(to));
        out.insert(node.key(), closure(node, to));
    }
    out
}

/// The triggers of everything reachable from `root` (the shapes may refer to each other).
fn closure(root: Node, to: Revision) -> Triggers {
    let mut seen = HashSet::new();
    let mut tokens = HashSet::new();
    let mut always = false;
    let mut pending = vec![root];
    while let Some(node) = pending.pop() {
        if !seen.insert(node.key()) {
            continue;
        }
        always |= node.local(to, &mut tokens);
        pending.extend(node.children(to));
    }
    Triggers::new(always, tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call_result(to: Revision) -> &'static Triggers {
        of(Node::Result(Some(&spec_data::RESULT_TOOLS_CALL)), to)
    }

    #[test]
    fn plain_text_results_have_no_trigger_down_to_2025_06_18() {
        let text = r#"{"content":[{"type":"text","text":"a \"quoted\" word\n"}],"isError":false}"#;
        assert!(!call_result(Revision::V2025_06_18).found_in(text));
        assert!(
            call_result(Revision::V2026_07_28).found_in(text),
            "resultType is filled"
        );
    }

    #[test]
    fn tokens_are_found_at_any_depth_and_however_spelled() {
        let t = call_result(Revision::V2025_06_18);
        for text in [
            r#"{"content":[{"type":"text","text":"x","_meta":{"io.modelcontextprotocol/related-task":{}}}]}"#,
            r#"{"content":[],"result\u0054ype":"complete"}"#,
            r#"{"content":[],"_meta":{"io.modelcontextprotocol\/related-task":{}}}"#,
            r#"{"content":[{"type":"tool_use"}]}"#,
        ] {
            assert!(t.found_in(text), "{text}");
        }
        assert!(of(
            Node::Result(Some(&spec_data::RESULT_TOOLS_CALL)),
            Revision::V2024_11_05
        )
        .found_in(r#"{"content":[{"type":"audio","data":"","mimeType":"a"}]}"#));
    }

    #[test]
    fn escapes_that_cannot_spell_a_token_are_no_alarm() {
        let t = call_result(Revision::V2025_06_18);
        assert!(!t.found_in(r#"{"content":[{"type":"text","text":"resultType\"\\"}]}"#));
        assert!(!t.found_in(r#"{"content":[{"type":"text","text":"caf\u00e9"}]}"#));
    }
}
