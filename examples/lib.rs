//! Shared code of the examples, kept here so tests can drive it.

mod conformance_fixtures;
mod conformance_tasks;
mod echo_tools;
mod embed;
mod notes_tools;
pub mod oauth_server;
pub mod search_corpus;
pub use conformance_fixtures::Conformance;
pub use echo_tools::*;
pub use embed::{embedded_app, guarded_app, GATEWAY_CONCURRENCY};
pub use notes_tools::*;

/// Logs to stderr (stdout may carry the protocol), filtered by `RUST_LOG`.
pub fn init_logging() {
    // The examples export no traces: nothing to keep.
    let _ = mcp_proxy::cli::init_logging(None, mcp_proxy::cli::LogFormat::Text);
}

/// Waits until `cond` holds, for at most `limit`; whether it held. For tests whose only
/// observable has no event to wait on (a process count, a status read from outside, an
/// answer over the wire): it checks at once, then again after 5 ms, doubling the pause up
/// to 100 ms, and returns as soon as `cond` holds. The tests' one polling loop: a bound,
/// never a fixed wait. Under paused tokio time the pauses are virtual.
pub async fn wait_until<F, Fut>(limit: std::time::Duration, mut cond: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    let mut pause = std::time::Duration::from_millis(5);
    loop {
        if cond().await {
            return true;
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return false;
        }
        tokio::time::sleep(pause.min(deadline - now)).await;
        pause = (pause * 2).min(std::time::Duration::from_millis(100));
    }
}

/// What a child process writes on one of its streams, read line by line on a thread of its
/// own as it comes: for tests that wait for a line rather than for time.
pub struct OutputLog {
    text: std::sync::Arc<std::sync::Mutex<String>>,
    lines: tokio::sync::watch::Receiver<usize>,
    reader: std::thread::JoinHandle<()>,
}

impl OutputLog {
    /// Starts reading `stream` (a child's stderr or stdout) to its end.
    pub fn read(stream: impl std::io::Read + Send + 'static) -> OutputLog {
        use std::io::BufRead;
        let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (count, lines) = tokio::sync::watch::channel(0);
        let kept = text.clone();
        let reader = std::thread::spawn(move || {
            for line in std::io::BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                if let Ok(mut t) = kept.lock() {
                    t.push_str(&line);
                    t.push('\n');
                }
                count.send_modify(|n| *n += 1);
            }
        });
        OutputLog {
            text,
            lines,
            reader,
        }
    }

    /// What was read so far.
    pub fn text(&self) -> String {
        self.text.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Whether `needle` is written (or was already) within `limit`.
    pub async fn says(&mut self, needle: &str, limit: std::time::Duration) -> bool {
        self.until(limit, |text| text.contains(needle)).await
    }

    /// Whether what was read comes to satisfy `cond` within `limit`: checked now and again
    /// as each line arrives.
    pub async fn until(&mut self, limit: std::time::Duration, cond: impl Fn(&str) -> bool) -> bool {
        let text = &self.text;
        let said = || text.lock().is_ok_and(|t| cond(&t));
        let lines = &mut self.lines;
        tokio::time::timeout(limit, async {
            while !said() {
                if lines.changed().await.is_err() {
                    return said();
                }
            }
            true
        })
        .await
        .unwrap_or(false)
    }

    /// All of it, once the stream has ended (the child has exited or been killed).
    pub fn all(self) -> String {
        let OutputLog { text, reader, .. } = self;
        let _ = reader.join();
        let all = text.lock().map(|t| t.clone()).unwrap_or_default();
        all
    }
}

/// Log lines kept in memory, for tests that read what was logged.
#[derive(Clone, Default)]
pub struct LogCapture(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl LogCapture {
    /// Everything from every level logged on this thread while the guard lives. The
    /// capture is per thread: run its test alone in its binary, or another test's use of
    /// the same call sites may go unseen.
    pub fn start() -> (LogCapture, tracing::subscriber::DefaultGuard) {
        let capture = LogCapture::default();
        let writer = capture.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::TRACE)
            .finish();
        (capture, tracing::subscriber::set_default(subscriber))
    }

    /// What was logged so far.
    pub fn text(&self) -> String {
        let bytes = self.0.lock().map(|l| l.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl std::io::Write for LogCapture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut l) = self.0.lock() {
            l.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

use std::io::{Read, Write};

use mcp_revisions::Translator;
use mcp_types::{Message, Revision};

/// Usage of the `translate` example.
pub const TRANSLATE_USAGE: &str =
    "usage: translate --from REV --to REV [--answers METHOD] < message.json";

/// The `translate` example: reads one JSON-RPC message on `input`, writes it translated
/// from one revision to another on `out`. Any failure is one line on `err` and exit
/// status 2, with nothing on `out`.
pub fn translate_main(
    args: &[String],
    input: &mut dyn Read,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    match translate_run(args, input) {
        Ok(bytes) => {
            if out
                .write_all(&bytes)
                .and_then(|()| out.write_all(b"\n"))
                .is_err()
            {
                return 2;
            }
            0
        }
        Err(e) => {
            // A failed write to stderr leaves nothing better to do than the exit status.
            let _ = writeln!(err, "translate: {e}");
            2
        }
    }
}

fn translate_run(args: &[String], input: &mut dyn Read) -> Result<Vec<u8>, String> {
    let (mut from, mut to, mut answers) = (None, None, None);
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or(format!("{flag} needs a value; {TRANSLATE_USAGE}"))
        };
        match flag.as_str() {
            "--from" => from = Some(value()?),
            "--to" => to = Some(value()?),
            "--answers" => answers = Some(value()?),
            other => return Err(format!("unknown argument {other:?}; {TRANSLATE_USAGE}")),
        }
    }
    let revision = |name: &str, v: Option<String>| -> Result<Revision, String> {
        let v = v.ok_or(format!("{name} is required; {TRANSLATE_USAGE}"))?;
        Revision::parse(&v).map_err(|e| {
            format!(
                "{e} (known: {})",
                Revision::ALL.map(|r| r.as_str()).join(", ")
            )
        })
    };
    let from = revision("--from", from)?;
    let to = revision("--to", to)?;
    let mut bytes = Vec::new();
    input
        .read_to_end(&mut bytes)
        .map_err(|e| format!("reading stdin: {e}"))?;
    let msg = Message::parse(&bytes).map_err(|e| e.to_string())?;
    let out = Translator::new(from, to)
        .message(&msg, answers.as_deref())
        .map_err(|e| e.to_string())?;
    Ok(out.to_bytes())
}
