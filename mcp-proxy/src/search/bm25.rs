//! BM25F: the probabilistic relevance framework's ranking for documents with fields.
//!
//! A term's frequency in each field is normalised by that field's length relative to the
//! field's average (as much as the field's `b` says), weighted by the field's weight and
//! summed into one pseudo frequency, saturated by `k1`, and multiplied by the term's
//! inverse document frequency over the whole catalog (one IDF, not one per field). A
//! document's score for a query is the sum over the query's distinct terms. The
//! parameters are [`Bm25`]'s.
//!
//! None of that depends on the query but the choice of terms, so each posting (term,
//! document) holds its finished contribution: a search adds up the postings of the
//! query's terms and keeps the best `limit` in a bounded heap.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use ahash::AHashMap;

use super::params::{Bm25, DESCRIPTION, FIELDS, NAME, PARAMETERS, TITLE};
use super::tokens::{for_each_term, synonyms};
use super::{SearchDocument, SearchHit, SearchIndex};

/// The longest query read, in bytes: the rest is ignored (cut at a character boundary).
pub(crate) const MAX_QUERY_BYTES: usize = 1024;
/// The most distinct terms of a query read; later ones are ignored.
pub(crate) const MAX_QUERY_TERMS: usize = 64;

/// The built index: postings by term, each with its finished score contribution.
#[derive(Debug)]
pub(super) struct Bm25Index {
    /// How much a synonym of a query's word counts.
    synonyms: f32,
    /// Term → its id, an index into `starts`.
    terms: AHashMap<Box<str>, u32>,
    /// Term `t`'s postings are `docs[starts[t]..starts[t + 1]]` (and the same range of
    /// `weights`), documents in increasing order.
    starts: Vec<u32>,
    docs: Vec<u32>,
    weights: Vec<f32>,
    len: usize,
}

impl Bm25Index {
    pub(super) fn build(params: &Bm25, documents: &[SearchDocument]) -> Bm25Index {
        let (k1, bs, weights) = params.sane();
        let mut terms: AHashMap<Box<str>, u32> = AHashMap::new();
        // Every document's (term, field) occurrences, then, per document, its distinct
        // terms with per-field counts.
        let mut doc_terms: Vec<(u32, [u32; FIELDS])> = Vec::new();
        let mut doc_starts: Vec<usize> = Vec::with_capacity(documents.len() + 1);
        let mut lengths: Vec<[u32; FIELDS]> = Vec::with_capacity(documents.len());
        let mut totals = [0u64; FIELDS];
        let mut df: Vec<u32> = Vec::new();
        let mut occurrences: Vec<(u32, u8)> = Vec::new();
        for doc in documents {
            occurrences.clear();
            let mut length = [0u32; FIELDS];
            let mut read = |field: usize, text: &str| {
                if weights[field] == 0.0 {
                    return;
                }
                for_each_term(text, |t| {
                    let id = match terms.get(t) {
                        Some(&id) => id,
                        None => {
                            let id = u32::try_from(df.len()).unwrap_or(u32::MAX);
                            terms.insert(t.into(), id);
                            df.push(0);
                            id
                        }
                    };
                    occurrences.push((id, field as u8));
                    length[field] = length[field].saturating_add(1);
                });
            };
            read(NAME, &doc.name);
            if let Some(t) = &doc.title {
                read(TITLE, t);
            }
            if let Some(d) = &doc.description {
                read(DESCRIPTION, d);
            }
            for p in &doc.parameters {
                read(PARAMETERS, p);
            }
            occurrences.sort_unstable();
            let start = doc_terms.len();
            doc_starts.push(start);
            for &(id, field) in &occurrences {
                let field = usize::from(field);
                match doc_terms[start..].last_mut() {
                    Some((last, counts)) if *last == id => counts[field] += 1,
                    _ => {
                        let mut counts = [0; FIELDS];
                        counts[field] = 1;
                        doc_terms.push((id, counts));
                        if let Some(n) = df.get_mut(id as usize) {
                            *n += 1;
                        }
                    }
                }
            }
            for (total, l) in totals.iter_mut().zip(length) {
                *total += u64::from(l);
            }
            lengths.push(length);
        }
        doc_starts.push(doc_terms.len());

        let n = documents.len() as f64;
        let average = totals.map(|t| if n > 0.0 { t as f64 / n } else { 0.0 });
        let idf: Vec<f64> = df
            .iter()
            .map(|&d| {
                let d = f64::from(d);
                (1.0 + (n - d + 0.5) / (d + 0.5)).ln()
            })
            .collect();

        // Postings laid out term by term: count, then fill in document order.
        let mut starts = Vec::with_capacity(df.len() + 1);
        let mut at = 0u32;
        for &d in &df {
            starts.push(at);
            at = at.saturating_add(d);
        }
        starts.push(at);
        let mut next: Vec<u32> = starts[..df.len()].to_vec();
        let total = doc_terms.len();
        let mut docs = vec![0u32; total];
        let mut scores = vec![0f32; total];
        for (doc, span) in doc_starts.windows(2).enumerate() {
            let length = lengths[doc];
            let norm: [f64; FIELDS] = std::array::from_fn(|f| {
                if average[f] > 0.0 {
                    let b = f64::from(bs[f]);
                    1.0 - b + b * f64::from(length[f]) / average[f]
                } else {
                    1.0
                }
            });
            for &(id, counts) in &doc_terms[span[0]..span[1]] {
                // A field without the term adds nothing (its norm may be 0: an empty
                // field, fully normalised).
                let tf: f64 = (0..FIELDS)
                    .filter(|&f| counts[f] > 0)
                    .map(|f| f64::from(weights[f]) * f64::from(counts[f]) / norm[f])
                    .sum();
                let k1 = f64::from(k1);
                let score = idf[id as usize] * tf * (k1 + 1.0) / (tf + k1);
                let slot = &mut next[id as usize];
                let i = *slot as usize;
                *slot += 1;
                docs[i] = doc as u32;
                // Never 0: a posting means a match, and a match is returned.
                scores[i] = (score as f32).max(f32::MIN_POSITIVE);
            }
        }
        Bm25Index {
            synonyms: params.sane_synonyms(),
            terms,
            starts,
            docs,
            weights: scores,
            len: documents.len(),
        }
    }
}

/// A candidate in the top-k heap, ordered so that the heap's greatest is the worst: lower
/// score, or equal score and higher document index.
#[derive(Debug, Clone, Copy)]
struct Worst(SearchHit);

impl Ord for Worst {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .0
            .score
            .total_cmp(&self.0.score)
            .then(self.0.document.cmp(&other.0.document))
    }
}

impl PartialOrd for Worst {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Worst {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Worst {}

/// `query` cut to at most [`MAX_QUERY_BYTES`], at a character boundary.
fn bounded(query: &str) -> &str {
    if query.len() <= MAX_QUERY_BYTES {
        return query;
    }
    let mut end = MAX_QUERY_BYTES;
    while !query.is_char_boundary(end) {
        end -= 1;
    }
    &query[..end]
}

impl SearchIndex for Bm25Index {
    fn search(&self, query: &str, admit: &dyn Fn(usize) -> bool, limit: usize) -> Vec<SearchHit> {
        if limit == 0 || self.len == 0 {
            return Vec::new();
        }
        // The query's distinct known terms, of its first MAX_QUERY_TERMS distinct words,
        // then their synonyms (each once, and none that is a word of the query).
        let mut words: Vec<String> = Vec::new();
        for_each_term(bounded(query), |t| {
            if words.len() < MAX_QUERY_TERMS && !words.iter().any(|w| w == t) {
                words.push(t.to_owned());
            }
        });
        // Each known term once: the query's own at full weight, then synonyms.
        let mut ids: Vec<(u32, f32)> = Vec::new();
        let mut add = |term: &str, weight: f32| {
            if let Some(&id) = self.terms.get(term) {
                if !ids.iter().any(|&(i, _)| i == id) {
                    ids.push((id, weight));
                }
            }
        };
        for w in &words {
            add(w, 1.0);
        }
        if self.synonyms > 0.0 {
            for w in &words {
                for s in synonyms(w) {
                    add(s, self.synonyms);
                }
            }
        }
        if ids.is_empty() {
            return Vec::new();
        }
        // Scores by document, and the documents touched, in the order first touched.
        let mut scores = vec![0f32; self.len];
        let mut touched: Vec<u32> = Vec::new();
        for &(id, weight) in &ids {
            let (from, to) = (
                self.starts[id as usize] as usize,
                self.starts[id as usize + 1] as usize,
            );
            for (&doc, &w) in self.docs[from..to].iter().zip(&self.weights[from..to]) {
                let s = &mut scores[doc as usize];
                if *s == 0.0 {
                    touched.push(doc);
                }
                *s += weight * w;
            }
        }
        let limit = limit.min(touched.len());
        let mut best: BinaryHeap<Worst> = BinaryHeap::with_capacity(limit + 1);
        for &doc in &touched {
            let hit = Worst(SearchHit {
                document: doc as usize,
                score: scores[doc as usize],
            });
            if best.len() == limit && best.peek().is_some_and(|worst| hit >= *worst) {
                continue;
            }
            if !admit(hit.0.document) {
                continue;
            }
            best.push(hit);
            if best.len() > limit {
                best.pop();
            }
        }
        best.into_sorted_vec().into_iter().map(|w| w.0).collect()
    }

    fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::ToolSearch;

    fn doc(name: &str, description: &str) -> SearchDocument {
        SearchDocument::new(name).with_description(description)
    }

    fn all(_: usize) -> bool {
        true
    }

    fn found(index: &dyn SearchIndex, query: &str) -> Vec<usize> {
        index
            .search(query, &all, usize::MAX)
            .iter()
            .map(|h| h.document)
            .collect()
    }

    fn small() -> Vec<SearchDocument> {
        vec![
            doc("slack__post_message", "Post a message to a channel."),
            doc("github__create_issue", "Create an issue in a repository."),
            doc(
                "files__read_file",
                "Read a file; the message log is a file too.",
            ),
            SearchDocument::new("weather__forecast")
                .with_title("Weather forecast")
                .with_parameters(["location", "days"]),
            doc("notes__add", "Add a note."),
        ]
    }

    #[test]
    fn the_name_outweighs_a_mention() {
        let index = Bm25::default().index(&small());
        assert_eq!(found(&*index, "message"), [0, 2]);
        assert_eq!(found(&*index, "forecast for Paris"), [3]);
        assert_eq!(found(&*index, "location"), [3]);
        assert_eq!(index.len(), 5);
    }

    #[test]
    fn only_matches_are_returned_best_first_at_most_limit() {
        let index = Bm25::default().index(&small());
        let hits = index.search("post a message about the issue", &all, 10);
        assert_eq!(
            hits.iter().map(|h| h.document).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        assert!(hits.iter().all(|h| h.score > 0.0 && h.score.is_finite()));
        assert_eq!(
            index.search("post a message about the issue", &all, 2),
            hits[..2]
        );
        assert!(index.search("message", &all, 0).is_empty());
        assert!(found(&*index, "kangaroo").is_empty());
        assert!(found(&*index, "the of to").is_empty());
        assert!(found(&*index, "").is_empty());
    }

    #[test]
    fn ties_go_to_the_lower_index() {
        let docs: Vec<_> = (0..10)
            .map(|i| doc(&format!("t{i}"), "same words"))
            .collect();
        let index = Bm25::default().index(&docs);
        assert_eq!(found(&*index, "words"), (0..10).collect::<Vec<_>>());
        let hits = index.search("same", &|d| d % 3 == 1, 2);
        assert_eq!(hits.iter().map(|h| h.document).collect::<Vec<_>>(), [1, 4]);
    }

    #[test]
    fn admit_filters_before_the_limit() {
        let index = Bm25::default().index(&small());
        let hits = index.search("message", &|d| d != 0, 1);
        assert_eq!(hits.iter().map(|h| h.document).collect::<Vec<_>>(), [2]);
        assert!(index.search("message", &|_| false, 5).is_empty());
    }

    #[test]
    fn the_heap_agrees_with_a_full_sort() {
        let docs: Vec<_> = (0..300)
            .map(|i| {
                let words = ["list", "issue", "message", "file", "event", "page", "user"];
                let desc: Vec<&str> = (0..1 + i % 5).map(|k| words[(i * 7 + k * 3) % 7]).collect();
                doc(
                    &format!("{}__{}", words[i % 7], words[(i / 7) % 7]),
                    &desc.join(" "),
                )
            })
            .collect();
        let index = Bm25::default().index(&docs);
        for query in ["issue", "list message", "file event page", "user user list"] {
            let full = index.search(query, &all, usize::MAX);
            for limit in [1, 2, 5, 17, 299, 300, 1000] {
                let top = index.search(query, &all, limit);
                assert_eq!(top, full[..limit.min(full.len())], "{query} {limit}");
            }
            let even = |d: usize| d % 2 == 0;
            let filtered: Vec<SearchHit> =
                full.iter().filter(|h| even(h.document)).copied().collect();
            assert_eq!(
                index.search(query, &even, 7),
                filtered[..7.min(filtered.len())]
            );
        }
    }

    #[test]
    fn a_field_of_weight_zero_is_left_out() {
        let index = Bm25::default().parameters_weight(0.0).index(&small());
        assert!(found(&*index, "location").is_empty());
        let index = Bm25::default().description_weight(-1.0).index(&small());
        assert_eq!(found(&*index, "message"), [0]);
        let nothing = Bm25::default()
            .name_weight(0.0)
            .title_weight(0.0)
            .description_weight(0.0)
            .parameters_weight(f32::NAN)
            .index(&small());
        assert!(found(&*nothing, "message").is_empty());
    }

    #[test]
    fn length_normalisation_is_per_field() {
        let score = |bm25: Bm25, docs: &[SearchDocument], query: &str| -> Vec<f32> {
            let hits = bm25.index(docs).search(query, &all, 10);
            let mut by_doc = vec![0.0; docs.len()];
            for h in hits {
                by_doc[h.document] = h.score;
            }
            by_doc
        };
        // Names: the shorter, each word a larger part of it, first; unless not normalised.
        let names = [
            SearchDocument::new("list_open_stale_issues"),
            SearchDocument::new("create_issue"),
        ];
        let s = score(Bm25::default(), &names, "issue");
        assert!(s[1] > s[0], "{s:?}");
        let s = score(Bm25::default().name_b(0.0), &names, "issue");
        assert_eq!(s[0], s[1]);
        // Descriptions: a long one counts as much as a short one; unless normalised.
        let descriptions = [
            doc("a", "Send an email."),
            doc(
                "b",
                "Send an email with a subject, a body, attachments and recipients.",
            ),
        ];
        let s = score(Bm25::default(), &descriptions, "email");
        assert_eq!(s[0], s[1]);
        let s = score(Bm25::default().description_b(1.0), &descriptions, "email");
        assert!(s[0] > s[1], "{s:?}");
        let s = score(
            Bm25::default().b(1.0).description_b(f32::NAN),
            &descriptions,
            "email",
        );
        assert_eq!(s[0], s[1]);
        // An empty field, fully normalised, spoils nothing.
        let empty = [doc("the", "Send an email."), doc("quux", "Send an email.")];
        let s = score(Bm25::default().b(1.0), &empty, "email");
        assert!(s[0] > 0.1 && s[0] == s[1], "{s:?}");
    }

    #[test]
    fn odd_parameters_do_not_break_it() {
        for bm25 in [
            Bm25::default().k1(f32::NAN).b(f32::INFINITY),
            Bm25::default().k1(-3.0).b(-1.0),
            Bm25::default().k1(0.0).b(7.0),
            Bm25::default().synonym_weight(f32::NAN),
            Bm25::default().name_weight(f32::MAX).title_weight(f32::MAX),
        ] {
            let index = bm25.index(&small());
            let hits = index.search("post a message", &all, 10);
            assert_eq!(hits.first().map(|h| h.document), Some(0), "{bm25:?}");
            assert!(hits.iter().all(|h| h.score.is_finite() && h.score > 0.0));
        }
    }

    #[test]
    fn synonyms_count_unless_turned_off() {
        let docs = small();
        // "bug" is nowhere; "issue" is its synonym.
        let index = Bm25::default().index(&docs);
        assert_eq!(found(&*index, "report a bug"), [1]);
        let without = Bm25::default().synonym_weight(0.0).index(&docs);
        assert!(found(&*without, "report a bug").is_empty());
        // The word itself counts more than a synonym.
        let docs = [
            doc("a", "open the bug tracker"),
            doc("b", "open the issue tracker"),
        ];
        let index = Bm25::default().index(&docs);
        assert_eq!(found(&*index, "bug"), [0, 1]);
        assert_eq!(found(&*index, "issue"), [1, 0]);
    }

    #[test]
    fn an_empty_catalog_and_empty_documents() {
        let index = Bm25::default().index(&[]);
        assert!(index.is_empty());
        assert!(index.search("anything", &all, 10).is_empty());
        let index = Bm25::default().index(&[SearchDocument::default(), doc("", "")]);
        assert_eq!(index.len(), 2);
        assert!(found(&*index, "anything").is_empty());
    }

    #[test]
    fn a_huge_query_is_bounded() {
        let index = Bm25::default().index(&small());
        // Its first KiB is read: "message" is in it, "forecast" is not.
        let query = format!("message {} forecast", "é".repeat(2000));
        assert_eq!(found(&*index, &query), [0, 2]);
        // Only its first 64 distinct words are read.
        let many: Vec<String> = (0..64).map(|i| format!("w{i}")).collect();
        let query = format!("{} forecast", many.join(" "));
        assert!(query.len() < MAX_QUERY_BYTES);
        assert!(found(&*index, &query).is_empty());
        let query = format!("{} forecast", many[..63].join(" "));
        assert_eq!(found(&*index, &query), [3]);
        assert_eq!(bounded("short"), "short");
        assert!(bounded(&"€".repeat(1000)).len() <= MAX_QUERY_BYTES);
    }
}
