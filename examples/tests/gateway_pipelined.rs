//! The gateway program on stdio under a host that writes a thousand calls at once: far
//! past the 256 a connection has in flight, they are slowed down by the pipe (the gateway
//! stops reading until answers go out), and every one is answered, none refused.

use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

mod common;
use common::example;

const CALLS: u64 = 1000;

#[tokio::test]
async fn a_thousand_calls_written_at_once_on_stdio_are_all_answered() {
    // The demo upstreams, in process: `echo__count` takes 20 steps of 5 ms, so calls
    // pile up past the bound while the first ones run.
    let mut gw = Command::new(example("gateway"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the gateway runs");
    let mut stdin = gw.stdin.take().expect("stdin");
    let mut lines = BufReader::new(gw.stdout.take().expect("stdout")).lines();

    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    stdin
        .write_all(format!("{init}\n").as_bytes())
        .await
        .expect("write");
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("initialized in time")
        .expect("read")
        .expect("a line");
    assert!(first.contains("\"protocolVersion\""), "{first}");

    let mut burst =
        String::from("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    for id in 1..=CALLS {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo__count", "arguments": {"to": 20}}});
        burst.push_str(&format!("{call}\n"));
    }
    // One write, from a task of its own: past the pipe's buffer it waits for the gateway
    // to read, which is the back-pressure.
    let writer = tokio::spawn(async move {
        stdin.write_all(burst.as_bytes()).await.expect("write");
        stdin
    });

    let read_all = async {
        let mut answered = BTreeSet::new();
        while (answered.len() as u64) < CALLS {
            let line = lines.next_line().await.expect("read").expect("a line");
            let answer: Value = serde_json::from_str(&line).expect("JSON");
            let id = answer["id"].as_u64().expect("an answer to a call");
            assert_eq!(
                answer["result"]["content"][0]["text"], "counted to 20",
                "call {id} answered right: {answer}"
            );
            assert!(answered.insert(id), "call {id} answered once");
        }
        answered
    };
    let answered = tokio::time::timeout(Duration::from_secs(120), read_all)
        .await
        .expect("every call answered in time");
    assert_eq!(answered, (1..=CALLS).collect());
    let stdin = writer.await.expect("the burst written");
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(30), gw.wait())
        .await
        .expect("the gateway exits when stdin closes")
        .expect("status");
    assert!(status.success(), "{status}");
}
