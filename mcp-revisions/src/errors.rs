//! The error codes each revision defines.

use mcp_types::codes;

use crate::shapes::RevisionSet;

/// `(code, name, revisions)` for every error code a revision names.
pub static ERROR_CODES: &[(i64, &str, RevisionSet)] = &[
    (codes::PARSE_ERROR, "Parse error", RevisionSet::ALL),
    (codes::INVALID_REQUEST, "Invalid request", RevisionSet::ALL),
    (
        codes::METHOD_NOT_FOUND,
        "Method not found",
        RevisionSet::ALL,
    ),
    (codes::INVALID_PARAMS, "Invalid params", RevisionSet::ALL),
    (codes::INTERNAL_ERROR, "Internal error", RevisionSet::ALL),
    (
        codes::RESOURCE_NOT_FOUND,
        "Resource not found",
        RevisionSet::parse("XXXX."),
    ),
    (
        codes::URL_ELICITATION_REQUIRED,
        "URL elicitation required",
        RevisionSet::parse("...X."),
    ),
    (
        codes::HEADER_MISMATCH,
        "Header mismatch",
        RevisionSet::parse("....X"),
    ),
    (
        codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        "Missing required client capability",
        RevisionSet::parse("....X"),
    ),
    (
        codes::UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        RevisionSet::parse("....X"),
    ),
];
