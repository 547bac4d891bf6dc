//! The vocabulary of the revision table in [`crate::spec_data`]: which members an
//! object has in which revision, and what shape each member's value takes.

use std::collections::HashMap;
use std::sync::LazyLock;

use mcp_types::Revision;

use crate::static_keys::BuildStaticKeyHasher;

/// A set of revisions, one bit per [`Revision`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RevisionSet(u8);

impl RevisionSet {
    /// Every revision.
    pub const ALL: RevisionSet = RevisionSet(0b11111);

    /// Reads a five-column pattern, oldest revision first: `"..XXX"` is 2025-06-18 onward.
    /// Any character but `X` means absent. A pattern of the wrong length fails to compile
    /// where it is used in a constant.
    pub const fn parse(pattern: &str) -> RevisionSet {
        let b = pattern.as_bytes();
        assert!(
            b.len() == Revision::ALL.len(),
            "a revision pattern has one column per revision"
        );
        let mut bits = 0u8;
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'X' {
                bits |= 1 << i;
            }
            i += 1;
        }
        RevisionSet(bits)
    }

    /// Whether `revision` is in the set.
    pub const fn contains(self, revision: Revision) -> bool {
        self.0 & (1 << revision.index()) != 0
    }

    /// The revisions in the set, oldest first.
    pub fn iter(self) -> impl Iterator<Item = Revision> {
        Revision::ALL.into_iter().filter(move |r| self.contains(*r))
    }
}

/// How many values a member holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    /// One value.
    One,
    /// An array of values.
    Array,
}

/// What a member's value is, for translation.
#[derive(Debug, Clone, Copy)]
pub enum Shape {
    /// A value translation leaves alone (strings, numbers, JSON Schemas, arguments).
    Opaque,
    /// A `_meta` object: its MCP-defined keys are per revision (see [`crate::meta_keys`]).
    Meta,
    /// A known object (or array of them).
    Object(&'static ObjectShape, Container),
    /// A content block (or array of them), dispatched on `type`.
    Content(&'static [ContentKind], Container),
    /// Sampling content: one block or, from 2025-11-25, an array of blocks.
    SamplingContent(&'static [ContentKind]),
    /// 2026-07-28 `inputRequests`: a map of `{method, params}` requests.
    InputRequests,
}

/// One member of an object.
#[derive(Debug)]
pub struct Field {
    /// The member name on the wire.
    pub name: &'static str,
    /// The revisions that define it on this object.
    pub revisions: RevisionSet,
    /// What its value is.
    pub shape: Shape,
}

/// An object type: its members per revision.
#[derive(Debug)]
pub struct ObjectShape {
    /// The schema name (or `params <method>` / `result <method>` for a method's payload).
    pub name: &'static str,
    /// The revisions that define the type.
    pub revisions: RevisionSet,
    /// Its members.
    pub fields: &'static [Field],
}

impl ObjectShape {
    /// The member called `name`, if the type defines it in any revision.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Whether `member` exists on this type in `revision`.
    pub fn has(&self, member: &str, revision: Revision) -> bool {
        self.field(member)
            .is_some_and(|f| f.revisions.contains(revision))
    }
}

/// A content block type, by its `type` tag.
#[derive(Debug)]
pub struct ContentKind {
    /// The `type` value.
    pub tag: &'static str,
    /// The revisions that allow it here.
    pub revisions: RevisionSet,
    /// Its members.
    pub shape: &'static ObjectShape,
}

/// Request or notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodKind {
    /// Expects a response.
    Request,
    /// Does not.
    Notification,
}

/// Who sends a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Client to server.
    ClientToServer,
    /// Server to client.
    ServerToClient,
    /// Either.
    Both,
}

/// One method: where it exists and the shapes of its params and result.
#[derive(Debug)]
pub struct MethodSpec {
    /// The method name.
    pub name: &'static str,
    /// Request or notification.
    pub kind: MethodKind,
    /// Who sends it.
    pub direction: Direction,
    /// The revisions in which it is a JSON-RPC method.
    pub revisions: RevisionSet,
    /// Its params.
    pub params: &'static ObjectShape,
    /// Its result, for requests.
    pub result: Option<&'static ObjectShape>,
}

/// The spec of `method`, if any revision defines it.
pub fn method(name: &str) -> Option<&'static MethodSpec> {
    // Looked up several times for every relayed message: a search of the list cost more
    // than the rest of a translation that changes nothing.
    static BY_NAME: LazyLock<HashMap<&str, &MethodSpec, BuildStaticKeyHasher>> =
        LazyLock::new(|| {
            crate::spec_data::METHODS
                .iter()
                .map(|m| (m.name, m))
                .collect()
        });
    // The method of nearly every message a relay passes on is looked up about ten times
    // on its way: one comparison with a constant before the table costs a tenth of a
    // lookup.
    static TOOLS_CALL: LazyLock<Option<&MethodSpec>> = LazyLock::new(|| {
        BY_NAME
            .get(mcp_types::protocol::method::TOOLS_CALL)
            .copied()
    });
    if name == mcp_types::protocol::method::TOOLS_CALL {
        return *TOOLS_CALL;
    }
    BY_NAME.get(name).copied()
}

/// The methods `revision` defines, in name order.
pub fn methods_in(revision: Revision) -> impl Iterator<Item = &'static MethodSpec> {
    crate::spec_data::METHODS
        .iter()
        .filter(move |m| m.revisions.contains(revision))
}

/// The object type called `name` (schema name, or `params <method>` / `result <method>`).
pub fn object(name: &str) -> Option<&'static ObjectShape> {
    crate::spec_data::OBJECTS
        .iter()
        .copied()
        .find(|o| o.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_are_in_name_order_and_each_is_found() {
        let methods = crate::spec_data::METHODS;
        assert!(methods.windows(2).all(|w| w[0].name < w[1].name));
        for m in methods {
            assert_eq!(method(m.name).map(|f| f.name), Some(m.name));
        }
        assert!(method("tools/calls").is_none());
        assert!(method("").is_none());
    }
}
