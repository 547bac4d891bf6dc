//! The fuzz targets' kept inputs, run in `cargo test`: every file of `fuzz/corpus/<target>/`
//! (a curated corpus) and `fuzz/regressions/<target>/` (inputs that once failed) goes
//! through the same check the fuzz target runs (`mcp_proxy::fuzzing`), which panics when a
//! property fails.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use mcp_proxy::fuzzing::TARGETS;

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

#[test]
fn every_kept_fuzz_input_passes_its_target() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut failures = Vec::new();
    let mut ran = 0;
    for (name, check) in TARGETS {
        let corpus = files(&fuzz.join("corpus").join(name));
        assert!(!corpus.is_empty(), "no corpus for fuzz target `{name}`");
        let regressions = files(&fuzz.join("regressions").join(name));
        for path in corpus.iter().chain(&regressions) {
            let data = std::fs::read(path).expect("read a kept input");
            if let Err(e) = catch_unwind(AssertUnwindSafe(|| check(&data))) {
                let why = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                failures.push(format!("{name}: {}: {why}", path.display()));
            }
            ran += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{ran} inputs, failing:\n{}",
        failures.join("\n")
    );
}
