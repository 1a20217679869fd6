//! The repository index and retrieval without a model call: paths, a lexical index of file
//! contents, symbols with spans, and the ranking of files and spans an issue's text points at.
//! It knows nothing of prompts; the pipeline renders what it returns.

pub mod kinds;
pub mod lexical;
pub mod lookup;
pub mod query;
pub mod retrieve;
pub mod symbols;
pub mod tokens;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use kinds::{FileKind, Language};
use lexical::LexicalIndex;
use retrieve::PathNames;
use symbols::Symbol;

use crate::anchored::{Entry, Tree};

pub use retrieve::{Ranked, Ranking, Span};

/// Files larger than this are indexed by path only: no issue is about a 1 MiB file's words.
pub const MAX_INDEXED_BYTES: u64 = 1024 * 1024;

/// At most this much text is indexed in all (past it, files are indexed by path only), so that
/// a repository cannot make the index outgrow the worker's memory.
pub const MAX_TOTAL_INDEXED_BYTES: u64 = 256 * 1024 * 1024;

/// One file of the repository as the index knows it.
#[derive(Debug, Clone)]
pub struct Document {
    pub path: String,
    pub kind: FileKind,
    pub language: Option<Language>,
    /// Bytes on disk (a symlink's own size).
    pub bytes: u64,
    /// Whether its words are in the lexical index (a readable text file, not too large).
    pub indexed: bool,
}

/// The index of one work tree at one commit.
pub struct RepoIndex {
    root: PathBuf,
    documents: Vec<Document>,
    by_path: HashMap<String, u32>,
    /// Files by name and by name without extension, for what an issue calls a file.
    names: PathNames,
    lexical: LexicalIndex,
    /// Symbol tables, parsed when first asked for.
    symbols: Mutex<HashMap<u32, Arc<Vec<Symbol>>>>,
}

impl RepoIndex {
    /// Reads every file of `files` (paths relative to `root`) on up to two threads.
    pub fn build(root: &Path, files: &[String]) -> RepoIndex {
        let documents: Vec<Document> = files
            .iter()
            .map(|path| Document {
                path: path.clone(),
                kind: FileKind::of(path),
                language: Language::of(path),
                bytes: 0,
                indexed: false,
            })
            .collect();
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 2);
        let chunk = documents.len().div_ceil(threads).max(1);
        let (lexical, documents) = std::thread::scope(|scope| {
            let handles: Vec<_> = documents
                .chunks(chunk)
                .enumerate()
                .map(|(part, slice)| {
                    let total = files.len();
                    let budget = MAX_TOTAL_INDEXED_BYTES / threads as u64;
                    scope.spawn(move || index_slice(root, slice, part * chunk, total, budget))
                })
                .collect();
            let mut lexical = LexicalIndex::with_documents(files.len());
            let mut read = Vec::with_capacity(files.len());
            for handle in handles {
                let (part, docs) = handle.join().expect("an index thread does not panic");
                lexical.merge(part);
                read.extend(docs);
            }
            (lexical, read)
        });
        let by_path = documents
            .iter()
            .enumerate()
            .map(|(id, doc)| (doc.path.clone(), id as u32))
            .collect();
        RepoIndex {
            root: root.to_path_buf(),
            names: PathNames::new(&documents),
            documents,
            by_path,
            lexical,
            symbols: Mutex::new(HashMap::new()),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn documents(&self) -> &[Document] {
        &self.documents
    }

    pub fn document(&self, id: u32) -> &Document {
        &self.documents[id as usize]
    }

    pub fn id_of(&self, path: &str) -> Option<u32> {
        self.by_path.get(path).copied()
    }

    pub(in crate::index) fn names(&self) -> &PathNames {
        &self.names
    }

    pub fn lexical(&self) -> &LexicalIndex {
        &self.lexical
    }

    /// The file's text, if it is a readable UTF-8 text file of indexable size.
    pub fn text(&self, id: u32) -> Option<String> {
        let document = self.document(id);
        let tree = Tree::open(&self.root).ok()?;
        read_text(&tree, &document.path).map(|(text, _)| text)
    }

    /// The definitions in the file, parsed once and kept.
    pub fn symbols(&self, id: u32) -> Arc<Vec<Symbol>> {
        if let Some(known) = self.symbols.lock().expect("symbols lock").get(&id) {
            return known.clone();
        }
        let parsed = match (self.document(id).language, self.text(id)) {
            (Some(language), Some(text)) => symbols::symbols(language, &text),
            _ => Vec::new(),
        };
        let parsed = Arc::new(parsed);
        self.symbols
            .lock()
            .expect("symbols lock")
            .insert(id, parsed.clone());
        parsed
    }

    /// Bytes the index holds, roughly (its paths and the lexical index).
    pub fn approximate_bytes(&self) -> usize {
        let paths: usize = self.documents.iter().map(|d| d.path.len() * 2 + 96).sum();
        paths + self.lexical.approximate_bytes()
    }
}

/// Reads and indexes one slice of the documents, numbered from `first`.
fn index_slice(
    root: &Path,
    slice: &[Document],
    first: usize,
    total: usize,
    mut budget: u64,
) -> (LexicalIndex, Vec<Document>) {
    let mut lexical = LexicalIndex::with_documents(total);
    let mut scratch = String::new();
    let mut counts = HashMap::new();
    let mut read = Vec::with_capacity(slice.len());
    let tree = Tree::open(root).ok();
    for (offset, document) in slice.iter().enumerate() {
        let mut document = document.clone();
        let text = tree
            .as_ref()
            .and_then(|tree| read_text(tree, &document.path));
        match text.filter(|(_, bytes)| *bytes <= budget) {
            Some((text, bytes)) => {
                budget -= bytes;
                document.bytes = bytes;
                document.indexed = true;
                lexical.add((first + offset) as u32, &text, &mut scratch, &mut counts);
            }
            None => {
                document.bytes = match tree.as_ref().map(|tree| tree.entry(&document.path)) {
                    Some(Ok(Entry::File { bytes, .. })) => bytes,
                    _ => 0,
                }
            }
        }
        read.push(document);
    }
    (lexical, read)
}

/// A regular file's text and size: `None` for a missing, large, binary or non-UTF-8 file, a
/// link, or a file below one.
fn read_text(tree: &Tree, relative: &str) -> Option<(String, u64)> {
    let bytes = tree.read(relative, MAX_INDEXED_BYTES).ok()??;
    if bytes.iter().take(8000).any(|b| *b == 0) {
        return None;
    }
    let size = bytes.len() as u64;
    String::from_utf8(bytes).ok().map(|text| (text, size))
}
