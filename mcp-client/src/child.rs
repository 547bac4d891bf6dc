//! stdio, client side: the server is a child process speaking newline-delimited JSON on
//! its stdin and stdout. Its stderr goes to the logs; it is killed when the transport is
//! dropped, and reaped.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use mcp_types::transport::{CloseReason, Closed, Incoming, LineTransport, Transport, TrySendError};
use mcp_types::Frame;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

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
    name: String,
}

impl ChildTransport {
    /// Starts `cmd` with piped stdio.
    pub fn spawn(cmd: &StdioCommand) -> std::io::Result<ChildTransport> {
        let mut c = Command::new(&cmd.command);
        c.args(&cmd.args)
            .envs(&cmd.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(dir) = &cmd.cwd {
            c.current_dir(dir);
        }
        let mut child = c.spawn()?;
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

    async fn close(&self) {
        self.inner.close().await;
        let mut child = self.child.lock().await;
        // Closing stdin asks politely; a server that ignores it is killed.
        if tokio::time::timeout(Duration::from_secs(2), child.wait())
            .await
            .is_err()
        {
            let _ = child.kill().await;
        }
    }

    fn close_reason(&self) -> Option<CloseReason> {
        self.inner.close_reason()
    }

    fn max_message_bytes(&self) -> Option<usize> {
        self.inner.max_message_bytes()
    }
}
