//! Translates one JSON-RPC message between MCP revisions.
//!
//! ```text
//! cargo run --example translate -- --from 2026-07-28 --to 2024-11-05 --answers tools/call \
//!     < examples/data/call-tool-result-2026.json
//! ```

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = mcp_examples::translate_main(
        &args,
        &mut std::io::stdin(),
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    );
    std::process::exit(code);
}
