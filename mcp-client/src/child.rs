//! stdio, client side: the server is a child process speaking newline-delimited JSON on
//! its stdin and stdout. Its stderr goes to the logs.
//!
//! Each server runs in a process group of its own, so whatever it starts (a shell's
//! children, a wrapper's server, a worker pool) goes with it. Closing the transport asks
//! the server to leave by closing its stdin, then tells the whole group with `SIGTERM`,
//! then ends it with `SIGKILL`, waiting [`ChildTransport::CLOSE_GRACE`] after each of the
//! first two steps; the server is reaped. A transport dropped without being closed sends
//! `SIGKILL` to the group at once. Only a parent killed itself by `SIGKILL` leaves its
//! servers to end on their own (their stdin closes with it).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use mcp_types::transport::{
    CloseReason, Closed, Frames, Incoming, LineTransport, Transport, TrySendError,
};
use mcp_types::Frame;
use nix::errno::Errno;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

/// Longest closing waits, after `SIGKILL`, for the group to be gone (what remains then is
/// dying, or a zombie its new parent has yet to reap).
const KILL_WAIT: Duration = Duration::from_millis(500);

/// How to start a server process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StdioCommand {
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to the inherited environment.
    pub env: HashMap<String, String>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
}

impl StdioCommand {
    /// A command with arguments.
    pub fn new(
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        StdioCommand {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }
}

/// A child process as a transport.
pub struct ChildTransport {
    inner: LineTransport<BufReader<ChildStdout>, ChildStdin>,
    child: Mutex<Child>,
    /// The child's process group (its own: the child leads it).
    group: ProcessGroup,
    name: String,
}

/// A child's process group: signalled as a whole, and killed when dropped unless
/// closing saw it gone.
struct ProcessGroup {
    id: Option<Pid>,
    /// Set once [`Transport::close`] has seen the whole group gone.
    finished: AtomicBool,
}

impl ProcessGroup {
    /// Sends `signal` to every process of the group.
    fn signal(&self, signal: Signal, server: &str) {
        let Some(group) = self.id else { return };
        match killpg(group, signal) {
            Ok(()) | Err(Errno::ESRCH) => {}
            Err(e) => {
                tracing::warn!(
                    server,
                    "cannot send {signal} to the server's process group: {e}"
                )
            }
        }
    }

    /// Whether any process of the group is left (signal 0 tests without sending).
    fn alive(&self) -> bool {
        self.id
            .is_some_and(|group| !matches!(killpg(group, None), Err(Errno::ESRCH)))
    }
}

impl Drop for ProcessGroup {
    /// A transport dropped without being closed leaves nothing running: its whole group
    /// gets `SIGKILL` (the child itself is also killed, and reaped, by tokio's
    /// `kill_on_drop`).
    fn drop(&mut self) {
        if !self.finished.load(Ordering::SeqCst) {
            self.signal(Signal::SIGKILL, "dropped");
        }
    }
}

impl ChildTransport {
    /// How long closing waits after closing the server's stdin before sending `SIGTERM`
    /// to its process group, and again after that before sending `SIGKILL`: a server that
    /// ignores both is gone within twice this (plus the moment reaping takes).
    pub const CLOSE_GRACE: Duration = Duration::from_secs(2);

    /// Starts `cmd` with piped stdio, in a process group of its own.
    pub fn spawn(cmd: &StdioCommand) -> std::io::Result<ChildTransport> {
        let mut c = Command::new(&cmd.command);
        c.args(&cmd.args)
            .envs(&cmd.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A group of its own: what the server starts can be signalled with it, and a
            // terminal's Ctrl-C (sent to the gateway's group) reaches the gateway only,
            // which then closes its servers in order.
            .process_group(0)
            .kill_on_drop(true);
        if let Some(dir) = &cmd.cwd {
            c.current_dir(dir);
        }
        let mut child = c.spawn()?;
        let group = ProcessGroup {
            id: child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .map(Pid::from_raw),
            finished: AtomicBool::new(false),
        };
        let missing = || std::io::Error::other("child stdio was not piped");
        let stdin = child.stdin.take().ok_or_else(missing)?;
        let stdout = child.stdout.take().ok_or_else(missing)?;
        let name = cmd.command.clone();
        if let Some(stderr) = child.stderr.take() {
            let name = name.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::info!(target: "mcp_client::stderr", server = %name, "{line}");
                }
            });
        }
        Ok(ChildTransport {
            inner: LineTransport::new(BufReader::new(stdout), stdin),
            child: Mutex::new(child),
            group,
            name,
        })
    }

    /// Sets the largest message accepted from the child.
    pub fn with_max_message_bytes(mut self, limit: usize) -> Self {
        self.inner = self.inner.with_max_message_bytes(limit);
        self
    }

    /// The child's process id, while it runs.
    pub async fn id(&self) -> Option<u32> {
        self.child.lock().await.id()
    }

    /// Waits up to `within` for the child to exit (reaping it) and every other process
    /// of its group to be gone; whether they are.
    async fn settle(&self, child: &mut Child, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        if tokio::time::timeout_at(deadline, child.wait())
            .await
            .is_err()
        {
            return false;
        }
        // The leader is reaped; what it started may still run in its group.
        loop {
            if !self.group.alive() {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn exit_reason(&self) -> CloseReason {
        let mut child = self.child.lock().await;
        match tokio::time::timeout(Duration::from_secs(2), child.wait()).await {
            Ok(Ok(status)) => CloseReason::ProcessExited {
                code: status.code(),
            },
            // Still running with its stdout closed: the stream ended, not the process.
            _ => CloseReason::PeerClosed,
        }
    }
}

impl ChildTransport {
    /// [`Transport::recv`], as a future of its own type (see [`Transport::frames`]): a
    /// stream that ended because the process did is reported with how it ended.
    async fn next_frame(&self) -> Result<Incoming, Closed> {
        match self.inner.recv_frame().await {
            Err(Closed(CloseReason::PeerClosed)) => {
                let reason = self.exit_reason().await;
                tracing::warn!(server = %self.name, "server process ended: {reason}");
                // A reason recorded first wins; that is the one reported.
                Err(Closed(self.inner.set_close_reason(reason)))
            }
            other => other,
        }
    }
}

#[async_trait]
impl Transport for ChildTransport {
    async fn send(&self, frame: Frame) -> Result<(), Closed> {
        match self.inner.send(frame).await {
            Err(Closed(CloseReason::PeerClosed)) => Err(Closed(
                self.inner.set_close_reason(self.exit_reason().await),
            )),
            other => other,
        }
    }

    fn try_send(&self, frame: Frame) -> Result<(), TrySendError> {
        self.inner.try_send(frame)
    }

    async fn recv(&self) -> Result<Incoming, Closed> {
        self.next_frame().await
    }

    fn frames(self: std::sync::Arc<Self>) -> Frames {
        Box::pin(futures_util::stream::unfold(self, |t| async move {
            let frame = t.next_frame().await;
            Some((frame, t))
        }))
    }

    async fn close(&self) {
        self.inner.close().await;
        let mut child = self.child.lock().await;
        if self.group.finished.load(Ordering::SeqCst) {
            return;
        }
        // Closing stdin asks politely; then the group is told, then ended.
        let mut gone = self.settle(&mut child, Self::CLOSE_GRACE).await;
        if !gone {
            tracing::info!(server = %self.name, "server still running {:?} after its stdin closed; sending SIGTERM", Self::CLOSE_GRACE);
            self.group.signal(Signal::SIGTERM, &self.name);
            gone = self.settle(&mut child, Self::CLOSE_GRACE).await;
        }
        if !gone {
            tracing::warn!(server = %self.name, "server still running {:?} after SIGTERM; sending SIGKILL", Self::CLOSE_GRACE);
            self.group.signal(Signal::SIGKILL, &self.name);
            // SIGKILL cannot be ignored: this waits only for the kernel to end them all,
            // and the child to be reaped.
            self.settle(&mut child, KILL_WAIT).await;
        }
        self.group.finished.store(true, Ordering::SeqCst);
    }

    fn close_reason(&self) -> Option<CloseReason> {
        self.inner.close_reason()
    }

    fn max_message_bytes(&self) -> Option<usize> {
        self.inner.max_message_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The processes of group `group` still alive (zombies waiting to be reaped by
    /// whoever inherited them are not), from `/proc`.
    fn live_in_group(group: u32) -> Vec<u32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                    return false;
                };
                // After the command name in parentheses: state, ppid, pgrp, …
                let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
                let fields: Vec<&str> = rest.split_whitespace().collect();
                fields.first() != Some(&"Z") && fields.get(2) == Some(&group.to_string().as_str())
            })
            .collect()
    }

    async fn spawned(script: &str) -> (ChildTransport, u32) {
        let t = ChildTransport::spawn(&StdioCommand::new("sh", ["-c", script])).expect("sh");
        let pid = t.id().await.expect("running");
        // Let the shell start what it starts.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            live_in_group(pid).len() >= 2,
            "the script and its children run"
        );
        (t, pid)
    }

    #[tokio::test]
    async fn a_child_that_exits_on_eof_is_closed_at_once() {
        let (t, pid) = spawned("cat >/dev/null; exit 0").await;
        let start = std::time::Instant::now();
        t.close().await;
        assert!(
            start.elapsed() < ChildTransport::CLOSE_GRACE,
            "{:?}",
            start.elapsed()
        );
        assert_eq!(live_in_group(pid), Vec::<u32>::new());
    }

    #[tokio::test]
    async fn what_the_child_leaves_in_its_group_gets_sigterm() {
        // The shell exits at EOF; its `sleep` would run on.
        let (t, pid) = spawned("sleep 1000 & cat >/dev/null; exit 0").await;
        t.close().await;
        assert_eq!(live_in_group(pid), Vec::<u32>::new());
    }

    #[tokio::test]
    async fn a_group_that_ignores_eof_and_sigterm_is_killed() {
        // Ignored signals stay ignored across exec: the `sleep`s ignore SIGTERM too.
        let (t, pid) = spawned("trap '' TERM; sleep 1000 & sleep 1000; wait").await;
        let start = std::time::Instant::now();
        t.close().await;
        let took = start.elapsed();
        assert!(took >= ChildTransport::CLOSE_GRACE * 2, "{took:?}");
        assert!(
            took < ChildTransport::CLOSE_GRACE * 2 + Duration::from_secs(2),
            "{took:?}"
        );
        assert_eq!(gone_soon(pid).await, Vec::<u32>::new());
    }

    #[tokio::test]
    async fn a_dropped_transport_kills_its_group() {
        let (t, pid) = spawned("trap '' TERM; sleep 1000 & sleep 1000; wait").await;
        drop(t);
        assert_eq!(gone_soon(pid).await, Vec::<u32>::new());
    }

    /// The processes of `group` alive after it had a second to die.
    async fn gone_soon(group: u32) -> Vec<u32> {
        let mut left = live_in_group(group);
        for _ in 0..50 {
            if left.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            left = live_in_group(group);
        }
        left
    }
}
