//! Tool search on a 10,020-tool catalog (`mcp_examples::search_corpus::catalog(10_000)`):
//! - `tool_search/build_10020`: building the default BM25F index over it, from the
//!   `SearchDocument`s (what the gateway pays on each catalog change);
//! - `tool_search/search/*`: one request against the built index, top 10, everything
//!   admitted; and `search_admit_half/*`, the same with half the catalog refused.

// criterion_group! and criterion_main! generate undocumented items.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use mcp_examples::search_corpus::catalog;
use mcp_proxy::search::{Bm25, SearchDocument, ToolSearch};

const QUERIES: &[(&str, &str)] = &[
    ("short", "weather forecast"),
    (
        "bug_report",
        "open a bug report in the repository about the login crash",
    ),
    (
        "common_words",
        "list the recent files and messages in the team channel",
    ),
    ("url", "grab the contents of https://example.com/pricing"),
];

fn bench(c: &mut Criterion) {
    let docs: Vec<SearchDocument> = catalog(10_000)
        .iter()
        .filter_map(SearchDocument::from_json)
        .collect();
    let mut g = c.benchmark_group("tool_search");
    g.bench_function("build_10020", |b| {
        b.iter(|| Bm25::default().index(black_box(&docs)))
    });
    let index = Bm25::default().index(&docs);
    for (name, query) in QUERIES {
        g.bench_function(format!("search/{name}"), |b| {
            b.iter(|| index.search(black_box(query), &|_| true, 10))
        });
    }
    for (name, query) in QUERIES {
        g.bench_function(format!("search_admit_half/{name}"), |b| {
            b.iter(|| index.search(black_box(query), &|d| d % 2 == 0, 10))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
