//! # mcp-server
//!
//! Planned: a dual-era MCP server over any `Transport` (issue 3). Nothing is implemented
//! yet; see `ARCHITECTURE.md` for where it fits.
