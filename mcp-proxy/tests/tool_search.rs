//! Tool search through its public API, on a catalog of 10,020 tools: twenty hand-written
//! ones among 10,000 generated distractors from the same domains
//! (`mcp_examples::search_corpus`). The twenty requests, written as a person asks, find
//! their tools (each one's rank is logged; see [`AT_LEAST_IN_TOP_FIVE`] for what is
//! asserted); a tool the caller may not see never shows and the next best takes its
//! place; a request with no known word finds nothing; and a rebuilt index reflects the
//! catalog's change.

use std::sync::Arc;

use mcp_examples::search_corpus::{catalog, hand_written, held_out_queries, queries};
use mcp_proxy::search::{Bm25, SearchDocument, SearchHit, SearchIndex, ToolSearch};

fn documents(tools: &[serde_json::Value]) -> Vec<SearchDocument> {
    tools
        .iter()
        .map(|t| SearchDocument::from_json(t).expect("every tool has a name"))
        .collect()
}

fn everything(_: usize) -> bool {
    true
}

fn names<'a>(docs: &'a [SearchDocument], hits: &[SearchHit]) -> Vec<&'a str> {
    hits.iter()
        .map(|h| docs[h.document].name.as_str())
        .collect()
}

fn position(docs: &[SearchDocument], name: &str) -> usize {
    docs.iter()
        .position(|d| d.name == name)
        .unwrap_or_else(|| panic!("{name} is in the catalog"))
}

/// The rank (from 1) of `want` among the hits of `query`, if found at all.
fn rank(
    index: &dyn SearchIndex,
    docs: &[SearchDocument],
    query: &str,
    want: &str,
) -> Option<usize> {
    let hits = index.search(query, &everything, docs.len());
    // Best first, ties by position.
    for w in hits.windows(2) {
        assert!(
            w[0].score > w[1].score || (w[0].score == w[1].score && w[0].document < w[1].document),
            "out of order for {query:?}: {w:?}"
        );
    }
    let found = hits
        .iter()
        .position(|h| docs[h.document].name == want)
        .map(|r| r + 1);
    let shown = found.map_or("not found".to_owned(), |r| format!("rank {r}"));
    eprintln!("{shown:>10}  {want:<32} {query:?}");
    if found.is_none_or(|r| r > 5) {
        let top: Vec<String> = hits
            .iter()
            .take(5)
            .map(|h| format!("{} ({:.2})", docs[h.document].name, h.score))
            .collect();
        eprintln!("            top 5: {}", top.join(", "));
    }
    found
}

/// How many of the twenty requests find their tool in the top five, at least: what the
/// default ranking achieves on this catalog under the names the gateway gives it
/// (`corpus__…`, see `examples/tests/gateway_search/main.rs`), kept from getting worse. Under
/// the names as they are it finds 12 (the twelfth, `currency__convert`, at rank 5; 6
/// under the gateway's names); 7 with synonyms off. Not all twenty. Some requests share
/// no word with their tool's text, or only one that hundreds of distractors share too,
/// and the built-in synonyms bridge only part of that (`let the team channel know` for
/// `slack__post_message`, `edit access` for `drive__share_file`). And some distractors
/// match a request as well as, or better than, the tool it was written for
/// (`ci__run_test_suite` for "run the test suite in the terminal",
/// `spotify__play_playlist` for "play some jazz", the `translate__translate_…
/// translation_memory` family for "translate this paragraph"): a lexical ranking cannot
/// tell them apart.
const AT_LEAST_IN_TOP_FIVE: usize = 11;

#[test]
fn at_least_eleven_of_the_twenty_requests_find_their_tool_in_the_top_five() {
    let docs = documents(&catalog(10_000));
    assert_eq!(docs.len(), 10_020);
    let started = std::time::Instant::now();
    let index = Bm25::default().index(&docs);
    eprintln!(
        "built over {} tools in {:?}",
        index.len(),
        started.elapsed()
    );
    assert_eq!(index.len(), 10_020);
    let mut in_top_five = 0;
    for (query, want) in queries() {
        if rank(&*index, &docs, query, want).is_some_and(|r| r <= 5) {
            in_top_five += 1;
        }
    }
    eprintln!("{in_top_five} of 20 in the top five");
    // The held-out requests, logged only: how well the ranking carries over to requests
    // it was not tuned on.
    let mut held_out = 0;
    eprintln!("held out:");
    for (query, want) in held_out_queries() {
        if rank(&*index, &docs, query, want).is_some_and(|r| r <= 5) {
            held_out += 1;
        }
    }
    eprintln!("{held_out} of 20 held-out requests in the top five");
    assert!(
        in_top_five >= AT_LEAST_IN_TOP_FIVE,
        "{in_top_five} of 20 requests found their tool in the top five, fewer than {AT_LEAST_IN_TOP_FIVE}"
    );
}

#[test]
fn a_refused_tool_never_shows_and_the_next_best_takes_its_place() {
    let docs = documents(&catalog(10_000));
    let index = Bm25::default().index(&docs);
    for (query, want) in queries() {
        // The best refused: the next five move up.
        let all = index.search(query, &everything, 6);
        assert_eq!(all.len(), 6, "{query:?}");
        let best = all[0].document;
        let some = index.search(query, &|d| d != best, 5);
        assert_eq!(some, all[1..], "{query:?}");
        // The tool the request is for refused: never shown, the rest as they were.
        let refused = position(&docs, want);
        let every = index.search(query, &everything, docs.len());
        let without = index.search(query, &|d| d != refused, docs.len());
        assert!(without.iter().all(|h| h.document != refused), "{query:?}");
        let expected: Vec<SearchHit> = every
            .into_iter()
            .filter(|h| h.document != refused)
            .collect();
        assert_eq!(without, expected, "{query:?}");
    }

    // Only the hand-written tools admitted: the distractors never show, however good.
    let first_hand_written = docs.len() - hand_written().len();
    let only = |d: usize| d >= first_hand_written;
    let hits = index.search("create a new issue in the repository", &only, 10);
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|h| h.document >= first_hand_written));
    assert_eq!(docs[hits[0].document].name, "github__create_issue");

    // Nothing admitted: nothing found, and `admit` is asked about matches only.
    let asked = std::sync::atomic::AtomicUsize::new(0);
    let nobody = |_: usize| {
        asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        false
    };
    assert!(index.search("weather forecast", &nobody, 5).is_empty());
    let asked = asked.into_inner();
    assert!(asked > 0 && asked < docs.len(), "asked {asked} times");
}

#[test]
fn a_request_with_no_known_word_finds_nothing() {
    let docs = documents(&catalog(10_000));
    let index = Bm25::default().index(&docs);
    for query in [
        "",
        "   ",
        "the of and to in",
        "xyzzy plugh",
        "¿qué tal? 天気",
        "!!!???",
    ] {
        assert_eq!(index.search(query, &everything, 10), vec![], "{query:?}");
    }
    // Limit 0, an enormous query, and an empty catalog: no panic, sensible answers.
    assert!(index.search("weather", &everything, 0).is_empty());
    let huge = "weather forecast ".repeat(100_000) + "é";
    assert!(!index.search(&huge, &everything, 3).is_empty());
    let long_word = "é".repeat(10_000);
    assert!(index.search(&long_word, &everything, 3).is_empty());
    let empty = Bm25::default().index(&[]);
    assert!(empty.is_empty());
    assert!(empty.search("weather", &everything, 10).is_empty());
}

#[test]
fn a_rebuilt_index_reflects_the_change() {
    let mut tools = catalog(2_000);
    let index: Arc<dyn SearchIndex> = Bm25::default().index(&documents(&tools));
    let query = "what will the weather be like in Paris tomorrow";
    let docs = documents(&tools);
    let before = index.search(query, &everything, 5);
    assert!(names(&docs, &before).contains(&"weather__forecast"));

    // Removed: no longer found; the others keep their order.
    tools.retain(|t| t["name"] != "weather__forecast");
    let docs = documents(&tools);
    let index = Bm25::default().index(&docs);
    let after = index.search(query, &everything, 5);
    assert!(!names(&docs, &after).contains(&"weather__forecast"));
    assert_eq!(index.len(), 2_019);

    // Added: a new tool with the request's words is found first.
    tools.push(serde_json::json!({
        "name": "meteo__tomorrow_in_paris",
        "title": "Paris weather tomorrow",
        "description": "Tomorrow's weather in Paris, hour by hour.",
    }));
    let docs = documents(&tools);
    let index = Bm25::default().index(&docs);
    let added = index.search(query, &everything, 5);
    assert_eq!(names(&docs, &added)[0], "meteo__tomorrow_in_paris");
    assert_eq!(added[0].document, docs.len() - 1);
}
