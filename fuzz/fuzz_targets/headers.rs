#![no_main]
//! `headers`: see `mcp_proxy::fuzzing::headers` for the input layout and the properties checked.

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_proxy::fuzzing::headers(data));
