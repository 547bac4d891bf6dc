//! # mcp-revisions
//!
//! What each MCP revision carries, and translation of messages between revisions.
//!
//! - [`spec_data`]: the revision table, written once as data: every object type's
//!   members per revision, the content block types each position allows, every method
//!   with the revisions that define it. Generated from the official schemas by
//!   `gen/shapes_from_schemas.py` and checked against them by the tests.
//! - [`translate()`] / [`Translator`]: moves any message from one revision to another.
//!   Down, nothing newer than the target survives and meaning is kept by the
//!   conversions of a [`DowngradePolicy`]; up, what the newer revision requires is
//!   filled in.
//! - [`features`]: what each revision does differently, as named predicates.
//! - [`negotiate`]: the legacy counter-offer rule, the 2026 `-32022` answer, and
//!   telling a peer's era from how it opens.

pub mod errors;
pub mod features;
pub mod meta_keys;
pub mod negotiate;
pub mod policy;
pub mod shapes;
pub mod spec_data;
mod static_keys;
mod translate;

pub use policy::{DowngradePolicy, SpecPolicy};
pub use shapes::RevisionSet;
pub use translate::{translate, TranslateError, Translator};

/// Compiles and runs the Rust examples in README.md.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
