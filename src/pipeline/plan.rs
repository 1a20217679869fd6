//! Plan: the steps and the file changes (path, operation, line range) as strict JSON
//! (code-agent-contract.md's `fix_plan`), refused when it names a denied path.
//!
//! `prompt` writes the planner's prompt and answer schema, `read` reads its answer, `summary`
//! makes the commit summary and scope fit; the plan's types and its path check are here.

mod prompt;
mod read;
mod summary;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::edits::paths::{PathRefusal, ProjectRoot, ProtectedPaths};
use crate::failure::Stage;

pub use prompt::{prompt, schema};
pub use read::{parse, parse_answer};
pub use summary::summary_from_title;

const INTRO: &str = include_str!("prompts/plan.md");
const ANSWER: &str = include_str!("prompts/plan_answer.md");
const LOOKUP: &str = include_str!("prompts/plan_lookup.md");

/// Most tokens of the planner's repository map.
const MAX_MAP_TOKENS: usize = 8_000;

/// The tokens the planner's repository map is built within: a quarter of
/// `pipeline.context_tokens`, at most 8,000.
pub fn map_tokens(context_tokens: usize) -> usize {
    (context_tokens / 4).min(MAX_MAP_TOKENS)
}

/// Most names one look-up answer may list.
pub const MAX_NEEDED_NAMES: usize = 8;

const STAGE: Stage = Stage::Plan;

const SUMMARY_MIN_CHARS: usize = 10;
const SUMMARY_MAX_CHARS: usize = 100;

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

impl Plan {
    /// No plan yet: what the context holds before the planner has named any file.
    pub fn none() -> Plan {
        Plan {
            branch_name: None,
            plan_steps: Vec::new(),
            file_changes: Vec::new(),
            commit_summary: String::new(),
            scope: None,
        }
    }

    /// A plan of nothing but these changes, each of a whole file (for the stages' own tests).
    #[cfg(test)]
    pub(crate) fn changing(changes: &[(&str, Operation)]) -> Plan {
        Plan {
            file_changes: changes
                .iter()
                .map(|(path, operation)| FileChange {
                    path: (*path).to_owned(),
                    operation: *operation,
                    line_range: None,
                })
                .collect(),
            ..Plan::none()
        }
    }
}

/// What the planner answered: the plan, or the files and symbols it wants to see first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanAnswer {
    Plan(Plan),
    Need(Vec<String>),
}

/// Refuses a plan whose file changes leave the repository or touch a protected path.
///
/// The path is checked as written and as it resolves through symlinked folders, exactly as
/// `edits::apply` checks an edit. Whether the file exists is another question, asked by
/// `plan_files` once the plan is within scope.
pub fn check(
    plan: &Plan,
    root: &ProjectRoot,
    protected: &ProtectedPaths,
) -> Result<(), (String, PathRefusal)> {
    for change in &plan.file_changes {
        allowed_path(&change.path, root, protected)
            .map_err(|refusal| (change.path.clone(), refusal))?;
    }
    Ok(())
}

/// The normalised path of `requested` if an edit may touch it.
pub(super) fn allowed_path(
    requested: &str,
    root: &ProjectRoot,
    protected: &ProtectedPaths,
) -> Result<String, PathRefusal> {
    let confined = root.confine(requested)?;
    if let Some(rule) = protected.rule_for(&confined.relative, false) {
        return Err(PathRefusal::Protected { rule });
    }
    Ok(confined.relative)
}
