//! Ranking without a model call: every signal an issue gives (paths, module paths, stack
//! frames, identifiers the symbol table defines, BM25 over contents and paths) scores the files;
//! tests, docs, examples, generated and vendored files count less unless the issue is about
//! them. Within the top files, the spans that matter: frames' functions, named definitions,
//! the definitions densest in the issue's words.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use regex::Regex;

use super::kinds::FileKind;
use super::query::IssueQuery;
use super::symbols::{Symbol, SymbolKind, enclosing};
use super::tokens::tokens;
use super::{Document, RepoIndex};

/// A bare file name is followed only when it names at most this many files.
pub const MAX_FILES_PER_NAME: usize = 3;
/// Identifiers looked up in the symbol table, at most.
const MAX_IDENTIFIERS: usize = 60;
/// An identifier found in more files than this is too common to say where the change goes.
const MAX_FILES_PER_IDENTIFIER: usize = 150;
/// Files whose spans are worked out; the rest are ranked by path only.
const SPAN_FILES: usize = 30;
/// A frame's function longer than this is shown around the frame's line instead.
const MAX_FRAME_SPAN_LINES: u32 = 120;
const FRAME_WINDOW: u32 = 15;
/// Definitions dense in the issue's words kept per file, best first; the context shows as
/// many as its budget allows.
const DENSE_SPANS: usize = 12;
/// Lines of each file window the term-density fallback looks at.
const WINDOW_LINES: u32 = 40;

/// Lines `start..=end` of a file, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: u32, end: u32) -> Span {
        Span {
            start: start.max(1),
            end: end.max(start.max(1)),
        }
    }

    pub fn contains(&self, line: u32) -> bool {
        self.start <= line && line <= self.end
    }

    pub fn lines(&self) -> u32 {
        self.end - self.start + 1
    }
}

/// One ranked file: its score, why it ranks, and its spans (most relevant first; empty when
/// nothing within the file stood out).
#[derive(Debug, Clone)]
pub struct Ranked {
    pub path: String,
    pub kind: FileKind,
    pub score: f32,
    pub why: Vec<String>,
    pub spans: Vec<Span>,
}

/// Files in rank order, best first; only files with some signal are listed.
#[derive(Debug, Clone, Default)]
pub struct Ranking {
    pub files: Vec<Ranked>,
}

impl Ranking {
    pub fn position(&self, path: &str) -> Option<usize> {
        self.files.iter().position(|file| file.path == path)
    }
}

/// Which signals to use: all of them, or one of the baselines the benchmark compares with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Full,
    /// BM25 over every text file, nothing else.
    Bm25,
    /// The files the issue names, in order of mention.
    Mentions,
}

/// Per-file signal strengths, added up into the score.
#[derive(Debug, Default, Clone)]
struct Signals {
    mentioned: f32,
    framed: f32,
    frame_lines: Vec<u32>,
    module: f32,
    defines: f32,
    defined: Vec<String>,
    bm25: f32,
    path: f32,
    first_mention: Option<usize>,
}

/// Ranks the repository's files for `query`.
pub fn rank(index: &RepoIndex, query: &IssueQuery, method: Method) -> Ranking {
    let names = index.names();
    match method {
        Method::Mentions => by_mentions(index, mention_signals(index, query, names)),
        Method::Bm25 => by_words(index, bm25_signals(index, query)),
        Method::Full => by_every_signal(index, query, names),
    }
}

/// The mentioned files, in order of first mention.
fn by_mentions(index: &RepoIndex, signals: HashMap<u32, Signals>) -> Ranking {
    let mut files: Vec<(u32, Signals)> = signals.into_iter().collect();
    files.sort_by_key(|(id, s)| (s.first_mention, *id));
    Ranking {
        files: files
            .into_iter()
            .map(|(id, _)| ranked(index, id, 1.0, vec!["mentioned".into()]))
            .collect(),
    }
}

/// The files by their BM25 score alone.
fn by_words(index: &RepoIndex, signals: HashMap<u32, Signals>) -> Ranking {
    let mut files: Vec<(u32, f32)> = signals.iter().map(|(id, s)| (*id, s.bm25)).collect();
    sort_by_score(&mut files);
    Ranking {
        files: files
            .into_iter()
            .map(|(id, score)| ranked(index, id, score, vec!["bm25".into()]))
            .collect(),
    }
}

/// Every signal added up, then the spans of the first [`SPAN_FILES`] files.
fn by_every_signal(index: &RepoIndex, query: &IssueQuery, names: &PathNames) -> Ranking {
    let mut signals = mention_signals(index, query, names);
    for (id, words) in bm25_signals(index, query) {
        signals.entry(id).or_default().bm25 = words.bm25;
    }
    for frame in &query.frames {
        for id in names.resolve(&frame.path, index) {
            let entry = signals.entry(id).or_default();
            entry.framed += 1.0;
            entry.frame_lines.extend(frame.line);
        }
    }
    for parts in &query.modules {
        for id in names.module(parts, index) {
            signals.entry(id).or_default().module = 1.0;
        }
    }
    for (id, score) in path_scores(index, query) {
        signals.entry(id).or_default().path = score;
    }
    let mut texts = Texts::default();
    definitions(index, query, &mut signals, &mut texts);
    let mut scored: Vec<(u32, f32)> = signals
        .iter()
        .map(|(id, s)| (*id, score(index.document(*id), query, s)))
        .filter(|(_, score)| *score > 0.0)
        .collect();
    sort_by_score(&mut scored);
    let mut files = Vec::with_capacity(scored.len());
    for (rank, (id, score)) in scored.into_iter().enumerate() {
        let s = &signals[&id];
        let mut file = ranked(index, id, score, reasons(s));
        if rank < SPAN_FILES {
            file.spans = spans(index, query, id, s, &mut texts);
        }
        files.push(file);
    }
    Ranking { files }
}

/// The files the issue mentions, each with how surely and when it was first mentioned.
fn mention_signals(
    index: &RepoIndex,
    query: &IssueQuery,
    names: &PathNames,
) -> HashMap<u32, Signals> {
    let mut signals: HashMap<u32, Signals> = HashMap::new();
    for (order, mention) in query.mentions.iter().enumerate() {
        let found = names.resolve(mention, index);
        let strength = mention_strength(mention, found.len());
        for id in found {
            let entry = signals.entry(id).or_default();
            entry.mentioned = entry.mentioned.max(strength);
            entry.first_mention.get_or_insert(order);
        }
    }
    signals
}

/// Every file's BM25 score for the issue's words, relative to the best one.
fn bm25_signals(index: &RepoIndex, query: &IssueQuery) -> HashMap<u32, Signals> {
    let scores = index.lexical().scores(&query.terms);
    let best = scores.values().copied().fold(0.0f32, f32::max);
    scores
        .into_iter()
        .filter(|_| best > 0.0)
        .map(|(id, score)| {
            let signals = Signals {
                bm25: score / best,
                ..Signals::default()
            };
            (id, signals)
        })
        .collect()
}

/// How surely a mention names its files: a path with folders names one; a bare file name may
/// be the reporter's own file of the same name, the more so when several files share it.
fn mention_strength(mention: &str, matches: usize) -> f32 {
    if mention.contains('/') {
        1.0
    } else if matches == 1 {
        0.7
    } else {
        0.4
    }
}

fn sort_by_score(files: &mut [(u32, f32)]) {
    files.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
}

fn ranked(index: &RepoIndex, id: u32, score: f32, why: Vec<String>) -> Ranked {
    let document = index.document(id);
    Ranked {
        path: document.path.clone(),
        kind: document.kind,
        score,
        why,
        spans: Vec::new(),
    }
}

/// The weighted sum of a file's signals, times what its kind is worth for this issue.
fn score(document: &Document, query: &IssueQuery, s: &Signals) -> f32 {
    let sum = 3.0 * s.mentioned
        + 2.0 * s.framed.min(2.0)
        + 2.0 * s.module
        + 1.5 * s.defines.min(2.0)
        + 1.0 * s.bm25
        + 0.6 * s.path;
    let mentioned = s.mentioned >= 0.7 || s.framed > 0.0;
    // Configuration, data and markup are changed less often than code for an issue.
    let code = if document.language.is_some() || mentioned {
        1.0
    } else {
        0.5
    };
    sum * code * kind_weight(document.kind, query, mentioned)
}

fn kind_weight(kind: FileKind, query: &IssueQuery, mentioned: bool) -> f32 {
    let weight: f32 = match kind {
        FileKind::Source => 1.0,
        FileKind::Test if query.about_tests => 0.9,
        FileKind::Test => 0.3,
        FileKind::Doc if query.about_docs => 0.9,
        FileKind::Doc => 0.2,
        FileKind::Example => 0.5,
        FileKind::Generated | FileKind::Vendored => 0.1,
    };
    if mentioned { weight.sqrt() } else { weight }
}

fn reasons(s: &Signals) -> Vec<String> {
    let mut why = Vec::new();
    if s.mentioned > 0.0 {
        why.push("mentioned".to_owned());
    }
    if s.framed > 0.0 {
        match s.frame_lines.first() {
            Some(line) => why.push(format!("stack trace line {line}")),
            None => why.push("stack trace".to_owned()),
        }
    }
    if s.module > 0.0 {
        why.push("module path".to_owned());
    }
    for name in s.defined.iter().take(3) {
        why.push(format!("defines {name}"));
    }
    if s.bm25 > 0.0 {
        why.push("bm25".to_owned());
    }
    if s.path > 0.0 {
        why.push("path words".to_owned());
    }
    why
}

/// Repository paths by file name, to resolve what an issue calls a file.
pub(super) struct PathNames {
    by_name: HashMap<String, Vec<u32>>,
    /// File names without their extension (`prefer-const` for `lib/rules/prefer-const.js`).
    by_stem: HashMap<String, Vec<u32>>,
}

impl PathNames {
    pub(super) fn new(documents: &[Document]) -> PathNames {
        let mut by_name: HashMap<String, Vec<u32>> = HashMap::new();
        let mut by_stem: HashMap<String, Vec<u32>> = HashMap::new();
        for (id, document) in documents.iter().enumerate() {
            let name = file_name(&document.path);
            by_name.entry(name.to_owned()).or_default().push(id as u32);
            if let Some((stem, _)) = name.rsplit_once('.')
                && !stem.is_empty()
                && document.language.is_some()
            {
                by_stem.entry(stem.to_owned()).or_default().push(id as u32);
            }
        }
        PathNames { by_name, by_stem }
    }

    /// The files `written` names: the whole path, else the longest tail of it that ends a
    /// repository path at a folder boundary, if few enough files share that tail.
    pub(super) fn resolve(&self, written: &str, index: &RepoIndex) -> Vec<u32> {
        let written = written.replace('\\', "/");
        let written = written.trim_start_matches("./").trim_start_matches('/');
        if let Some(id) = index.id_of(written) {
            return vec![id];
        }
        let Some(candidates) = self.by_name.get(file_name(written)) else {
            // `prefer-const`, `help_template`: a source file's name without its extension.
            if !written.contains(['/', '.'])
                && written.contains(['-', '_'])
                && let Some(stems) = self.by_stem.get(written)
                && stems.len() <= MAX_FILES_PER_NAME
            {
                return stems.clone();
            }
            return Vec::new();
        };
        let parts: Vec<&str> = written.split('/').filter(|p| !p.is_empty()).collect();
        for take in (1..=parts.len()).rev() {
            let tail = parts[parts.len() - take..].join("/");
            let suffix = format!("/{tail}");
            let matching: Vec<u32> = candidates
                .iter()
                .copied()
                .filter(|id| {
                    let path = &index.document(*id).path;
                    *path == tail || path.ends_with(&suffix)
                })
                .collect();
            if !matching.is_empty() {
                let limit = if take == 1 {
                    MAX_FILES_PER_NAME
                } else {
                    MAX_FILES_PER_NAME + 2
                };
                return if matching.len() <= limit {
                    matching
                } else {
                    Vec::new()
                };
            }
        }
        Vec::new()
    }

    /// The files a module path names (`requests.sessions`, `crate::edits::apply`,
    /// `lib/router`), its trailing parts dropped one by one (they may name a symbol).
    fn module(&self, parts: &[String], index: &RepoIndex) -> Vec<u32> {
        let parts: Vec<&str> = parts
            .iter()
            .map(String::as_str)
            .skip_while(|part| matches!(*part, "crate" | "self" | "super"))
            .collect();
        for take in (2..=parts.len()).rev() {
            let wanted = parts[..take].join("/");
            let suffix = format!("/{wanted}");
            let matching: Vec<u32> = index
                .documents()
                .iter()
                .enumerate()
                .filter(|(_, document)| document.language.is_some())
                .filter(|(_, document)| {
                    let stem = module_stem(&document.path);
                    stem == wanted || stem.ends_with(&suffix)
                })
                .map(|(id, _)| id as u32)
                .collect();
            if !matching.is_empty() {
                return if matching.len() <= MAX_FILES_PER_NAME {
                    matching
                } else {
                    Vec::new()
                };
            }
        }
        Vec::new()
    }
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `a/b/c.py` → `a/b/c`; `a/b/__init__.py`, `a/b/mod.rs`, `a/b/index.js` → `a/b`.
fn module_stem(path: &str) -> &str {
    let stem = path.rsplit_once('.').map_or(path, |(stem, _)| stem);
    for package in ["/__init__", "/mod", "/index", "/lib"] {
        if let Some(folder) = stem.strip_suffix(package) {
            return folder;
        }
    }
    stem
}

/// BM25-like weight of the issue's words in each file's path, normalised to the best path.
fn path_scores(index: &RepoIndex, query: &IssueQuery) -> Vec<(u32, f32)> {
    let weights: HashMap<&str, f32> = query
        .terms
        .iter()
        .map(|(token, weight)| (token.as_str(), *weight))
        .collect();
    let documents = index.documents();
    let mut frequency: HashMap<String, usize> = HashMap::new();
    let path_tokens: Vec<HashSet<String>> = documents
        .iter()
        .map(|document| tokens(&document.path).into_iter().collect())
        .collect();
    for set in &path_tokens {
        for token in set {
            if weights.contains_key(token.as_str()) {
                *frequency.entry(token.clone()).or_default() += 1;
            }
        }
    }
    let n = documents.len() as f32;
    let mut scores: Vec<(u32, f32)> = Vec::new();
    for (id, set) in path_tokens.iter().enumerate() {
        if !documents[id].indexed {
            continue;
        }
        let score: f32 = set
            .iter()
            .filter_map(|token| {
                let weight = weights.get(token.as_str())?;
                let df = frequency[token] as f32;
                Some(weight.min(2.0) * (1.0 + (n - df + 0.5) / (df + 0.5)).ln())
            })
            .sum();
        if score > 0.0 {
            scores.push((id as u32, score));
        }
    }
    let best = scores.iter().map(|(_, s)| *s).fold(0.0f32, f32::max);
    for (_, score) in &mut scores {
        *score /= best;
    }
    scores
}

/// File texts read while ranking, kept for the spans.
#[derive(Default)]
pub(super) struct Texts {
    read: HashMap<u32, Option<Arc<String>>>,
}

impl Texts {
    fn get(&mut self, index: &RepoIndex, id: u32) -> Option<Arc<String>> {
        self.read
            .entry(id)
            .or_insert_with(|| index.text(id).map(Arc::new))
            .clone()
    }
}

/// Files that define the identifiers the issue names. A rarer definition counts more; a plain
/// word counts less than one written as code.
fn definitions(
    index: &RepoIndex,
    query: &IssueQuery,
    signals: &mut HashMap<u32, Signals>,
    texts: &mut Texts,
) {
    let mut identifiers: Vec<_> = query.identifiers.iter().filter(|id| id.code_like).collect();
    identifiers.extend(query.identifiers.iter().filter(|id| !id.code_like));
    for identifier in identifiers.into_iter().take(MAX_IDENTIFIERS) {
        let definers = definers(index, &identifier.name, texts);
        if definers.is_empty() {
            continue;
        }
        let specificity = 1.0 / (definers.len() as f32).sqrt();
        let strength = if identifier.code_like { 1.0 } else { 0.35 };
        for id in definers {
            let entry = signals.entry(id).or_default();
            entry.defines += strength * specificity;
            entry.defined.push(identifier.name.clone());
        }
    }
}

/// The files that define `name`: found through the lexical index, checked with a definition
/// pattern, then in the file's symbol table (files without a grammar: the pattern alone).
pub(super) fn definers(index: &RepoIndex, name: &str, texts: &mut Texts) -> Vec<u32> {
    let postings = index.lexical().postings(&name.to_ascii_lowercase());
    if postings.is_empty() || postings.len() > MAX_FILES_PER_IDENTIFIER {
        return Vec::new();
    }
    let Some(pattern) = definition_pattern(name) else {
        return Vec::new();
    };
    let mut definers = Vec::new();
    for &(id, _) in postings {
        let Some(text) = texts.get(index, id) else {
            continue;
        };
        if !pattern.is_match(&text) {
            continue;
        }
        let confirmed = index.document(id).language.is_none()
            || index
                .symbols(id)
                .iter()
                .any(|symbol| symbol.name.eq_ignore_ascii_case(name));
        if confirmed {
            definers.push(id);
        }
    }
    definers
}

/// A line that defines `name` in one of the usual ways (`def name`, `fn name`, `class Name`,
/// `func (r T) Name(`, `name = function`, `name(args) {`), case-insensitively.
fn definition_pattern(name: &str) -> Option<Regex> {
    let name = regex::escape(name);
    Regex::new(&format!(
        r"(?im)(?:\b(?:def|class|fn|struct|enum|trait|type|func|function|interface|impl|mod|const|static|record|macro_rules!)\s+(?:\([^)]*\)\s*)?{name}\b|\b{name}\s*[:=]\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*=>|\w+\s*=>)|^\s*(?:(?:public|private|protected|static|final|async|abstract|synchronized|override|get|set)\s+)*(?:[\w<>\[\],.?]+\s+)?{name}\s*\([^;]*$)"
    ))
    .ok()
}

/// The spans of one file worth showing, most relevant first.
fn spans(
    index: &RepoIndex,
    query: &IssueQuery,
    id: u32,
    s: &Signals,
    texts: &mut Texts,
) -> Vec<Span> {
    let Some(text) = texts.get(index, id) else {
        return Vec::new();
    };
    let symbols = index.symbols(id);
    let line_count = text.lines().count() as u32;
    let mut found: Vec<Span> = Vec::new();
    let mut push = |span: Span| {
        let span = Span::new(span.start, span.end.min(line_count.max(1)));
        if !found.contains(&span) {
            found.push(span);
        }
    };
    for &line in &s.frame_lines {
        if line == 0 || line > line_count {
            continue;
        }
        match enclosing_function(&symbols, line) {
            Some(symbol) if symbol.end - symbol.start < MAX_FRAME_SPAN_LINES => {
                push(Span::new(symbol.start, symbol.end))
            }
            _ => push(Span::new(
                line.saturating_sub(FRAME_WINDOW),
                line + FRAME_WINDOW,
            )),
        }
    }
    for name in &s.defined {
        for symbol in symbols
            .iter()
            .filter(|symbol| symbol.name.eq_ignore_ascii_case(name))
        {
            push(Span::new(symbol.start, symbol.end));
        }
    }
    for span in densest(index, query, &text, &symbols) {
        push(span);
    }
    found
}

/// The innermost function or method holding `line`, else the innermost definition.
fn enclosing_function(symbols: &[Symbol], line: u32) -> Option<&Symbol> {
    symbols
        .iter()
        .filter(|symbol| matches!(symbol.kind, SymbolKind::Function | SymbolKind::Method))
        .filter(|symbol| symbol.start <= line && line <= symbol.end)
        .min_by_key(|symbol| symbol.end - symbol.start)
        .or_else(|| enclosing(symbols, line))
}

/// Up to [`DENSE_SPANS`] definitions (or line windows, for a file without symbols) holding the
/// most of the issue's rarer words, densest first.
fn densest(index: &RepoIndex, query: &IssueQuery, text: &str, symbols: &[Symbol]) -> Vec<Span> {
    let idf: HashMap<&str, f32> = query
        .terms
        .iter()
        .map(|(token, weight)| (token.as_str(), weight.min(2.0) * index.lexical().idf(token)))
        .collect();
    let lines: Vec<&str> = text.lines().collect();
    let line_terms: Vec<HashSet<String>> = lines
        .iter()
        .map(|line| {
            tokens(line)
                .into_iter()
                .filter(|t| idf.contains_key(t.as_str()))
                .collect()
        })
        .collect();
    let weigh = |span: Span| -> f32 {
        let mut seen: HashSet<&str> = HashSet::new();
        for line in span.start..=span.end.min(lines.len() as u32) {
            for token in &line_terms[(line - 1) as usize] {
                seen.insert(token.as_str());
            }
        }
        let sum: f32 = seen.iter().map(|token| idf[token]).sum();
        sum / (span.lines() as f32).powf(0.3)
    };
    let mut candidates: Vec<(f32, Span)> = symbols
        .iter()
        .filter(|symbol| {
            matches!(symbol.kind, SymbolKind::Function | SymbolKind::Method)
                || symbol.end - symbol.start < 60
        })
        .map(|symbol| Span::new(symbol.start, symbol.end))
        .map(|span| (weigh(span), span))
        .collect();
    if candidates.is_empty() && !lines.is_empty() {
        let mut start = 1;
        while start <= lines.len() as u32 {
            let span = Span::new(start, (start + WINDOW_LINES - 1).min(lines.len() as u32));
            candidates.push((weigh(span), span));
            start += WINDOW_LINES / 2;
        }
    }
    candidates.retain(|(score, _)| *score > 0.0);
    candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    candidates
        .into_iter()
        .take(DENSE_SPANS)
        .map(|(_, span)| span)
        .collect()
}
