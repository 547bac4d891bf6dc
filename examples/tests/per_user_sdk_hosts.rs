//! An upstream that acts as each user by the user's own consent (`userAuth` of type
//! `oauth`), asked for through hosts we did not write: the official TypeScript SDK client
//! (`@modelcontextprotocol/client` v2) and the official Python SDK client (`mcp`), each
//! run by `examples/interop/consent_host.{mjs,py}` with its user's token, against the
//! gateway program, two real `oidc-provider` issuers and an upstream that records whom
//! each call it served was for.
//!
//! Each host is asked the way it can be: at 2025-11-25 with URL mode it gets `-32042`,
//! then `notifications/elicitation/complete` with the same id, and its next call works; at
//! 2026-07-28 with URL mode it gets an `InputRequiredResult` whose URL elicitation it
//! accepts, and the SDK's own retry completes the call; without URL mode it gets an error
//! result naming the link and saying to call again. Each user's browser finishes the flow
//! at the link. Then every host makes 50 calls at once, all answered as its own user: the
//! upstream served exactly those calls, each under its user's `sub`, and never saw a
//! host's token.
//!
//! Apart: valid tokens arriving together at a gateway that has not fetched its users'
//! issuer's keys yet are all taken (the hosts' test makes one request first, so that it
//! tests the consent flow alone).
//!
//! With `MCP_INTEROP=required` a missing Node, TypeScript SDK or Python SDK fails the
//! test; otherwise it skips.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

mod common;
use common::browser::{http_client, jwt_claims, Browser};
use common::consent::{user_token, world};
use common::interop_dir;

/// Calls each host makes after its user consented.
const CALLS: usize = 50;
/// The longest a host may take from start to its last line.
const LIMIT: Duration = Duration::from_secs(240);

/// Whether both SDK clients are installed (`.ci/run` installs them).
fn hosts_installed() -> bool {
    let node = interop_dir().join("node_modules/@modelcontextprotocol/client");
    let python = interop_dir().join(".venv/bin/python");
    let found = node.is_dir() && python.is_file();
    if !found {
        assert!(
            std::env::var("MCP_INTEROP").as_deref() != Ok("required"),
            "the SDK hosts are not installed; run .ci/run, or: (cd examples/interop && npm ci \
             && python3 -m venv .venv && .venv/bin/pip install -r requirements.txt)"
        );
        eprintln!("SKIPPED: the SDK hosts are not installed");
    }
    found
}

/// POSTs an `initialize` to the gateway with `token`: the status and the body.
async fn initialize(http: &reqwest::Client, gateway_url: &str, token: &str) -> (u16, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let r = http
        .post(gateway_url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("the gateway answers");
    let status = r.status().as_u16();
    (status, r.text().await.unwrap_or_default())
}

/// One host to run: whose, on which SDK, at which version, with URL mode or not.
#[derive(Clone)]
struct Host {
    user: &'static str,
    sdk: Sdk,
    version: &'static str,
    url_mode: bool,
}

#[derive(Clone, Copy, Debug)]
enum Sdk {
    TypeScript,
    Python,
}

/// What a host said on its way.
#[derive(Debug, Default)]
struct Said {
    negotiated: Option<String>,
    /// Each URL it asked its user to open, with the elicitation id it named, if any.
    opened: Vec<(String, Option<String>)>,
    /// The ids of the completion notices it got.
    notified: Vec<String>,
    /// Its last line, `{"done": true, ...}`.
    done: Value,
}

/// Runs `host` as `token`'s user: opens each URL it names in the user's browser (asserting
/// the flow ended "Connected") and says so, and collects what it said until it is done.
async fn run(gateway_url: String, dir: PathBuf, host: Host, token: String) -> Said {
    let (program, script) = match host.sdk {
        Sdk::TypeScript => (PathBuf::from("node"), "consent_host.mjs"),
        Sdk::Python => (interop_dir().join(".venv/bin/python"), "consent_host.py"),
    };
    let stderr_path = dir.join(format!("{}.stderr", host.user));
    let stderr = std::fs::File::create(&stderr_path).expect("stderr file");
    let mut child = tokio::process::Command::new(&program)
        .args([
            script,
            gateway_url.as_str(),
            host.version,
            if host.url_mode { "url" } else { "none" },
            &CALLS.to_string(),
        ])
        .env("MCP_BEARER_TOKEN", &token)
        .current_dir(interop_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let browser = Browser::new_as(host.user);
    let start = format!("{}/connect/start?t=", gateway_url.trim_end_matches("/mcp"));
    let who = format!("{} ({:?} {})", host.user, host.sdk, host.version);
    let deadline = tokio::time::Instant::now() + LIMIT;
    let mut said = Said::default();
    loop {
        let line = tokio::time::timeout_at(deadline, lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("{who}: no line in time; said so far {said:?}"))
            .expect("read");
        let Some(line) = line else {
            let status = child.wait().await.expect("exit status");
            let err = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            panic!("{who}: ended ({status}) before it was done; said {said:?}\nstderr: {err}");
        };
        let v: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{who}: not JSON ({e}): {line}"));
        if let Some(e) = v.get("error") {
            let err = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            panic!("{who} failed: {e}\n{v}\nstderr: {err}");
        } else if let Some(n) = v.get("negotiated") {
            said.negotiated = n.as_str().map(str::to_owned);
        } else if let Some(url) = v.get("open").and_then(Value::as_str) {
            assert!(url.starts_with(&start), "{who}: {url}");
            let page = browser.visit(url).await;
            assert!(
                page.body.contains("Connected"),
                "{who}: {} {}",
                page.status,
                page.body
            );
            let id = v["elicitationId"].as_str().map(str::to_owned);
            said.opened.push((url.to_owned(), id));
            stdin
                .write_all(b"{\"opened\": true}\n")
                .await
                .expect("told the host");
            stdin.flush().await.expect("flush");
        } else if let Some(id) = v.get("notified").and_then(Value::as_str) {
            said.notified.push(id.to_owned());
        } else if v["done"] == json!(true) {
            said.done = v;
            break;
        } else {
            panic!("{who}: what is {line}?");
        }
    }
    let status = tokio::time::timeout_at(deadline, child.wait())
        .await
        .unwrap_or_else(|_| panic!("{who}: did not exit"))
        .expect("exit status");
    assert!(status.success(), "{who}: {status}");
    said
}

/// What `host` said, checked: the version it asked for, one URL opened, asked in the form
/// its version and capabilities take, and every call answered as its own user.
fn check(host: &Host, said: &Said) {
    let who = format!("{} ({:?} {})", host.user, host.sdk, host.version);
    eprintln!(
        "{who}: negotiated {:?}, opened {:?}, notified {:?}, {} calls",
        said.negotiated,
        said.opened,
        said.notified,
        said.done["texts"].as_array().map_or(0, Vec::len)
    );
    assert_eq!(said.negotiated.as_deref(), Some(host.version), "{who}");
    assert_eq!(said.opened.len(), 1, "{who}: {said:?}");
    let (_, id) = &said.opened[0];
    if host.url_mode && host.version == "2025-11-25" {
        let id = id
            .as_ref()
            .unwrap_or_else(|| panic!("{who}: no elicitationId"));
        assert_eq!(
            said.notified,
            vec![id.clone()],
            "{who}: the completion names the elicitation"
        );
    }
    if !host.url_mode {
        assert!(
            said.notified.is_empty(),
            "{who}: completion notices to a host without URL mode: {:?}",
            said.notified
        );
    }
    let done = &said.done;
    assert_eq!(done["errors"], 0, "{who}: {done}");
    assert_eq!(done["first"], host.user, "{who}: the call after consent");
    let texts = done["texts"].as_array().expect("texts");
    assert_eq!(texts.len(), CALLS, "{who}: {done}");
    for t in texts {
        assert_eq!(t, host.user, "{who}: a call answered as another: {done}");
    }
}

#[tokio::test]
async fn sdk_hosts_each_consent_once_in_their_own_form_and_are_then_themselves() {
    if !hosts_installed() {
        return;
    }
    let Some(w) = world(300).await else { return };
    let hosts = [
        Host {
            user: "tina",
            sdk: Sdk::TypeScript,
            version: "2025-11-25",
            url_mode: true,
        },
        Host {
            user: "tom",
            sdk: Sdk::TypeScript,
            version: "2026-07-28",
            url_mode: true,
        },
        Host {
            user: "pia",
            sdk: Sdk::Python,
            version: "2025-11-25",
            url_mode: true,
        },
        Host {
            user: "paul",
            sdk: Sdk::Python,
            version: "2026-07-28",
            url_mode: true,
        },
        Host {
            user: "nora",
            sdk: Sdk::TypeScript,
            version: "2025-06-18",
            url_mode: false,
        },
        Host {
            user: "nils",
            sdk: Sdk::Python,
            version: "2025-11-25",
            url_mode: false,
        },
    ];
    let mut tokens = Vec::new();
    for h in &hosts {
        tokens.push(user_token(&w, h.user).await);
    }
    // One request first, so the gateway holds its users' issuer's keys before the hosts
    // come at once (see `a_cold_gateway_takes_valid_tokens_arriving_together`).
    let (status, body) = initialize(&http_client(), &w.gateway_url, &tokens[0]).await;
    assert_eq!(status, 200, "{body}");
    // All hosts at once, each waiting only on its own lines.
    let mut runs = tokio::task::JoinSet::new();
    for (h, t) in hosts.iter().zip(&tokens) {
        let (url, dir) = (w.gateway_url.clone(), w.dir.clone());
        let (h, t) = (h.clone(), t.clone());
        runs.spawn(async move { (h.clone(), run(url, dir, h, t).await) });
    }
    while let Some(joined) = runs.join_next().await {
        let (h, said) = joined.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        check(&h, &said);
    }

    // The upstream served exactly those calls (the one after consent and the 50), each
    // under its own user's `sub` and for its own resource.
    let seen = w.seen.0.lock().expect("seen").clone();
    let mut by_sub: HashMap<&str, usize> = HashMap::new();
    for (sub, aud, _) in &seen {
        *by_sub.entry(sub.as_str()).or_default() += 1;
        assert!(
            aud == &json!(w.upstream_url) || aud == &json!([w.upstream_url]),
            "{aud}"
        );
    }
    let expected: HashMap<&str, usize> = hosts.iter().map(|h| (h.user, CALLS + 1)).collect();
    assert_eq!(by_sub, expected, "calls the upstream served, by sub");

    // No host token reached the upstream; no token of either kind is in the gateway's log.
    let upstream_tokens = w.upstream_tokens.lock().expect("tokens").clone();
    for t in &tokens {
        assert!(!upstream_tokens.contains(t), "a host token went upstream");
    }
    assert!(upstream_tokens
        .iter()
        .all(|t| jwt_claims(t)["iss"] == json!(w.providers.upstream)));
    let log = std::fs::read_to_string(&w.log).expect("log");
    for t in upstream_tokens.iter().chain(&tokens) {
        assert!(!log.contains(t.as_str()), "a token in the gateway's log");
    }
}

/// Valid tokens arriving together at a gateway that has not yet fetched its users'
/// issuer's keys are all taken: none is refused while the first fetch runs.
#[tokio::test]
async fn a_cold_gateway_takes_valid_tokens_arriving_together() {
    let Some(w) = world(300).await else { return };
    let token = user_token(&w, "cole").await;
    let http = http_client();
    let together = std::sync::Arc::new(tokio::sync::Barrier::new(16));
    let mut at_once = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let (http, url, token) = (http.clone(), w.gateway_url.clone(), token.clone());
        let together = together.clone();
        at_once.spawn(async move {
            together.wait().await;
            initialize(&http, &url, &token).await
        });
    }
    let mut refused = Vec::new();
    while let Some(joined) = at_once.join_next().await {
        let (status, body) = joined.expect("joined");
        if status != 200 {
            refused.push(format!("{status} {body}"));
        }
    }
    assert!(
        refused.is_empty(),
        "{} of 16 refused: {refused:?}",
        refused.len()
    );
}
