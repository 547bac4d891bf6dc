//! The audit trail end to end, against the real `gateway` binary over Streamable HTTP.
//!
//! One gateway run, made once and shared by the tests below ([`trail`]), serves a scripted
//! Python upstream, `shop` (2025-06-18, stdio, trusted: every tool is `readOnlyHint` but
//! `danger`), with `gateway.audit` writing small rotated files (`maxFileBytes` 4096), a
//! rate limit on `shop__limited` and `shop__limited_b`, a pin file under which
//! `shop__pinned` changed (`onChange: ask`), `confirmDestructive`, and four API keys:
//!
//! - **alice** (key `alice-key`), a legacy 2025-11-25 session, and **carol** (`carol-key`),
//!   another whose elicitation handler declines, share the view `alice-view`, which hides
//!   `shop__hidden` (`denyTools`);
//! - **bob** (`bob-key`), a sessionless 2026-07-28 host, and **dave** (`dave-key`), another
//!   whose elicitation handler declines, share the view `bob-view`, which allows a list of
//!   shop tools without `shop__hidden` (nor alice's `shop__limited`).
//!
//! Alice and bob declare no elicitation and make the same requests, at once, each with
//! params text written here (so the argument bytes on the wire are known exactly) and all
//! but the first carrying `_meta.traceparent`: an allowed call, calls holding secrets, a
//! call to a tool the view hides and to one that does not exist, to the changed pinned
//! tool, to the tool that needs confirmation, two to a rate-limited tool, a call the
//! upstream answers with a JSON-RPC error and one it answers with `isError`, a
//! `prompts/get` and a `resources/read`. Carol and dave call the pinned tool and the one
//! that needs confirmation, and decline when asked. Last, alice and then bob call a
//! read-only tool whose upstream dies under the first call (the gateway calls it again
//! once the upstream is back). Then the gateway is stopped with `SIGTERM` (its audit
//! writer flushes at exit) and the tests read what it wrote.

mod checks;
#[path = "../common/mod.rs"]
mod common;
mod host;
mod trail;

use checks::{check_answer, expected, faults_of};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use trail::*;

/// The run itself went as planned: the gateway exited cleanly on `SIGTERM`; each host was
/// answered as it should be (allowed calls served; the view, an unknown tool, the rate
/// limit and the upstream's error refused with a JSON-RPC error; the pin and the
/// confirmation refused, and the upstream's `isError`, as `isError` results; the call
/// whose upstream died served once it was back); and every call record belongs to a
/// request a host made (none stray).
#[test]
fn the_hosts_are_answered_and_no_record_is_stray() {
    let t = trail();
    assert_eq!(
        t.exit,
        Some(0),
        "the gateway's exit after SIGTERM; log:\n{}",
        t.log
    );
    let wrong: Vec<String> = t
        .calls
        .iter()
        .filter_map(|c| check_answer(c).err())
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let all = records(t);
    let stray: Vec<&Value> = all
        .iter()
        .filter(|r| {
            !t.calls.iter().any(|c| {
                r["principal"]["subject"] == c.who
                    && r["method"] == c.method
                    && c.ids.iter().any(|id| r["request"].as_str() == Some(id))
            })
        })
        .collect();
    assert!(stray.is_empty(), "records of no request: {stray:#?}");
}

/// Each tool call of the matrix, from the legacy host (alice) and the 2026-07-28 host
/// (bob), has exactly one record, found by its principal and request id, whose members say
/// what happened: the principal (subject and the API key's configured name, no issuer),
/// the legacy session (alice only, the same on each of her records), the request id, the
/// trace id of `_meta.traceparent` (absent from the untraced call), method, exposed name,
/// upstream and the upstream's own name (none for a tool that does not exist), outcome and
/// error kind (allowed `ok`; `view`, `unknown`, `pin`, `confirmation_declined`,
/// `rate_limited` refusals, with the refusal's text where the host got an error; `error`/
/// `upstream_error` for the upstream's JSON-RPC error; `is_error`), a duration ≥ 0, the
/// request's size (the arguments' bytes), the answer's size for answered calls, a time,
/// and the chain's members.
#[test]
fn each_tool_call_has_one_record_with_its_members() {
    let t = trail();
    let all = records(t);
    let mut faults = Vec::new();
    let alice_sessions: Vec<&Value> = all
        .iter()
        .filter(|r| r["principal"]["subject"] == "alice")
        .map(|r| &r["session"])
        .collect();
    let first = alice_sessions.first().copied().cloned();
    if !first.as_ref().is_some_and(Value::is_string)
        || alice_sessions.iter().any(|s| Some(*s) != first.as_ref())
    {
        faults.push(format!(
            "alice's records name one session: {alice_sessions:?}"
        ));
    }
    for call in matrix(t).filter(|c| c.method == "tools/call") {
        let found = records_of(&all, call.who, call.method, call.id());
        match found.as_slice() {
            [r] => faults.extend(faults_of(call, r, &expected(call))),
            _ => faults.push(format!(
                "{} {}: {} records: {found:?}",
                call.who,
                call.label,
                found.len()
            )),
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
    for (who, name) in [("alice", "shop__limited"), ("bob", "shop__limited_b")] {
        assert_eq!(find(&all, who, name, "ok").len(), 1, "{who}: {name} served");
        assert_eq!(
            find(&all, who, name, "refused").len(),
            1,
            "{who}: {name} limited"
        );
    }
}

/// A call the upstream answers with a JSON-RPC error says that error's text in
/// `errorMessage` (as a refusal's record says the refusal's text), from both hosts, on
/// the path without a task too.
#[test]
fn an_upstream_error_record_says_the_upstreams_message() {
    let t = trail();
    let all = records(t);
    let mut faults = Vec::new();
    for call in matrix(t).filter(|c| c.label == "rpc error") {
        for r in records_of(&all, call.who, call.method, call.id()) {
            if !r["errorMessage"]
                .as_str()
                .is_some_and(|m| m.contains("the shop is closed"))
            {
                faults.push(format!("{}: no upstream message in {r}", call.who));
            }
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

/// A `prompts/get` and a `resources/read` through the gateway, from both hosts, each have
/// one record: the method, the prompt's exposed name (`shop__greet`, upstream name
/// `greet`) or the URI, upstream `shop`, outcome `ok`, the principal, session (legacy),
/// request and trace ids, a duration and the answer's size; the prompt's record holds its
/// arguments, the resource's has none.
#[test]
fn a_prompt_and_a_resource_read_are_recorded() {
    let t = trail();
    let all = records(t);
    let mut faults = Vec::new();
    for call in matrix(t).filter(|c| c.method != "tools/call") {
        let found = records_of(&all, call.who, call.method, call.id());
        let [r] = found.as_slice() else {
            faults.push(format!(
                "{} {}: {} records: {found:?}",
                call.who,
                call.method,
                found.len()
            ));
            continue;
        };
        faults.extend(faults_of(call, r, &expected(call)));
        let arguments = match call.method {
            "prompts/get" => r["arguments"] == json!({"who": "Ada"}),
            _ => r.get("arguments").is_none() && r.get("argumentsDigest").is_none(),
        };
        if !arguments {
            faults.push(format!("{} {}: arguments in {r}", call.who, call.method));
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

/// Secrets in the arguments come out redacted from both hosts' records: `password` (top
/// level), `auth.token` (nested), the configured pointer `/query/sql`, the configured
/// member `ssn`, and `/note` only where the rule for `shop`'s `special` applies; what is
/// no secret (`keep`, `auth.user`, `query.limit`, `note` of another tool) stays as sent.
#[test]
fn secrets_in_arguments_are_redacted() {
    let t = trail();
    let all = records(t);
    let mut faults = Vec::new();
    for (who, s) in [("alice", "A"), ("bob", "B")] {
        let r = find(&all, who, "shop__secrets", "ok");
        let want = json!({"query": {"sql": "[REDACTED]", "limit": 5}, "password": "[REDACTED]",
                          "auth": {"token": "[REDACTED]", "user": format!("u-{s}")},
                          "ssn": "[REDACTED]", "note": format!("n-visible-{s}"), "keep": "visible"});
        if r.len() != 1 || r[0]["arguments"] != want {
            faults.push(format!("{who} secrets: {r:?}"));
        }
        let r = find(&all, who, "shop__special", "ok");
        let want = json!({"note": "[REDACTED]", "keep": "visible"});
        if r.len() != 1 || r[0]["arguments"] != want {
            faults.push(format!("{who} special: {r:?}"));
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

/// Each tool call's `argumentsDigest` is `sha256:` and the hex SHA-256 of the exact
/// argument bytes its host sent (the secrets call's text is spaced and out of serde's
/// order on purpose), refused calls included.
#[test]
fn each_tool_calls_digest_is_of_the_exact_bytes_sent() {
    let t = trail();
    let all = records(t);
    let mut faults = Vec::new();
    for call in matrix(t).filter(|c| c.method == "tools/call") {
        let sent = call.arguments.as_deref().expect("arguments");
        let want = sha256(sent.as_bytes());
        for r in records_of(&all, call.who, call.method, call.id()) {
            if r["argumentsDigest"].as_str() != Some(want.as_str()) {
                faults.push(format!(
                    "{} {}: digest {} of {sent:?}, the record says {}",
                    call.who, call.label, want, r["argumentsDigest"]
                ));
            }
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

/// A `prompts/get`'s `argumentsDigest` (and `requestBytes`) is of its arguments written
/// compactly: a prompt's arguments reach the gateway decoded (a map of strings), so the
/// record says them as the gateway writes them, the same for the same arguments however
/// the host spaced them (a tool call's digest is of the exact bytes sent).
#[test]
fn a_prompts_digest_is_of_its_arguments_written_compactly() {
    let t = trail();
    let all = records(t);
    let mut faults = Vec::new();
    for call in matrix(t).filter(|c| c.method == "prompts/get") {
        let sent = call.arguments.as_deref().expect("arguments");
        let compact = serde_json::to_string(
            &serde_json::from_str::<serde_json::Map<String, Value>>(sent).expect("an object"),
        )
        .expect("written");
        assert_ne!(compact, sent, "the test sends spaced arguments");
        let want = sha256(compact.as_bytes());
        for r in records_of(&all, call.who, call.method, call.id()) {
            if r["argumentsDigest"].as_str() != Some(want.as_str())
                || r["requestBytes"].as_u64() != Some(compact.len() as u64)
            {
                faults.push(format!(
                    "{}: digest {want} of {compact:?} ({} bytes); the record says {} ({} bytes)",
                    call.who,
                    compact.len(),
                    r["argumentsDigest"],
                    r["requestBytes"]
                ));
            }
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

/// No credential issued in the test is in any record file (all rotated files included),
/// byte for byte: no API key (the hosts' bearer tokens) and no secret argument value;
/// nor is any API key in the gateway's log.
#[test]
fn no_credential_is_in_any_record_file() {
    let t = trail();
    let mut secrets: Vec<String> = KEYS.iter().map(|(_, k)| (*k).to_owned()).collect();
    for s in ["A", "B"] {
        secrets.extend([
            format!("SELECT sql_SECRET_{s}"),
            format!("p-SECRET-{s}"),
            format!("t-SECRET-{s}"),
            format!("ssn-SECRET-{s}"),
            format!("n-SECRET-{s}"),
        ]);
    }
    assert!(t.files.len() >= 2, "{:?}", t.files);
    for file in &t.files {
        let bytes = std::fs::read(file).expect("audit file");
        for secret in &secrets {
            let found = bytes
                .windows(secret.len())
                .position(|w| w == secret.as_bytes());
            assert!(
                found.is_none(),
                "{} holds {secret:?} at byte {found:?}",
                file.display()
            );
        }
    }
    for (who, key) in KEYS {
        assert!(!t.log.contains(key), "the gateway's log holds {who}'s key");
    }
}

/// The trail rotated (≥ 3 files, each within `maxFileBytes`, every file after the first
/// opened by an anchor) and `gateway audit verify` on all its files, oldest first, says
/// it holds (exit 0, `good: …`), with every line counted and the chain starting at seq 0.
#[test]
fn the_rotated_trail_verifies() {
    let t = trail();
    assert!(
        t.files.len() >= 3,
        "only {} files: {:?}",
        t.files.len(),
        t.files
    );
    for (i, file) in t.files.iter().enumerate() {
        let bytes = std::fs::read(file).expect("file");
        assert!(
            bytes.len() <= MAX_FILE_BYTES,
            "{}: {} bytes",
            file.display(),
            bytes.len()
        );
        let first = lines(std::slice::from_ref(file)).first().cloned();
        let anchored = first.as_ref().is_some_and(|l| l["kind"] == "anchor");
        assert_eq!(anchored, i > 0, "{}: {first:?}", file.display());
    }
    let (status, out) = verify(&t.files);
    assert_eq!(status, Some(0), "{out}");
    let total = lines(&t.files).len();
    let good = format!(
        "good: {total} records in {} files, seq 0 to {}",
        t.files.len(),
        total - 1
    );
    assert!(out.starts_with(&good), "{out}");
}

/// A copy of the trail in a directory of its own, for a test to spoil; the files in the
/// same order.
fn copy_of(t: &Trail, tag: &str) -> Vec<PathBuf> {
    let dir = scratch(tag);
    t.files
        .iter()
        .map(|f| {
            let to = dir.join(f.file_name().expect("name"));
            std::fs::copy(f, &to).expect("copy");
            to
        })
        .collect()
}

/// The rotated file the tampering tests spoil (the newest rotated one: neither the oldest
/// nor the current file), and the line in it: line 3, a call record with lines around it.
fn target(files: &[PathBuf]) -> (PathBuf, usize) {
    assert!(files.len() >= 3, "{files:?}");
    let file = files[files.len() - 2].clone();
    let n = lines(std::slice::from_ref(&file)).len();
    assert!(n >= 4, "{}: {n} lines", file.display());
    (file, 3)
}

/// Rewrites `file` with `edit` applied to its lines.
fn rewrite(file: &Path, edit: impl FnOnce(&mut Vec<String>)) {
    let text = std::fs::read_to_string(file).expect("read");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    edit(&mut lines);
    std::fs::write(file, lines.join("\n") + "\n").expect("write");
}

/// Removes the copy `files` are in.
fn remove_copy(files: &[PathBuf]) {
    if let Some(dir) = files.first().and_then(|f| f.parent()) {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// One byte changed in a record (a digit of its `time`) makes `verify` exit 1 naming that
/// file and line as altered.
#[test]
fn a_changed_byte_is_named_by_file_and_line() {
    let files = copy_of(trail(), "-byte");
    let (file, line) = target(&files);
    rewrite(&file, |lines| {
        let l = &mut lines[line - 1];
        let at = l.find("\"time\":\"").expect("a time") + "\"time\":\"".len() + 3;
        let digit = l.as_bytes()[at];
        let other = if digit == b'9' {
            '8'
        } else {
            char::from(digit + 1)
        };
        l.replace_range(at..=at, &other.to_string());
    });
    let (status, out) = verify(&files);
    assert_eq!(status, Some(1), "{out}");
    let named = format!("broken: {}: line {line} ", file.display());
    assert!(out.starts_with(&named) && out.contains("altered"), "{out}");
    remove_copy(&files);
}

/// One record deleted makes `verify` exit 1 naming the file and the line after the hole
/// as where records were removed.
#[test]
fn a_deleted_record_is_named_as_removed() {
    let files = copy_of(trail(), "-deleted");
    let (file, line) = target(&files);
    rewrite(&file, |lines| {
        lines.remove(line - 1);
    });
    let (status, out) = verify(&files);
    assert_eq!(status, Some(1), "{out}");
    let named = format!(
        "broken: {}: 1 record(s) removed before line {line} ",
        file.display()
    );
    assert!(out.starts_with(&named), "{out}");
    remove_copy(&files);
}

/// Two adjacent records swapped make `verify` exit 1 naming the file and the first of
/// them as out of order.
#[test]
fn swapped_records_are_named_as_reordered() {
    let files = copy_of(trail(), "-swapped");
    let (file, line) = target(&files);
    rewrite(&file, |lines| lines.swap(line - 1, line));
    let (status, out) = verify(&files);
    assert_eq!(status, Some(1), "{out}");
    let named = format!("broken: {}: line {line} ", file.display());
    assert!(
        out.starts_with(&named) && out.contains("out of order"),
        "{out}"
    );
    remove_copy(&files);
}

/// A legacy host (carol) that declares elicitation and whose user declines: each of its
/// calls (the tool that needs confirmation, the changed pinned tool) was asked about in
/// the call, on the same request, and has exactly one record: `refused`, with the gate's
/// kind (`confirmation_declined`, `pin`), and the call's members. (The session asks the
/// question and runs the call again in the same request: only its last round is
/// recorded.)
#[test]
fn a_legacy_hosts_declined_question_is_one_record() {
    let t = trail();
    let all = records(t);
    let mut faults = Vec::new();
    for call in t.calls.iter().filter(|c| c.who == "carol") {
        let found = records_of(&all, call.who, call.method, call.id());
        match found.as_slice() {
            [r] => faults.extend(faults_of(call, r, &expected(call))),
            _ => faults.push(format!(
                "carol {}: {} records for request {}: {found:#?}",
                call.label,
                found.len(),
                call.id()
            )),
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

/// A 2026-07-28 host (dave) that declares elicitation and whose user declines: each call
/// is two requests (the question as an `InputRequiredResult`, then the retry with the
/// answer), each with one record: the first `input_required`, the last `refused` with the
/// gate's kind and the call's members.
#[test]
fn a_2026_hosts_declined_question_is_one_record_per_round() {
    let t = trail();
    let all = records(t);
    let mut faults = Vec::new();
    for call in t.calls.iter().filter(|c| c.who == "dave") {
        if call.ids.len() != 2 {
            faults.push(format!("dave {}: requests {:?}", call.label, call.ids));
            continue;
        }
        let first = records_of(&all, call.who, call.method, &call.ids[0]);
        if first.len() != 1 || first[0]["outcome"] != "input_required" {
            faults.push(format!("dave {} asked: {first:#?}", call.label));
        }
        let last = records_of(&all, call.who, call.method, &call.ids[1]);
        match last.as_slice() {
            [r] => faults.extend(faults_of(call, r, &expected(call))),
            _ => faults.push(format!("dave {} answered: {last:#?}", call.label)),
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

/// A read-only call of a trusted upstream that died under it is called again once the
/// upstream is back (TOOL-18), from both hosts: the host's one request has exactly one
/// record, `ok`, not one for the lost attempt and another for the retry.
#[test]
fn a_call_retried_after_its_upstream_restarted_is_one_record() {
    let t = trail();
    let all = records(t);
    let mut faults = Vec::new();
    for call in t.calls.iter().filter(|c| c.label == "retried") {
        let found = records_of(&all, call.who, call.method, call.id());
        match found.as_slice() {
            [r] => faults.extend(faults_of(call, r, &expected(call))),
            _ => faults.push(format!(
                "{} {}: {} records for request {}: {found:#?}",
                call.who,
                call.name,
                found.len(),
                call.id()
            )),
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}
