//! How a job fails, said one way from the stage that fails to the job record, the comment and
//! the exit status: the failure codes (each with one line of meaning, also listed in
//! `docs/failure-codes.md`), the stages, and the failure itself.

use std::fmt;
use std::str::FromStr;

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

/// Where a job is when something happens to it: the pipeline's stages, and the worker's steps
/// around them. Written in snake case (`validate`, `ci`) in run logs, job histories, comments,
/// artifacts and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The repository, the issue and the configuration are checked before any work.
    Preflight,
    /// The model decides whether the issue is actionable.
    Triage,
    /// The model plans the change: steps and files.
    Plan,
    /// The model writes a test that shows the issue, run on the base commit.
    Reproduce,
    /// The repository's files and symbols are read for context.
    Index,
    /// The repository's setup commands run (with network when asked).
    Setup,
    /// The model edits the files.
    Edit,
    /// The model repairs its change after a failed check.
    Repair,
    /// The repository's own checks run on the change.
    Validate,
    /// The model reviews the validated change.
    Audit,
    /// The feature branch is made.
    Branch,
    /// The change is committed.
    Commit,
    /// The whole pipeline, seen from the worker.
    Fix,
    /// Whoever asked is checked for push rights.
    Authorize,
    /// The job reads the deliveries it handles.
    Gather,
    /// The repository is fetched into the job's working copy.
    Fetch,
    /// The checks run on the base commit; for a change request, the base it follows is read.
    Base,
    /// A change request's commits are made again on a moved base.
    Rebase,
    /// The commit is pushed.
    Push,
    /// The pull or merge request is opened.
    Open,
    /// The status comment on the issue is written.
    Status,
    /// A reply to a maintainer is posted.
    Reply,
    /// A change request is revised after review.
    Revise,
    /// A change request's failed checks are read and repaired.
    Ci,
    /// Remarks on an issue or change request are answered.
    Talk,
    /// The outcome is posted on the forge.
    Publish,
    /// The job finished its work.
    Done,
    /// The bot's own machinery, outside any stage (the job store, a crash).
    Worker,
}

impl Stage {
    pub const ALL: [Stage; 28] = [
        Stage::Preflight,
        Stage::Triage,
        Stage::Plan,
        Stage::Reproduce,
        Stage::Index,
        Stage::Setup,
        Stage::Edit,
        Stage::Repair,
        Stage::Validate,
        Stage::Audit,
        Stage::Branch,
        Stage::Commit,
        Stage::Fix,
        Stage::Authorize,
        Stage::Gather,
        Stage::Fetch,
        Stage::Base,
        Stage::Rebase,
        Stage::Push,
        Stage::Open,
        Stage::Status,
        Stage::Reply,
        Stage::Revise,
        Stage::Ci,
        Stage::Talk,
        Stage::Publish,
        Stage::Done,
        Stage::Worker,
    ];

    /// The stage as written everywhere, e.g. `validate`.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Preflight => "preflight",
            Stage::Triage => "triage",
            Stage::Plan => "plan",
            Stage::Reproduce => "reproduce",
            Stage::Index => "index",
            Stage::Setup => "setup",
            Stage::Edit => "edit",
            Stage::Repair => "repair",
            Stage::Validate => "validate",
            Stage::Audit => "audit",
            Stage::Branch => "branch",
            Stage::Commit => "commit",
            Stage::Fix => "fix",
            Stage::Authorize => "authorize",
            Stage::Gather => "gather",
            Stage::Fetch => "fetch",
            Stage::Base => "base",
            Stage::Rebase => "rebase",
            Stage::Push => "push",
            Stage::Open => "open",
            Stage::Status => "status",
            Stage::Reply => "reply",
            Stage::Revise => "revise",
            Stage::Ci => "ci",
            Stage::Talk => "talk",
            Stage::Publish => "publish",
            Stage::Done => "done",
            Stage::Worker => "worker",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl AsRef<str> for Stage {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

/// A stage name autofix does not use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown stage {0:?}")]
pub struct UnknownStage(pub String);

impl FromStr for Stage {
    type Err = UnknownStage;

    fn from_str(name: &str) -> Result<Self, UnknownStage> {
        Stage::ALL
            .into_iter()
            .find(|stage| stage.as_str() == name)
            .ok_or_else(|| UnknownStage(name.to_owned()))
    }
}

/// Why a job (or a local run) ended without its change: the code, the stage it happened in,
/// one line of reason, and the end of the output that explains it (secrets redacted). The
/// same value is recorded, posted and turned into the exit status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub code: FailureCode,
    pub stage: Stage,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tail: Option<String>,
}

impl Failure {
    pub fn new(code: FailureCode, stage: Stage, reason: impl Into<String>) -> Failure {
        Failure {
            code,
            stage,
            reason: reason.into(),
            output_tail: None,
        }
    }

    /// The same failure with the end of the output that explains it.
    pub fn with_output_tail(mut self, tail: Option<String>) -> Failure {
        self.output_tail = tail;
        self
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {}: {}", self.code, self.stage, self.reason)
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

    #[test]
    fn every_stage_reads_back_from_its_name() {
        for stage in Stage::ALL {
            assert_eq!(stage.as_str().parse::<Stage>(), Ok(stage));
            let json = serde_json::to_string(&stage).unwrap();
            assert_eq!(json, format!("\"{stage}\""));
        }
        assert!("nowhere".parse::<Stage>().is_err());
    }

    #[test]
    fn a_failure_reads_as_its_code_stage_and_reason() {
        let failure = Failure::new(
            FailureCode::ValidationFailed,
            Stage::Validate,
            "`pytest` failed",
        );
        assert_eq!(
            failure.to_string(),
            "VALIDATION_FAILED at validate: `pytest` failed"
        );
    }
}
