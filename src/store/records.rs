//! The rows the store hands out and takes in: deliveries as they arrived and as the server read
//! them, jobs and their claims, outcomes and histories, and the change requests autofix opened.

use std::str::FromStr;

use chrono::{DateTime, Utc};

use crate::failure::{Failure, FailureCode, Stage};
use crate::forge::{BotEvent, BranchHome, ForgeKind, RepoPath, RepoRef};

use super::{JobId, JobKey, StoreError};

/// A webhook delivery as it arrived, with what the server read in it: its id is GitHub's
/// `X-GitHub-Delivery` or GitLab's `Idempotency-Key`, `event` the forge's event header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub id: String,
    pub forge: ForgeKind,
    pub event: String,
    pub received_at: DateTime<Utc>,
    /// The body as it arrived, kept for `autofix replay`.
    pub payload: Vec<u8>,
    /// What the delivery asks of the bot: what a job works from, never read from `payload` again.
    pub parsed: BotEvent,
}

/// A delivery's raw form read back from the store, with the job it started or joined: what
/// `autofix replay` delivers again, and what a delivery recorded before deliveries were stored
/// parsed is read from once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredDelivery {
    pub id: String,
    pub forge: ForgeKind,
    pub event: String,
    pub received_at: DateTime<Utc>,
    pub payload: Vec<u8>,
    pub job_id: Option<JobId>,
}

/// A delivery linked to a job, as the job reads it: its id and what it asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedDelivery {
    pub id: String,
    pub parsed: BotEvent,
}

/// A pull/merge request autofix opened for an issue (the issue is `key`'s).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeRequestRecord {
    pub key: JobKey,
    /// GitHub's PR number, GitLab's MR iid.
    pub number: u64,
    pub branch: String,
    pub url: String,
    /// The job that opened it.
    pub job: JobId,
    /// Repairs of failed checks pushed to it so far.
    pub ci_repairs: u32,
    /// The head commit whose failed checks were last dealt with.
    pub ci_head: Option<String>,
    /// Where its branch lives: every later push goes there.
    pub home: BranchHome,
}

impl ChangeRequestRecord {
    /// The `head_repo` and `head_clone_url` columns: both NULL for a branch of the repository.
    pub(super) fn home_columns(&self) -> (Option<&str>, Option<&str>) {
        match &self.home {
            BranchHome::Base => (None, None),
            BranchHome::Fork(fork) => (Some(&fork.owner_path), Some(&fork.clone_url)),
        }
    }
}

/// The home the `head_repo` and `head_clone_url` columns of a change request of `forge` name.
pub(super) fn home_of(
    forge: ForgeKind,
    head_repo: Option<String>,
    head_clone_url: Option<String>,
) -> BranchHome {
    match (head_repo, head_clone_url) {
        (Some(owner_path), Some(clone_url)) => BranchHome::Fork(RepoRef {
            forge,
            owner_path,
            clone_url,
            default_branch: None,
        }),
        _ => BranchHome::Base,
    }
}

/// What recording a delivery did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnqueueOutcome {
    NewJob(JobId),
    DuplicateDelivery,
    ActiveJobExists(JobId),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    Queued,
    Running,
    Succeeded,
    Failed,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
        }
    }
}

impl FromStr for JobState {
    type Err = StoreError;

    fn from_str(value: &str) -> Result<Self, StoreError> {
        match value {
            "queued" => Ok(JobState::Queued),
            "running" => Ok(JobState::Running),
            "succeeded" => Ok(JobState::Succeeded),
            "failed" => Ok(JobState::Failed),
            other => Err(StoreError::Corrupt {
                what: "job state",
                value: other.to_owned(),
            }),
        }
    }
}

/// A job a worker now holds a lease on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedJob {
    pub id: JobId,
    pub key: JobKey,
    /// The last stage a previous attempt completed, so a reclaimed job can resume after it.
    pub stage: Option<String>,
    /// Claims so far, this one included.
    pub attempts: u32,
    pub lease_until: DateTime<Utc>,
    /// What the last attempt saved with [`Store::save_checkpoint`], so this one skips work already done.
    pub checkpoint: Option<String>,
    /// The worker whose lease had run out when this claim took the job over (it crashed, or
    /// stalled past its lease); `None` for a job that was waiting in the queue.
    pub taken_over_from: Option<String>,
    /// Why an earlier attempt stopped, as the last one that said so recorded it.
    pub last_error: Option<String>,
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    Succeeded,
    /// The job's failure; the record keeps its code and reason.
    Failed(Failure),
}

impl Finish {
    /// A job that ended at `stage` without its change, for `reason`.
    pub fn failed(code: FailureCode, stage: Stage, reason: impl Into<String>) -> Finish {
        Finish::Failed(Failure::new(code, stage, reason))
    }
}

/// One row of `jobs`, as `autofix jobs` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRecord {
    pub id: JobId,
    pub key: JobKey,
    pub state: JobState,
    pub stage: Option<String>,
    pub attempts: u32,
    pub run_after: DateTime<Utc>,
    pub lease_owner: Option<String>,
    pub lease_until: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
    pub failure_code: Option<FailureCode>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// When a failed job's report, which the forge did not take, is tried again.
    pub report_due: Option<DateTime<Utc>>,
}

impl JobRecord {
    /// The failure code, and whether its report is still owed to the issue; `None` for no failure.
    pub fn failure_label(&self) -> Option<String> {
        let code = self.failure_code?;
        Some(match self.report_due {
            None => code.to_string(),
            Some(_) => format!("{code} (report owed)"),
        })
    }
}

/// Which jobs a page lists: newest first, optionally in one state, of one repository, or older
/// than a job id (the next page).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobFilter {
    pub state: Option<JobState>,
    pub repo: Option<RepoPath>,
    /// Only the jobs of this issue (its forge, repository and number).
    pub issue: Option<JobKey>,
    pub before: Option<JobId>,
    pub limit: u32,
}

/// One entry of a job's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEvent {
    pub at: DateTime<Utc>,
    pub stage: String,
    pub message: String,
}

/// A job with its whole history, oldest event first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobDetail {
    pub job: JobRecord,
    /// The worker's last saved checkpoint, if any.
    pub checkpoint: Option<String>,
    pub events: Vec<JobEvent>,
}
