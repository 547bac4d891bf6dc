//! The wire model on a large list: a 1,000-tool `tools/list` result with every
//! optional member set.
//!
//! - `envelope`: read the JSON-RPC envelope and write it back (what a relay pays when no
//!   policy touches the payload).
//! - `typed`: decode the result into `ListToolsResult` and encode it again.
//! - `to_2024_11_05`: translate the result from 2025-11-25 to 2024-11-05, bytes to bytes
//!   through `Value`; `to_2024_11_05_raw`: the same on the raw text (`result_raw`), as a
//!   relay holding the result's `RawValue` does it.
//!
//! And the gateway's hot path on an ordinary answer: a 1 KiB text-only `tools/call`
//! result from a 2025-11-25 upstream translated for a 2025-06-18 host and a 2026-07-28
//! host (`call_result_1k`), through `Value` (`*/value`) and raw (`*/raw`).

// criterion_group! and criterion_main! generate undocumented items.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use mcp_benches::tools_list_result;
use mcp_revisions::Translator;
use mcp_types::protocol::ListToolsResult;
use mcp_types::{Message, Revision};
use serde_json::value::RawValue;
use serde_json::{json, Value};

fn bench(c: &mut Criterion) {
    let result = tools_list_result(1000);
    let result_bytes = serde_json::to_vec(&result).expect("encode");
    let message =
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "result": result})).expect("encode");
    let mut g = c.benchmark_group("tools_list_1000");
    g.throughput(Throughput::Bytes(result_bytes.len() as u64));
    g.bench_function("envelope", |b| {
        b.iter(|| Message::parse(&message).expect("parse").to_bytes())
    });
    g.bench_function("typed", |b| {
        b.iter(|| {
            let typed: ListToolsResult = serde_json::from_slice(&result_bytes).expect("decode");
            serde_json::to_vec(&typed).expect("encode")
        })
    });
    let translator = Translator::new(Revision::V2025_11_25, Revision::V2024_11_05);
    g.bench_function("to_2024_11_05", |b| {
        b.iter_batched(
            || (),
            |()| {
                let v: Value = serde_json::from_slice(&result_bytes).expect("decode");
                let out = translator.result("tools/list", v).expect("translate");
                serde_json::to_vec(&out).expect("encode")
            },
            BatchSize::SmallInput,
        )
    });
    let raw_result =
        RawValue::from_string(String::from_utf8(result_bytes.clone()).expect("utf8")).expect("raw");
    g.bench_function("to_2024_11_05_raw", |b| {
        b.iter(|| {
            let out = translator
                .result_raw("tools/list", &raw_result)
                .expect("translate");
            out.get().len()
        })
    });
    g.finish();
    call_result_1k(c);
}

/// A `tools/call` result of one text block, about 1 KiB on the wire.
fn call_result_1k_bytes() -> Vec<u8> {
    let line = "Order 1042: 3 x \"blue widget\" shipped to Lisbon, arriving Tuesday.\n";
    let text: String = line.repeat(1000 / line.len() + 1);
    serde_json::to_vec(&json!({"content": [{"type": "text", "text": text}], "isError": false}))
        .expect("encode")
}

fn call_result_1k(c: &mut Criterion) {
    let bytes = call_result_1k_bytes();
    let mut g = c.benchmark_group("call_result_1k");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    for to in [Revision::V2025_06_18, Revision::V2026_07_28] {
        let translator = Translator::new(Revision::V2025_11_25, to);
        g.bench_function(format!("to_{}/value", to.as_str()), |b| {
            b.iter(|| {
                let v: Value = serde_json::from_slice(&bytes).expect("decode");
                let out = translator.result("tools/call", v).expect("translate");
                serde_json::to_vec(&out).expect("encode")
            })
        });
        let raw =
            RawValue::from_string(String::from_utf8(bytes.clone()).expect("utf8")).expect("raw");
        g.bench_function(format!("to_{}/raw", to.as_str()), |b| {
            b.iter(|| {
                let out = translator
                    .result_raw("tools/call", &raw)
                    .expect("translate");
                out.get().len()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
