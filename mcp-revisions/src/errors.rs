//! The error codes each revision defines, and which a revision forbids.

use mcp_types::{codes, Revision};

use crate::shapes::RevisionSet;

/// One error code a revision defines.
#[derive(Debug)]
pub struct ErrorCode {
    /// The code.
    pub code: i64,
    /// Its name in the spec.
    pub name: &'static str,
    /// The revisions that define it.
    pub revisions: RevisionSet,
    /// Revisions that forbid it (2026-07-28 MUST NOT emit `-32002` and `-32042`), with the
    /// code to use there instead.
    pub forbidden: Option<(RevisionSet, i64)>,
}

const fn code(
    code: i64,
    name: &'static str,
    revisions: &str,
    forbidden: Option<(&str, i64)>,
) -> ErrorCode {
    ErrorCode {
        code,
        name,
        revisions: RevisionSet::parse(revisions),
        forbidden: match forbidden {
            Some((r, c)) => Some((RevisionSet::parse(r), c)),
            None => None,
        },
    }
}

/// Every error code a revision names. Codes `-32020`…`-32022` are only 2026's, but an older
/// peer reads them as implementation-defined server errors, which JSON-RPC allows.
pub static ERROR_CODES: &[ErrorCode] = &[
    code(codes::PARSE_ERROR, "Parse error", "XXXXX", None),
    code(codes::INVALID_REQUEST, "Invalid request", "XXXXX", None),
    code(codes::METHOD_NOT_FOUND, "Method not found", "XXXXX", None),
    code(codes::INVALID_PARAMS, "Invalid params", "XXXXX", None),
    code(codes::INTERNAL_ERROR, "Internal error", "XXXXX", None),
    code(
        codes::RESOURCE_NOT_FOUND,
        "Resource not found",
        "XXXX.",
        Some(("....X", codes::INVALID_PARAMS)),
    ),
    code(
        codes::URL_ELICITATION_REQUIRED,
        "URL elicitation required",
        "...X.",
        Some(("....X", codes::INTERNAL_ERROR)),
    ),
    code(codes::HEADER_MISMATCH, "Header mismatch", "....X", None),
    code(
        codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        "Missing required client capability",
        "....X",
        None,
    ),
    code(
        codes::UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        "....X",
        None,
    ),
];

/// The code to send a peer of revision `to` instead of `code`, if `to` forbids `code`.
pub fn replacement(code: i64, to: Revision) -> Option<i64> {
    ERROR_CODES
        .iter()
        .find(|c| c.code == code)
        .and_then(|c| c.forbidden)
        .filter(|(revs, _)| revs.contains(to))
        .map(|(_, r)| r)
}
