#![no_main]
//! `translate`: see `mcp_proxy::fuzzing::translate` for the input layout and the properties checked.

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_proxy::fuzzing::translate(data));
