//! Legacy stdio upstreams written as short Python scripts: each answers the handshake and
//! `tools/list` the same way, and differs only in what a call does.

use serde_json::Value;

/// The loop every script shares. `{HEAD}` is the script's own setup (it may set `CAPS`,
/// the capabilities `initialize` declares, and `PROMPTS`, a listing `prompts/list` then
/// serves), `{NAME}` its `serverInfo.name`, `{TOOLS}` its listing (a JSON string
/// literal), `{CALL}` its `tools/call` body.
const SKELETON: &str = r#"
import json, sys
CAPS = {"tools": {}}
PROMPTS = None
{HEAD}
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
TOOLS = json.loads({TOOLS})
for line in sys.stdin:
    msg = json.loads(line)
    i, m = msg.get("id"), msg.get("method")
    if i is None or m is None:
        continue
    if m == "initialize":
        send({"jsonrpc": "2.0", "id": i, "result": {"protocolVersion": "2025-06-18",
              "capabilities": CAPS, "serverInfo": {"name": "{NAME}", "version": "1"}}})
    elif m == "tools/list":
        send({"jsonrpc": "2.0", "id": i, "result": {"tools": TOOLS}})
    elif m == "prompts/list" and PROMPTS is not None:
        send({"jsonrpc": "2.0", "id": i, "result": {"prompts": PROMPTS}})
    elif m == "tools/call":
{CALL}
    else:
        send({"jsonrpc": "2.0", "id": i, "error": {"code": -32601, "message": "Method not found"}})
"#;

/// A 2025-06-18 stdio server, as a Python script for `python3 -c`: `head` runs first
/// (imports besides `json` and `sys`, reading `sys.argv`), `tools` is what it lists, and
/// `on_call` (Python at the left margin; it sees `msg`, its id `i` and `send`) answers a
/// `tools/call`. Notifications and answers to its own requests are ignored; any other
/// request is "Method not found".
pub fn python_upstream(name: &str, head: &str, tools: Value, on_call: &str) -> String {
    // A JSON string literal is a Python one too, so the listing needs no translating.
    let tools = serde_json::to_string(&tools.to_string()).unwrap_or_default();
    let call: Vec<String> = on_call
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| format!("        {l}"))
        .collect();
    SKELETON
        .replace("{HEAD}", head)
        .replace("{NAME}", name)
        .replace("{TOOLS}", &tools)
        .replace("{CALL}", &call.join("\n"))
}
