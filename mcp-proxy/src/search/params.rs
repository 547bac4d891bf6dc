//! [`Bm25`]: the default ranking's parameters, set with builder methods; the index is built
//! in `bm25.rs`.

use std::sync::Arc;

use super::bm25::Bm25Index;
use super::{SearchDocument, SearchIndex, ToolSearch};

/// The fields, in the order of [`Bm25`]'s weights and length normalisations.
pub(super) const FIELDS: usize = 4;
pub(super) const NAME: usize = 0;
pub(super) const TITLE: usize = 1;
pub(super) const DESCRIPTION: usize = 2;
pub(super) const PARAMETERS: usize = 3;

/// The default length normalisation of each field (see [`Bm25::b`]).
const DEFAULT_B: [f32; FIELDS] = [1.0, 1.0, 0.0, 0.75];

/// BM25F over names, titles, descriptions and parameter names (the default ranking).
///
/// The defaults: weights name 3, title 2, description 1, parameters 0.5, so that a tool
/// whose name says what the request asks for comes first and a description still carries
/// a request put in other words; `k1` 0.6, lower than the usual 1.2 because a tool's word
/// often recurs in its name, title and description, and what should count is how many of
/// the request's words a tool has, more than how often; and synonyms at half weight
/// ([`Bm25::synonym_weight`]).
///
/// Length normalisation (`b`) is set per field. Names and titles are normalised fully
/// (1): `list_open_issues` says less about issues than `create_issue` does, each word
/// being a smaller part of it. Descriptions not at all (0): a long description is usually
/// a tool documented with care, not one about many things, and normalising it would
/// favour the terse ones. Parameter names at the usual 0.75.
///
/// A query is read up to its first 1 KiB and 64 distinct words; a search costs the
/// postings of those words (and their synonyms) and a heap of `limit` entries, plus one
/// score slot per document.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Bm25 {
    k1: f32,
    b: [f32; FIELDS],
    weights: [f32; FIELDS],
    synonyms: f32,
}

impl Default for Bm25 {
    fn default() -> Self {
        Bm25 {
            k1: 0.6,
            b: DEFAULT_B,
            weights: [3.0, 2.0, 1.0, 0.5],
            synonyms: 0.5,
        }
    }
}

impl Bm25 {
    /// Term frequency saturation: 0 counts a term once however often it occurs; the larger,
    /// the more repetitions count. Default 0.6. Negative or non-finite values are taken
    /// as the default.
    #[must_use]
    pub fn k1(mut self, k1: f32) -> Self {
        self.k1 = k1;
        self
    }

    /// Length normalisation of every field at once, 0 (none: a long field counts as much
    /// as a short one) to 1 (full); the per-field methods ([`Bm25::name_b`] and the like)
    /// set one. Defaults: name 1, title 1, description 0, parameters 0.75. Values outside
    /// 0–1 are clamped, non-finite ones taken as each field's default.
    #[must_use]
    pub fn b(mut self, b: f32) -> Self {
        self.b = [b; FIELDS];
        self
    }

    /// Length normalisation of the tool's name, as for [`Bm25::b`]. Default 1.
    #[must_use]
    pub fn name_b(mut self, b: f32) -> Self {
        self.b[NAME] = b;
        self
    }

    /// Length normalisation of the tool's title, as for [`Bm25::b`]. Default 1.
    #[must_use]
    pub fn title_b(mut self, b: f32) -> Self {
        self.b[TITLE] = b;
        self
    }

    /// Length normalisation of the tool's description, as for [`Bm25::b`]. Default 0.
    #[must_use]
    pub fn description_b(mut self, b: f32) -> Self {
        self.b[DESCRIPTION] = b;
        self
    }

    /// Length normalisation of the tool's parameter names, as for [`Bm25::b`].
    /// Default 0.75.
    #[must_use]
    pub fn parameters_b(mut self, b: f32) -> Self {
        self.b[PARAMETERS] = b;
        self
    }

    /// The weight of the tool's name (split at `__`, `_`, `-` and `camelCase`). Default 3.
    /// A weight of 0 leaves the field out; negative or non-finite ones are taken as 0.
    #[must_use]
    pub fn name_weight(mut self, w: f32) -> Self {
        self.weights[NAME] = w;
        self
    }

    /// The weight of the tool's title. Default 2.
    #[must_use]
    pub fn title_weight(mut self, w: f32) -> Self {
        self.weights[TITLE] = w;
        self
    }

    /// The weight of the tool's description. Default 1.
    #[must_use]
    pub fn description_weight(mut self, w: f32) -> Self {
        self.weights[DESCRIPTION] = w;
        self
    }

    /// The weight of the tool's parameter names. Default 0.5.
    #[must_use]
    pub fn parameters_weight(mut self, w: f32) -> Self {
        self.weights[PARAMETERS] = w;
        self
    }

    /// How much a synonym of a query's word counts, from 0 (synonyms are not looked up)
    /// to 1 (as much as the word itself). Default 0.5. The synonyms are a small built-in
    /// list of the words tool catalogs use for the same actions and things (`find` and
    /// `search`, `bug` and `issue`, `meeting` and `event`); a document matching only a
    /// synonym of a query's word is a match.
    #[must_use]
    pub fn synonym_weight(mut self, w: f32) -> Self {
        self.synonyms = w;
        self
    }

    /// The parameters as used, `k1`, each field's `b` and each field's weight: out-of-range
    /// values replaced as documented.
    pub(super) fn sane(&self) -> (f32, [f32; FIELDS], [f32; FIELDS]) {
        let d = Bm25::default();
        let k1 = if self.k1.is_finite() && self.k1 >= 0.0 {
            self.k1
        } else {
            d.k1
        };
        let b = std::array::from_fn(|f| {
            if self.b[f].is_finite() {
                self.b[f].clamp(0.0, 1.0)
            } else {
                DEFAULT_B[f]
            }
        });
        let weights = self
            .weights
            .map(|w| if w.is_finite() && w > 0.0 { w } else { 0.0 });
        (k1, b, weights)
    }

    /// The synonyms' weight as used.
    pub(super) fn sane_synonyms(&self) -> f32 {
        if self.synonyms.is_finite() {
            self.synonyms.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

impl ToolSearch for Bm25 {
    fn index(&self, documents: &[SearchDocument]) -> Arc<dyn SearchIndex> {
        Arc::new(Bm25Index::build(self, documents))
    }
}
