//! The aggregator's costs:
//! - `call/direct` vs `call/through_aggregator`: one `tools/call` of the echo tool,
//!   host → server in-memory, versus host → gateway → upstream, both in-memory and 2026;
//! - `call/through_raw_relay`: the same call through a relay that moves frames between the
//!   two connections untouched (no parsing of payloads): the floor a gateway is held to;
//! - `tools_list_10000_to_2024_11_05`: an aggregated 10,000-tool `tools/list` result
//!   translated for a 2024-11-05 host, bytes to bytes.

// criterion_group! and criterion_main! generate undocumented items.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mcp_client::{Client, ClientOptions, EraChoice, NoHandler};
use mcp_proxy::{Aggregator, UpstreamConfig, UpstreamTransport};
use mcp_revisions::Translator;
use mcp_server::Server;
use mcp_types::transport::{memory_pair, Incoming, Transport};
use mcp_types::Revision;
use serde_json::Value;

fn bench(c: &mut Criterion) {
    let rt = mcp_benches::runtime();
    let args = mcp_benches::echo_args();
    let options = || ClientOptions::default().era(EraChoice::Modern);
    let (direct, gateway, relayed) = rt.block_on(async {
        let (a, b) = memory_pair(64);
        tokio::spawn(async move { Server::new(mcp_examples::echo_tools()).serve(b).await });
        let direct = Client::connect(a, NoHandler, options())
            .await
            .expect("direct");
        let upstream = UpstreamConfig::new(
            "echo",
            UpstreamTransport::InProcess(Server::new(mcp_examples::echo_tools())),
        )
        .trusted(true);
        let agg = Aggregator::start(vec![upstream], Default::default())
            .await
            .expect("aggregator");
        let (a, b) = memory_pair(64);
        tokio::spawn(async move { Server::new(agg).serve(b).await });
        let gateway = Client::connect(a, NoHandler, options())
            .await
            .expect("through the aggregator");
        // The raw relay: frames from the host go to the upstream as they are, and back.
        let (host_end, relay_front) = memory_pair(64);
        let (relay_back, upstream_end) = memory_pair(64);
        tokio::spawn(async move {
            Server::new(mcp_examples::echo_tools())
                .serve(upstream_end)
                .await
        });
        let front = std::sync::Arc::new(relay_front);
        let back = std::sync::Arc::new(relay_back);
        for (from, to) in [(front.clone(), back.clone()), (back, front)] {
            tokio::spawn(async move {
                while let Ok(Incoming::Frame(f)) = from.recv().await {
                    if to.send(f).await.is_err() {
                        break;
                    }
                }
            });
        }
        let relayed = Client::connect(host_end, NoHandler, options())
            .await
            .expect("through the raw relay");
        (direct, gateway, relayed)
    });
    let mut g = c.benchmark_group("call");
    g.bench_function("direct", |b| {
        b.iter(|| {
            rt.block_on(direct.call_tool("echo", args.clone()))
                .expect("call")
        })
    });
    g.bench_function("through_raw_relay", |b| {
        b.iter(|| {
            rt.block_on(relayed.call_tool("echo", args.clone()))
                .expect("call")
        })
    });
    g.bench_function("through_aggregator", |b| {
        b.iter(|| {
            rt.block_on(gateway.call_tool("echo__echo", args.clone()))
                .expect("call")
        })
    });
    g.finish();

    let list = mcp_benches::tools_list_result(10_000);
    let bytes = serde_json::to_vec(&list).expect("encode");
    let translator = Translator::canonical_to(Revision::V2024_11_05);
    let mut g = c.benchmark_group("aggregated");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.sample_size(20);
    g.bench_function("tools_list_10000_to_2024_11_05", |b| {
        b.iter(|| {
            let v: Value = serde_json::from_slice(&bytes).expect("decode");
            let out = translator.result("tools/list", v).expect("translate");
            serde_json::to_vec(&out).expect("encode")
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
