//! Where chained lines go. Each sink gets its own chain from the writer, so a file and
//! standard output each verify on their own.

use std::io::{self, Write};
use std::sync::Arc;

use parking_lot::Mutex;

/// A destination for finished audit lines.
///
/// The writer thread alone calls a sink, one line at a time; a sink need not be fast, only
/// never lose a line it said it took. Lines come without a newline: the sink adds one.
pub trait AuditSink: Send + 'static {
    /// Takes one sealed line (no trailing newline). An error means the line was not
    /// taken: the writer does not chain on it, and marks it lost with a `gap` record once
    /// the sink takes lines again.
    fn write_line(&mut self, line: &[u8]) -> io::Result<()>;

    /// Pushes what was taken to its destination; called after each batch.
    fn flush(&mut self) -> io::Result<()>;

    /// Where the chain this sink already holds ends, for the writer to continue it (a
    /// file reopened after a restart); `None` starts a new chain. Called once, before any
    /// line is written.
    fn resume(&mut self) -> Option<Resume> {
        None
    }

    /// Called before each line with its length: a sink that starts a new file (rotation)
    /// does so here and returns the name of the file it closed, and the writer then writes
    /// an `anchor` line naming it before the line itself.
    fn rotate_before(&mut self, len: usize) -> io::Result<Option<String>> {
        let _ = len;
        Ok(None)
    }
}

/// The end of a chain a sink already holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Resume {
    /// The `seq` of the last line that verified.
    pub seq: u64,
    /// Its `hash`.
    pub hash: String,
    /// When set, the sink has started a new file and the writer first writes an `anchor`
    /// naming this one as `previousFile`.
    pub anchor: Option<String>,
}

impl Resume {
    /// A chain ending at `seq` with `hash`, continued in place.
    pub fn new(seq: u64, hash: impl Into<String>) -> Resume {
        Resume {
            seq,
            hash: hash.into(),
            anchor: None,
        }
    }

    /// Continued in a new file, after an anchor naming `previous_file`.
    pub fn anchored(mut self, previous_file: impl Into<String>) -> Resume {
        self.anchor = Some(previous_file.into());
        self
    }
}

/// Buffered output above which [`StdoutSink`] writes before its next flush.
const STDOUT_BUFFER: usize = 64 * 1024;

/// Lines to standard output, written in one locked write per batch rather than per line
/// (std's stdout flushes at every newline).
#[derive(Debug, Default)]
pub struct StdoutSink {
    buffer: Vec<u8>,
}

impl StdoutSink {
    /// A sink writing to this process's standard output.
    pub fn new() -> StdoutSink {
        StdoutSink::default()
    }
}

impl AuditSink for StdoutSink {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        if self.buffer.len() + line.len() >= STDOUT_BUFFER {
            self.flush()?;
        }
        self.buffer.extend_from_slice(line);
        self.buffer.push(b'\n');
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let mut out = io::stdout().lock();
        out.write_all(&self.buffer)?;
        out.flush()?;
        self.buffer.clear();
        Ok(())
    }
}

/// Lines kept in memory, for tests and for library users who ship them elsewhere. Clones
/// share the lines.
#[derive(Debug, Clone, Default)]
pub struct MemorySink {
    lines: Arc<Mutex<Vec<String>>>,
}

impl MemorySink {
    /// An empty sink.
    pub fn new() -> MemorySink {
        MemorySink::default()
    }

    /// A copy of the lines written so far, oldest first, without newlines.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().clone()
    }

    /// The shared list the lines are appended to.
    pub fn handle(&self) -> Arc<Mutex<Vec<String>>> {
        Arc::clone(&self.lines)
    }
}

impl AuditSink for MemorySink {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        let line = String::from_utf8_lossy(line).into_owned();
        self.lines.lock().push(line);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sink_clones_share_lines() {
        let sink = MemorySink::new();
        let mut writer = sink.clone();
        writer.write_line(b"{\"a\":1}").unwrap();
        writer.flush().unwrap();
        assert_eq!(sink.lines(), vec!["{\"a\":1}".to_owned()]);
        assert_eq!(sink.handle().lock().len(), 1);
        assert_eq!(writer.resume(), None);
        assert_eq!(writer.rotate_before(10).unwrap(), None);
    }

    #[test]
    fn stdout_sink_buffers_until_flush() {
        let mut sink = StdoutSink::new();
        let line = b"{\"audit\":\"test line\"}";
        sink.write_line(line).unwrap();
        assert_eq!(sink.buffer, [&line[..], b"\n"].concat());
        sink.flush().unwrap();
        assert!(sink.buffer.is_empty());
    }
}
