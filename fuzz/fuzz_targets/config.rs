#![no_main]
//! `config`: see `mcp_proxy::fuzzing::config` for the input layout and the properties checked.

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_proxy::fuzzing::config(data));
