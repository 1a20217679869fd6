//! Unified diffs as models write them: exact ones, and sloppy ones (wrong or missing `@@`
//! numbers, lost spaces on blank context lines, whitespace drift, CRLF) applied only when certain.

use super::{FileEdit, Mismatch, ParseError};

/// One `@@` hunk: the header as written and its lines in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// The `@@ … @@` line as the model wrote it (used to name the hunk in errors).
    pub header: String,
    /// The old-file start line from the header, if it had a usable one (1-based).
    pub old_start: Option<usize>,
    pub lines: Vec<HunkLine>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    Context(String),
    Remove(String),
    Add(String),
}

/// Reads every file section of a (possibly multi-file) unified diff.
pub fn parse(_text: &str) -> Result<Vec<FileEdit>, ParseError> {
    Err(ParseError::new("unified diffs are not supported yet"))
}

/// Applies `hunks` in order to `original`, or says which hunk does not fit and why.
pub fn apply(_original: &str, _hunks: &[Hunk]) -> Result<String, Mismatch> {
    Err(Mismatch::new("unified diffs are not supported yet"))
}
