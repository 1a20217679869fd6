//! Why a stage stopped (failed for good, to retry, or finished) and how forge, git and store errors
//! become one of those.

use chrono::{DateTime, Utc};

use crate::failure::{Failure, FailureCode, Stage};
use crate::forge::ForgeError;
use crate::git::GitError;
use crate::pipeline::fix::FixSummary;
use crate::store::{Finish, JobId, StoreError};
use crate::telemetry::StageClock;

/// Why a pipeline run that committed nothing ended, at `stage` when it says nothing itself.
pub(super) fn failure_of_run(summary: &FixSummary, stage: Stage) -> Failure {
    summary.failure.clone().unwrap_or_else(|| {
        Failure::new(
            FailureCode::ValidationFailed,
            stage,
            "the pipeline ended without a commit",
        )
    })
}

/// A fault that may pass: the job runs again later, unless this was its last allowed attempt,
/// when the fault becomes its failure, reported with this stage, code and reason.
pub(super) struct Fault {
    pub(super) stage: Stage,
    pub(super) code: FailureCode,
    pub(super) reason: String,
    /// No sooner than this is another attempt worth making (a rate limit's reset).
    pub(super) not_before: Option<DateTime<Utc>>,
}

impl Fault {
    /// A forge's transient fault or rate limit, with the forge's own words.
    pub(super) fn forge(stage: Stage, error: &ForgeError) -> Fault {
        let not_before = match error {
            ForgeError::RateLimited { reset_at, .. } => Some(*reset_at),
            _ => None,
        };
        Fault {
            stage,
            code: FailureCode::ForgeError,
            reason: error.to_string(),
            not_before,
        }
    }

    /// The branch moved under the job while it worked: the next attempt starts from where it is.
    pub(super) fn moved(stage: Stage, reason: impl Into<String>) -> Fault {
        Fault {
            stage,
            code: FailureCode::GitConflict,
            reason: reason.into(),
            not_before: None,
        }
    }

    /// The bot's own state stopped this attempt (its job store failed, or a restart lost what
    /// the attempt needs): the next one starts over. Should that last, the job was started as
    /// often as allowed without finishing.
    pub(super) fn internal(stage: Stage, reason: impl Into<String>) -> Fault {
        Fault {
            stage,
            code: FailureCode::RetriesExhausted,
            reason: reason.into(),
            not_before: None,
        }
    }

    /// The failure this fault is when it met the job's last allowed attempt: its own code and
    /// words first, then how many attempts there were and where their history is.
    pub(super) fn into_failure(self, attempts: u32, job: JobId) -> Failure {
        let which = match attempts {
            0 | 1 => "the job's only attempt".to_owned(),
            _ => format!("the last of the job's {attempts} attempts"),
        };
        Failure::new(
            self.code,
            self.stage,
            format!(
                "{} ({which}; history: `autofix jobs show {job}`)",
                self.reason
            ),
        )
    }
}

/// Why a stage stopped.
pub(super) enum Stop {
    Failed(Failure),
    Retry(Fault),
    Finished(Finish),
    /// The server is stopping; the checkpoint holds everything done so far.
    Drained,
}

impl From<StoreError> for Stop {
    fn from(error: StoreError) -> Self {
        Stop::Retry(Fault::internal(
            Stage::Worker,
            format!("the job store failed: {error}"),
        ))
    }
}

/// A forge's error as a stop: a rate limit or transient fault is retried (`FORGE_ERROR` should
/// it last), a refused credential or permission fails at once (`PERMISSION_DENIED`), and any
/// other refusal fails at once too (`FORGE_ERROR`).
pub(super) fn forge_stop(stage: Stage) -> impl Fn(ForgeError) -> Stop {
    move |error| {
        if error.is_retryable() {
            return Stop::Retry(Fault::forge(stage, &error));
        }
        let code = match error {
            ForgeError::Unauthorized { .. } | ForgeError::Forbidden { .. } => {
                FailureCode::PermissionDenied
            }
            _ => FailureCode::ForgeError,
        };
        Stop::Failed(Failure::new(code, stage, error.to_string()))
    }
}

pub(super) fn git_stop(stage: Stage) -> impl Fn(GitError) -> Stop {
    move |error| Stop::Failed(Failure::new(error.failure_code(), stage, error.to_string()))
}

pub(super) fn failed_io(stage: Stage, reason: String) -> Stop {
    Stop::Failed(Failure::new(FailureCode::Preflight, stage, reason))
}

pub(super) fn invalid(reason: String) -> Stop {
    Stop::Failed(Failure::new(
        FailureCode::InvalidInput,
        Stage::Worker,
        reason,
    ))
}

impl Stop {
    /// One line saying why, for stage timings and logs.
    pub(super) fn describe(&self) -> String {
        match self {
            Stop::Failed(failure) => format!("{} {}", failure.code, failure.reason),
            Stop::Retry(fault) => format!("to be retried: {} {}", fault.code, fault.reason),
            Stop::Drained => "the server is stopping".into(),
            Stop::Finished(Finish::Succeeded) => "finished".into(),
            Stop::Finished(Finish::Failed(failure)) => {
                format!("{} {}", failure.code, failure.reason)
            }
        }
    }
}

/// Stops `clock` as the stage's `result` says.
pub(super) fn finish_stage<T>(clock: StageClock, result: Result<T, Stop>) -> Result<T, Stop> {
    clock.finish(result, Stop::describe)
}
