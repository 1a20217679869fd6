//! `autofix jobs list|show`: the job store read back for an operator, one line per job, or one
//! job's record, checkpoint and history.

use chrono::{DateTime, Utc};

use crate::store::{JobDetail, JobId, JobRecord, JobState, Store, StoreError};

/// What `jobs list` prints when the store holds no job yet.
pub const NO_JOBS: &str = "no jobs";

/// The most characters of a cause `jobs list` shows on a job's line (`jobs show` has it all).
const CAUSE_CHARS: usize = 200;

/// The `limit` newest jobs, one line each under a header (or [`NO_JOBS`]).
pub async fn list(store: &Store, limit: u32) -> Result<Vec<String>, StoreError> {
    let jobs = store.jobs_list(limit).await?;
    if jobs.is_empty() {
        return Ok(vec![NO_JOBS.to_owned()]);
    }
    let header = row([
        "ID", "STATE", "ISSUE", "STAGE", "ATTEMPTS", "FAILURE", "UPDATED", "CAUSE",
    ]);
    Ok(std::iter::once(header)
        .chain(jobs.iter().map(list_line))
        .collect())
}

/// One job as `jobs list` shows it: id, state, forge:repo#issue, stage, attempts, failure code,
/// last update, and the cause: why a failed job failed, or why a queued one waits for a retry.
pub fn list_line(job: &JobRecord) -> String {
    row([
        &job.id.to_string(),
        job.state.as_str(),
        &issue_ref(job),
        job.stage.as_deref().unwrap_or("-"),
        &job.attempts.to_string(),
        job.failure_label().as_deref().unwrap_or("-"),
        &timestamp(job.updated_at),
        &cause(job),
    ])
}

/// A failed job's reason, or the fault a queued job's retry waits out, on one line; `-` for
/// the others (a succeeded job's earlier faults no longer matter).
fn cause(job: &JobRecord) -> String {
    let error = match (job.state, &job.last_error) {
        (JobState::Failed | JobState::Queued, Some(error)) => error,
        _ => return "-".to_owned(),
    };
    let line = error.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(CAUSE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// `job`'s record, its checkpoint and its events, oldest first; `JobNotFound` for an unknown id.
pub async fn show(store: &Store, job: JobId) -> Result<Vec<String>, StoreError> {
    Ok(show_lines(&store.job_show(job).await?))
}

fn show_lines(detail: &JobDetail) -> Vec<String> {
    let job = &detail.job;
    let mut lines = vec![
        format!("job {}: {}", job.id, issue_ref(job)),
        format!(
            "state: {} after {} attempt(s)",
            job.state.as_str(),
            job.attempts
        ),
        format!("stage: {}", job.stage.as_deref().unwrap_or("-")),
    ];
    if let (Some(owner), Some(until)) = (&job.lease_owner, job.lease_until) {
        lines.push(format!("lease: {owner} until {}", timestamp(until)));
    }
    lines.push(format!("run after: {}", timestamp(job.run_after)));
    if let Some(code) = &job.failure_code {
        lines.push(format!("failure: {code}"));
        if let Some(due) = job.report_due {
            lines.push(format!(
                "failure report: not posted yet, next try at {}",
                timestamp(due)
            ));
        }
    }
    if let Some(error) = &job.last_error {
        lines.push(format!("last error: {error}"));
    }
    lines.push(format!("created: {}", timestamp(job.created_at)));
    lines.push(format!("updated: {}", timestamp(job.updated_at)));
    lines.push(format!(
        "checkpoint: {}",
        detail.checkpoint.as_deref().unwrap_or("none")
    ));
    lines.push("events:".to_owned());
    lines.extend(detail.events.iter().map(|event| {
        format!(
            "  {}  {:<10} {}",
            timestamp(event.at),
            event.stage,
            event.message
        )
    }));
    lines
}

/// The columns in order: id, state, issue, stage, attempts, failure, updated, cause.
fn row([id, state, issue, stage, attempts, failure, updated, cause]: [&str; 8]) -> String {
    format!(
        "{id:>6}  {state:<9}  {issue:<40}  {stage:<12}  {attempts:>8}  {failure:<20}  {updated:<20}  {cause}"
    )
}

fn issue_ref(job: &JobRecord) -> String {
    format!(
        "{}:{}#{}",
        job.key.repo.forge, job.key.repo.path, job.key.issue.0
    )
}

fn timestamp(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}
