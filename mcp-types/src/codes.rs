//! JSON-RPC and MCP error codes as named constants.

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters (also: unknown tool, stale cursor).
pub const INVALID_PARAMS: i64 = -32602;
/// Internal JSON-RPC error.
pub const INTERNAL_ERROR: i64 = -32603;
/// Implementation-defined server error: the server is too busy for the request now
/// (too many requests in flight, every session taken); the client may retry later.
pub const SERVER_BUSY: i64 = -32000;
/// Implementation-defined server error: a rate limit was reached; `data` says which
/// (`limit`, `key`) and when to retry (`retryAfterMs`). Over HTTP, where the request
/// is answered alone, it travels with status `429` and `Retry-After`.
pub const RATE_LIMITED: i64 = -32029;
/// Legacy revisions: the requested resource does not exist (`resources/read`).
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// 2025-11-25: the request needs a URL-mode elicitation first (`URLElicitationRequiredError`).
pub const URL_ELICITATION_REQUIRED: i64 = -32042;
/// 2026-07-28: an HTTP header does not match the request body (`HeaderMismatchError`).
pub const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28: the request needs a client capability it did not declare.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// 2026-07-28: the requested protocol version is not supported; `data` carries `{supported, requested}`.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
