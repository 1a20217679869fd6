//! Plan: the steps and the file changes (path, operation, line range) as strict JSON
//! (code-agent-contract.md's `fix_plan`), refused when it names a denied path.

use serde::{Deserialize, Serialize};

use super::StageOutputError;
use super::issue::Issue;
use super::triage::Triage;
use crate::edits::paths::{PathRefusal, ProjectRoot, ProtectedPaths};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    Create,
    Modify,
    Delete,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    pub path: String,
    pub operation: Operation,
    pub line_range: Option<(u32, u32)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// What the model suggested; the branch actually used comes from the branch template.
    pub branch_name: Option<String>,
    pub plan_steps: Vec<String>,
    pub file_changes: Vec<FileChange>,
    /// The commit subject's summary (10-100 characters after `type(scope): `).
    pub commit_summary: String,
    /// The commit scope, `[a-z-]+`, when the model proposes one.
    pub scope: Option<String>,
}

pub fn prompt(
    _issue: &Issue,
    _triage: &Triage,
    _repo_files: &[String],
    _instructions: &str,
) -> String {
    String::new()
}

/// Strictly parses what we rely on; a `validation_commands` field is ignored (commands come
/// from `.autofix.toml` only), other unknown fields tolerated, one code fence tolerated.
pub fn parse(_text: &str) -> Result<Plan, StageOutputError> {
    Err(StageOutputError::new("plan", "not supported yet"))
}

/// Refuses a plan whose file changes leave the repository or touch a protected path.
pub fn check(
    _plan: &Plan,
    _root: &ProjectRoot,
    _protected: &ProtectedPaths,
) -> Result<(), (String, PathRefusal)> {
    Ok(())
}
