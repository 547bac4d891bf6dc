//! Inputs shared by the benches.

use serde_json::{json, Map, Value};

/// The runtime every bench drives its calls on: two workers, as the machines have two cores.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The arguments of the echo tool's call that the call benches make.
pub fn echo_args() -> Map<String, Value> {
    json!({"text": "hello"})
        .as_object()
        .cloned()
        .unwrap_or_default()
}

/// A `tools/list` result of `n` tools, every optional member set (2025-11-25 shape).
pub fn tools_list_result(n: usize) -> Value {
    let tools: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "name": format!("tool_{i}"),
                "title": format!("Tool number {i}"),
                "description": "Looks things up in the inventory and returns what it found, with prices.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "What to look for"},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 100}
                    },
                    "required": ["query"],
                    "additionalProperties": false
                },
                "outputSchema": {
                    "type": "object",
                    "properties": {"items": {"type": "array", "items": {"type": "string"}}},
                    "required": ["items"]
                },
                "annotations": {
                    "title": "Inventory lookup",
                    "readOnlyHint": true,
                    "destructiveHint": false,
                    "idempotentHint": true,
                    "openWorldHint": false
                },
                "icons": [{"src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"], "theme": "light"}],
                "execution": {"taskSupport": "optional"},
                "_meta": {"com.example/owner": "inventory-team", "com.example/rev": i}
            })
        })
        .collect();
    json!({"tools": tools, "nextCursor": "page-2", "_meta": {"com.example/trace": "abc"}})
}
