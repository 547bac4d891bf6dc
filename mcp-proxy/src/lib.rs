//! # mcp-proxy
//!
//! Planned: the `Aggregator` that composes upstream MCP servers into one server for every
//! host revision (issues 5 and 6). Nothing is implemented yet; see `ARCHITECTURE.md`.
