//! What each MCP revision carries.
