//! Checking an audit trail: every line's hash against its bytes, and the chain from each
//! line to the next, across rotated files given oldest first.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::chain::{self, Link, GENESIS};

/// What a verified trail holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Verified {
    /// Files read.
    pub files: usize,
    /// Lines verified: calls, anchors and gaps.
    pub records: u64,
    /// Records the writer reported dropped (the sum of its `gap` records).
    pub gaps: u64,
    /// The first line's `seq`.
    pub first_seq: u64,
    /// The last line's `seq`.
    pub last_seq: u64,
    /// The last line's `hash`: keep it to detect a later truncation of the trail.
    pub head: String,
    /// The first line continues a chain whose start is not among the files (rotated away
    /// and deleted): what came before it cannot be checked.
    pub starts_mid_chain: bool,
}

/// Why a trail does not verify. Lines are numbered from 1 within their file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// A line whose hash does not match its bytes, or that does not parse.
    #[error("{}: line {line}{}: altered ({reason})", file.display(), seq_note(*seq))]
    Altered {
        /// The file.
        file: PathBuf,
        /// The line.
        line: u64,
        /// Its `seq`, when that much of it could be read.
        seq: Option<u64>,
        /// What is wrong with it.
        reason: String,
    },
    /// Lines missing: this line is intact, but its `seq` skips ahead and its `prev` is not
    /// the previous line's hash.
    #[error(
        "{}: {count} record(s) removed before line {line} (seq {expected} expected, found {found})",
        file.display()
    )]
    Removed {
        /// The file.
        file: PathBuf,
        /// The line after the hole.
        line: u64,
        /// How many `seq` numbers are missing.
        count: u64,
        /// The `seq` that should be here.
        expected: u64,
        /// The `seq` that is.
        found: u64,
    },
    /// Lines out of order: a `seq` going backwards, or one ahead of a record found later.
    #[error(
        "{}: line {line} (seq {found}) is out of order (seq {expected} expected)",
        file.display()
    )]
    Reordered {
        /// The file.
        file: PathBuf,
        /// The first out-of-place line.
        line: u64,
        /// The `seq` that should be here.
        expected: u64,
        /// The `seq` that is.
        found: u64,
    },
    /// A line with an intact hash and the right `seq` whose `prev` is not the previous
    /// line's hash: a record replaced by a re-hashed forgery (or a chain restarted).
    #[error(
        "{}: line {line} (seq {seq}) does not follow the line before it: its prev is not that line's hash",
        file.display()
    )]
    Broken {
        /// The file.
        file: PathBuf,
        /// The line.
        line: u64,
        /// Its `seq`.
        seq: u64,
    },
    /// A file could not be read.
    #[error("{}: {source}", file.display())]
    Io {
        /// The file.
        file: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The files hold no line at all.
    #[error("no audit record in the {files} file(s) given")]
    Empty {
        /// Files read.
        files: usize,
    },
}

fn seq_note(seq: Option<u64>) -> String {
    seq.map(|s| format!(" (seq {s})")).unwrap_or_default()
}

/// The members a verifier reads; the rest are skipped. Deserializing them as well as reading
/// the tail refuses a line that repeats `seq`, `prev` or `hash` earlier on.
#[derive(Deserialize)]
struct Members {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    dropped: Option<u64>,
    seq: u64,
    prev: String,
    hash: String,
}

/// Where the walk is.
struct Walk {
    last: Option<(u64, String)>,
    first_seq: u64,
    records: u64,
    gaps: u64,
    starts_mid_chain: bool,
}

/// Verifies the trail in `files`, oldest first (`audit.jsonl.2`, `audit.jsonl.1`,
/// `audit.jsonl`). Stops at the first fault.
pub fn verify(files: &[PathBuf]) -> Result<Verified, VerifyError> {
    let mut walk = Walk {
        last: None,
        first_seq: 0,
        records: 0,
        gaps: 0,
        starts_mid_chain: false,
    };
    for (index, file) in files.iter().enumerate() {
        let bytes = fs::read(file).map_err(|source| VerifyError::Io {
            file: file.clone(),
            source,
        })?;
        let mut offset = 0;
        for (n, line) in bytes.split(|b| *b == b'\n').enumerate() {
            offset += line.len() + 1;
            // A blank line holds no record; the chain still covers every record around it.
            if line.is_empty() {
                continue;
            }
            let number = n as u64 + 1;
            let link = check(line).map_err(|reason| VerifyError::Altered {
                file: file.clone(),
                line: number,
                seq: chain::parse_link(line).ok().map(|l| l.seq),
                reason,
            })?;
            if let Some((seq, hash)) = &walk.last {
                let later = || {
                    let rest = bytes.get(offset..).unwrap_or_default();
                    seq_appears_later(seq + 1, rest, &files[index + 1..])
                };
                follows(*seq, hash, &link.0, later).map_err(|fault| fault.at(file, number))?;
            } else {
                walk.first_seq = link.0.seq;
                walk.starts_mid_chain = link.0.seq != 0 || link.0.prev != GENESIS.as_bytes();
            }
            walk.records += 1;
            walk.gaps += link.1;
            walk.last = Some((link.0.seq, link.0.hash_str().to_owned()));
        }
    }
    match walk.last {
        Some((last_seq, head)) => Ok(Verified {
            files: files.len(),
            records: walk.records,
            gaps: walk.gaps,
            first_seq: walk.first_seq,
            last_seq,
            head,
            starts_mid_chain: walk.starts_mid_chain,
        }),
        None => Err(VerifyError::Empty { files: files.len() }),
    }
}

/// A line's chain members, checked against its bytes, and the records it says were dropped.
fn check(line: &[u8]) -> Result<(Link<'_>, u64), String> {
    let link = chain::check_line(line).map_err(str::to_owned)?;
    let members: Members =
        serde_json::from_slice(line).map_err(|e| format!("not a JSON record: {e}"))?;
    if members.seq != link.seq
        || members.prev.as_bytes() != link.prev
        || members.hash.as_bytes() != link.hash
    {
        return Err("its members do not match its chain".into());
    }
    let dropped = match members.kind.as_deref() {
        Some("gap") => members.dropped.unwrap_or(0),
        _ => 0,
    };
    Ok((link, dropped))
}

/// A fault found between two lines, before its place is known.
enum Fault {
    Removed { expected: u64, found: u64 },
    Reordered { expected: u64, found: u64 },
    Broken { seq: u64 },
}

impl Fault {
    fn at(self, file: &Path, line: u64) -> VerifyError {
        let file = file.to_path_buf();
        match self {
            Fault::Removed { expected, found } => VerifyError::Removed {
                file,
                line,
                count: found - expected,
                expected,
                found,
            },
            Fault::Reordered { expected, found } => VerifyError::Reordered {
                file,
                line,
                expected,
                found,
            },
            Fault::Broken { seq } => VerifyError::Broken { file, line, seq },
        }
    }
}

/// Whether `link` follows the line with `seq` and `hash`. `later` says whether the `seq`
/// expected here appears further on: a record displaced, not removed.
fn follows(
    seq: u64,
    hash: &str,
    link: &Link<'_>,
    later: impl FnOnce() -> bool,
) -> Result<(), Fault> {
    let expected = seq.saturating_add(1);
    let chained = link.prev == hash.as_bytes();
    let found = link.seq;
    if found == expected {
        return if chained {
            Ok(())
        } else {
            Err(Fault::Broken { seq: found })
        };
    }
    if found < expected || later() {
        return Err(Fault::Reordered { expected, found });
    }
    if chained {
        // Chained on its predecessor yet numbered past the next seq: hashes intact, so
        // written that way; the chain is not one the writer makes.
        return Err(Fault::Broken { seq: found });
    }
    Err(Fault::Removed { expected, found })
}

/// Whether a line numbered `seq` is in `rest` (of the current file) or in a later file.
/// Only read when the chain already failed, so its cost does not matter.
fn seq_appears_later(seq: u64, rest: &[u8], later_files: &[PathBuf]) -> bool {
    let holds = |bytes: &[u8]| {
        bytes
            .split(|b| *b == b'\n')
            .any(|line| chain::parse_link(line).is_ok_and(|l| l.seq == seq))
    };
    holds(rest)
        || later_files
            .iter()
            .any(|file| fs::read(file).is_ok_and(|bytes| holds(&bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::chain::Chain;

    fn link(chain: &mut Chain, body: &str) -> Vec<u8> {
        chain.seal(body.as_bytes())
    }

    fn parsed(line: &[u8]) -> Link<'_> {
        chain::check_line(line).unwrap()
    }

    #[test]
    fn classification_of_one_step() {
        let mut chain = Chain::new();
        let a = link(&mut chain, r#"{"n":0"#);
        let b = link(&mut chain, r#"{"n":1"#);
        let c = link(&mut chain, r#"{"n":2"#);
        let (a, b, c) = (parsed(&a), parsed(&b), parsed(&c));
        assert!(follows(a.seq, a.hash_str(), &b, || false).is_ok());
        assert!(matches!(
            follows(a.seq, a.hash_str(), &c, || false),
            Err(Fault::Removed {
                expected: 1,
                found: 2
            })
        ));
        assert!(matches!(
            follows(a.seq, a.hash_str(), &c, || true),
            Err(Fault::Reordered {
                expected: 1,
                found: 2
            })
        ));
        assert!(matches!(
            follows(c.seq, c.hash_str(), &b, || false),
            Err(Fault::Reordered {
                expected: 3,
                found: 1
            })
        ));
        let mut forger = Chain::resume(0, GENESIS).unwrap();
        let forged = link(&mut forger, r#"{"n":"forged""#);
        assert!(matches!(
            follows(a.seq, a.hash_str(), &parsed(&forged), || false),
            Err(Fault::Broken { seq: 1 })
        ));
    }

    #[test]
    fn a_gap_counts_its_dropped_records() {
        let mut chain = Chain::new();
        let gap = link(&mut chain, r#"{"kind":"gap","dropped":7"#);
        assert_eq!(check(&gap).unwrap().1, 7);
        let call = link(&mut chain, r#"{"method":"tools/call","dropped":7"#);
        assert_eq!(check(&call).unwrap().1, 0);
    }

    #[test]
    fn a_repeated_chain_member_does_not_parse() {
        let mut chain = Chain::new();
        let line = link(&mut chain, r#"{"seq":5"#);
        let reason = check(&line).unwrap_err();
        assert!(reason.contains("not a JSON record"), "{reason}");
    }

    #[test]
    fn messages_name_file_line_and_seq() {
        let file = PathBuf::from("audit.jsonl");
        let removed = Fault::Removed {
            expected: 4,
            found: 6,
        }
        .at(&file, 5);
        assert_eq!(
            removed.to_string(),
            "audit.jsonl: 2 record(s) removed before line 5 (seq 4 expected, found 6)"
        );
        let altered = VerifyError::Altered {
            file: file.clone(),
            line: 3,
            seq: Some(2),
            reason: "its hash does not match its bytes".into(),
        };
        assert_eq!(
            altered.to_string(),
            "audit.jsonl: line 3 (seq 2): altered (its hash does not match its bytes)"
        );
        let reordered = Fault::Reordered {
            expected: 4,
            found: 5,
        }
        .at(&file, 5);
        assert_eq!(
            reordered.to_string(),
            "audit.jsonl: line 5 (seq 5) is out of order (seq 4 expected)"
        );
    }
}
