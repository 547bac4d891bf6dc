//! The audit file: JSON lines appended to `audit.jsonl`, rotated by size to
//! `audit.jsonl.1` (newest) … `audit.jsonl.N` (oldest), one chain across them all.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::chain::{self, Link};
use super::sink::{AuditSink, Resume};

/// Bytes of the last line kept to name its `seq` and `hash` at rotation: more than a
/// line's chain members (`seq` of 20 digits, `prev`, `hash`) take.
const TAIL_KEPT: usize = 255;

/// The write buffer: larger than any line the defaults make (arguments are cut at 64 KiB),
/// so a line goes to the file in one piece or not at all.
const BUFFER: usize = 256 * 1024;
/// How much of the file's end is read to find its last line on open.
const TAIL: u64 = 256 * 1024;

/// When the audit file is rotated, and how many rotated files are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileRotation {
    /// The file is rotated before a line that would make it longer than this (64 MiB).
    pub max_bytes: u64,
    /// Rotated files kept (`audit.jsonl.1` …); older ones are deleted (10).
    pub max_files: usize,
}

impl Default for FileRotation {
    fn default() -> Self {
        FileRotation {
            max_bytes: 64 * 1024 * 1024,
            max_files: 10,
        }
    }
}

impl FileRotation {
    /// The defaults: 64 MiB files, 10 kept.
    pub fn new() -> FileRotation {
        FileRotation::default()
    }

    /// Rotates before a line would make the file longer than `max_bytes`.
    pub fn max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Keeps `max_files` rotated files.
    pub fn max_files(mut self, max_files: usize) -> Self {
        self.max_files = max_files;
        self
    }
}

/// Appends lines to a file (created `0600` on unix), rotating it by size.
///
/// A file that already exists is continued: its last line's `seq` and `hash` start the
/// writer's chain, so a restarted gateway extends one chain. When that last line does not
/// verify (a write torn by a crash), the file is rotated aside as it is, for a verifier to
/// report, and the new file's anchor is chained on the last line that did verify.
#[derive(Debug)]
pub struct FileSink {
    path: PathBuf,
    rotation: FileRotation,
    writer: Option<BufWriter<File>>,
    /// Bytes in the current file.
    size: u64,
    /// Lines in the current file (1 for a reopened file that holds any).
    lines: u64,
    /// Lines at the top of the current file that do not earn a rotation (its anchor): a
    /// line longer than `max_bytes` must not rotate again and again.
    min_lines: u64,
    /// The file does not end with a newline (an earlier write failed part way, or the
    /// reopened file's last line lost its newline): one is written before the next line.
    needs_newline: bool,
    resume: Option<Resume>,
    /// `{` and the end of the last line written: enough to read its `seq` and `hash`
    /// when they are logged at rotation, without reading every line as it is written.
    last_tail: Vec<u8>,
}

impl FileSink {
    /// Opens (or creates) the audit file at `path`, continuing the chain it holds.
    pub fn open(path: impl Into<PathBuf>, rotation: FileRotation) -> io::Result<FileSink> {
        let mut sink = FileSink {
            path: path.into(),
            rotation,
            writer: None,
            size: 0,
            lines: 0,
            min_lines: 0,
            needs_newline: false,
            resume: None,
            last_tail: Vec::new(),
        };
        let size = match fs::metadata(&sink.path) {
            Ok(meta) => meta.len(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e),
        };
        if size == 0 {
            sink.continue_rotated()?;
        } else {
            sink.continue_existing(size)?;
        }
        sink.open_writer()?;
        Ok(sink)
    }

    /// The file lines are appended to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// An empty or missing file: a crash between rotating and writing the anchor, or an
    /// operator who moved the file away. The chain continues from the newest rotated file.
    fn continue_rotated(&mut self) -> io::Result<()> {
        let previous = rotated_path(&self.path, 1);
        if let Some((seq, hash)) = last_good_line(&previous)? {
            self.resume = Some(Resume::new(seq, hash).anchored(file_name(&previous)));
            self.min_lines = 1;
        }
        Ok(())
    }

    fn continue_existing(&mut self, size: u64) -> io::Result<()> {
        let (last, newline) = last_line(&self.path, size)?;
        match chain::check_line(&last) {
            Ok(link) => {
                self.resume = Some(Resume::new(link.seq, link.hash_str()));
                self.remember(&last);
                self.size = size;
                self.lines = 1;
                self.needs_newline = !newline;
                Ok(())
            }
            Err(reason) => self.set_torn_file_aside(reason),
        }
    }

    fn set_torn_file_aside(&mut self, reason: &str) -> io::Result<()> {
        let good = match last_good_line(&self.path)? {
            Some(good) => Some(good),
            None => last_good_line(&rotated_path(&self.path, 1))?,
        };
        let previous = self.rotate_files()?;
        tracing::warn!(
            file = %self.path.display(),
            moved_to = %previous,
            reason,
            "audit file's last line does not verify (a torn write?); the file is set aside \
             as it is and a new one started"
        );
        match good {
            Some((seq, hash)) => {
                self.resume = Some(Resume::new(seq, hash).anchored(previous));
                self.min_lines = 1;
            }
            None => tracing::warn!(
                file = %self.path.display(),
                "no line of the audit file verifies; a new chain starts"
            ),
        }
        Ok(())
    }

    fn open_writer(&mut self) -> io::Result<&mut BufWriter<File>> {
        if self.writer.is_none() {
            let mut options = OpenOptions::new();
            options.create(true).append(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(0o600);
            }
            let file = options.open(&self.path)?;
            self.size = file.metadata()?.len();
            self.writer = Some(BufWriter::with_capacity(BUFFER, file));
        }
        match &mut self.writer {
            Some(writer) => Ok(writer),
            None => Err(io::Error::other("audit file not open")),
        }
    }

    /// Renames `audit.jsonl.{k}` to `.{k+1}` from the oldest down and the current file to
    /// `.1`; returns the name the current file now has.
    fn rotate_files(&mut self) -> io::Result<String> {
        if let Some(mut writer) = self.writer.take() {
            if let Err(e) = writer.flush().and_then(|()| writer.get_ref().sync_all()) {
                self.writer = Some(writer);
                return Err(e);
            }
        }
        let first = rotated_path(&self.path, 1);
        let max = self.rotation.max_files;
        if max == 0 {
            remove_if_present(&self.path)?;
        } else {
            remove_if_present(&rotated_path(&self.path, max))?;
            for k in (1..max).rev() {
                rename_if_present(
                    &rotated_path(&self.path, k),
                    &rotated_path(&self.path, k + 1),
                )?;
            }
            rename_if_present(&self.path, &first)?;
        }
        self.size = 0;
        self.lines = 0;
        self.min_lines = 0;
        self.needs_newline = false;
        Ok(file_name(&first))
    }

    fn remember(&mut self, line: &[u8]) {
        self.last_tail.clear();
        self.last_tail.push(b'{');
        self.last_tail
            .extend_from_slice(&line[line.len().saturating_sub(TAIL_KEPT)..]);
    }
}

impl AuditSink for FileSink {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        let newline_first = self.needs_newline;
        let writer = self.open_writer()?;
        let room = writer.capacity() - writer.buffer().len();
        if room <= line.len() + usize::from(newline_first) {
            // Emptying the buffer first keeps the line whole in it: a failure then leaves
            // nothing of the line behind.
            writer.flush()?;
        }
        let written = if newline_first {
            writer.write_all(b"\n")
        } else {
            Ok(())
        };
        let written = written
            .and_then(|()| writer.write_all(line))
            .and_then(|()| writer.write_all(b"\n"));
        if let Err(e) = written {
            self.needs_newline = true;
            return Err(e);
        }
        self.needs_newline = false;
        self.size += (line.len() + 1 + usize::from(newline_first)) as u64;
        self.lines += 1;
        self.remember(line);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.writer {
            Some(writer) => writer.flush(),
            None => Ok(()),
        }
    }

    fn resume(&mut self) -> Option<Resume> {
        self.resume.take()
    }

    fn rotate_before(&mut self, len: usize) -> io::Result<Option<String>> {
        let next = self.size + len as u64 + 1 + u64::from(self.needs_newline);
        if next <= self.rotation.max_bytes || self.lines <= self.min_lines {
            return Ok(None);
        }
        let previous = self.rotate_files()?;
        self.open_writer()?;
        self.min_lines = 1;
        let link = chain::parse_link(&self.last_tail).ok();
        tracing::info!(
            file = %self.path.display(),
            previous_file = %previous,
            seq = link.map(|l| l.seq),
            head = link.as_ref().map(Link::hash_str),
            "audit file rotated; the head hash anchors the chain so far"
        );
        Ok(Some(previous))
    }
}

impl Drop for FileSink {
    fn drop(&mut self) {
        if let Some(writer) = &mut self.writer {
            if let Err(e) = writer.flush().and_then(|()| writer.get_ref().sync_all()) {
                tracing::error!(file = %self.path.display(), error = %e, "audit file not flushed on close");
            }
        }
    }
}

/// `audit.jsonl` → `audit.jsonl.{k}`.
pub(crate) fn rotated_path(path: &Path, k: usize) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(format!(".{k}"));
    PathBuf::from(name)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn rename_if_present(from: &Path, to: &Path) -> io::Result<()> {
    match fs::rename(from, to) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The file's last non-empty line, and whether a newline follows it. Reads only the tail
/// unless the line is longer than [`TAIL`].
fn last_line(path: &Path, size: u64) -> io::Result<(Vec<u8>, bool)> {
    let mut file = File::open(path)?;
    let start = size.saturating_sub(TAIL);
    file.seek(SeekFrom::Start(start))?;
    let mut tail = Vec::new();
    file.take(TAIL).read_to_end(&mut tail)?;
    let newline = tail.last() == Some(&b'\n');
    let body = tail.strip_suffix(b"\n").unwrap_or(&tail);
    match memchr::memrchr(b'\n', body) {
        Some(at) => Ok((body[at + 1..].to_vec(), newline)),
        None if start == 0 => Ok((body.to_vec(), newline)),
        None => {
            let all = fs::read(path)?;
            let newline = all.last() == Some(&b'\n');
            let body = all.strip_suffix(b"\n").unwrap_or(&all);
            let from = memchr::memrchr(b'\n', body).map_or(0, |at| at + 1);
            Ok((body[from..].to_vec(), newline))
        }
    }
}

/// The `seq` and `hash` of the last line of `path` that verifies; `None` when none does
/// or the file is missing. Reads the whole file: only for recovery.
fn last_good_line(path: &Path) -> io::Result<Option<(u64, String)>> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(bytes
        .rsplit(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .find_map(|line| chain::check_line(line).ok())
        .map(|link| (link.seq, link.hash_str().to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::chain::Chain;

    fn temp_dir(name: &str) -> PathBuf {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir = std::env::temp_dir().join(format!(
            "mcp-audit-file-{name}-{}-{nanos}",
            std::process::id()
        ));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn write(sink: &mut FileSink, chain: &mut Chain, n: usize) {
        for i in 0..n {
            let body = format!(r#"{{"n":{i}"#);
            let len = chain.sealed_len(body.len());
            if let Some(previous) = sink.rotate_before(len).unwrap() {
                let anchor = format!(r#"{{"kind":"anchor","previousFile":"{previous}""#);
                sink.write_line(&chain.seal(anchor.as_bytes())).unwrap();
            }
            sink.write_line(&chain.seal(body.as_bytes())).unwrap();
        }
        sink.flush().unwrap();
    }

    #[test]
    fn a_new_file_starts_a_chain_and_is_private() {
        let dir = temp_dir("new");
        let path = dir.join("audit.jsonl");
        let mut sink = FileSink::open(&path, FileRotation::new()).unwrap();
        assert_eq!(sink.resume(), None);
        write(&mut sink, &mut Chain::new(), 3);
        assert_eq!(fs::read_to_string(&path).unwrap().lines().count(), 3);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn reopening_continues_from_the_last_line() {
        let dir = temp_dir("reopen");
        let path = dir.join("audit.jsonl");
        let mut chain = Chain::new();
        let mut sink = FileSink::open(&path, FileRotation::new()).unwrap();
        write(&mut sink, &mut chain, 4);
        drop(sink);
        let mut sink = FileSink::open(&path, FileRotation::new()).unwrap();
        let resume = sink.resume().unwrap();
        assert_eq!(
            (resume.seq, resume.hash.as_str(), resume.anchor),
            (3, chain.head(), None)
        );
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn rotation_shifts_files_and_keeps_max_files() {
        let dir = temp_dir("rotate");
        let path = dir.join("audit.jsonl");
        let rotation = FileRotation::new().max_bytes(400).max_files(2);
        let mut sink = FileSink::open(&path, rotation).unwrap();
        write(&mut sink, &mut Chain::new(), 20);
        assert!(rotated_path(&path, 1).exists());
        assert!(rotated_path(&path, 2).exists());
        assert!(!rotated_path(&path, 3).exists());
        for p in [path.clone(), rotated_path(&path, 1), rotated_path(&path, 2)] {
            assert!(fs::metadata(&p).unwrap().len() <= 400, "{}", p.display());
        }
        let current = fs::read_to_string(&path).unwrap();
        assert!(current.starts_with(r#"{"kind":"anchor","previousFile":"audit.jsonl.1""#));
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_line_longer_than_max_bytes_does_not_rotate_an_anchored_file_again() {
        let dir = temp_dir("long");
        let path = dir.join("audit.jsonl");
        let rotation = FileRotation::new().max_bytes(10).max_files(50);
        let mut sink = FileSink::open(&path, rotation).unwrap();
        write(&mut sink, &mut Chain::new(), 3);
        // The first line fits nowhere and is written alone; each later one rotates once.
        assert!(rotated_path(&path, 2).exists());
        assert!(!rotated_path(&path, 3).exists());
        assert_eq!(fs::read_to_string(&path).unwrap().lines().count(), 2);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_torn_last_line_is_set_aside_and_the_chain_anchored_before_it() {
        let dir = temp_dir("torn");
        let path = dir.join("audit.jsonl");
        let mut chain = Chain::new();
        let mut sink = FileSink::open(&path, FileRotation::new()).unwrap();
        write(&mut sink, &mut chain, 3);
        drop(sink);
        let good_head = chain.head().to_owned();
        let mut torn = fs::read(&path).unwrap();
        torn.extend_from_slice(&chain.seal(br#"{"n":3"#)[..40]);
        fs::write(&path, &torn).unwrap();

        let mut sink = FileSink::open(&path, FileRotation::new()).unwrap();
        let resume = sink.resume().unwrap();
        assert_eq!(resume.seq, 2);
        assert_eq!(resume.hash, good_head);
        assert_eq!(resume.anchor.as_deref(), Some("audit.jsonl.1"));
        assert_eq!(fs::read(rotated_path(&path, 1)).unwrap(), torn);
        assert_eq!(fs::metadata(&path).unwrap().len(), 0);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_empty_file_continues_from_the_newest_rotated_one() {
        let dir = temp_dir("empty");
        let path = dir.join("audit.jsonl");
        let mut chain = Chain::new();
        let mut sink = FileSink::open(&path, FileRotation::new()).unwrap();
        write(&mut sink, &mut chain, 2);
        drop(sink);
        fs::rename(&path, rotated_path(&path, 1)).unwrap();
        let mut sink = FileSink::open(&path, FileRotation::new()).unwrap();
        let resume = sink.resume().unwrap();
        assert_eq!((resume.seq, resume.hash.as_str()), (1, chain.head()));
        assert_eq!(resume.anchor.as_deref(), Some("audit.jsonl.1"));
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_last_line_without_its_newline_gets_one_before_the_next() {
        let dir = temp_dir("newline");
        let path = dir.join("audit.jsonl");
        let mut chain = Chain::new();
        let mut sink = FileSink::open(&path, FileRotation::new()).unwrap();
        write(&mut sink, &mut chain, 2);
        drop(sink);
        let mut bytes = fs::read(&path).unwrap();
        bytes.pop();
        fs::write(&path, &bytes).unwrap();
        let mut sink = FileSink::open(&path, FileRotation::new()).unwrap();
        let resume = sink.resume().unwrap();
        let mut chain = Chain::resume(resume.seq, &resume.hash).unwrap();
        write(&mut sink, &mut chain, 1);
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(text
            .lines()
            .all(|l| chain::check_line(l.as_bytes()).is_ok()));
        fs::remove_dir_all(dir).unwrap();
    }
}
