//! `autofix apply`: one LLM response applied to a directory with the engine's own parsers and
//! rules, so users can see exactly what the bot would do with a model's output, and why not.

use std::path::Path;

use crate::code_commit;
use crate::edits::apply::{self, ApplyPolicy};
use crate::edits::paths::{ProjectRoot, ProtectedPaths};
use crate::edits::{EditFormat, detect};

/// What to apply and under which rules.
pub struct ApplyRequest<'a> {
    pub dir: &'a Path,
    pub response: &'a [u8],
    pub format: Option<EditFormat>,
    /// Patterns refused on top of code-commit's list and the project's ignore rules.
    pub extra_protected: &'a [String],
    /// Only check and report; write nothing.
    pub check_only: bool,
}

/// Why nothing was applied. `Refused` is the engine saying no; the others are bad input.
#[derive(Debug, thiserror::Error)]
pub enum ApplyCommandError {
    #[error("{0}")]
    BadInput(String),
    #[error("refused, nothing changed: {0}")]
    Refused(String),
}

/// Applies the response, returning one summary line per file (prefixed with the format).
pub fn run(request: &ApplyRequest) -> Result<Vec<String>, ApplyCommandError> {
    let text = std::str::from_utf8(request.response).map_err(|err| {
        ApplyCommandError::BadInput(format!(
            "the response is not UTF-8 text (invalid byte at offset {})",
            err.valid_up_to()
        ))
    })?;
    let root = ProjectRoot::new(request.dir).map_err(|err| {
        ApplyCommandError::BadInput(format!("cannot open {}: {err}", request.dir.display()))
    })?;
    let mut patterns: Vec<String> = code_commit::PROTECTED
        .iter()
        .map(|p| p.to_string())
        .collect();
    patterns.extend(request.extra_protected.iter().cloned());
    let protected = ProtectedPaths::from_patterns(&root, &patterns)
        .map_err(|err| ApplyCommandError::BadInput(err.to_string()))?
        .with_project_ignores(&root);
    let edits = detect::parse(text, request.format)
        .map_err(|err| ApplyCommandError::Refused(err.to_string()))?;
    let policy = ApplyPolicy::new(protected);
    let prepared = apply::prepare(&root, &edits, &policy)
        .map_err(|err| ApplyCommandError::Refused(err.to_string()))?;
    let summaries: Vec<String> = prepared.files().iter().map(|f| f.summary()).collect();
    if !request.check_only {
        prepared
            .commit()
            .map_err(|err| ApplyCommandError::Refused(err.to_string()))?;
    }
    Ok(summaries)
}
