//! # mcp-client
//!
//! Planned: an MCP client for both protocol eras over any `Transport` (issue 3). Nothing is
//! implemented yet; see `ARCHITECTURE.md` for where it fits.
