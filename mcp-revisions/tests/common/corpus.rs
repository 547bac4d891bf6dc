//! The translation corpus: every fixture of `mcp-types` (one folder per revision up to
//! 2025-11-25) and the official 2026-07-28 examples, as `(revision, definition, file)`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use mcp_types::Revision;

/// Every corpus file, sorted; `spec` is the official spec folder (for the 2026 examples).
pub fn corpora(spec: &Path) -> Vec<(Revision, String, PathBuf)> {
    let mut out = Vec::new();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp-types/tests/fixtures");
    let mut dirs: Vec<(Revision, PathBuf)> = Revision::ALL[..4]
        .iter()
        .map(|r| (*r, fixtures.join(r.as_str())))
        .collect();
    dirs.push((Revision::V2026_07_28, spec.join("2026-07-28/examples")));
    for (rev, dir) in dirs {
        for ty in std::fs::read_dir(&dir).expect("corpus") {
            let ty = ty.expect("entry").path();
            let def = ty.file_name().expect("name").to_string_lossy().into_owned();
            for f in std::fs::read_dir(&ty).expect("type folder") {
                out.push((rev, def.clone(), f.expect("entry").path()));
            }
        }
    }
    out.sort();
    out
}
