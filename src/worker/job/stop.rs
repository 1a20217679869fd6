//! Why a stage stopped (failed for good, to retry, or finished) and how forge, git and store errors
//! become one of those.

use crate::failure::FailureCode;
use crate::forge::ForgeError;
use crate::git::GitError;
use crate::pipeline::fix::FixSummary;
use crate::store::{Finish, StoreError};
use crate::telemetry::StageClock;

/// A failure: the stage, the code, one line of reason, and what output explains it.
pub(super) struct Failed {
    pub(super) stage: String,
    pub(super) code: FailureCode,
    pub(super) reason: String,
    pub(super) output_tail: Option<String>,
}

impl Failed {
    /// Why a pipeline run that committed nothing ended, at `stage` when it names none.
    pub(super) fn of_summary(summary: &FixSummary, stage: &str) -> Failed {
        Failed {
            stage: summary
                .failure_stage
                .clone()
                .unwrap_or_else(|| stage.into()),
            code: summary
                .failure_code
                .unwrap_or(FailureCode::ValidationFailed),
            reason: summary
                .reason
                .clone()
                .unwrap_or_else(|| "the pipeline ended without a commit".into()),
            output_tail: summary.failure_output_tail.clone(),
        }
    }
}

/// Why a stage stopped.
pub(super) enum Stop {
    Failed(Failed),
    Retry(String),
    Finished(Finish),
    /// The server is stopping; the checkpoint holds everything done so far.
    Drained,
}

impl From<StoreError> for Stop {
    fn from(error: StoreError) -> Self {
        Stop::Retry(format!("the job store failed: {error}"))
    }
}

pub(super) fn forge_stop(stage: &'static str) -> impl Fn(ForgeError) -> Stop {
    move |error| {
        if error.is_retryable() {
            return Stop::Retry(error.to_string());
        }
        let code = match error {
            ForgeError::Unauthorized { .. } | ForgeError::Forbidden { .. } => {
                FailureCode::PermissionDenied
            }
            _ => FailureCode::ForgeError,
        };
        Stop::Failed(Failed {
            stage: stage.into(),
            code,
            reason: error.to_string(),
            output_tail: None,
        })
    }
}

pub(super) fn git_stop(stage: &'static str) -> impl Fn(GitError) -> Stop {
    move |error| {
        Stop::Failed(Failed {
            stage: stage.into(),
            code: error.failure_code(),
            reason: error.to_string(),
            output_tail: None,
        })
    }
}

pub(super) fn failed_io(stage: &'static str, reason: String) -> Stop {
    Stop::Failed(Failed {
        stage: stage.into(),
        code: FailureCode::Preflight,
        reason,
        output_tail: None,
    })
}

pub(super) fn invalid(reason: String) -> Stop {
    Stop::Failed(Failed {
        stage: "worker".into(),
        code: FailureCode::InvalidInput,
        reason,
        output_tail: None,
    })
}

impl Stop {
    /// One line saying why, for stage timings and logs.
    pub(super) fn describe(&self) -> String {
        match self {
            Stop::Failed(failed) => format!("{} {}", failed.code, failed.reason),
            Stop::Retry(reason) => format!("to be retried: {reason}"),
            Stop::Drained => "the server is stopping".into(),
            Stop::Finished(Finish::Succeeded) => "finished".into(),
            Stop::Finished(Finish::Failed { code, error }) => format!("{code} {error}"),
        }
    }
}

/// Stops `clock` as the stage's `result` says.
pub(super) fn finish_stage<T>(clock: StageClock, result: Result<T, Stop>) -> Result<T, Stop> {
    clock.finish(result, Stop::describe)
}
