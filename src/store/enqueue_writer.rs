//! SQLite's single writer for webhook enqueues: one thread owns a connection, takes every request
//! waiting when it is free and writes them in one transaction (group commit), each in a savepoint.
//!
//! The thread calls SQLite directly with cached prepared statements: a request costs no round trip
//! between threads beyond handing it over and answering it, and a failing request is rolled back to
//! its own savepoint while the rest of its batch commits.

use std::path::Path;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use sqlx::sqlite::SqlitePool;
use tokio::sync::{mpsc, oneshot};

use super::{Delivery, EnqueueOutcome, JobId, JobKey, StoreError, db, dialect, to_millis};

/// The most requests one transaction takes; a larger backlog is served by the next ones.
const MAX_BATCH: usize = 256;
/// Requests that may wait for the writer before senders wait too (back-pressure on the ingress).
const QUEUE_DEPTH: usize = 4 * MAX_BATCH;
/// How often the WAL is copied back into the database file. Connections do not checkpoint on
/// commit (`wal_autocheckpoint = 0`): a checkpoint syncs the disk, and doing that inside the
/// writer's commit stalled every delivery queued behind it (p99 of 20-50 ms at 500/s).
const CHECKPOINT_EVERY: Duration = Duration::from_millis(500);
/// Under a sustained stream of enqueues the writer never pauses long enough for a passive
/// checkpoint to catch up, and the WAL only grows; past this many frames (64 MiB of 4 KiB pages)
/// the checkpointer briefly holds the writer back so the WAL can start over.
const WAL_RESTART_FRAMES: i64 = 16_384;
/// The size a restarted WAL file is cut back to.
const WAL_SIZE_LIMIT_BYTES: i64 = 64 * 1024 * 1024;
/// How long the writer waits for a lock another connection (a worker, a checkpoint) holds.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

type Answer = Result<EnqueueOutcome, StoreError>;

/// A step of a batch's own transaction that failed; every request in the batch fails with it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{step}: {error}")]
pub struct BatchFailure {
    step: &'static str,
    error: Arc<rusqlite::Error>,
}

fn batch_step(step: &'static str) -> impl FnOnce(rusqlite::Error) -> BatchFailure {
    move |error| BatchFailure {
        step,
        error: Arc::new(error),
    }
}

struct EnqueueRequest {
    delivery: Delivery,
    /// The delivery's parsed event as JSON, serialised by the sender, not by the one writer.
    parsed: String,
    key: JobKey,
    now: DateTime<Utc>,
    /// When a new job may first run.
    run_after: DateTime<Utc>,
    answer: oneshot::Sender<Answer>,
}

/// The handle every clone of an SQLite store shares; the writer thread ends when the last one drops.
#[derive(Debug, Clone)]
pub(super) struct EnqueueWriter {
    requests: mpsc::Sender<EnqueueRequest>,
}

impl EnqueueWriter {
    /// Opens the writer's own connection to the (already migrated) file at `path` and starts its
    /// thread, and a task on the current tokio runtime that checkpoints the WAL through `pool`.
    /// The writer follows `pool` in that it stops writing once the pool is closed.
    pub(super) fn start(path: &Path, pool: SqlitePool) -> Result<EnqueueWriter, StoreError> {
        let conn = open(path).map_err(sqlite("could not open the writer's connection"))?;
        let (requests, queue) = mpsc::channel(QUEUE_DEPTH);
        let (alive, writer_ended) = oneshot::channel::<()>();
        tokio::spawn(checkpoints(pool.clone(), writer_ended));
        thread::Builder::new()
            .name("autofix-enqueue".into())
            .spawn(move || {
                write_batches(conn, &pool, queue);
                drop(alive);
            })
            .map_err(|error| StoreError::WriterNotStarted(error.to_string()))?;
        Ok(EnqueueWriter { requests })
    }

    /// Records `delivery` and enqueues its job in the writer's next transaction; the answer is this
    /// request's own, whatever happened to the others in the same batch.
    pub(super) async fn enqueue(
        &self,
        delivery: Delivery,
        key: JobKey,
        (now, run_after): (DateTime<Utc>, DateTime<Utc>),
    ) -> Answer {
        let parsed = super::deliveries::parsed_column(&delivery)?;
        let (answer, answered) = oneshot::channel();
        let request = EnqueueRequest {
            delivery,
            parsed,
            key,
            now,
            run_after,
            answer,
        };
        self.requests
            .send(request)
            .await
            .map_err(|_| StoreError::WriterStopped)?;
        answered.await.map_err(|_| StoreError::WriterStopped)?
    }

    pub(super) fn is_running(&self) -> bool {
        !self.requests.is_closed()
    }
}

fn open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // The same settings as the pool's connections (see `Store::open_sqlite_with`).
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
         PRAGMA wal_autocheckpoint = 0; PRAGMA foreign_keys = ON;",
    )?;
    conn.pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT_BYTES)?;
    Ok(conn)
}

pub(super) fn sqlite(context: &'static str) -> impl FnOnce(rusqlite::Error) -> StoreError {
    move |source| StoreError::Sqlite { context, source }
}

/// The writer thread: waits for a request, takes every other one already waiting, writes them.
fn write_batches(
    mut conn: Connection,
    pool: &SqlitePool,
    mut queue: mpsc::Receiver<EnqueueRequest>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = queue.blocking_recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(request) => batch.push(request),
                Err(_) => break,
            }
        }
        let answers = if pool.is_closed() {
            batch
                .iter()
                .map(|_| Err(db("could not begin a transaction")(sqlx::Error::PoolClosed)))
                .collect()
        } else {
            write_batch(&mut conn, &batch)
        };
        for (request, answer) in batch.drain(..).zip(answers) {
            // A caller that stopped waiting (its connection closed) still had its delivery recorded;
            // a redelivery under the same id will be answered as a duplicate.
            let _ = request.answer.send(answer);
        }
    }
}

/// One transaction for the batch: each request's own failure is rolled back to its savepoint and
/// answered alone; only a failure of the transaction itself fails every request in it.
fn write_batch(conn: &mut Connection, batch: &[EnqueueRequest]) -> Vec<Answer> {
    let written = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(batch_step("could not begin a transaction"))
        .and_then(|mut tx| {
            let answers: Vec<Answer> = batch
                .iter()
                .map(|request| enqueue_alone(&mut tx, request))
                .collect::<Result<_, _>>()?;
            tx.commit().map_err(batch_step("could not commit"))?;
            Ok(answers)
        });
    match written {
        Ok(answers) => answers,
        Err(reason) => {
            tracing::error!(%reason, requests = batch.len(), "a batch of enqueues failed");
            batch
                .iter()
                .map(|_| Err(StoreError::BatchFailed(reason.clone())))
                .collect()
        }
    }
}

/// The request's own answer inside; `Err` outside only when its savepoint could not be undone,
/// which leaves the transaction in a state not worth committing.
fn enqueue_alone(
    tx: &mut Transaction<'_>,
    request: &EnqueueRequest,
) -> Result<Answer, BatchFailure> {
    let mut savepoint = tx
        .savepoint()
        .map_err(batch_step("could not open a savepoint"))?;
    let times = (request.now, request.run_after);
    match enqueue_in(
        &savepoint,
        &request.delivery,
        &request.parsed,
        &request.key,
        times,
    ) {
        Ok(outcome) => {
            savepoint
                .commit()
                .map_err(batch_step("could not release a savepoint"))?;
            Ok(Ok(outcome))
        }
        Err(error) => {
            savepoint
                .rollback()
                .map_err(batch_step("could not roll back to a savepoint"))?;
            Ok(Err(error))
        }
    }
}

/// The same writes, outcomes and history as `dialect::sqlite::enqueue_in`, ordered so that the
/// ~10 KB payload is written once, already linked to its job.
fn enqueue_in(
    conn: &Connection,
    delivery: &Delivery,
    parsed: &str,
    key: &JobKey,
    (now, run_after): (DateTime<Utc>, DateTime<Utc>),
) -> Result<EnqueueOutcome, StoreError> {
    let seen = conn
        .prepare_cached("SELECT 1 FROM deliveries WHERE id = ?1")
        .and_then(|mut statement| statement.exists([&delivery.id]))
        .map_err(sqlite("could not look the delivery up"))?;
    if seen {
        return Ok(EnqueueOutcome::DuplicateDelivery);
    }
    let dedupe_key = key.dedupe_key();
    let now = to_millis(now);
    let created = conn
        .prepare_cached(
            "INSERT INTO jobs (forge, repo, issue_number, dedupe_key, state, attempts, run_after, \
             created_at, updated_at, origin_delivery) VALUES (?1, ?2, ?3, ?4, 'queued', 0, ?7, ?5, ?5, ?6) \
             ON CONFLICT (dedupe_key) DO NOTHING",
        )
        .and_then(|mut statement| {
            statement.execute(params![
                key.repo.forge,
                key.repo.path,
                key.issue,
                dedupe_key,
                now,
                delivery.id,
                to_millis(run_after)
            ])
        })
        .map_err(sqlite("could not enqueue the job"))?;
    let outcome = if created == 1 {
        EnqueueOutcome::NewJob(JobId(conn.last_insert_rowid()))
    } else {
        let active = conn
            .prepare_cached(
                "SELECT id FROM jobs WHERE dedupe_key = ?1 AND state IN ('queued', 'running')",
            )
            .and_then(|mut statement| {
                statement
                    .query_row([&dedupe_key], |row| row.get(0).map(JobId))
                    .optional()
            })
            .map_err(sqlite("could not find the active job"))?;
        let Some(active) = active else {
            return Err(StoreError::Corrupt {
                what: "enqueue without an active job",
                value: format!("{dedupe_key} holds its key but is not active"),
            });
        };
        EnqueueOutcome::ActiveJobExists(active)
    };
    let job_id = match outcome {
        EnqueueOutcome::NewJob(id) | EnqueueOutcome::ActiveJobExists(id) => id,
        EnqueueOutcome::DuplicateDelivery => unreachable!("a duplicate returned above"),
    };
    conn.prepare_cached(
        "INSERT INTO deliveries (id, forge, event, received_at, payload, job_id, parsed) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )
    .and_then(|mut statement| {
        statement.execute(params![
            delivery.id,
            delivery.forge,
            delivery.event,
            to_millis(delivery.received_at),
            delivery.payload,
            job_id,
            parsed
        ])
    })
    .map_err(sqlite("could not record the delivery"))?;
    if let EnqueueOutcome::NewJob(job) = outcome {
        conn.prepare_cached(
            "INSERT INTO job_events (job_id, at, stage, message) VALUES (?1, ?2, 'queued', ?3)",
        )
        .and_then(|mut statement| {
            statement.execute(params![job, now, dialect::queued_message(delivery)])
        })
        .map_err(sqlite("could not append to the job's history"))?;
    }
    Ok(outcome)
}

/// Copies what it can of the WAL into the database file on a pooled connection, beside the writer
/// (a passive checkpoint never blocks it), until the writer thread ends; restarts a WAL grown past
/// [`WAL_RESTART_FRAMES`].
async fn checkpoints(pool: SqlitePool, mut writer_ended: oneshot::Receiver<()>) {
    let mut every = tokio::time::interval(CHECKPOINT_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = &mut writer_ended => return,
            _ = every.tick() => {}
        }
        if pool.is_closed() {
            return;
        }
        let passive = checkpoint(&pool, "PASSIVE").await;
        if passive.is_ok_and(|frames| frames > WAL_RESTART_FRAMES) {
            let _ = checkpoint(&pool, "RESTART").await;
        }
    }
}

/// Runs one checkpoint; the WAL's length in frames when it ran.
async fn checkpoint(pool: &SqlitePool, mode: &str) -> Result<i64, sqlx::Error> {
    let ran: Result<(i64, i64, i64), _> = sqlx::query_as(&format!("PRAGMA wal_checkpoint({mode})"))
        .fetch_one(pool)
        .await;
    match ran {
        Ok((_busy, wal_frames, _copied)) => Ok(wal_frames),
        Err(error) => {
            tracing::warn!(%error, mode, "the SQLite WAL checkpoint failed; it is retried shortly");
            Err(error)
        }
    }
}
