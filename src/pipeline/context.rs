//! Context: the files the model sees while editing — the planned files, then files the issue
//! names, ranked, cut to a token budget — with their current sha256 for precondition checks.

use super::issue::Issue;
use super::plan::Plan;
use crate::edits::paths::{ProjectRoot, ProtectedPaths};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    pub path: String,
    pub content: String,
    pub sha256: String,
    /// True when the content was cut to fit the budget.
    pub truncated: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    pub files: Vec<ContextFile>,
    /// Files that were wanted but left out (budget, missing, protected, binary), with why.
    pub omitted: Vec<(String, String)>,
}

/// Builds the context for `plan` within `max_tokens` (estimated as bytes / 4).
pub fn build(
    _root: &ProjectRoot,
    _protected: &ProtectedPaths,
    _issue: &Issue,
    _plan: &Plan,
    _repo_files: &[String],
    _max_tokens: usize,
) -> Context {
    Context::default()
}
