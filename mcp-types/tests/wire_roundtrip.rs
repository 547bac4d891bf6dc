//! Every fixture, and every official 2026-07-28 example, decodes as its type and
//! re-encodes to the identical JSON value.
//!
//! Fixtures for 2024-11-05 … 2025-11-25 live in `tests/fixtures/<revision>/<Type>/`;
//! each validates against `<Type>` in its revision's schema (checked in mcp-revisions).
//! The 2026-07-28 examples are read from `$MCP_SPEC_DIR/2026-07-28/examples`, else
//! `../shared/spec` beside the repository.

use std::path::{Path, PathBuf};

use mcp_types::protocol::*;
use mcp_types::{ErrorObject, Frame, Message};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

fn roundtrip<T: DeserializeOwned + Serialize>(v: &Value) -> Result<Value, String> {
    let typed: T = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
    serde_json::to_value(&typed).map_err(|e| e.to_string())
}

mod common;
use common::result_method;

/// Decodes `v` as the type the schema calls `def` and encodes it again.
fn typed_roundtrip(def: &str, v: &Value) -> Result<Value, String> {
    if v.get("jsonrpc").is_some() {
        return message_roundtrip(def, v);
    }
    if def == "CreateTaskResult" {
        let raw = serde_json::value::to_raw_value(v).map_err(|e| e.to_string())?;
        return TypedResult::decode_task_created(method::TOOLS_CALL, &raw)
            .map(|r| r.to_value())
            .map_err(|e| e.to_string());
    }
    if let Some(m) = result_method(def) {
        let raw = serde_json::value::to_raw_value(v).map_err(|e| e.to_string())?;
        let typed = TypedResult::decode(m, &raw).map_err(|e| e.to_string())?;
        if matches!(typed, TypedResult::Other(_)) {
            return Err(format!("{def} decoded as an unknown result"));
        }
        return Ok(typed.to_value());
    }
    match def {
        "Tool" => roundtrip::<Tool>(v),
        "Prompt" => roundtrip::<Prompt>(v),
        "Resource" => roundtrip::<Resource>(v),
        "ResourceTemplate" => roundtrip::<ResourceTemplate>(v),
        "Root" => roundtrip::<Root>(v),
        "SamplingMessage" => roundtrip::<SamplingMessage>(v),
        "ModelPreferences" => roundtrip::<ModelPreferences>(v),
        "ClientCapabilities" => roundtrip::<ClientCapabilities>(v),
        "ServerCapabilities" => roundtrip::<ServerCapabilities>(v),
        "TextContent" | "ImageContent" | "AudioContent" | "ResourceLink" | "EmbeddedResource"
        | "ToolUseContent" | "ToolResultContent" => {
            let out = roundtrip::<ContentBlock>(v)?;
            let block: ContentBlock =
                serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
            if matches!(block, ContentBlock::Unknown(_)) {
                return Err(format!("{def} decoded as an unknown content type"));
            }
            Ok(out)
        }
        "TextResourceContents" | "BlobResourceContents" => roundtrip::<ResourceContents>(v),
        "CallToolRequestParams" => roundtrip::<CallToolRequestParams>(v),
        "CompleteRequestParams" => roundtrip::<CompleteRequestParams>(v),
        "CreateMessageRequestParams" => roundtrip::<CreateMessageRequestParams>(v),
        "ElicitRequestFormParams" | "ElicitRequestURLParams" => roundtrip::<ElicitRequestParams>(v),
        "GetPromptRequestParams" => roundtrip::<GetPromptRequestParams>(v),
        "PaginatedRequestParams" => roundtrip::<PaginatedRequestParams>(v),
        "CancelledNotificationParams" => roundtrip::<CancelledNotificationParams>(v),
        "LoggingMessageNotificationParams" => roundtrip::<LoggingMessageNotificationParams>(v),
        "ProgressNotificationParams" => roundtrip::<ProgressNotificationParams>(v),
        "ResourceUpdatedNotificationParams" => roundtrip::<ResourceUpdatedNotificationParams>(v),
        "CreateMessageRequest" | "ElicitRequest" | "ListRootsRequest" => {
            let out = roundtrip::<InputRequest>(v)?;
            let r: InputRequest = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
            match r.decode().map_err(|e| e.to_string())? {
                InputRequestKind::Other(m) => Err(format!("{def}: unknown input request {m}")),
                _ => Ok(out),
            }
        }
        "InputRequests" => roundtrip::<Map<String, Value>>(v).and_then(|out| {
            for r in v.as_object().into_iter().flat_map(|m| m.values()) {
                roundtrip::<InputRequest>(r)?;
            }
            Ok(out)
        }),
        "InputResponses" => roundtrip::<Map<String, Value>>(v),
        "InternalError" | "InvalidParamsError" | "MethodNotFoundError" | "ParseError" => {
            roundtrip::<ErrorObject>(v)
        }
        "BooleanSchema"
        | "NumberSchema"
        | "StringSchema"
        | "TitledMultiSelectEnumSchema"
        | "TitledSingleSelectEnumSchema"
        | "UntitledMultiSelectEnumSchema"
        | "UntitledSingleSelectEnumSchema" => roundtrip::<PrimitiveSchemaDefinition>(v),
        _ => Err(format!("no Rust type is mapped to {def}")),
    }
}

fn message_roundtrip(def: &str, v: &Value) -> Result<Value, String> {
    let bytes = serde_json::to_vec(v).map_err(|e| e.to_string())?;
    let msg = match Frame::parse(&bytes).map_err(|e| e.to_string())? {
        Frame::Single(m) => m,
        Frame::Batch(_) => return Err("unexpected batch".into()),
    };
    // The payload must decode as its typed model too, and survive that.
    match &msg {
        Message::Request(r) => {
            let typed =
                TypedRequest::decode(&r.method, r.params.as_deref()).map_err(|e| e.to_string())?;
            if matches!(typed, TypedRequest::Other { .. }) {
                return Err(format!("{def}: unknown method {}", r.method));
            }
            if let Some(p) = &r.params {
                let original: Value = serde_json::from_str(p.get()).map_err(|e| e.to_string())?;
                if typed.to_value() != original {
                    return Err(format!("{def}: params changed through the typed model"));
                }
            }
        }
        Message::Notification(n) => {
            let typed = TypedNotification::decode(&n.method, n.params.as_deref())
                .map_err(|e| e.to_string())?;
            if matches!(typed, TypedNotification::Other { .. }) {
                return Err(format!("{def}: unknown method {}", n.method));
            }
            if let Some(p) = &n.params {
                let original: Value = serde_json::from_str(p.get()).map_err(|e| e.to_string())?;
                if typed.to_value() != original {
                    return Err(format!("{def}: params changed through the typed model"));
                }
            }
        }
        Message::Response(r) => {
            let m =
                result_method(def).ok_or_else(|| format!("{def}: which method does it answer?"))?;
            let typed = TypedResult::decode(m, &r.result).map_err(|e| e.to_string())?;
            let original: Value =
                serde_json::from_str(r.result.get()).map_err(|e| e.to_string())?;
            if typed.to_value() != original {
                return Err(format!("{def}: result changed through the typed model"));
            }
        }
        Message::Error(_) => {}
    }
    serde_json::from_slice(&msg.to_bytes()).map_err(|e| e.to_string())
}

fn corpus(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut files = Vec::new();
    for ty in std::fs::read_dir(dir).expect("corpus folder") {
        let ty = ty.expect("entry").path();
        let def = ty.file_name().expect("name").to_string_lossy().into_owned();
        for f in std::fs::read_dir(&ty).expect("type folder") {
            let f = f.expect("entry").path();
            if f.extension().is_some_and(|e| e == "json") {
                files.push((def.clone(), f));
            }
        }
    }
    files.sort();
    files
}

fn check_corpus(dir: &Path) -> usize {
    let mut failures = Vec::new();
    let files = corpus(dir);
    for (def, path) in &files {
        let text = std::fs::read_to_string(path).expect("read");
        let v: Value = serde_json::from_str(&text).expect("fixture is JSON");
        match typed_roundtrip(def, &v) {
            Ok(out) if out == v => {}
            Ok(out) => failures.push(format!(
                "{}: re-encoded differently:\n  {out}",
                path.display()
            )),
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    files.len()
}

#[test]
fn legacy_fixtures_roundtrip_exactly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for rev in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let n = check_corpus(&root.join(rev));
        assert!(n > 30, "{rev}: only {n} fixtures");
    }
}

fn spec_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("MCP_SPEC_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/spec"));
    dir.join("2026-07-28/schema.json").is_file().then_some(dir)
}

#[test]
fn official_2026_examples_roundtrip_exactly() {
    let Some(spec) = spec_dir() else {
        eprintln!(
            "SKIPPED: no MCP spec folder (set MCP_SPEC_DIR or place shared/spec beside the repo)"
        );
        return;
    };
    let n = check_corpus(&spec.join("2026-07-28/examples"));
    assert!(n >= 120, "only {n} examples found");
}
