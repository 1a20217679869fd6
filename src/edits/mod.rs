//! What an LLM asked to change, whatever format it wrote it in, as one [`EditSet`].
//! Each format has its own parser file; `detect` picks one, `apply` and `paths` write it safely.

pub mod apply;
pub(crate) mod closest;
pub mod detect;
pub mod fenced;
pub mod json_writes;
pub mod paths;
pub mod search_replace;
pub mod udiff;

use serde::{Deserialize, Serialize};

/// The four edit formats a model may answer in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum EditFormat {
    /// `^^^path` … `^^^end` whole-file blocks (docs/code-commit.md); an empty body deletes.
    Fenced,
    /// `{"summary", "writes": [{"path", "base_sha256", "content"}]}` direct writes.
    Json,
    /// Unified diffs, including the sloppy ones models write.
    Udiff,
    /// `<<<<<<< SEARCH` / `=======` / `>>>>>>> REPLACE` blocks (aider's format).
    SearchReplace,
}

impl EditFormat {
    pub fn name(self) -> &'static str {
        match self {
            EditFormat::Fenced => "fenced",
            EditFormat::Json => "json",
            EditFormat::Udiff => "udiff",
            EditFormat::SearchReplace => "search-replace",
        }
    }
}

/// Everything one model response asks for, applied all together or not at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditSet {
    pub format: EditFormat,
    pub summary: Option<String>,
    pub edits: Vec<FileEdit>,
}

/// One requested change to one file, with the path exactly as the model wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEdit {
    pub path: String,
    pub change: Change,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The file's whole new content. `base_sha256`, when given, must match the current
    /// content (the empty string's hash for a file that does not exist yet).
    Write {
        content: String,
        base_sha256: Option<String>,
    },
    /// Remove the file.
    Delete,
    /// Unified-diff hunks against the file's current content, applied in order.
    Patch { hunks: Vec<udiff::Hunk> },
    /// SEARCH/REPLACE blocks against the file's current content, applied in order.
    Replace { blocks: Vec<search_replace::Block> },
}

/// Why a response could not be read as edits: one clear sentence, naming the format and
/// where in the response the problem is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    pub message: String,
}

impl ParseError {
    pub fn new(message: impl Into<String>) -> Self {
        ParseError {
            message: message.into(),
        }
    }
}

/// Why the edits for one file do not fit its current content: names the hunk or block
/// and shows the closest real lines, so a person (or the next repair prompt) can see why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Mismatch {
    pub message: String,
}

impl Mismatch {
    pub fn new(message: impl Into<String>) -> Self {
        Mismatch {
            message: message.into(),
        }
    }
}
