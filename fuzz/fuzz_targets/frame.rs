#![no_main]
//! `frame`: see `mcp_proxy::fuzzing::frame` for the input layout and the properties checked.

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_proxy::fuzzing::frame(data));
