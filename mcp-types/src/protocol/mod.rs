//! Typed models of every MCP request, result and notification, across all revisions.
//!
//! Each type is the union of what the five revisions define (doc comments say which
//! revision added a member); what one revision may carry is data in `mcp-revisions`.
//! Every object keeps unknown members in `extra`.

mod client_features;
mod common;
mod content;
mod lifecycle;
mod messages;
mod mrtr;
mod prompts;
mod resources;
mod tasks;
mod tools;
mod utilities;

pub use client_features::*;
pub use common::*;
pub use content::*;
pub use lifecycle::*;
pub use messages::*;
pub use mrtr::*;
pub use prompts::*;
pub use resources::*;
pub use tasks::*;
pub use tools::*;
pub use utilities::*;
