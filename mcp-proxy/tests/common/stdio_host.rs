//! A legacy host speaking JSON lines to a gateway process's stdio, for the tests that run
//! the `mcp-gateway` program: it initialises (2025-06-18) and sends requests as written.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout};

use serde_json::{json, Value};

/// The gateway's stdin and stdout, initialised.
pub struct StdioHost {
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// Notifications read while waiting for an answer.
    heard: Vec<Value>,
}

impl StdioHost {
    /// Takes `gateway`'s stdin and stdout (both piped) and initialises.
    pub fn initialize(gateway: &mut Child) -> StdioHost {
        let mut host = StdioHost {
            stdin: gateway.stdin.take(),
            stdout: BufReader::new(gateway.stdout.take().expect("stdout piped")),
            heard: Vec::new(),
        };
        host.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        );
        host.answer(0);
        host.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        host
    }

    /// Writes one message.
    pub fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write to the gateway");
    }

    /// Reads until the answer to `id`, and returns it (notifications read meanwhile are
    /// kept for [`StdioHost::notification`]).
    pub fn answer(&mut self, id: i64) -> Value {
        loop {
            let v = self.next();
            if v["id"] == id {
                return v;
            }
            if v.get("id").is_none() {
                self.heard.push(v);
            }
        }
    }

    /// The first notification with `method`, heard already or read until it comes.
    pub fn notification(&mut self, method: &str) -> Value {
        if let Some(i) = self.heard.iter().position(|n| n["method"] == method) {
            return self.heard.remove(i);
        }
        loop {
            let v = self.next();
            if v["method"] == method && v.get("id").is_none() {
                return v;
            }
        }
    }

    fn next(&mut self) -> Value {
        let mut line = String::new();
        assert!(
            self.stdout.read_line(&mut line).expect("read") > 0,
            "stdout closed"
        );
        serde_json::from_str(&line).expect("JSON-RPC")
    }

    /// Closes stdin: the gateway stops.
    pub fn close(&mut self) {
        self.stdin = None;
    }
}
