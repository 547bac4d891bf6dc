#![no_main]
//! `sse`: see `mcp_proxy::fuzzing::sse` for the input layout and the properties checked.

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_proxy::fuzzing::sse(data));
