//! What each revision does differently, as named predicates over the revision table.
//!
//! Code elsewhere asks "does this revision carry X?" here instead of comparing against a
//! revision by name, so a new revision is an edit of these sets, not a search for
//! `== Revision::…` across the crates.

use mcp_types::Revision;

use crate::shapes::RevisionSet;

/// Revisions whose every request carries its version and client capabilities in `_meta`
/// (no `initialize` handshake).
pub const PER_REQUEST_META: RevisionSet = RevisionSet::parse("....X");

/// Revisions whose results name their server in `_meta`
/// (`io.modelcontextprotocol/serverInfo`).
pub const RESULT_SERVER_INFO: RevisionSet = RevisionSet::parse("....X");

/// Revisions in which a server asks its client for input by answering
/// `InputRequiredResult` (and the client retries), not by sending requests of its own.
pub const INPUT_REQUIRED_RESULTS: RevisionSet = RevisionSet::parse("....X");

/// Revisions with the `task` param on requests (2025-11-25 tasks).
pub const TASK_PARAM: RevisionSet = RevisionSet::parse("...X.");

/// Revisions whose tasks are the `io.modelcontextprotocol/tasks` extension.
pub const TASKS_EXTENSION: RevisionSet = RevisionSet::parse("....X");

/// Revisions whose HTTP transport is Streamable HTTP (2024-11-05 had HTTP+SSE).
pub const STREAMABLE_HTTP: RevisionSet = RevisionSet::parse(".XXXX");

/// Revisions whose connections take JSON-RPC batches: 2025-03-26 requires receiving
/// them, 2024-11-05 inherits them from JSON-RPC 2.0, and 2025-06-18 removed them.
pub const JSON_RPC_BATCHES: RevisionSet = RevisionSet::parse("XX...");

/// Revisions with URL-mode elicitation (a client declaring `elicitation.url` can be sent
/// to a URL of the server's own).
pub const URL_ELICITATION: RevisionSet = RevisionSet::parse("...XX");

/// Revisions in which a request that needs a URL-mode elicitation first may be answered
/// with the error `-32042` (`URLElicitationRequiredError`) and its completion announced by
/// `notifications/elicitation/complete`; 2026-07-28 answers `InputRequiredResult` instead.
pub const URL_ELICITATION_ERROR: RevisionSet = RevisionSet::parse("...X.");

/// Whether a client of `revision` may declare and be sent URL-mode elicitations.
pub fn url_elicitation(revision: Revision) -> bool {
    URL_ELICITATION.contains(revision)
}

/// Whether a server of `revision` may answer `-32042` and announce its completion.
pub fn url_elicitation_error(revision: Revision) -> bool {
    URL_ELICITATION_ERROR.contains(revision)
}

/// Whether a connection of `revision` takes JSON-RPC batches.
pub fn json_rpc_batches(revision: Revision) -> bool {
    JSON_RPC_BATCHES.contains(revision)
}

/// Whether every request of `revision` carries its own version and capabilities.
pub fn per_request_meta(revision: Revision) -> bool {
    PER_REQUEST_META.contains(revision)
}

/// Whether results in `revision` name their server in `_meta`.
pub fn result_server_info(revision: Revision) -> bool {
    RESULT_SERVER_INFO.contains(revision)
}

/// Whether a server asks a client of `revision` for input with `InputRequiredResult`.
pub fn input_required_results(revision: Revision) -> bool {
    INPUT_REQUIRED_RESULTS.contains(revision)
}

/// Whether requests of `revision` may carry the 2025-11-25 `task` param.
pub fn has_task_param(revision: Revision) -> bool {
    TASK_PARAM.contains(revision)
}

/// Whether tasks in `revision` are the tasks extension.
pub fn has_tasks_extension(revision: Revision) -> bool {
    TASKS_EXTENSION.contains(revision)
}

/// Whether `revision`'s HTTP transport is Streamable HTTP.
pub fn streamable_http(revision: Revision) -> bool {
    STREAMABLE_HTTP.contains(revision)
}

/// Whether `version` (as a peer wrote it) names a revision whose requests carry their own
/// version and capabilities; an unknown version does not.
pub fn names_per_request_meta(version: &str) -> bool {
    Revision::parse(version).is_ok_and(per_request_meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_types::Era;

    #[test]
    fn streamable_http_began_with_2025_03_26() {
        assert!(!streamable_http(Revision::V2024_11_05));
        for r in Revision::ALL
            .into_iter()
            .filter(|r| *r >= Revision::V2025_03_26)
        {
            assert!(streamable_http(r), "{r}");
        }
    }

    #[test]
    fn version_strings_name_per_request_meta_only_when_known_and_modern() {
        assert!(names_per_request_meta("2026-07-28"));
        assert!(!names_per_request_meta("2025-11-25"));
        assert!(!names_per_request_meta("2099-01-01"));
        assert!(!names_per_request_meta(""));
    }

    #[test]
    fn per_request_meta_is_the_modern_era() {
        for r in Revision::ALL {
            assert_eq!(per_request_meta(r), r.era() == Era::Modern, "{r}");
        }
    }
}
