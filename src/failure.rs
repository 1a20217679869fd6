//! The failure codes: the one vocabulary shared by failure comments, job records, artifacts and
//! exit statuses. Each code has one line of meaning, also listed in `docs/failure-codes.md`.

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FailureCode {
    /// The branch or base moved under the job and the change no longer applies.
    GitConflict,
    /// The repository's own build, lint or tests still fail after the last repair.
    ValidationFailed,
    /// The person or token lacks the rights the action needs.
    PermissionDenied,
    /// The model's edits do not parse or do not fit the files.
    InvalidDiff,
    /// The target branch exists with commits that are not the bot's.
    BranchExists,
    /// The LLM provider gave no answer (auth, rate limit, outage, timeout).
    LlmError,
    /// The answer is not in the format asked for.
    LlmOutputInvalid,
    /// The edits touch a file outside the allowed set or a protected path.
    WriteScopeViolation,
    /// An edit was made against content that has since changed.
    StaleContext,
    /// A command or the whole job ran out of time.
    Timeout,
    /// The token or wall-time budget is spent.
    BudgetExceeded,
    /// The repository is not in a state the job can start from (not git, dirty, detached).
    Preflight,
    /// The repository's configuration or the job's input is invalid (an issue that is not
    /// actionable, a plan that names files that do not exist even when asked again).
    InvalidInput,
    /// The forge's API refused or failed a request the job needed (other than a permission).
    ForgeError,
    /// The job was started as often as allowed without finishing: it crashed, or its worker
    /// died (a transient fault on its last attempt is reported with the fault's own code).
    RetriesExhausted,
    /// The sandbox for the repository's commands could not start, so none ran (fails closed).
    SandboxUnavailable,
    /// The answer stopped at the output-token cap, again after the model was asked once more.
    LlmOutputTruncated,
    /// A maintainer cancelled the job (`/autofix cancel`); it stopped at a stage boundary.
    Cancelled,
    /// `[reproduce] mode = "required"` and no test the model wrote failed on the base commit.
    ReproductionFailed,
}

impl FailureCode {
    pub const ALL: [FailureCode; 19] = [
        FailureCode::GitConflict,
        FailureCode::ValidationFailed,
        FailureCode::PermissionDenied,
        FailureCode::InvalidDiff,
        FailureCode::BranchExists,
        FailureCode::LlmError,
        FailureCode::LlmOutputInvalid,
        FailureCode::WriteScopeViolation,
        FailureCode::StaleContext,
        FailureCode::Timeout,
        FailureCode::BudgetExceeded,
        FailureCode::Preflight,
        FailureCode::InvalidInput,
        FailureCode::ForgeError,
        FailureCode::RetriesExhausted,
        FailureCode::SandboxUnavailable,
        FailureCode::LlmOutputTruncated,
        FailureCode::Cancelled,
        FailureCode::ReproductionFailed,
    ];

    /// The code as written in comments and artifacts, e.g. `BRANCH_EXISTS`.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureCode::GitConflict => "GIT_CONFLICT",
            FailureCode::ValidationFailed => "VALIDATION_FAILED",
            FailureCode::PermissionDenied => "PERMISSION_DENIED",
            FailureCode::InvalidDiff => "INVALID_DIFF",
            FailureCode::BranchExists => "BRANCH_EXISTS",
            FailureCode::LlmError => "LLM_ERROR",
            FailureCode::LlmOutputInvalid => "LLM_OUTPUT_INVALID",
            FailureCode::WriteScopeViolation => "WRITE_SCOPE_VIOLATION",
            FailureCode::StaleContext => "STALE_CONTEXT",
            FailureCode::Timeout => "TIMEOUT",
            FailureCode::BudgetExceeded => "BUDGET_EXCEEDED",
            FailureCode::Preflight => "PREFLIGHT",
            FailureCode::InvalidInput => "INVALID_INPUT",
            FailureCode::ForgeError => "FORGE_ERROR",
            FailureCode::RetriesExhausted => "RETRIES_EXHAUSTED",
            FailureCode::SandboxUnavailable => "SANDBOX_UNAVAILABLE",
            FailureCode::LlmOutputTruncated => "LLM_OUTPUT_TRUNCATED",
            FailureCode::Cancelled => "CANCELLED",
            FailureCode::ReproductionFailed => "REPRODUCTION_FAILED",
        }
    }

    /// A distinct process exit status per code, from 10 upwards (1-3 are code-commit's).
    pub fn exit_status(self) -> u8 {
        10 + FailureCode::ALL
            .iter()
            .position(|code| *code == self)
            .expect("every code is listed in ALL") as u8
    }
}

impl fmt::Display for FailureCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_serialise_as_written_in_comments() {
        for code in FailureCode::ALL {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
    }

    #[test]
    fn every_code_has_its_own_exit_status() {
        let mut statuses: Vec<u8> = FailureCode::ALL.iter().map(|c| c.exit_status()).collect();
        statuses.dedup();
        assert_eq!(statuses.len(), FailureCode::ALL.len());
        assert_eq!(FailureCode::GitConflict.exit_status(), 10);
        assert_eq!(FailureCode::ReproductionFailed.exit_status(), 28);
    }
}
