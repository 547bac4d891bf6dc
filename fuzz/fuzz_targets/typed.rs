#![no_main]
//! `typed`: see `mcp_proxy::fuzzing::typed` for the input layout and the properties checked.

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_proxy::fuzzing::typed(data));
