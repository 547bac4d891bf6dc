//! The writer and the verifier together: queueing, gaps, failing sinks, restarts, and each
//! kind of tampering.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use serde_json::value::RawValue;
use serde_json::Value;

use super::*;

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("mcp-audit-{name}-{}-{nanos}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn call(n: usize) -> AuditRecord {
    let mut record = AuditRecord::new("tools/call");
    record.name = Some(format!("fs/tool{n}"));
    record.upstream = Some("fs".into());
    record.upstream_name = Some(format!("tool{n}"));
    record.arguments =
        Some(RawValue::from_string(format!(r#"{{"n":{n},"token":"secret-{n}"}}"#)).unwrap());
    record
}

fn options() -> AuditOptions {
    AuditOptions::new().interval(Duration::from_millis(5))
}

fn verify_lines(dir: &TempDir, lines: &[String]) -> Result<Verified, VerifyError> {
    let path = dir.path(&format!("lines-{}.jsonl", lines.len()));
    fs::write(&path, lines.join("\n") + "\n").unwrap();
    verify(&[path])
}

/// `n` chained lines in one file, seq 0 at line 1.
fn chain_file(path: &Path, n: usize) -> Vec<Vec<u8>> {
    let mut chain = Chain::new();
    let lines: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            chain.seal(format!(r#"{{"method":"tools/call","n":{i},"v":"value{i}""#).as_bytes())
        })
        .collect();
    write_lines(path, &lines);
    lines
}

fn write_lines(path: &Path, lines: &[Vec<u8>]) {
    let mut bytes = lines.join(&b'\n');
    bytes.push(b'\n');
    fs::write(path, bytes).unwrap();
}

#[test]
fn records_are_redacted_digested_and_chained() {
    let dir = TempDir::new("writer");
    let memory = MemorySink::new();
    let log = AuditLog::new(vec![Box::new(memory.clone())], Redaction::new(), options());
    for n in 0..3 {
        log.record(call(n));
    }
    log.flush();
    let lines = memory.lines();
    assert_eq!(lines.len(), 3);
    for (n, line) in lines.iter().enumerate() {
        assert!(!line.contains("secret-"), "{line}");
        let value: Value = serde_json::from_str(line).unwrap();
        assert_eq!(value["arguments"]["token"], REDACTED);
        assert_eq!(value["arguments"]["n"], n);
        let raw = format!(r#"{{"n":{n},"token":"secret-{n}"}}"#);
        assert_eq!(
            value["argumentsDigest"],
            Redaction::new().digest(raw.as_bytes())
        );
        assert_eq!(value["seq"], n);
    }
    let verified = verify_lines(&dir, &lines).unwrap();
    assert_eq!(
        (verified.records, verified.first_seq, verified.last_seq),
        (3, 0, 2)
    );
    assert!(!verified.starts_mid_chain);
    assert_eq!(log.dropped(), 0);
}

#[test]
fn each_sink_has_its_own_chain_over_the_same_bodies() {
    let (a, b) = (MemorySink::new(), MemorySink::new());
    let log = AuditLog::new(
        vec![Box::new(a.clone()), Box::new(b.clone())],
        Redaction::new(),
        options(),
    );
    log.record(call(1));
    log.flush();
    assert_eq!(a.lines(), b.lines());
}

/// Takes lines only once opened, and says when the writer first reached it.
struct GateSink {
    open: Arc<(Mutex<bool>, Condvar)>,
    entered: mpsc::Sender<()>,
    lines: MemorySink,
}

impl AuditSink for GateSink {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        let _ = self.entered.send(());
        let (open, opened) = &*self.open;
        let mut open = open.lock();
        while !*open {
            opened.wait(&mut open);
        }
        self.lines.write_line(line)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A log over a [`GateSink`], given `options` (waking every millisecond), whose writer has
/// taken a first record and is held in the sink until the gate opens: what is recorded
/// meanwhile waits in the queue.
fn held_writer(options: AuditOptions) -> (AuditLog, Arc<(Mutex<bool>, Condvar)>, MemorySink) {
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let (entered, writer_busy) = mpsc::channel();
    let lines = MemorySink::new();
    let sink = GateSink {
        open: Arc::clone(&gate),
        entered,
        lines: lines.clone(),
    };
    let log = AuditLog::new(
        vec![Box::new(sink)],
        Redaction::new(),
        options.interval(Duration::from_millis(1)),
    );
    log.record(call(0));
    writer_busy.recv().unwrap();
    (log, gate, lines)
}

#[test]
fn a_full_queue_drops_counts_and_writes_a_gap() {
    let dir = TempDir::new("gap");
    let (log, gate, lines) = held_writer(AuditOptions::new().queue(10));
    for n in 1..=15 {
        log.record(call(n));
    }
    assert_eq!(log.dropped(), 5);
    *gate.0.lock() = true;
    gate.1.notify_all();
    log.flush();
    let lines = lines.lines();
    assert_eq!(lines.len(), 12);
    assert!(lines[1].starts_with(r#"{"kind":"gap","#), "{}", lines[1]);
    let gap: Value = serde_json::from_str(&lines[1]).unwrap();
    assert_eq!(gap["dropped"], 5);
    let verified = verify_lines(&dir, &lines).unwrap();
    assert_eq!((verified.records, verified.gaps), (12, 5));
}

#[test]
fn a_queue_full_of_bytes_drops_too() {
    let dir = TempDir::new("gap-bytes");
    let (log, gate, lines) = held_writer(AuditOptions::new().queue_bytes(8 * 1024));
    // Each record with 2 KiB of arguments counts 2.5 KiB: three fit in 8 KiB, not four.
    let big = format!(r#"{{"blob":"{}"}}"#, "x".repeat(2048 - 11));
    for n in 1..=5 {
        let mut r = call(n);
        r.arguments = Some(RawValue::from_string(big.clone()).unwrap());
        log.record(r);
    }
    assert_eq!(log.dropped(), 2);
    *gate.0.lock() = true;
    gate.1.notify_all();
    log.flush();
    let lines = lines.lines();
    let gap: Value = serde_json::from_str(&lines[1]).unwrap();
    assert_eq!(gap["dropped"], 2, "{}", lines[1]);
    let verified = verify_lines(&dir, &lines).unwrap();
    assert_eq!((verified.records, verified.gaps), (5, 2));
}

/// Fails while told to; panics on a line holding `panic`.
struct FlakySink {
    failing: Arc<AtomicBool>,
    lines: MemorySink,
}

impl AuditSink for FlakySink {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(io::Error::other("disk full"));
        }
        assert!(
            !String::from_utf8_lossy(line).contains("panic"),
            "sink panics"
        );
        self.lines.write_line(line)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(io::Error::other("disk full"));
        }
        Ok(())
    }
}

#[test]
fn a_failing_or_panicking_sink_loses_only_its_lines_and_says_how_many() {
    let dir = TempDir::new("flaky");
    let failing = Arc::new(AtomicBool::new(false));
    let (flaky, healthy) = (MemorySink::new(), MemorySink::new());
    let sink = FlakySink {
        failing: Arc::clone(&failing),
        lines: flaky.clone(),
    };
    let log = AuditLog::new(
        vec![Box::new(sink), Box::new(healthy.clone())],
        Redaction::new(),
        options(),
    );
    log.record(call(0));
    log.flush();
    failing.store(true, Ordering::SeqCst);
    for n in 1..=3 {
        log.record(call(n));
    }
    log.flush();
    failing.store(false, Ordering::SeqCst);
    log.record(AuditRecord::new("panic"));
    log.record(call(5));
    log.flush();

    let healthy = healthy.lines();
    assert_eq!(healthy.len(), 6);
    assert_eq!(verify_lines(&dir, &healthy).unwrap().gaps, 0);
    let flaky = flaky.lines();
    // Call 0; a gap for calls 1-3 (written before the panicking line); a gap for that
    // line; call 5.
    assert_eq!(flaky.len(), 4, "{flaky:#?}");
    for (at, dropped) in [(1, 3), (2, 1)] {
        let gap: Value = serde_json::from_str(&flaky[at]).unwrap();
        assert_eq!(
            (gap["kind"].as_str(), gap["dropped"].as_u64()),
            (Some("gap"), Some(dropped))
        );
    }
    let verified = verify_lines(&dir, &flaky).unwrap();
    assert_eq!((verified.records, verified.gaps), (4, 4));
}

#[test]
fn dropping_the_last_handle_writes_everything_queued() {
    let memory = MemorySink::new();
    let log = AuditLog::new(
        vec![Box::new(memory.clone())],
        Redaction::new(),
        AuditOptions::new().interval(Duration::from_secs(3600)),
    );
    let clone = log.clone();
    for n in 0..50 {
        clone.record(call(n));
    }
    drop(log);
    assert!(
        memory.lines().len() < 50,
        "written before any handle dropped"
    );
    drop(clone);
    assert_eq!(memory.lines().len(), 50);
}

#[test]
fn a_restart_continues_the_file_chain() {
    let dir = TempDir::new("restart");
    let path = dir.path("audit.jsonl");
    for round in 0..3 {
        let sink = FileSink::open(&path, FileRotation::new()).unwrap();
        let log = AuditLog::new(vec![Box::new(sink)], Redaction::new(), options());
        for n in 0..4 {
            log.record(call(round * 10 + n));
        }
    }
    let verified = verify(std::slice::from_ref(&path)).unwrap();
    assert_eq!(
        (verified.records, verified.first_seq, verified.last_seq),
        (12, 0, 11)
    );
    assert!(!verified.starts_mid_chain);
}

#[test]
fn a_torn_tail_is_reported_and_the_new_file_anchored_on_the_last_good_line() {
    let dir = TempDir::new("torn");
    let path = dir.path("audit.jsonl");
    let lines = chain_file(&path, 5);
    let mut bytes = fs::read(&path).unwrap();
    bytes.truncate(bytes.len() - 30);
    fs::write(&path, &bytes).unwrap();

    let sink = FileSink::open(&path, FileRotation::new()).unwrap();
    let log = AuditLog::new(vec![Box::new(sink)], Redaction::new(), options());
    log.record(call(0));
    drop(log);
    let aside = dir.path("audit.jsonl.1");
    let err = verify(&[aside.clone(), path.clone()]).unwrap_err();
    assert!(
        matches!(&err, VerifyError::Altered { file, line: 5, seq: None, .. } if *file == aside),
        "{err}"
    );
    let verified = verify(std::slice::from_ref(&path)).unwrap();
    assert!(verified.starts_mid_chain);
    assert_eq!((verified.first_seq, verified.records), (4, 2));
    let anchor: Value =
        serde_json::from_str(fs::read_to_string(&path).unwrap().lines().next().unwrap()).unwrap();
    let good: Value = serde_json::from_slice(&lines[3]).unwrap();
    assert_eq!(anchor["kind"], "anchor");
    assert_eq!(anchor["previousFile"], "audit.jsonl.1");
    assert_eq!(anchor["prev"], good["hash"]);
}

#[test]
fn one_changed_byte_anywhere_in_a_record_is_altered_on_its_line() {
    let dir = TempDir::new("byte");
    let path = dir.path("audit.jsonl");
    let lines = chain_file(&path, 6);
    let k = 3;
    for at in 0..=lines[k].len() {
        let mut changed = lines.clone();
        // `at == len` changes the record's newline: it then runs into the next record.
        if at == lines[k].len() {
            let next = changed.remove(k + 1);
            changed[k].push(b' ');
            changed[k].extend_from_slice(&next);
        } else {
            let byte = &mut changed[k][at];
            *byte = if *byte == b'0' { b'1' } else { b'0' };
        }
        write_lines(&path, &changed);
        let err = verify(std::slice::from_ref(&path)).unwrap_err();
        assert!(
            matches!(err, VerifyError::Altered { line, .. } if line == k as u64 + 1),
            "byte {at}: {err}"
        );
    }
}

#[test]
fn deletion_swap_forgery_and_torn_writes_are_each_named() {
    let dir = TempDir::new("tamper");
    let path = dir.path("audit.jsonl");
    let lines = chain_file(&path, 8);
    let check = |lines: &[Vec<u8>], expected: &str| {
        write_lines(&path, lines);
        let err = verify(std::slice::from_ref(&path)).unwrap_err();
        let message = err.to_string();
        assert_eq!(
            message.strip_prefix(&format!("{}: ", path.display())),
            Some(expected)
        );
        err
    };

    let mut removed = lines.clone();
    removed.remove(4);
    let err = check(
        &removed,
        "1 record(s) removed before line 5 (seq 4 expected, found 5)",
    );
    assert!(matches!(
        err,
        VerifyError::Removed {
            line: 5,
            count: 1,
            expected: 4,
            found: 5,
            ..
        }
    ));
    let mut removed = lines.clone();
    removed.drain(2..5);
    check(
        &removed,
        "3 record(s) removed before line 3 (seq 2 expected, found 5)",
    );

    let mut swapped = lines.clone();
    swapped.swap(4, 5);
    let err = check(&swapped, "line 5 (seq 5) is out of order (seq 4 expected)");
    assert!(matches!(
        err,
        VerifyError::Reordered {
            line: 5,
            expected: 4,
            found: 5,
            ..
        }
    ));
    let mut moved = lines.clone();
    let late = moved.remove(2);
    moved.push(late);
    check(&moved, "line 3 (seq 3) is out of order (seq 2 expected)");
    let mut duplicated = lines.clone();
    duplicated.insert(5, lines[3].clone());
    check(
        &duplicated,
        "line 6 (seq 3) is out of order (seq 5 expected)",
    );

    // Record 4 rewritten and re-hashed on the true chain: record 5 no longer follows it.
    let prev: Value = serde_json::from_slice(&lines[3]).unwrap();
    let mut forger = Chain::resume(3, prev["hash"].as_str().unwrap()).unwrap();
    let mut forged = lines.clone();
    forged[4] = forger.seal(br#"{"method":"tools/call","n":4,"v":"forged""#);
    let err = check(
        &forged,
        "line 6 (seq 5) does not follow the line before it: its prev is not that line's hash",
    );
    assert!(matches!(
        err,
        VerifyError::Broken {
            line: 6,
            seq: 5,
            ..
        }
    ));

    let mut torn = lines.clone();
    torn[7].truncate(100);
    write_lines(&path, &torn);
    let mut bytes = fs::read(&path).unwrap();
    bytes.pop();
    fs::write(&path, bytes).unwrap();
    let err = verify(std::slice::from_ref(&path)).unwrap_err();
    assert!(matches!(err, VerifyError::Altered { line: 8, .. }), "{err}");
}

#[test]
fn rotated_files_verify_in_order_and_a_missing_one_is_found() {
    let dir = TempDir::new("rotation");
    let path = dir.path("audit.jsonl");
    let sink = FileSink::open(&path, FileRotation::new().max_bytes(1500).max_files(20)).unwrap();
    let log = AuditLog::new(vec![Box::new(sink)], Redaction::new(), options());
    for n in 0..12 {
        log.record(call(n));
    }
    drop(log);
    let files: Vec<PathBuf> = (1..=20)
        .rev()
        .map(|k| dir.path(&format!("audit.jsonl.{k}")))
        .filter(|p| p.exists())
        .chain([path.clone()])
        .collect();
    assert!(files.len() >= 3, "{files:?}");
    let verified = verify(&files).unwrap();
    assert_eq!(verified.files, files.len());
    assert_eq!(verified.records, 12 + files.len() as u64 - 1);
    assert!(!verified.starts_mid_chain);

    let verified = verify(&files[1..]).unwrap();
    assert!(verified.starts_mid_chain);

    let mut without_middle = files.clone();
    let middle = without_middle.remove(1);
    let err = verify(&without_middle).unwrap_err();
    match err {
        VerifyError::Removed { file, line: 1, .. } => assert_eq!(file, without_middle[1]),
        other => panic!("{other} (removed {})", middle.display()),
    }
    assert!(matches!(verify(&[]), Err(VerifyError::Empty { files: 0 })));
}

/// Says each line it takes on a channel.
struct ChannelSink(mpsc::Sender<Vec<u8>>);

impl AuditSink for ChannelSink {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        let _ = self.0.send(line.to_vec());
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_record_reaches_the_sink_after_the_writer_slept_with_nothing_queued() {
    let (tx, rx) = mpsc::channel();
    let log = AuditLog::new(
        vec![Box::new(ChannelSink(tx))],
        Redaction::new(),
        AuditOptions::new().interval(Duration::from_millis(5)),
    );
    for n in 0..3 {
        // Nothing queued: the writer sleeps until this record wakes it; no flush is asked.
        log.record(call(n));
        let line = rx.recv_timeout(Duration::from_secs(10)).expect("written");
        let line: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(line["seq"], n as u64);
        assert!(rx.try_recv().is_err(), "one record, one line");
    }
}
