//! Links the gateway example (what README's first command runs and the benchmarks
//! measure) with its start-up and relay code side by side. The build script of
//! `examples/`, kept here with the benchmark tooling that writes its list: the library
//! crates' builds do not run it, and the `mcp-gateway` binary of `cargo install` is
//! linked as usual.
//!
//! A process's memory is mostly the pages of its binary it has touched, and the kernel
//! maps file pages 64 KiB around each fault: the 800-odd functions a gateway runs to
//! start and to relay a call, scattered over 7.9 MiB of code, kept about 5 MiB of it
//! resident. `link-order.txt` lists those functions (see `benches/link-order/generate.sh`, which
//! writes it from a trace of the running gateway); the linker (LLD, Rust's default on
//! x86_64 Linux since 1.90) puts them first, and the gateway's peak RSS relaying calls
//! fell from 8.7 to 5.2 MiB when this was added; measured again in `benches/RESULTS.md`
//! (about 6 MiB with the list, 11 MiB without).
//! A function the list names that is not in the binary is skipped, so a stale list costs
//! memory, never correctness. Release builds only, with the toolchain's own LLD (a
//! `-fuse-ld`, a `linker` in `RUSTFLAGS` or a toolchain without LLD turn it off; so does
//! `MCP_LINK_ORDER=0`, which a `linker` set in `.cargo/config.toml` needs, since this
//! script cannot see it).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=../benches/link-order/build.rs");
    println!("cargo:rerun-if-env-changed=MCP_LINK_ORDER");
    let Some(list) = order_file() else {
        return;
    };
    println!("cargo:rerun-if-changed={}", list.display());
    if !applies() {
        return;
    }
    for arg in [
        format!("-Wl,--symbol-ordering-file={}", list.display()),
        "-Wl,--no-warn-symbol-ordering".to_owned(),
    ] {
        println!("cargo:rustc-link-arg-examples={arg}");
    }
}

/// `link-order.txt` beside this script, seen from the examples' folder.
fn order_file() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    Some(dir.join("../benches/link-order/link-order.txt")).filter(|p| p.is_file())
}

/// A release build for x86_64 Linux, linked by LLD.
fn applies() -> bool {
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    if env("MCP_LINK_ORDER") == "0"
        || env("PROFILE") != "release"
        || env("TARGET") != "x86_64-unknown-linux-gnu"
        || std::env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some()
    {
        return false;
    }
    let flags = env("CARGO_ENCODED_RUSTFLAGS");
    if flags.contains("linker")
        || flags.contains("link-self-contained")
        || flags.contains("fuse-ld")
    {
        return false;
    }
    lld_by_default() && bundled_lld()
}

/// Whether this toolchain carries the LLD it links with (a distribution's rustc may not,
/// and then links with the system's linker, which does not take the option).
fn bundled_lld() -> bool {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(out) = Command::new(rustc).args(["--print", "sysroot"]).output() else {
        return false;
    };
    let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    sysroot
        .join("lib/rustlib/x86_64-unknown-linux-gnu/bin/gcc-ld/ld.lld")
        .is_file()
}

/// Whether this rustc links with LLD by default (1.90 and later).
fn lld_by_default() -> bool {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("-V").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.split_whitespace().nth(1).unwrap_or_default();
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (1, 90)
}
