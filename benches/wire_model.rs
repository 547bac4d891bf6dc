//! The wire model on a large list: a 1,000-tool `tools/list` result with every
//! optional member set.
//!
//! - `envelope`: read the JSON-RPC envelope and write it back (what a relay pays when no
//!   policy touches the payload).
//! - `typed`: decode the result into `ListToolsResult` and encode it again.
//! - `to_2024_11_05`: translate the result from 2025-11-25 to 2024-11-05, bytes to bytes.

// criterion_group! and criterion_main! generate undocumented items.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use mcp_benches::tools_list_result;
use mcp_revisions::Translator;
use mcp_types::protocol::ListToolsResult;
use mcp_types::{Message, Revision};
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
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
