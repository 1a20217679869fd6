//! The lexical index: an inverted index of the code-aware tokens of every text file, and BM25
//! scores of a weighted query against it.

use std::collections::HashMap;

use super::tokens::for_each_token;

/// BM25's term-frequency saturation and length normalisation, the usual values.
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// Token ids, their postings (document, count) in document order, and document lengths.
#[derive(Debug, Default)]
pub struct LexicalIndex {
    vocabulary: HashMap<String, u32>,
    postings: Vec<Vec<(u32, u32)>>,
    lengths: Vec<u32>,
}

impl LexicalIndex {
    /// An empty index for `documents` documents, filled with [`LexicalIndex::add`].
    pub fn with_documents(documents: usize) -> Self {
        LexicalIndex {
            vocabulary: HashMap::new(),
            postings: Vec::new(),
            lengths: vec![0; documents],
        }
    }

    /// Indexes `text` as document `doc`; documents must be added in increasing order.
    pub fn add(
        &mut self,
        doc: u32,
        text: &str,
        scratch: &mut String,
        counts: &mut HashMap<u32, u32>,
    ) {
        counts.clear();
        let mut length = 0u32;
        let vocabulary = &mut self.vocabulary;
        let postings = &mut self.postings;
        for_each_token(text, scratch, |token| {
            length += 1;
            let id = match vocabulary.get(token) {
                Some(id) => *id,
                None => {
                    let id = postings.len() as u32;
                    vocabulary.insert(token.to_owned(), id);
                    postings.push(Vec::new());
                    id
                }
            };
            *counts.entry(id).or_insert(0) += 1;
        });
        for (&id, &count) in counts.iter() {
            self.postings[id as usize].push((doc, count));
        }
        self.lengths[doc as usize] = length;
    }

    /// Joins `other` (built over later documents of the same list) into this index.
    pub fn merge(&mut self, other: LexicalIndex) {
        for (doc, length) in other.lengths.iter().enumerate() {
            if *length > 0 {
                self.lengths[doc] = *length;
            }
        }
        let mut by_id: Vec<(String, u32)> = other.vocabulary.into_iter().collect();
        by_id.sort_by_key(|(_, id)| *id);
        let mut other_postings = other.postings;
        for (token, other_id) in by_id {
            let list = std::mem::take(&mut other_postings[other_id as usize]);
            match self.vocabulary.get(&token) {
                Some(&id) => self.postings[id as usize].extend(list),
                None => {
                    self.vocabulary.insert(token, self.postings.len() as u32);
                    self.postings.push(list);
                }
            }
        }
    }

    pub fn documents(&self) -> usize {
        self.lengths.len()
    }

    /// Documents that hold `token` (already lower-cased), with how often.
    pub fn postings(&self, token: &str) -> &[(u32, u32)] {
        self.vocabulary
            .get(token)
            .map_or(&[], |id| self.postings[*id as usize].as_slice())
    }

    /// In how many documents `token` occurs.
    pub fn document_frequency(&self, token: &str) -> usize {
        self.postings(token).len()
    }

    /// The inverse document frequency BM25 gives `token`.
    pub fn idf(&self, token: &str) -> f32 {
        let n = self.lengths.iter().filter(|length| **length > 0).count() as f32;
        let df = self.document_frequency(token) as f32;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// The BM25 score of every document for `query` (token, weight), only where positive.
    pub fn scores(&self, query: &[(String, f32)]) -> HashMap<u32, f32> {
        let indexed = self
            .lengths
            .iter()
            .filter(|length| **length > 0)
            .count()
            .max(1);
        let average = self.lengths.iter().map(|l| *l as f64).sum::<f64>() as f32 / indexed as f32;
        let mut scores: HashMap<u32, f32> = HashMap::new();
        for (token, weight) in query {
            let idf = self.idf(token);
            for &(doc, count) in self.postings(token) {
                let tf = count as f32;
                let length = self.lengths[doc as usize] as f32;
                let norm = K1 * (1.0 - B + B * length / average.max(1.0));
                *scores.entry(doc).or_insert(0.0) += weight * idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        scores
    }

    /// Bytes the index holds, roughly: for the benchmark's memory figure.
    pub fn approximate_bytes(&self) -> usize {
        let vocabulary: usize = self.vocabulary.keys().map(|k| k.len() + 24 + 8).sum();
        let postings: usize = self.postings.iter().map(|p| p.capacity() * 8 + 24).sum();
        vocabulary + postings + self.lengths.len() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(texts: &[&str]) -> LexicalIndex {
        let mut index = LexicalIndex::with_documents(texts.len());
        let (mut scratch, mut counts) = (String::new(), HashMap::new());
        for (doc, text) in texts.iter().enumerate() {
            index.add(doc as u32, text, &mut scratch, &mut counts);
        }
        index
    }

    #[test]
    fn a_rare_term_outweighs_a_common_one() {
        let index = index(&[
            "parse the config",
            "parse the header",
            "parse rebuild_proxies here",
        ]);
        let scores = index.scores(&[("parse".into(), 1.0), ("rebuild_proxies".into(), 1.0)]);
        assert!(scores[&2] > scores[&0]);
        assert!((scores[&0] - scores[&1]).abs() < 1e-6);
    }

    #[test]
    fn two_halves_merged_equal_one_whole() {
        let texts = [
            "alpha beta",
            "beta gamma",
            "gamma delta",
            "delta alpha_beta",
        ];
        let whole = index(&texts);
        let mut first = LexicalIndex::with_documents(4);
        let mut second = LexicalIndex::with_documents(4);
        let (mut scratch, mut counts) = (String::new(), HashMap::new());
        for (doc, text) in texts.iter().enumerate() {
            let half = if doc < 2 { &mut first } else { &mut second };
            half.add(doc as u32, text, &mut scratch, &mut counts);
        }
        first.merge(second);
        for token in ["alpha", "beta", "gamma", "delta", "alpha_beta"] {
            let mut a = whole.postings(token).to_vec();
            let mut b = first.postings(token).to_vec();
            a.sort();
            b.sort();
            assert_eq!(a, b, "{token}");
        }
    }
}
