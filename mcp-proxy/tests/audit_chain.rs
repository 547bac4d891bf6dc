//! The audit trail end to end: records from several threads written by `AuditLog` to a
//! rotating `FileSink`, verified across files; each kind of tampering named exactly; the
//! arguments' secrets kept out of the file's bytes; and the request path's cost measured.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mcp_proxy::audit::{
    verify, AuditLog, AuditOptions, AuditOutcome, AuditRecord, AuditSink, FileRotation, FileSink,
    Redaction, RedactionRule, VerifyError,
};
use serde_json::value::RawValue;
use serde_json::Value;

/// A directory of its own under the system's temporary one, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("the clock is after 1970")
            .as_nanos();
        let dir = std::env::temp_dir().join(format!(
            "mcp-audit-chain-{name}-{}-{nanos}",
            std::process::id()
        ));
        fs::create_dir_all(&dir).expect("temporary directory");
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

/// The trail's files in `dir`, oldest first: `audit.jsonl.N` … `audit.jsonl.1`, `audit.jsonl`.
fn trail(dir: &Path) -> Vec<PathBuf> {
    let mut rotated: Vec<(usize, PathBuf)> = fs::read_dir(dir)
        .expect("the trail's directory")
        .map(|entry| entry.expect("a directory entry").path())
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?;
            let k = name.strip_prefix("audit.jsonl.")?.parse().ok()?;
            Some((k, path))
        })
        .collect();
    rotated.sort_by_key(|(k, _)| std::cmp::Reverse(*k));
    let mut files: Vec<PathBuf> = rotated.into_iter().map(|(_, p)| p).collect();
    files.push(dir.join("audit.jsonl"));
    files
}

fn call(thread: usize, n: usize) -> AuditRecord {
    let mut record = AuditRecord::new("tools/call");
    record.session = Some(format!("session-{thread}"));
    record.request = Some(n.to_string());
    record.name = Some("fs/read_file".into());
    record.upstream = Some("fs".into());
    record.upstream_name = Some("read_file".into());
    record.outcome = if n % 7 == 0 {
        AuditOutcome::IsError
    } else {
        AuditOutcome::Ok
    };
    record.duration = Duration::from_micros(n as u64 * 13);
    record.request_bytes = 120;
    record.response_bytes = 4000;
    let arguments = format!(r#"{{"path":"/data/{thread}/{n}","token":"tok-{thread}-{n}"}}"#);
    record.arguments = Some(RawValue::from_string(arguments).expect("JSON arguments"));
    record
}

fn lines_of(path: &Path) -> Vec<Vec<u8>> {
    let bytes = fs::read(path).expect("a trail file");
    let mut lines: Vec<Vec<u8>> = bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
    assert_eq!(
        lines.pop(),
        Some(Vec::new()),
        "{} ends with a newline",
        path.display()
    );
    lines
}

fn write_lines(path: &Path, lines: &[Vec<u8>]) {
    let mut bytes = lines.join(&b'\n');
    bytes.push(b'\n');
    fs::write(path, bytes).expect("a tampered copy");
}

fn seq_of(line: &[u8]) -> u64 {
    let record: Value = serde_json::from_slice(line).expect("a JSON record");
    record["seq"].as_u64().expect("a seq")
}

/// The trail copied to `to`, with `change` applied to the lines of its file `index`.
fn tampered(
    files: &[PathBuf],
    to: &TempDir,
    index: usize,
    change: impl FnOnce(&mut Vec<Vec<u8>>),
) -> Vec<PathBuf> {
    let copies: Vec<PathBuf> = files
        .iter()
        .map(|file| {
            let copy = to.path(
                file.file_name()
                    .and_then(|n| n.to_str())
                    .expect("a file name"),
            );
            fs::copy(file, &copy).expect("a copy of the trail");
            copy
        })
        .collect();
    let mut lines = lines_of(&copies[index]);
    change(&mut lines);
    write_lines(&copies[index], &lines);
    copies
}

#[test]
fn records_from_four_threads_rotate_verify_and_betray_tampering() {
    let dir = TempDir::new("threads");
    let rotation = FileRotation::new().max_bytes(32 * 1024).max_files(1000);
    let sink = FileSink::open(dir.path("audit.jsonl"), rotation).unwrap();
    let log = AuditLog::new(vec![Box::new(sink)], Redaction::new(), AuditOptions::new());
    std::thread::scope(|scope| {
        for thread in 0..4 {
            let log = log.clone();
            scope.spawn(move || {
                for n in 0..500 {
                    log.record(call(thread, n));
                }
            });
        }
    });
    log.flush();
    assert_eq!(log.dropped(), 0);

    let files = trail(&dir.0);
    assert!(files.len() >= 5, "{} files: rotation expected", files.len());
    let verified = verify(&files).unwrap();
    let anchors = files.len() as u64 - 1;
    assert_eq!(verified.files, files.len());
    assert_eq!(verified.records, 2000 + anchors);
    assert_eq!(
        (verified.first_seq, verified.last_seq),
        (0, 2000 + anchors - 1)
    );
    assert_eq!(verified.gaps, 0);
    assert!(!verified.starts_mid_chain);
    let text: String = files
        .iter()
        .map(|f| fs::read_to_string(f).unwrap())
        .collect();
    assert!(!text.contains("tok-"), "a token reached the file");
    for file in &files {
        assert!(
            fs::metadata(file).unwrap().len() <= 32 * 1024,
            "{}",
            file.display()
        );
    }
    for file in &files[1..] {
        let first: Value = serde_json::from_slice(&lines_of(file)[0]).unwrap();
        assert_eq!(first["kind"], "anchor", "{}", file.display());
    }

    // Tampering with the second oldest file, lines 3 and 4 (1-based).
    let (index, line) = (1, 3);
    let original = lines_of(&files[index]);
    let seq = seq_of(&original[line - 1]);

    let copy = TempDir::new("byte");
    let copies = tampered(&files, &copy, index, |lines| {
        let value = lines[line - 1].iter().position(|b| *b == b'/').unwrap();
        lines[line - 1][value + 1] ^= 0x01;
    });
    match verify(&copies).unwrap_err() {
        VerifyError::Altered {
            file,
            line: l,
            seq: s,
            ..
        } => {
            assert_eq!(
                (file, l, s),
                (copies[index].clone(), line as u64, Some(seq))
            );
        }
        other => panic!("{other}"),
    }

    let copy = TempDir::new("delete");
    let copies = tampered(&files, &copy, index, |lines| {
        lines.remove(line - 1);
    });
    let err = verify(&copies).unwrap_err();
    let expected = format!(
        "{}: 1 record(s) removed before line {line} (seq {seq} expected, found {})",
        copies[index].display(),
        seq + 1
    );
    assert_eq!(err.to_string(), expected);
    assert!(matches!(err, VerifyError::Removed { count: 1, .. }));

    let copy = TempDir::new("swap");
    let copies = tampered(&files, &copy, index, |lines| lines.swap(line - 1, line));
    match verify(&copies).unwrap_err() {
        VerifyError::Reordered {
            file,
            line: l,
            expected,
            found,
        } => {
            assert_eq!((file, l), (copies[index].clone(), line as u64));
            assert_eq!((expected, found), (seq, seq + 1));
        }
        other => panic!("{other}"),
    }

    let copy = TempDir::new("middle");
    let mut without_middle = tampered(&files, &copy, index, |_| {});
    without_middle.remove(index);
    match verify(&without_middle).unwrap_err() {
        VerifyError::Removed { file, line: 1, .. } => assert_eq!(file, without_middle[index]),
        other => panic!("{other}"),
    }
}

#[test]
fn secrets_never_reach_the_file_and_the_digest_is_of_the_exact_bytes() {
    let dir = TempDir::new("redaction");
    let path = dir.path("audit.jsonl");
    let sink = FileSink::open(&path, FileRotation::new()).unwrap();
    let redaction = Redaction::new()
        .pointer("/query/sql")
        .rule(RedactionRule::new().upstream("db").member("user"));
    let log = AuditLog::new(vec![Box::new(sink)], redaction, AuditOptions::new());
    // Spaced as a host might send it: the digest is of these bytes, not a re-serialization.
    let raw = r#"{"user":"a", "password":"p1","nested":{"token":"t1","list":[{"api_key":"k"}]},
        "path":{"secret_code":"x"},"query":{"sql":"select pointed_secret","limit":5}}"#;
    for upstream in ["fs", "db"] {
        let mut record = AuditRecord::new("tools/call");
        record.upstream = Some(upstream.into());
        record.name = Some(format!("{upstream}/run"));
        record.arguments = Some(RawValue::from_string(raw.to_owned()).unwrap());
        log.record(record);
    }
    log.flush();

    let bytes = fs::read_to_string(&path).unwrap();
    for secret in [r#""p1""#, r#""t1""#, r#""k""#, r#""x""#, "pointed_secret"] {
        assert!(
            !bytes.contains(secret),
            "{secret} reached the file: {bytes}"
        );
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, raw.as_bytes());
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    let records: Vec<Value> = bytes
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2);
    for record in &records {
        assert_eq!(record["argumentsDigest"], format!("sha256:{hex}"));
        let arguments = &record["arguments"];
        assert_eq!(arguments["password"], "[REDACTED]");
        assert_eq!(arguments["nested"]["token"], "[REDACTED]");
        assert_eq!(arguments["nested"]["list"][0]["api_key"], "[REDACTED]");
        assert_eq!(arguments["path"]["secret_code"], "[REDACTED]");
        assert_eq!(
            arguments["query"],
            serde_json::json!({"sql": "[REDACTED]", "limit": 5})
        );
    }
    // The rule for upstream `db` redacts `user` in its calls only.
    assert_eq!(records[0]["upstream"], "fs");
    assert_eq!(records[0]["arguments"]["user"], "a");
    assert_eq!(records[1]["upstream"], "db");
    assert_eq!(records[1]["arguments"]["user"], "[REDACTED]");
    verify(&[path]).unwrap();
}

/// Takes every line and keeps none: the writer's cost without a disk's.
struct Discard;

impl AuditSink for Discard {
    fn write_line(&mut self, _line: &[u8]) -> io::Result<()> {
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Time spent in `AuditLog::record` by `threads` threads recording `per_thread` records
/// each, timed in chunks of `chunk` with `pause` between chunks (not timed): the mean and
/// the median chunk's time per call (the median is what preemption on a busy machine
/// leaves alone), and the records dropped.
fn time_record(
    threads: usize,
    per_thread: usize,
    chunk: usize,
    pause: Duration,
) -> (f64, f64, u64) {
    let log = AuditLog::new(
        vec![Box::new(Discard)],
        Redaction::new(),
        AuditOptions::new(),
    );
    let mut chunks: Vec<Duration> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let log = log.clone();
                scope.spawn(move || {
                    let mut chunks = Vec::new();
                    for first in (0..per_thread).step_by(chunk) {
                        // Built just before, as the request path builds its record.
                        let batch: Vec<AuditRecord> = (first..per_thread.min(first + chunk))
                            .map(|n| call(thread, n))
                            .collect();
                        let start = Instant::now();
                        for record in batch {
                            log.record(record);
                        }
                        chunks.push(start.elapsed());
                        std::thread::sleep(pause);
                    }
                    chunks
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a recording thread"))
            .collect()
    });
    log.flush();
    let calls = (threads * per_thread) as f64;
    let mean = chunks.iter().sum::<Duration>().as_nanos() as f64 / calls;
    chunks.sort();
    let median = chunks[chunks.len() / 2].as_nanos() as f64 / chunk as f64;
    (mean, median, log.dropped())
}

/// Not an assertion: what recording costs the request path, printed for whoever wires the
/// log in (`cargo test --release --test audit_chain cost -- --nocapture`).
#[test]
fn cost_of_recording_a_call() {
    const N: usize = 100_000;
    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let cases = [
        (
            "steady, chunks of 500 2 ms apart",
            1,
            N,
            500,
            Duration::from_millis(2),
        ),
        ("burst, 1 thread", 1, N, 1000, Duration::ZERO),
        ("burst, 4 threads", 4, N / 4, 1000, Duration::ZERO),
    ];
    for (label, threads, per_thread, chunk, pause) in cases {
        let (mean, median, dropped) = time_record(threads, per_thread, chunk, pause);
        println!(
            "AuditLog::record ({build} build, {label}, {N} records): mean {mean:.0} ns, \
             median chunk {median:.0} ns per call; {dropped} dropped"
        );
    }
}
