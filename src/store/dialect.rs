//! The store's queries, written once and instantiated per database: only how a write transaction
//! begins (`BEGIN IMMEDIATE` on SQLite) and how a claim locks its row (`SKIP LOCKED` on PostgreSQL) differ.

use super::deliveries::parsed_column;
use super::{
    ClaimedJob, Delivery, EnqueueOutcome, Finish, JobDetail, JobEvent, JobFilter, JobId, JobKey,
    JobRecord, JobState, RepoKey, StoreError, db, from_millis, report_backoff, retry_backoff,
    to_millis,
};
use crate::failure::{Failure, FailureCode};
use crate::forge::{ForgeKind, IssueNumber, RepoPath};

#[derive(sqlx::FromRow)]
struct JobRow {
    id: JobId,
    forge: ForgeKind,
    repo: RepoPath,
    issue_number: IssueNumber,
    state: String,
    stage: Option<String>,
    attempts: i64,
    run_after: i64,
    lease_owner: Option<String>,
    lease_until: Option<i64>,
    last_error: Option<String>,
    failure_code: Option<FailureCode>,
    created_at: i64,
    updated_at: i64,
    checkpoint: Option<String>,
    report_due: Option<i64>,
}

impl JobRow {
    fn into_record(self) -> Result<JobRecord, StoreError> {
        Ok(JobRecord {
            id: self.id,
            key: JobKey {
                repo: RepoKey::new(self.forge, self.repo),
                issue: self.issue_number,
            },
            state: self.state.parse()?,
            stage: self.stage,
            attempts: attempts(self.attempts)?,
            run_after: from_millis(self.run_after)?,
            lease_owner: self.lease_owner,
            lease_until: self.lease_until.map(from_millis).transpose()?,
            last_error: self.last_error,
            failure_code: self.failure_code,
            created_at: from_millis(self.created_at)?,
            updated_at: from_millis(self.updated_at)?,
            report_due: self.report_due.map(from_millis).transpose()?,
        })
    }
}

#[derive(sqlx::FromRow)]
struct ClaimRow {
    id: JobId,
    forge: ForgeKind,
    repo: RepoPath,
    issue_number: IssueNumber,
    stage: Option<String>,
    attempts: i64,
    checkpoint: Option<String>,
    last_error: Option<String>,
}

#[derive(sqlx::FromRow)]
struct EventRow {
    at: i64,
    stage: String,
    message: String,
}

pub(super) fn attempts(stored: i64) -> Result<u32, StoreError> {
    u32::try_from(stored).map_err(|_| StoreError::Corrupt {
        what: "attempt count",
        value: stored.to_string(),
    })
}

/// The first history entry of a job, naming the delivery that created it (on both dialects and in
/// SQLite's enqueue writer).
pub(super) fn queued_message(delivery: &Delivery) -> String {
    format!("delivery {} ({})", delivery.id, delivery.event)
}

const ACTIVE: &str = "state IN ('queued', 'running')";
const JOB_COLUMNS: &str = "id, forge, repo, issue_number, state, stage, attempts, run_after, lease_owner, \
     lease_until, last_error, failure_code, created_at, updated_at, checkpoint, report_due";

macro_rules! dialect {
    ($name:ident, $Db:ty, $begin_write:literal, $claim_lock:literal) => {
        pub(super) mod $name {
            use super::*;
            use chrono::{DateTime, Utc};
            use sqlx::{Pool, Transaction};

            type Db = $Db;

            async fn begin_write(pool: &Pool<Db>) -> Result<Transaction<'static, Db>, StoreError> {
                pool.begin_with($begin_write)
                    .await
                    .map_err(db("could not begin a transaction"))
            }

            async fn commit(tx: Transaction<'static, Db>) -> Result<(), StoreError> {
                tx.commit().await.map_err(db("could not commit"))
            }

            async fn append_event(
                conn: &mut <Db as sqlx::Database>::Connection,
                job: JobId,
                stage: &str,
                message: &str,
                now: DateTime<Utc>,
            ) -> Result<(), StoreError> {
                sqlx::query("INSERT INTO job_events (job_id, at, stage, message) VALUES ($1, $2, $3, $4)")
                    .bind(job)
                    .bind(to_millis(now))
                    .bind(stage)
                    .bind(message)
                    .execute(&mut *conn)
                    .await
                    .map_err(db("could not append a job event"))?;
                Ok(())
            }

            #[allow(dead_code, reason = "SQLite enqueues through its writer thread (`enqueue_writer`) instead")]
            pub(in crate::store) async fn record_delivery_and_enqueue(
                pool: &Pool<Db>,
                delivery: &Delivery,
                key: &JobKey,
                (now, run_after): (DateTime<Utc>, DateTime<Utc>),
            ) -> Result<EnqueueOutcome, StoreError> {
                let mut tx = begin_write(pool).await?;
                let outcome = enqueue_in(&mut tx, delivery, key, (now, run_after)).await?;
                commit(tx).await?;
                Ok(outcome)
            }

            /// The writes of one enqueue inside a transaction the caller opened and commits: a
            /// duplicate delivery writes nothing, so the caller needs no rollback for it.
            pub(in crate::store) async fn enqueue_in(
                conn: &mut <Db as sqlx::Database>::Connection,
                delivery: &Delivery,
                key: &JobKey,
                (now, run_after): (DateTime<Utc>, DateTime<Utc>),
            ) -> Result<EnqueueOutcome, StoreError> {
                let inserted = sqlx::query(
                    "INSERT INTO deliveries (id, forge, event, received_at, payload, parsed) \
                     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING",
                )
                .bind(&delivery.id)
                .bind(delivery.forge)
                .bind(&delivery.event)
                .bind(to_millis(delivery.received_at))
                .bind(&delivery.payload)
                .bind(parsed_column(delivery)?)
                .execute(&mut *conn)
                .await
                .map_err(db("could not record the delivery"))?;
                if inserted.rows_affected() == 0 {
                    return Ok(EnqueueOutcome::DuplicateDelivery);
                }
                let dedupe_key = key.dedupe_key();
                let new_job: Option<(JobId,)> = sqlx::query_as(
                    "INSERT INTO jobs (forge, repo, issue_number, dedupe_key, state, attempts, run_after, \
                     created_at, updated_at, origin_delivery) VALUES ($1, $2, $3, $4, 'queued', 0, $7, $5, $5, $6) \
                     ON CONFLICT (dedupe_key) DO NOTHING RETURNING id",
                )
                .bind(key.repo.forge)
                .bind(&key.repo.path)
                .bind(key.issue)
                .bind(&dedupe_key)
                .bind(to_millis(now))
                .bind(&delivery.id)
                .bind(to_millis(run_after))
                .fetch_optional(&mut *conn)
                .await
                .map_err(db("could not enqueue the job"))?;
                let (outcome, job_id) = match new_job {
                    Some((id,)) => {
                        append_event(conn, id, "queued", &queued_message(delivery), now).await?;
                        (EnqueueOutcome::NewJob(id), id)
                    }
                    None => {
                        let (id,): (JobId,) = sqlx::query_as(&format!(
                            "SELECT id FROM jobs WHERE dedupe_key = $1 AND {ACTIVE}"
                        ))
                        .bind(&dedupe_key)
                        .fetch_one(&mut *conn)
                        .await
                        .map_err(db("could not find the active job"))?;
                        (EnqueueOutcome::ActiveJobExists(id), id)
                    }
                };
                sqlx::query("UPDATE deliveries SET job_id = $1 WHERE id = $2")
                    .bind(job_id)
                    .bind(&delivery.id)
                    .execute(&mut *conn)
                    .await
                    .map_err(db("could not link the delivery to its job"))?;
                Ok(outcome)
            }

            pub(in crate::store) async fn claim(
                pool: &Pool<Db>,
                owner: &str,
                until: DateTime<Utc>,
                now: DateTime<Utc>,
            ) -> Result<Option<ClaimedJob>, StoreError> {
                let mut tx = begin_write(pool).await?;
                // The runnable job first, locked, with what held it (a lease that ran out is a takeover).
                let candidate: Option<(JobId, String, Option<String>)> = sqlx::query_as(concat!(
                    "SELECT id, state, lease_owner FROM jobs \
                     WHERE (state = 'queued' AND run_after <= $1) OR (state = 'running' AND lease_until <= $1) \
                     OR (state = 'failed' AND report_due <= $1) \
                     ORDER BY run_after, id LIMIT 1",
                    $claim_lock
                ))
                .bind(to_millis(now))
                .fetch_optional(&mut *tx)
                .await
                .map_err(db("could not find a job to claim"))?;
                let Some((id, previous_state, previous_owner)) = candidate else {
                    tx.rollback().await.map_err(db("could not roll back"))?;
                    return Ok(None);
                };
                let row: ClaimRow = sqlx::query_as(
                    "UPDATE jobs SET state = 'running', lease_owner = $1, lease_until = $2, \
                     attempts = attempts + CASE WHEN state = 'failed' THEN 0 ELSE 1 END, updated_at = $3 \
                     WHERE id = $4 RETURNING id, forge, repo, issue_number, stage, attempts, checkpoint, last_error",
                )
                .bind(owner)
                .bind(to_millis(until))
                .bind(to_millis(now))
                .bind(id)
                .fetch_one(&mut *tx)
                .await
                .map_err(db("could not claim a job"))?;
                let taken_over_from = (previous_state == "running").then(|| previous_owner.unwrap_or_default());
                let attempts = attempts(row.attempts)?;
                let note = match &taken_over_from {
                    Some(previous) => format!("attempt {attempts} by {owner}, taken over from {previous} (its lease ran out)"),
                    None => format!("attempt {attempts} by {owner}"),
                };
                append_event(&mut tx, row.id, "claimed", &note, now).await?;
                commit(tx).await?;
                Ok(Some(ClaimedJob {
                    id: row.id,
                    key: JobKey {
                        repo: RepoKey::new(row.forge, row.repo),
                        issue: row.issue_number,
                    },
                    stage: row.stage,
                    attempts,
                    lease_until: until,
                    checkpoint: row.checkpoint,
                    taken_over_from,
                    last_error: row.last_error,
                }))
            }

            /// Checks inside `tx` that `owner` still holds a live lease on `job`, locking the row.
            async fn hold_lease(
                tx: &mut Transaction<'static, Db>,
                job: JobId,
                owner: &str,
                now: DateTime<Utc>,
            ) -> Result<i64, StoreError> {
                let held: Option<(i64,)> = sqlx::query_as(
                    "UPDATE jobs SET updated_at = $3 \
                     WHERE id = $1 AND state = 'running' AND lease_owner = $2 AND lease_until > $3 \
                     RETURNING attempts",
                )
                .bind(job)
                .bind(owner)
                .bind(to_millis(now))
                .fetch_optional(&mut **tx)
                .await
                .map_err(db("could not check the lease"))?;
                held.map(|(attempts,)| attempts).ok_or_else(|| StoreError::LeaseLost {
                    job,
                    owner: owner.to_owned(),
                })
            }

            pub(in crate::store) async fn renew(
                pool: &Pool<Db>,
                job: JobId,
                owner: &str,
                until: DateTime<Utc>,
                now: DateTime<Utc>,
            ) -> Result<(), StoreError> {
                let mut tx = begin_write(pool).await?;
                hold_lease(&mut tx, job, owner, now).await?;
                sqlx::query("UPDATE jobs SET lease_until = $2 WHERE id = $1")
                    .bind(job)
                    .bind(to_millis(until))
                    .execute(&mut *tx)
                    .await
                    .map_err(db("could not renew the lease"))?;
                commit(tx).await
            }

            pub(in crate::store) async fn record_stage(
                pool: &Pool<Db>,
                job: JobId,
                owner: &str,
                stage: &str,
                message: &str,
                now: DateTime<Utc>,
            ) -> Result<(), StoreError> {
                let mut tx = begin_write(pool).await?;
                hold_lease(&mut tx, job, owner, now).await?;
                sqlx::query("UPDATE jobs SET stage = $2 WHERE id = $1")
                    .bind(job)
                    .bind(stage)
                    .execute(&mut *tx)
                    .await
                    .map_err(db("could not record the stage"))?;
                append_event(&mut tx, job, stage, message, now).await?;
                commit(tx).await
            }

            pub(in crate::store) async fn save_checkpoint(
                pool: &Pool<Db>,
                job: JobId,
                owner: &str,
                checkpoint: &str,
                now: DateTime<Utc>,
            ) -> Result<(), StoreError> {
                let mut tx = begin_write(pool).await?;
                hold_lease(&mut tx, job, owner, now).await?;
                sqlx::query("UPDATE jobs SET checkpoint = $2 WHERE id = $1")
                    .bind(job)
                    .bind(checkpoint)
                    .execute(&mut *tx)
                    .await
                    .map_err(db("could not save the checkpoint"))?;
                commit(tx).await
            }

            pub(in crate::store) async fn finish(
                pool: &Pool<Db>,
                job: JobId,
                owner: &str,
                outcome: &Finish,
                seen: Option<&[String]>,
                now: DateTime<Utc>,
            ) -> Result<Option<JobId>, StoreError> {
                let mut tx = begin_write(pool).await?;
                hold_lease(&mut tx, job, owner, now).await?;
                let (state, code, error) = match outcome {
                    Finish::Succeeded => (JobState::Succeeded, None, None),
                    Finish::Failed(failure) => (JobState::Failed, Some(failure.code), Some(failure.reason.as_str())),
                };
                sqlx::query(
                    "UPDATE jobs SET state = $2, dedupe_key = NULL, lease_owner = NULL, lease_until = NULL, \
                     failure_code = $3, last_error = COALESCE($4, last_error), report_due = NULL, \
                     stage = CASE WHEN $3 IS NULL THEN stage ELSE COALESCE(stage, 'start') END WHERE id = $1",
                )
                .bind(job)
                .bind(state.as_str())
                .bind(code)
                .bind(error)
                .execute(&mut *tx)
                .await
                .map_err(db("could not finish the job"))?;
                let message = match outcome {
                    Finish::Succeeded => "succeeded".to_owned(),
                    Finish::Failed(failure) => format!("failed ({}): {}", failure.code, failure.reason),
                };
                append_event(&mut tx, job, state.as_str(), &message, now).await?;
                let follow_up = match seen {
                    Some(seen) => follow_up(&mut tx, job, seen, now).await?,
                    None => None,
                };
                commit(tx).await?;
                Ok(follow_up)
            }

            /// Inside the finishing transaction: the deliveries that joined `job` after it last
            /// looked (`seen` are the ones it handled) go to a new queued job for the same key.
            async fn follow_up(
                tx: &mut Transaction<'static, Db>,
                job: JobId,
                seen: &[String],
                now: DateTime<Utc>,
            ) -> Result<Option<JobId>, StoreError> {
                let linked: Vec<(String, String)> = sqlx::query_as(
                    "SELECT id, event FROM deliveries WHERE job_id = $1 ORDER BY received_at, id",
                )
                .bind(job)
                .fetch_all(&mut **tx)
                .await
                .map_err(db("could not read the job's deliveries"))?;
                let unseen: Vec<(String, String)> = linked
                    .into_iter()
                    .filter(|(id, _)| !seen.contains(id))
                    .collect();
                let Some((origin, origin_event)) = unseen.first().cloned() else {
                    return Ok(None);
                };
                let (id,): (JobId,) = sqlx::query_as(
                    "INSERT INTO jobs (forge, repo, issue_number, dedupe_key, state, attempts, run_after, \
                     created_at, updated_at, origin_delivery) \
                     SELECT forge, repo, issue_number, forge || ':' || repo || ':' || CAST(issue_number AS TEXT), \
                     'queued', 0, $2, $2, $2, $3 FROM jobs WHERE id = $1 RETURNING id",
                )
                .bind(job)
                .bind(to_millis(now))
                .bind(&origin)
                .fetch_one(&mut **tx)
                .await
                .map_err(db("could not queue the follow-up job"))?;
                for (delivery, _) in &unseen {
                    sqlx::query("UPDATE deliveries SET job_id = $1 WHERE id = $2")
                        .bind(id)
                        .bind(delivery)
                        .execute(&mut **tx)
                        .await
                        .map_err(db("could not move a delivery to the follow-up job"))?;
                }
                let message = format!(
                    "delivery {origin} ({origin_event}) and {} more, which arrived while job {job} ran",
                    unseen.len() - 1
                );
                append_event(tx, id, "queued", &message, now).await?;
                Ok(Some(id))
            }

            /// Ends `job` as failed although its report could not be posted (`why`): the report is
            /// owed and tried again after a backoff, unless it had `max_tries` tries already.
            #[allow(clippy::too_many_arguments)]
            pub(in crate::store) async fn finish_unreported(
                pool: &Pool<Db>,
                job: JobId,
                owner: &str,
                failure: &Failure,
                why: &str,
                max_tries: u32,
                now: DateTime<Utc>,
            ) -> Result<Option<DateTime<Utc>>, StoreError> {
                let mut tx = begin_write(pool).await?;
                hold_lease(&mut tx, job, owner, now).await?;
                let (tries,): (i64,) = sqlx::query_as("SELECT report_attempts FROM jobs WHERE id = $1")
                    .bind(job)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(db("could not read the job"))?;
                let tries = attempts(tries)?.saturating_add(1);
                let due = (tries < max_tries).then(|| crate::store::lease_end(now, report_backoff(tries)));
                sqlx::query(
                    "UPDATE jobs SET state = 'failed', dedupe_key = NULL, lease_owner = NULL, lease_until = NULL, \
                     failure_code = $2, last_error = $3, report_attempts = $4, report_due = $5, \
                     stage = COALESCE(stage, 'start') WHERE id = $1",
                )
                .bind(job)
                .bind(failure.code)
                .bind(&failure.reason)
                .bind(i64::from(tries))
                .bind(due.map(to_millis))
                .execute(&mut *tx)
                .await
                .map_err(db("could not finish the job"))?;
                let next = match due {
                    Some(at) => format!("to be tried again at {}", at.format("%Y-%m-%d %H:%M:%S UTC")),
                    None => format!("given up after {tries} tries"),
                };
                let message = format!(
                    "failed ({}): {}; the failure report could not be posted ({why}), {next}",
                    failure.code, failure.reason
                );
                append_event(&mut tx, job, "failed", &message, now).await?;
                commit(tx).await?;
                Ok(due)
            }

            pub(in crate::store) async fn retry_later(
                pool: &Pool<Db>,
                job: JobId,
                owner: &str,
                error: &str,
                not_before: Option<DateTime<Utc>>,
                now: DateTime<Utc>,
            ) -> Result<DateTime<Utc>, StoreError> {
                let mut tx = begin_write(pool).await?;
                let attempts = attempts(hold_lease(&mut tx, job, owner, now).await?)?;
                let backoff_end = crate::store::lease_end(now, retry_backoff(attempts));
                let run_after = not_before.map_or(backoff_end, |at| at.max(backoff_end));
                sqlx::query(
                    "UPDATE jobs SET state = 'queued', run_after = $2, lease_owner = NULL, lease_until = NULL, \
                     last_error = $3 WHERE id = $1",
                )
                .bind(job)
                .bind(to_millis(run_after))
                .bind(error)
                .execute(&mut *tx)
                .await
                .map_err(db("could not requeue the job"))?;
                let wait = (run_after - now).num_seconds();
                let message = format!("attempt {attempts} failed, retrying in {wait}s: {error}");
                append_event(&mut tx, job, "retry", &message, now).await?;
                commit(tx).await?;
                Ok(run_after)
            }

            /// Puts the jobs `owner` holds (only `job`, when given) back in the queue at once, their
            /// attempt not counted: the worker stopped them on purpose.
            pub(in crate::store) async fn release(
                pool: &Pool<Db>,
                owner: &str,
                job: Option<JobId>,
                why: &str,
                now: DateTime<Utc>,
            ) -> Result<Vec<JobId>, StoreError> {
                let mut tx = begin_write(pool).await?;
                let released: Vec<(JobId,)> = sqlx::query_as(
                    "UPDATE jobs SET state = 'queued', run_after = $2, lease_owner = NULL, lease_until = NULL, \
                     attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, updated_at = $2 \
                     WHERE state = 'running' AND lease_owner = $1 AND ($3 IS NULL OR id = $3) RETURNING id",
                )
                .bind(owner)
                .bind(to_millis(now))
                .bind(job)
                .fetch_all(&mut *tx)
                .await
                .map_err(db("could not release the jobs"))?;
                for (id,) in &released {
                    append_event(&mut tx, *id, "released", &format!("released by {owner}: {why}"), now).await?;
                }
                commit(tx).await?;
                Ok(released.into_iter().map(|(id,)| id).collect())
            }

            pub(in crate::store) async fn jobs_list(pool: &Pool<Db>, limit: u32) -> Result<Vec<JobRecord>, StoreError> {
                let rows: Vec<JobRow> =
                    sqlx::query_as(&format!("SELECT {JOB_COLUMNS} FROM jobs ORDER BY id DESC LIMIT $1"))
                        .bind(i64::from(limit))
                        .fetch_all(pool)
                        .await
                        .map_err(db("could not list jobs"))?;
                rows.into_iter().map(JobRow::into_record).collect()
            }

            /// The jobs `filter` selects, newest first, each with its checkpoint.
            pub(in crate::store) async fn jobs_page(
                pool: &Pool<Db>,
                filter: &JobFilter,
            ) -> Result<Vec<(JobRecord, Option<String>)>, StoreError> {
                let mut conditions = Vec::new();
                let mut next = 1;
                let mut placeholder = || {
                    next += 1;
                    format!("${}", next - 1)
                };
                if filter.state.is_some() {
                    conditions.push(format!("state = {}", placeholder()));
                }
                if filter.repo.is_some() {
                    conditions.push(format!("repo = {}", placeholder()));
                }
                if filter.issue.is_some() {
                    let (forge, repo, issue) = (placeholder(), placeholder(), placeholder());
                    conditions.push(format!("forge = {forge} AND repo = {repo} AND issue_number = {issue}"));
                }
                if filter.before.is_some() {
                    conditions.push(format!("id < {}", placeholder()));
                }
                let limit = placeholder();
                let filtered = if conditions.is_empty() {
                    String::new()
                } else {
                    format!("WHERE {}", conditions.join(" AND "))
                };
                let sql = format!("SELECT {JOB_COLUMNS} FROM jobs {filtered} ORDER BY id DESC LIMIT {limit}");
                let mut query = sqlx::query_as::<_, JobRow>(&sql);
                if let Some(state) = filter.state {
                    query = query.bind(state.as_str());
                }
                if let Some(repo) = &filter.repo {
                    query = query.bind(repo);
                }
                if let Some(key) = &filter.issue {
                    query = query.bind(key.repo.forge).bind(&key.repo.path).bind(key.issue);
                }
                if let Some(before) = filter.before {
                    query = query.bind(before);
                }
                let rows = query
                    .bind(i64::from(filter.limit))
                    .fetch_all(pool)
                    .await
                    .map_err(db("could not list jobs"))?;
                rows.into_iter()
                    .map(|mut row| {
                        let checkpoint = row.checkpoint.take();
                        Ok((row.into_record()?, checkpoint))
                    })
                    .collect()
            }

            /// How many jobs are in each state.
            pub(in crate::store) async fn job_counts(pool: &Pool<Db>) -> Result<Vec<(JobState, u64)>, StoreError> {
                let rows: Vec<(String, i64)> = sqlx::query_as("SELECT state, COUNT(*) FROM jobs GROUP BY state")
                    .fetch_all(pool)
                    .await
                    .map_err(db("could not count jobs"))?;
                rows.into_iter()
                    .map(|(state, count)| Ok((state.parse()?, u64::try_from(count).unwrap_or(0))))
                    .collect()
            }

            /// Every repository with a job, in name order (the first 500).
            pub(in crate::store) async fn job_repos(pool: &Pool<Db>) -> Result<Vec<RepoPath>, StoreError> {
                let rows: Vec<(RepoPath,)> = sqlx::query_as("SELECT DISTINCT repo FROM jobs ORDER BY repo LIMIT 500")
                    .fetch_all(pool)
                    .await
                    .map_err(db("could not list the repositories"))?;
                Ok(rows.into_iter().map(|(repo,)| repo).collect())
            }

            pub(in crate::store) async fn job_show(pool: &Pool<Db>, job: JobId) -> Result<JobDetail, StoreError> {
                let row: Option<JobRow> = sqlx::query_as(&format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1"))
                    .bind(job)
                    .fetch_optional(pool)
                    .await
                    .map_err(db("could not read the job"))?;
                let mut row = row.ok_or(StoreError::JobNotFound(job))?;
                let checkpoint = row.checkpoint.take();
                let job_record = row.into_record()?;
                let events: Vec<EventRow> =
                    sqlx::query_as("SELECT at, stage, message FROM job_events WHERE job_id = $1 ORDER BY id")
                        .bind(job)
                        .fetch_all(pool)
                        .await
                        .map_err(db("could not read the job's events"))?;
                let events = events
                    .into_iter()
                    .map(|event| {
                        Ok(JobEvent {
                            at: from_millis(event.at)?,
                            stage: event.stage,
                            message: event.message,
                        })
                    })
                    .collect::<Result<_, StoreError>>()?;
                Ok(JobDetail { job: job_record, checkpoint, events })
            }

            pub(in crate::store) async fn ping(pool: &Pool<Db>) -> Result<(), StoreError> {
                sqlx::query("SELECT 1")
                    .execute(pool)
                    .await
                    .map(drop)
                    .map_err(db("does not answer"))
            }
        }
    };
}

dialect!(sqlite, sqlx::Sqlite, "BEGIN IMMEDIATE", "");
dialect!(postgres, sqlx::Postgres, "BEGIN", " FOR UPDATE SKIP LOCKED");
