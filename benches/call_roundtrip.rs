//! A `tools/call` round trip, client → server → client, over the in-memory pair, in
//! the legacy era (2025-11-25) and the modern one (2026-07-28): what the stack costs
//! around a call when no transport I/O is involved.

// criterion_group! and criterion_main! generate undocumented items.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use mcp_client::{Client, ClientOptions, EraChoice, NoHandler};
use mcp_server::Server;
use mcp_types::transport::memory_pair;
use mcp_types::Revision;

fn bench(c: &mut Criterion) {
    let rt = mcp_benches::runtime();
    let args = mcp_benches::echo_args();
    let mut g = c.benchmark_group("tools_call_roundtrip");
    for (name, era) in [
        ("2025-11-25", EraChoice::Legacy(Revision::V2025_11_25)),
        ("2026-07-28", EraChoice::Modern),
    ] {
        let client = rt.block_on(async {
            let (a, b) = memory_pair(64);
            tokio::spawn(async move { Server::new(mcp_examples::echo_tools()).serve(b).await });
            let options = ClientOptions::default().era(era);
            Client::connect(a, NoHandler, options)
                .await
                .expect("connect")
        });
        g.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(client.call_tool("echo", args.clone()))
                    .expect("call")
            });
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
