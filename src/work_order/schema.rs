//! The work-order harness's data (docs/local-commands.md): the WorkOrder and its validation,
//! and the records the harness writes — FailureBrief, CmdResult, AttemptRecord, RunSummary.

use serde::{Deserialize, Serialize};

use crate::edits::paths::{self, PathRefusal};
use crate::failure::FailureCode;

/// At most this many context files, and this many bytes read from them in all.
pub const MAX_CONTEXT_FILES: usize = 10;
pub const MAX_CONTEXT_BYTES: usize = 200 * 1024;

/// What the model may do and how success is judged. Unknown fields are refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkOrder {
    pub id: String,
    pub title: String,
    pub intent: String,
    /// Explicit relative paths the model may write (no globs).
    pub allowed_files: Vec<String>,
    /// Constraints the model must respect, stated to it in words.
    #[serde(default)]
    pub forbidden: Vec<String>,
    /// Commands run after every attempt, split like a POSIX shell would (but never run by one).
    pub acceptance_commands: Vec<String>,
    /// Files shown to the model; must be a subset of `allowed_files`.
    #[serde(default)]
    pub context_files: Vec<String>,
    #[serde(default)]
    pub notes: Option<String>,
}

/// A work order checked and with its paths normalised and commands split into argv.
#[derive(Debug, Clone)]
pub struct ValidWorkOrder {
    pub order: WorkOrder,
    pub allowed_files: Vec<String>,
    pub context_files: Vec<String>,
    pub acceptance_argv: Vec<Vec<String>>,
}

/// Why a work order cannot be run: one line naming the field.
#[derive(Debug, thiserror::Error)]
pub enum WorkOrderError {
    #[error("the work order is not valid: {0}")]
    NotValid(serde_json::Error),
    #[error("the work order's `id` is empty")]
    NoId,
    #[error("the work order's `allowed_files` is empty: nothing could be written")]
    NoAllowedFiles,
    #[error("{field}[{index}] `{path}` is refused: {reason}")]
    PathRefused {
        field: &'static str,
        index: usize,
        path: String,
        reason: PathRefusal,
    },
    #[error("{field}[{index}] `{path}` is a pattern; list explicit paths")]
    Pattern {
        field: &'static str,
        index: usize,
        path: String,
    },
    #[error("the work order has {0} `context_files`; at most {MAX_CONTEXT_FILES} are allowed")]
    TooManyContextFiles(usize),
    #[error("context file `{0}` is not in `allowed_files` (context files must be a subset)")]
    ContextNotAllowed(String),
    #[error("the work order's `acceptance_commands` is empty: nothing would judge success")]
    NoAcceptanceCommands,
    #[error("acceptance_commands[{0}] is empty")]
    EmptyCommand(usize),
    #[error(
        "acceptance_commands[{index}] `{command}` has an unclosed quote or a trailing backslash"
    )]
    UnsplittableCommand { index: usize, command: String },
}

impl WorkOrder {
    /// Parses and validates a work order file's text.
    pub fn parse(text: &str) -> Result<ValidWorkOrder, WorkOrderError> {
        let order: WorkOrder = serde_json::from_str(text).map_err(WorkOrderError::NotValid)?;
        order.validate()
    }

    pub fn validate(self) -> Result<ValidWorkOrder, WorkOrderError> {
        if self.id.trim().is_empty() {
            return Err(WorkOrderError::NoId);
        }
        if self.allowed_files.is_empty() {
            return Err(WorkOrderError::NoAllowedFiles);
        }
        let allowed_files = normalise_all("allowed_files", &self.allowed_files)?;
        let context_files = normalise_all("context_files", &self.context_files)?;
        if context_files.len() > MAX_CONTEXT_FILES {
            return Err(WorkOrderError::TooManyContextFiles(context_files.len()));
        }
        if let Some(outside) = context_files.iter().find(|f| !allowed_files.contains(f)) {
            return Err(WorkOrderError::ContextNotAllowed(outside.clone()));
        }
        if self.acceptance_commands.is_empty() {
            return Err(WorkOrderError::NoAcceptanceCommands);
        }
        let mut acceptance_argv = Vec::new();
        for (index, command) in self.acceptance_commands.iter().enumerate() {
            match shlex::split(command) {
                Some(argv) if !argv.is_empty() => acceptance_argv.push(argv),
                Some(_) => return Err(WorkOrderError::EmptyCommand(index)),
                None => {
                    return Err(WorkOrderError::UnsplittableCommand {
                        index,
                        command: command.clone(),
                    });
                }
            }
        }
        Ok(ValidWorkOrder {
            order: self,
            allowed_files,
            context_files,
            acceptance_argv,
        })
    }
}

fn normalise_all(field: &'static str, list: &[String]) -> Result<Vec<String>, WorkOrderError> {
    let mut normalised: Vec<String> = Vec::with_capacity(list.len());
    for (index, path) in list.iter().enumerate() {
        let clean = paths::normalise(path).map_err(|reason| WorkOrderError::PathRefused {
            field,
            index,
            path: path.clone(),
            reason,
        })?;
        if clean.contains(['*', '?', '[']) {
            return Err(WorkOrderError::Pattern {
                field,
                index,
                path: path.clone(),
            });
        }
        if !normalised.contains(&clean) {
            normalised.push(clean);
        }
    }
    Ok(normalised)
}

/// The stages a failure can come from (docs/local-commands.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureStage {
    Preflight,
    LlmOutputInvalid,
    WriteScopeViolation,
    StaleContext,
    WriteFailed,
    VerifyFailed,
    AcceptanceFailed,
    Exception,
}

impl FailureStage {
    /// The stage as written in artifacts, e.g. `acceptance_failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureStage::Preflight => "preflight",
            FailureStage::LlmOutputInvalid => "llm_output_invalid",
            FailureStage::WriteScopeViolation => "write_scope_violation",
            FailureStage::StaleContext => "stale_context",
            FailureStage::WriteFailed => "write_failed",
            FailureStage::VerifyFailed => "verify_failed",
            FailureStage::AcceptanceFailed => "acceptance_failed",
            FailureStage::Exception => "exception",
        }
    }
}

/// What the next attempt is told about the last one: bounded, never a whole log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureBrief {
    pub stage: FailureStage,
    pub code: FailureCode,
    pub command: Option<String>,
    pub exit_code: Option<i32>,
    pub primary_error_excerpt: String,
    pub constraints_reminder: String,
}

/// One command's result; `stdout_path` holds stdout and stderr interleaved in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CmdResult {
    pub command: Vec<String>,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// Exit 0 in time, and no warning lines when the step's `fail_on_warnings` is set.
    pub passed: bool,
    pub stdout_trunc: String,
    pub stderr_trunc: String,
    pub stdout_path: String,
    pub stderr_path: String,
    pub duration_seconds: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRecord {
    pub attempt_index: usize,
    pub baseline_commit: String,
    pub proposal_path: Option<String>,
    pub touched_files: Vec<String>,
    pub write_ok: bool,
    pub verify: Vec<CmdResult>,
    pub acceptance: Vec<CmdResult>,
    pub failure_brief: Option<FailureBrief>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    Pass,
    Fail,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub run_id: String,
    pub work_order_id: String,
    pub verdict: Verdict,
    pub failure_code: Option<FailureCode>,
    pub failure_stage: Option<FailureStage>,
    pub baseline_commit: Option<String>,
    pub llm_provider: String,
    pub llm_model: String,
    pub llm_temperature: f32,
    pub max_attempts: usize,
    pub attempts: Vec<AttemptRecord>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// sha256 over the sorted (path, content sha256) pairs of the work tree, after a PASS.
    pub repo_tree_hash_after: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(json: serde_json::Value) -> Result<ValidWorkOrder, WorkOrderError> {
        WorkOrder::parse(&json.to_string())
    }

    fn base() -> serde_json::Value {
        serde_json::json!({
            "id": "wo-1",
            "title": "Clamp retries",
            "intent": "Clamp retries to 10",
            "allowed_files": ["./src/lib.rs", "src/lib.rs", "tests/retry.rs"],
            "forbidden": ["no new dependencies"],
            "acceptance_commands": ["cargo test --quiet", "python3 -c 'print(1)'"],
            "context_files": ["src/lib.rs"]
        })
    }

    #[test]
    fn a_good_work_order_is_normalised_and_its_commands_split() {
        let valid = order(base()).unwrap();
        assert_eq!(valid.allowed_files, ["src/lib.rs", "tests/retry.rs"]);
        assert_eq!(valid.acceptance_argv[1], ["python3", "-c", "print(1)"]);
    }

    #[test]
    fn escaping_absolute_and_pattern_paths_are_refused() {
        for (path, reason) in [
            ("../secrets", "climbs out"),
            ("/etc/passwd", "absolute"),
            ("C:/x", "drive letter"),
            ("src/*.rs", "is a pattern"),
            (".git/config", ".git/"),
        ] {
            let mut json = base();
            json["allowed_files"] = serde_json::json!([path]);
            json["context_files"] = serde_json::json!([]);
            let err = order(json).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("allowed_files[0] `{path}` is")),
                "{err}"
            );
            assert!(err.contains(reason), "{err}");
        }
    }

    #[test]
    fn context_files_must_be_few_and_allowed() {
        let mut json = base();
        json["context_files"] = serde_json::json!(["README.md"]);
        assert_eq!(
            order(json).unwrap_err().to_string(),
            "context file `README.md` is not in `allowed_files` (context files must be a subset)"
        );
        let mut json = base();
        let many: Vec<String> = (0..11).map(|i| format!("f{i}.rs")).collect();
        json["allowed_files"] = serde_json::json!(many);
        json["context_files"] = serde_json::json!(many);
        assert!(order(json).unwrap_err().to_string().contains("at most 10"));
    }

    #[test]
    fn acceptance_commands_must_exist_and_split() {
        let mut json = base();
        json["acceptance_commands"] = serde_json::json!([]);
        assert!(
            order(json)
                .unwrap_err()
                .to_string()
                .contains("nothing would judge success")
        );
        let mut json = base();
        json["acceptance_commands"] = serde_json::json!(["echo 'unclosed"]);
        assert!(
            order(json)
                .unwrap_err()
                .to_string()
                .contains("unclosed quote")
        );
    }

    #[test]
    fn the_example_work_order_in_the_readme_is_valid() {
        let valid = WorkOrder::parse(include_str!("../../examples/work_order.json")).unwrap();
        assert_eq!(valid.acceptance_argv[0], ["cargo", "test", "--quiet"]);
    }

    #[test]
    fn unknown_fields_and_bad_json_are_refused() {
        let mut json = base();
        json["validation_commands"] = serde_json::json!(["rm -rf /"]);
        assert!(
            order(json)
                .unwrap_err()
                .to_string()
                .contains("unknown field `validation_commands`")
        );
        assert!(
            WorkOrder::parse("{")
                .unwrap_err()
                .to_string()
                .starts_with("the work order is not valid")
        );
    }
}
