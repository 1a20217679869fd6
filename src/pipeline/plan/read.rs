//! Reading the planner's answer: the plan's file changes checked field by field, or the names it
//! asks to see first; the steps, summary and scope only explain and may be left out.

use serde_json::Value;

use super::summary::{summary_from_title, usable_scope, usable_summary};
use super::{FileChange, MAX_NEEDED_NAMES, Operation, Plan, PlanAnswer, STAGE};
use crate::edits::paths;
use crate::pipeline::StageOutputError;
use crate::pipeline::answer::{self, Fields, describe};

/// Reads a plan; when `may_ask`, a plan with a non-empty `need` (names to look up) is read as
/// that look-up instead, its file changes only a first guess. Without look-ups left, `need` is
/// ignored and the plan is taken.
pub fn parse_answer(
    text: &str,
    issue_title: &str,
    may_ask: bool,
) -> Result<PlanAnswer, StageOutputError> {
    let object = answer::object(STAGE, text)?;
    let fields = Fields::new(STAGE, &object);
    let needed: Vec<String> = fields
        .optional("need")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(str::to_owned)
                .take(MAX_NEEDED_NAMES)
                .collect()
        })
        .unwrap_or_default();
    if may_ask && !needed.is_empty() {
        return Ok(PlanAnswer::Need(needed));
    }
    parse(text, issue_title).map(PlanAnswer::Plan)
}

/// Reads what the pipeline acts on, the file changes; `plan_steps`, `commit_summary` and
/// `scope` only explain and may be left out. A missing or unusable summary falls back to one
/// made from `issue_title`; a summary with a `type(scope): ` prefix, several lines or too many
/// characters is cut to fit, a scope in the wrong case is put in lower case. `branch_name` and
/// `validation_commands` are read and ignored (branches come from the template, commands from
/// `.autofix.toml` only); other unknown fields and one code fence are tolerated.
///
/// `operation` is read without regard to case; a file named twice keeps its first change.
pub fn parse(text: &str, issue_title: &str) -> Result<Plan, StageOutputError> {
    let object = answer::object(STAGE, text)?;
    let fields = Fields::new(STAGE, &object);
    let branch_name = fields.optional_string("branch_name")?;
    let plan_steps = fields.optional_texts("plan_steps")?;
    let file_changes = file_changes(&fields)?;
    let commit_summary = fields
        .optional_string("commit_summary")?
        .and_then(|summary| usable_summary(&summary))
        .unwrap_or_else(|| summary_from_title(issue_title));
    let scope = fields
        .optional_string("scope")?
        .and_then(|scope| usable_scope(&scope));
    Ok(Plan {
        branch_name,
        plan_steps,
        file_changes,
        commit_summary,
        scope,
    })
}

fn file_changes(fields: &Fields) -> Result<Vec<FileChange>, StageOutputError> {
    let items = fields.list("file_changes")?;
    if items.is_empty() {
        return Err(fields.error(format!(
            "{} must name at least one file",
            fields.name("file_changes")
        )));
    }
    let mut changes: Vec<FileChange> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let change = fields.nested(&format!("file_changes[{index}]"), item)?;
        let path = change.text("path")?;
        let operation = change.one_of(
            "operation",
            &[
                ("CREATE", Operation::Create),
                ("MODIFY", Operation::Modify),
                ("DELETE", Operation::Delete),
            ],
        )?;
        let line_range = line_range(&change)?;
        if changes.iter().any(|seen| same_file(&seen.path, &path)) {
            // A file named twice (small models copy the example's lines) is one change: the first.
            continue;
        }
        changes.push(FileChange {
            path,
            operation,
            line_range,
        });
    }
    Ok(changes)
}

/// Compares the normalised forms when both have one (`./src/a.rs` is `src/a.rs`).
fn same_file(a: &str, b: &str) -> bool {
    match (paths::normalise(a), paths::normalise(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

fn line_range(change: &Fields) -> Result<Option<(u32, u32)>, StageOutputError> {
    let Some(value) = change.optional("line_range") else {
        return Ok(None);
    };
    let pair = value.as_array().and_then(|items| match items.as_slice() {
        [start, end] => Some((line_number(start)?, line_number(end)?)),
        _ => None,
    });
    match pair {
        Some((start, end)) if start <= end => Ok(Some((start, end))),
        _ => Err(change.error(format!(
            "{} must be [start, end] with 1 <= start <= end, not {}",
            change.name("line_range"),
            describe(value)
        ))),
    }
}

fn line_number(value: &Value) -> Option<u32> {
    value
        .as_u64()
        .filter(|line| *line >= 1)
        .and_then(|line| u32::try_from(line).ok())
}
