//! `mcp-gateway`: see `mcp_proxy::cli` (`cargo install mcp-proxy --features cli`).

fn main() -> std::process::ExitCode {
    mcp_proxy::cli::main(None)
}
