//! Triage: is the issue actionable, what kind of change is it, how risky, which files does it
//! likely touch. The model answers strict JSON (code-agent-contract.md's `triage_result`).

use serde::{Deserialize, Serialize};

use super::StageOutputError;
use super::issue::Issue;
use crate::git::CommitKind;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Risk {
    Low,
    Medium,
    High,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Triage {
    pub actionable: bool,
    /// fix | feat | docs | chore | refactor
    pub classification: CommitKind,
    pub risk: Risk,
    pub affected_files: Vec<String>,
    /// Why (especially when not actionable).
    pub reason: String,
}

/// The triage prompt: the issue, the repository's file list, and the instructions files.
pub fn prompt(_issue: &Issue, _repo_files: &[String], _instructions: &str) -> String {
    String::new()
}

/// Strictly parses what we rely on; tolerates unknown fields and one code fence.
pub fn parse(_text: &str) -> Result<Triage, StageOutputError> {
    Err(StageOutputError::new("triage", "not supported yet"))
}
