//! The gateway run the audit tests read (see the crate's documentation), and reading what
//! it wrote.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use mcp_client::EraChoice;
use mcp_types::Revision;
use serde_json::{json, Value};

use super::common::{example, spawn_http_gateway};
use super::host::*;

/// The API keys (the hosts' bearer tokens), by subject; each key's configured name is
/// `<subject>-key`.
pub(crate) const KEYS: [(&str, &str); 4] = [
    ("alice", "alice-KEY-0123456789abcdef"),
    ("bob", "bob-KEY-fedcba9876543210"),
    ("carol", "carol-KEY-13579bdf2468ace0"),
    ("dave", "dave-KEY-02468ace13579bdf"),
];
/// The audit file's size limit: small, so a run of a few dozen records rotates.
pub(crate) const MAX_FILE_BYTES: usize = 4096;
/// The labels of the requests alice and bob both make (the matrix the first tests check).
pub(crate) const MATRIX: [&str; 13] = [
    "ok",
    "secrets",
    "special",
    "view",
    "unknown",
    "pin",
    "confirm",
    "limited",
    "limited again",
    "rpc error",
    "is error",
    "prompt",
    "resource",
];

/// The `shop` upstream: a 2025-06-18 stdio server with tools, a prompt and a resource.
/// `rpcfail` answers a JSON-RPC error, `iserror` an `isError` result, `flaky_*` exits the
/// first time it is called (a marker file in `sys.argv[1]` remembers), any other tool
/// answers a plain text; `danger` has no annotations (so it may be destructive).
pub(crate) const SHOP: &str = r#"
import json, os, sys
RO = {"readOnlyHint": True}
TOOLS = [{"name": n, "inputSchema": {"type": "object"}, "annotations": RO}
         for n in ["ok", "secrets", "special", "hidden", "pinned", "limited", "limited_b",
                   "rpcfail", "iserror", "flaky_a", "flaky_b"]]
TOOLS.append({"name": "danger", "inputSchema": {"type": "object"}})
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    i, m = msg.get("id"), msg.get("method")
    if i is None or m is None:
        continue
    p = msg.get("params") or {}
    def ok(result):
        send({"jsonrpc": "2.0", "id": i, "result": result})
    if m == "initialize":
        ok({"protocolVersion": "2025-06-18", "serverInfo": {"name": "shop", "version": "1"},
            "capabilities": {"tools": {}, "prompts": {}, "resources": {}}})
    elif m == "ping":
        ok({})
    elif m == "tools/list":
        ok({"tools": TOOLS})
    elif m == "prompts/list":
        ok({"prompts": [{"name": "greet", "arguments": [{"name": "who", "required": True}]}]})
    elif m == "prompts/get":
        who = (p.get("arguments") or {}).get("who", "nobody")
        ok({"messages": [{"role": "user", "content": {"type": "text", "text": "Hello, " + who}}]})
    elif m == "resources/list":
        ok({"resources": [{"uri": "shop://catalog", "name": "catalog", "mimeType": "text/plain"}]})
    elif m == "resources/templates/list":
        ok({"resourceTemplates": []})
    elif m == "resources/read":
        ok({"contents": [{"uri": p.get("uri"), "mimeType": "text/plain", "text": "apples, pears"}]})
    elif m == "tools/call":
        name = p.get("name")
        if name == "rpcfail":
            send({"jsonrpc": "2.0", "id": i, "error": {"code": -32000, "message": "the shop is closed"}})
        elif name == "iserror":
            ok({"content": [{"type": "text", "text": "out of stock"}], "isError": True})
        elif str(name).startswith("flaky") and not os.path.exists(os.path.join(sys.argv[1], name)):
            open(os.path.join(sys.argv[1], name), "w").close()
            os._exit(3)
        else:
            ok({"content": [{"type": "text", "text": "done: " + str(name)}]})
    else:
        send({"jsonrpc": "2.0", "id": i, "error": {"code": -32601, "message": "Method not found"}})
"#;

// ---------------------------------------------------------------------------------------
// The run: the gateway, the hosts, the calls.
// ---------------------------------------------------------------------------------------

/// One request a host made, as it went on the wire, and what it got.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    /// The principal's subject (`alice`, `bob`…).
    pub(crate) who: &'static str,
    /// What the call is for (`ok`, `view`, `pin`…; see [`MATRIX`]).
    pub(crate) label: &'static str,
    pub(crate) method: &'static str,
    /// The tool or prompt name, or the resource URI.
    pub(crate) name: String,
    /// The JSON-RPC ids the host gave the requests it sent for it, as text: one, but for
    /// a 2026 host answering a question, which retries.
    pub(crate) ids: Vec<String>,
    /// The `arguments` member's exact text in the (first) request sent.
    pub(crate) arguments: Option<String>,
    /// The trace id its `_meta.traceparent` carried.
    pub(crate) trace: Option<String>,
    /// The result the host got, or its error.
    pub(crate) answer: Result<Value, String>,
}

impl Call {
    /// The one request sent for it.
    pub(crate) fn id(&self) -> &str {
        assert_eq!(self.ids.len(), 1, "{self:?}");
        &self.ids[0]
    }
}

/// What one gateway run left behind.
pub(crate) struct Trail {
    /// The files, oldest first (`audit.jsonl.N` … `audit.jsonl.1`, `audit.jsonl`).
    pub(crate) files: Vec<PathBuf>,
    pub(crate) calls: Vec<Call>,
    /// What the gateway wrote on stderr.
    pub(crate) log: String,
    /// Its exit status after `SIGTERM`.
    pub(crate) exit: Option<i32>,
}

/// The run, made once for all the tests; a failure to make it fails every test with its
/// message.
pub(crate) fn trail() -> &'static Trail {
    static TRAIL: OnceLock<Result<Trail, String>> = OnceLock::new();
    let made = TRAIL.get_or_init(|| {
        std::panic::catch_unwind(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async {
                tokio::time::timeout(Duration::from_secs(45), run())
                    .await
                    .expect("the run ended within 45 s")
            })
        })
        .map_err(|e| {
            e.downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default()
        })
    });
    match made {
        Ok(t) => t,
        Err(e) => panic!("the gateway run failed: {e}"),
    }
}

/// A directory of this process's under the target's scratch space, emptied first;
/// earlier runs' directories (an hour old) are removed.
pub(crate) fn scratch(tag: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let stale = std::time::SystemTime::now() - Duration::from_secs(3600);
    for entry in std::fs::read_dir(root).into_iter().flatten().flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t < stale);
        if old
            && entry
                .file_name()
                .to_string_lossy()
                .starts_with("gateway_audit-")
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let dir = root.join(format!("gateway_audit-{}{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// The API key of `who`.
pub(crate) fn key_of(who: &str) -> &'static str {
    KEYS.iter()
        .find(|(w, _)| *w == who)
        .map(|(_, k)| *k)
        .expect("a principal of the test")
}

/// The gateway's configuration, written in `dir`.
pub(crate) fn config(dir: &Path) -> PathBuf {
    let pins = dir.join("pins.json");
    // A pin whose digest matches nothing: `shop/pinned` reads as changed.
    let pin_text = json!({"version": 1, "tools": {"shop/pinned": {"description": "sha256:00"}}});
    std::fs::write(&pins, pin_text.to_string()).expect("pins");
    let bob_tools = [
        "shop__ok",
        "shop__secrets",
        "shop__special",
        "shop__pinned",
        "shop__danger",
        "shop__limited_b",
        "shop__rpcfail",
        "shop__iserror",
        "shop__flaky_b",
    ];
    let keys: Vec<Value> = KEYS
        .iter()
        .map(|(who, key)| json!({"name": format!("{who}-key"), "key": key, "subject": who}))
        .collect();
    let text = json!({
        "mcpServers": {"shop": {"command": "python3", "args": ["-c", SHOP, dir.display().to_string()],
                                "trusted": true}},
        "gateway": {
            "startupWaitMillis": 30000,
            "audit": {
                "file": dir.join("audit.jsonl").display().to_string(),
                "maxFileBytes": MAX_FILE_BYTES, "maxFiles": 10,
                "redact": {"pointers": ["/query/sql"], "members": ["ssn"],
                           "rules": [{"upstream": "shop", "tool": "special", "pointers": ["/note"]}]}
            },
            "rateLimits": {"tools": {"shop__limited": {"perSecond": 0.01, "burst": 1},
                                     "shop__limited_b": {"perSecond": 0.01, "burst": 1}}},
            "pins": {"file": pins.display().to_string(), "onChange": "ask", "unpinned": "allow"},
            "confirmDestructive": true,
            "auth": {"resource": "http://127.0.0.1/mcp", "apiKeys": keys},
            "views": [
                {"name": "alice-view", "credentials": ["alice-key", "carol-key"],
                 "denyTools": ["shop__hidden"]},
                {"name": "bob-view", "credentials": ["bob-key", "dave-key"], "upstreams": ["shop"],
                 "allowTools": bob_tools}
            ]
        }
    });
    let path = dir.join("gateway.json");
    std::fs::write(&path, text.to_string()).expect("config");
    path
}

/// Starts the gateway, has the hosts make their requests, stops it.
pub(crate) async fn run() -> Trail {
    let dir = scratch("");
    let config = config(&dir);
    let log_path = dir.join("gateway.log");
    let log = std::fs::File::create(&log_path).expect("log file");
    let mut gateway = spawn_http_gateway(&config, Stdio::from(log));
    let out = gateway.stdout.take().expect("stdout");
    let url = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(out)).next_line(),
    )
    .await
    .expect("the gateway printed its URL in time")
    .expect("read")
    .expect("a URL");

    let legacy = EraChoice::Legacy(Revision::V2025_11_25);
    let (mut alice, mut bob, mut carol, mut dave) = tokio::join!(
        Host::connect(&url, "alice", legacy, false),
        Host::connect(&url, "bob", EraChoice::Modern, false),
        Host::connect(&url, "carol", legacy, true),
        Host::connect(&url, "dave", EraChoice::Modern, true),
    );
    for (h, r) in [
        (&alice, Revision::V2025_11_25),
        (&bob, Revision::V2026_07_28),
    ] {
        assert_eq!(h.client.revision(), r, "{}", h.who);
    }
    tokio::join!(
        alice.matrix("shop__limited"),
        bob.matrix("shop__limited_b"),
        carol.declines(),
        dave.declines(),
    );
    // One at a time, on their own: the upstream dies under each one's first call.
    alice
        .call("retried", "shop__flaky_a", Some("{}"), true)
        .await;
    bob.call("retried", "shop__flaky_b", Some("{}"), true).await;
    let mut calls = Vec::new();
    for h in [&mut alice, &mut bob, &mut carol, &mut dave] {
        calls.append(&mut h.calls);
        h.client.close().await;
    }

    // SIGTERM, then the exit: the audit writer flushes on the way out.
    let pid = gateway.id().expect("pid").to_string();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    let status = tokio::time::timeout(Duration::from_secs(15), gateway.wait())
        .await
        .expect("the gateway exited within 15 s of SIGTERM")
        .expect("wait");
    Trail {
        files: trail_files(&dir),
        calls,
        log: std::fs::read_to_string(&log_path).unwrap_or_default(),
        exit: status.code(),
    }
}

/// The audit files in `dir`, oldest first.
pub(crate) fn trail_files(dir: &Path) -> Vec<PathBuf> {
    let mut rotated: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(|e| {
            let path = e.ok()?.path();
            let name = path.file_name()?.to_str()?.to_owned();
            let n = name.strip_prefix("audit.jsonl.")?.parse().ok()?;
            Some((n, path))
        })
        .collect();
    rotated.sort_by_key(|r| std::cmp::Reverse(r.0));
    let mut files: Vec<PathBuf> = rotated.into_iter().map(|(_, p)| p).collect();
    let current = dir.join("audit.jsonl");
    if current.exists() {
        files.push(current);
    }
    files
}

/// Every line of `files`, in order, parsed.
pub(crate) fn lines(files: &[PathBuf]) -> Vec<Value> {
    let mut all = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).expect("audit file");
        for (n, line) in text.lines().enumerate() {
            let record = serde_json::from_str(line).unwrap_or_else(|e| {
                panic!("{}: line {}: not JSON ({e}): {line}", file.display(), n + 1)
            });
            all.push(record);
        }
    }
    all
}

/// The call records (lines without a `kind`).
pub(crate) fn records(t: &Trail) -> Vec<Value> {
    lines(&t.files)
        .into_iter()
        .filter(|r| r.get("kind").is_none())
        .collect()
}

/// The records of `who`'s request `id` to `method`.
pub(crate) fn records_of<'a>(
    all: &'a [Value],
    who: &str,
    method: &str,
    id: &str,
) -> Vec<&'a Value> {
    all.iter()
        .filter(|r| {
            r["principal"]["subject"] == who
                && r["method"] == method
                && r["request"].as_str() == Some(id)
        })
        .collect()
}

/// The records of `who` with this `name` and `outcome`.
pub(crate) fn find<'a>(all: &'a [Value], who: &str, name: &str, outcome: &str) -> Vec<&'a Value> {
    all.iter()
        .filter(|r| {
            r["principal"]["subject"] == who && r["name"] == name && r["outcome"] == outcome
        })
        .collect()
}

/// The calls of the [`MATRIX`] (alice's and bob's).
pub(crate) fn matrix(t: &Trail) -> impl Iterator<Item = &Call> {
    t.calls.iter().filter(|c| MATRIX.contains(&c.label))
}

/// `sha256:` and the hex SHA-256 of `bytes` (by `sha256sum`).
pub(crate) fn sha256(bytes: &[u8]) -> String {
    let mut child = std::process::Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(bytes)
        .expect("write");
    let out = child.wait_with_output().expect("sha256sum ran");
    let text = String::from_utf8_lossy(&out.stdout);
    format!(
        "sha256:{}",
        text.split_whitespace().next().unwrap_or_default()
    )
}

/// `gateway audit verify FILES…`: its exit status and what it printed.
pub(crate) fn verify(files: &[PathBuf]) -> (Option<i32>, String) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let out = rt.block_on(async {
        tokio::time::timeout(
            Duration::from_secs(20),
            tokio::process::Command::new(example("gateway"))
                .args(["audit", "verify"])
                .args(files)
                .kill_on_drop(true)
                .output(),
        )
        .await
        .expect("verify finished in time")
        .expect("verify ran")
    });
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}
