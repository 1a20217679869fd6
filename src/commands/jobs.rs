//! `autofix jobs list|show`: the job store read back for an operator, one line per job, or one
//! job's record, checkpoint and history.

use chrono::{DateTime, Utc};

use crate::store::{JobDetail, JobRecord, Store, StoreError};

/// What `jobs list` prints when the store holds no job yet.
pub const NO_JOBS: &str = "no jobs";

/// The `limit` newest jobs, one line each under a header (or [`NO_JOBS`]).
pub async fn list(store: &Store, limit: u32) -> Result<Vec<String>, StoreError> {
    let jobs = store.jobs_list(limit).await?;
    if jobs.is_empty() {
        return Ok(vec![NO_JOBS.to_owned()]);
    }
    let header = row(
        "ID", "STATE", "ISSUE", "STAGE", "ATTEMPTS", "FAILURE", "UPDATED",
    );
    Ok(std::iter::once(header)
        .chain(jobs.iter().map(list_line))
        .collect())
}

/// One job as `jobs list` shows it: id, state, forge:repo#issue, stage, attempts, failure code,
/// last update.
pub fn list_line(job: &JobRecord) -> String {
    row(
        &job.id.to_string(),
        job.state.as_str(),
        &issue_ref(job),
        job.stage.as_deref().unwrap_or("-"),
        &job.attempts.to_string(),
        job.failure_label().as_deref().unwrap_or("-"),
        &timestamp(job.updated_at),
    )
}

/// `job`'s record, its checkpoint and its events, oldest first; `JobNotFound` for an unknown id.
pub async fn show(store: &Store, job: i64) -> Result<Vec<String>, StoreError> {
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
                "failure report: not posted yet, tried again at {}",
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

fn row(
    id: &str,
    state: &str,
    issue: &str,
    stage: &str,
    attempts: &str,
    failure: &str,
    updated: &str,
) -> String {
    format!(
        "{id:>6}  {state:<9}  {issue:<40}  {stage:<12}  {attempts:>8}  {failure:<20}  {updated}"
    )
}

fn issue_ref(job: &JobRecord) -> String {
    format!(
        "{}:{}#{}",
        job.key.forge, job.key.repo, job.key.issue_number
    )
}

fn timestamp(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}
