//! A second demo upstream for the gateway: a small note store with structured output.

use std::sync::{Arc, Mutex};

use mcp_server::{ToolError, ToolRegistry};
use mcp_types::protocol::ToolAnnotations;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `add`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddNote {
    /// The note's text.
    pub text: String,
}

/// The notes so far.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Notes {
    /// Every note, oldest first.
    pub notes: Vec<String>,
}

/// `add` and `list` over an in-memory note store.
pub fn notes_tools() -> ToolRegistry {
    let store: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut r = ToolRegistry::new();
    let s = store.clone();
    r.structured_tool(
        "add",
        "Adds a note and returns all notes.",
        move |a: AddNote, _ctx| {
            let s = s.clone();
            async move {
                let mut notes = s
                    .lock()
                    .map_err(|_| ToolError::Failed("the note store is broken".into()))?;
                notes.push(a.text);
                Ok::<_, ToolError>(Notes {
                    notes: notes.clone(),
                })
            }
        },
    )
    .title("Add note")
    .annotations(ToolAnnotations {
        destructive_hint: Some(false),
        open_world_hint: Some(false),
        ..Default::default()
    });
    r.structured_tool(
        "list",
        "Lists the notes.",
        move |_: mcp_server::NoArgs, _ctx| {
            let s = store.clone();
            async move {
                let notes = s
                    .lock()
                    .map_err(|_| ToolError::Failed("the note store is broken".into()))?;
                Ok::<_, ToolError>(Notes {
                    notes: notes.clone(),
                })
            }
        },
    )
    .title("List notes")
    .annotations(ToolAnnotations {
        read_only_hint: Some(true),
        open_world_hint: Some(false),
        ..Default::default()
    });
    r
}
