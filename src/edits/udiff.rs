//! Unified diffs as models write them: exact ones, and sloppy ones (wrong or missing `@@`
//! numbers, lost spaces on blank context lines, whitespace drift, CRLF) applied only when certain.
//!
//! `parse` reads a reply into file edits; `apply` places each hunk with the help of `shape`
//! (the hunk seen from the file's side), `locate` and `align` (where it fits), `indent` (how its
//! added lines are indented there), and `explain` says why a hunk that fits nowhere was refused.

mod align;
mod apply;
mod explain;
mod indent;
mod locate;
mod parse;
mod shape;
#[cfg(test)]
mod tests;

pub use apply::apply;
pub use parse::parse;

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
    /// `\ No newline at end of file`: the line before it ends its side of the diff (old for a
    /// removed line, new for an added one, both for a context line) without a newline.
    NoNewlineAtEnd,
}

fn hunk_name(index: usize, hunk: &Hunk) -> String {
    if hunk.header.is_empty() {
        format!("hunk {} (no @@ header)", index + 1)
    } else {
        format!("hunk {} ({})", index + 1, hunk.header)
    }
}
