//! # mcp-types
//!
//! The bottom layer of the `mcp-*` crates: a lossless wire model of the Model
//! Context Protocol.
//!
//! - [`Revision`] and [`Era`]: the five protocol revisions as values.
//! - [`jsonrpc`]: the JSON-RPC 2.0 envelope, with payloads kept as raw JSON so a
//!   relay can pass them on untouched.
//! - [`protocol`]: typed models of every request, result and notification of every
//!   revision. Each is the union of what the revisions define; unknown members
//!   are kept in `extra` and written back, `_meta` is kept raw, and open enums keep
//!   unknown values.
//! - [`raw`]: exact JSON for relays: objects read one level at a time, untouched members
//!   written back byte for byte.
//! - [`codes`]: error codes; [`meta`]: `_meta` keys and the reserved-key rule.
//! - [`transport`]: the one [`transport::Transport`] trait, an in-memory pair and
//!   newline-delimited JSON over any byte stream; [`rpc::Peer`]: request/response
//!   correlation over a transport, shared by client and server.
//! - [`schema`] (feature `validation`): bounded JSON Schema validation of tool arguments
//!   and results, 2020-12 by default, no network `$ref`.
//!
//! What a given revision may carry, and translation between revisions, live in
//! `mcp-revisions`.

pub mod codes;
pub mod headers;
pub mod jsonrpc;
pub mod meta;
mod model;
pub mod protocol;
pub mod raw;
mod revision;
pub mod rpc;
#[cfg(feature = "validation")]
pub mod schema;
mod serde_util;
mod setters;
pub mod transport;

pub use jsonrpc::{
    ErrorObject, ErrorResponse, Frame, IdNumber, Message, Notification, Request, RequestId,
    Response,
};
pub use revision::{Era, Revision, UnknownRevision};
