//! SQLite's single writer for webhook enqueues: requests queue while one transaction commits, and
//! the next transaction takes every waiting request at once (group commit).
//!
//! Each statement costs a round trip to the connection's thread (two context switches, slow on a
//! busy machine), so a batch is written as one script: one round trip whatever its size. Should
//! the script fail, the batch is written again one savepoint per request, so only the faulty
//! request fails.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool};
use sqlx::{ConnectOptions, Connection, QueryBuilder, Sqlite, SqliteConnection};
use tokio::sync::{mpsc, oneshot};

use super::{Delivery, EnqueueOutcome, JobKey, StoreError, db, dialect, issue_column, to_millis};

/// The most requests one transaction takes; a larger backlog is served by the next ones. Each
/// takes 13 bound parameters, well under SQLite's limit of 32,766 per script.
const MAX_BATCH: usize = 256;
/// Requests that may wait for the writer before senders wait too (back-pressure on the ingress).
const QUEUE_DEPTH: usize = 4 * MAX_BATCH;
/// How often the WAL is copied back into the database file. Connections do not checkpoint on
/// commit (`wal_autocheckpoint = 0`): a checkpoint syncs the disk, and doing that inside the
/// writer's commit stalled every delivery queued behind it (p99 of 20-50 ms at 500/s).
const CHECKPOINT_EVERY: Duration = Duration::from_millis(500);

/// The writer's scratch table: the batch, and what the script decided for each request.
const CREATE_INCOMING: &str = "PRAGMA temp_store = MEMORY; \
    CREATE TEMP TABLE IF NOT EXISTS incoming (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, \
    forge TEXT NOT NULL, event TEXT NOT NULL, repo TEXT NOT NULL, issue_number INTEGER NOT NULL, \
    dedupe_key TEXT NOT NULL, now INTEGER NOT NULL, fresh INTEGER NOT NULL DEFAULT 0, job_id INTEGER)";

/// After the batch's rows: a request is fresh when its delivery is neither stored nor earlier in
/// the batch; the first fresh request per issue creates the job unless an active one holds the
/// key; each fresh request learns its issue's active job. Then come the deliveries themselves,
/// written once with their job (an UPDATE would rewrite each ~10 KB payload a second time).
const DECIDE_JOBS: &str = ";
    UPDATE temp.incoming SET fresh = 1
     WHERE NOT EXISTS (SELECT 1 FROM main.deliveries stored WHERE stored.id = incoming.id)
       AND seq = (SELECT MIN(twin.seq) FROM temp.incoming twin WHERE twin.id = incoming.id);
    INSERT INTO main.jobs (forge, repo, issue_number, dedupe_key, state, attempts, run_after,
                           created_at, updated_at, origin_delivery)
    SELECT forge, repo, issue_number, dedupe_key, 'queued', 0, now, now, now, id
      FROM temp.incoming first
     WHERE fresh = 1 AND seq = (SELECT MIN(twin.seq) FROM temp.incoming twin
                                 WHERE twin.dedupe_key = first.dedupe_key AND twin.fresh = 1)
     ORDER BY seq
    ON CONFLICT (dedupe_key) DO NOTHING;
    UPDATE temp.incoming SET job_id = (SELECT job.id FROM main.jobs job
                                        WHERE job.dedupe_key = incoming.dedupe_key
                                          AND job.state IN ('queued', 'running'))
     WHERE fresh = 1;
    INSERT INTO main.deliveries (id, forge, event, received_at, payload, job_id)
    SELECT column1, column2, column3, column4, column5,
           (SELECT batch.job_id FROM temp.incoming batch WHERE batch.id = column1 AND batch.fresh = 1)
      FROM (";

/// After the deliveries' rows: the new jobs' first events, and each request's outcome. The same
/// outcomes, ids and history as [`dialect::sqlite::enqueue_in`] run once per request in arrival
/// order.
const RECORD_AND_ANSWER: &str = ") WHERE true
    ON CONFLICT (id) DO NOTHING;
    INSERT INTO main.job_events (job_id, at, stage, message)
    SELECT batch.job_id, batch.now, 'queued', 'delivery ' || batch.id || ' (' || batch.event || ')'
      FROM temp.incoming batch JOIN main.jobs job ON job.id = batch.job_id
     WHERE batch.fresh = 1 AND job.origin_delivery = batch.id
     ORDER BY batch.seq;
    SELECT batch.fresh, batch.job_id, job.origin_delivery = batch.id
      FROM temp.incoming batch LEFT JOIN main.jobs job ON job.id = batch.job_id
     ORDER BY batch.seq;
    COMMIT";

type Answer = Result<EnqueueOutcome, StoreError>;

struct EnqueueRequest {
    delivery: Delivery,
    key: JobKey,
    now: DateTime<Utc>,
    answer: oneshot::Sender<Answer>,
}

/// The handle every clone of an SQLite store shares; the writer task ends when the last one drops.
#[derive(Debug, Clone)]
pub(super) struct GroupCommit {
    requests: mpsc::Sender<EnqueueRequest>,
}

impl GroupCommit {
    /// Opens the writer's own connection and starts the writer task on the current tokio runtime;
    /// it follows `pool` in that it stops writing once the pool is closed.
    pub(super) async fn start(
        options: &SqliteConnectOptions,
        pool: SqlitePool,
    ) -> Result<GroupCommit, StoreError> {
        let mut conn = options
            .connect()
            .await
            .map_err(db("could not open the writer's connection"))?;
        sqlx::query(CREATE_INCOMING)
            .execute(&mut conn)
            .await
            .map_err(db("could not prepare the writer's connection"))?;
        let (requests, queue) = mpsc::channel(QUEUE_DEPTH);
        tokio::spawn(write_batches(conn, pool, queue));
        Ok(GroupCommit { requests })
    }

    /// Records `delivery` and enqueues its job in the writer's next transaction; the answer is this
    /// request's own, whatever happened to the others in the same batch.
    pub(super) async fn enqueue(
        &self,
        delivery: Delivery,
        key: JobKey,
        now: DateTime<Utc>,
    ) -> Answer {
        let (answer, answered) = oneshot::channel();
        let request = EnqueueRequest {
            delivery,
            key,
            now,
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

async fn write_batches(
    mut conn: SqliteConnection,
    pool: SqlitePool,
    mut queue: mpsc::Receiver<EnqueueRequest>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut checkpoints = tokio::time::interval(CHECKPOINT_EVERY);
    checkpoints.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut checkpointing: Option<tokio::task::JoinHandle<()>> = None;
    loop {
        let received = tokio::select! {
            received = queue.recv_many(&mut batch, MAX_BATCH) => received,
            _ = checkpoints.tick() => {
                if !pool.is_closed() && checkpointing.as_ref().is_none_or(|task| task.is_finished()) {
                    checkpointing = Some(tokio::spawn(checkpoint(pool.clone())));
                }
                continue;
            }
        };
        if received == 0 {
            break;
        }
        let answers = if pool.is_closed() {
            batch
                .iter()
                .map(|_| Err(db("could not begin a transaction")(sqlx::Error::PoolClosed)))
                .collect()
        } else {
            write_batch(&mut conn, &batch).await
        };
        for (request, answer) in batch.drain(..).zip(answers) {
            // A caller that stopped waiting (its connection closed) still had its delivery recorded;
            // a redelivery under the same id will be answered as a duplicate.
            let _ = request.answer.send(answer);
        }
    }
    let _ = conn.close().await;
}

/// Copies what it can of the WAL into the database file on a pooled connection, beside the writer:
/// a passive checkpoint never blocks it.
async fn checkpoint(pool: SqlitePool) {
    if let Err(error) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
        .execute(&pool)
        .await
    {
        tracing::warn!(%error, "the SQLite WAL checkpoint failed; it is retried shortly");
    }
}

async fn write_batch(conn: &mut SqliteConnection, batch: &[EnqueueRequest]) -> Vec<Answer> {
    let error = match write_batch_at_once(conn, batch).await {
        Ok(outcomes) => return outcomes.into_iter().map(Ok).collect(),
        Err(error) => error,
    };
    // The script stops at the failing statement, inside its transaction.
    let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
    tracing::warn!(%error, requests = batch.len(), "a batch of enqueues is written again one by one");
    match write_batch_one_by_one(conn, batch).await {
        Ok(answers) => answers,
        Err(error) => {
            let reason = error.to_string();
            tracing::error!(%reason, requests = batch.len(), "a batch of enqueues failed");
            batch
                .iter()
                .map(|_| Err(StoreError::BatchFailed(reason.clone())))
                .collect()
        }
    }
}

/// The whole batch in one transaction and one round trip; all or nothing.
async fn write_batch_at_once(
    conn: &mut SqliteConnection,
    batch: &[EnqueueRequest],
) -> Result<Vec<EnqueueOutcome>, StoreError> {
    let mut script = QueryBuilder::<Sqlite>::new(
        "BEGIN IMMEDIATE; DELETE FROM temp.incoming; \
         INSERT INTO temp.incoming (seq, id, forge, event, repo, issue_number, dedupe_key, now) ",
    );
    script.push_values(batch.iter().enumerate(), |mut row, (seq, request)| {
        row.push_bind(seq as i64)
            .push_bind(request.delivery.id.as_str())
            .push_bind(request.key.forge.as_str())
            .push_bind(request.delivery.event.as_str())
            .push_bind(request.key.repo.as_str())
            .push_bind(issue_column(&request.key))
            .push_bind(request.key.dedupe_key())
            .push_bind(to_millis(request.now));
    });
    script.push(DECIDE_JOBS);
    script.push_values(batch, |mut row, request| {
        let delivery = &request.delivery;
        row.push_bind(delivery.id.as_str())
            .push_bind(delivery.forge.as_str())
            .push_bind(delivery.event.as_str())
            .push_bind(to_millis(delivery.received_at))
            .push_bind(delivery.payload.as_slice());
    });
    script.push(RECORD_AND_ANSWER);
    let decided: Vec<(bool, Option<i64>, Option<bool>)> = script
        .build_query_as()
        .fetch_all(&mut *conn)
        .await
        .map_err(db("could not write a batch of deliveries"))?;
    if decided.len() != batch.len() {
        return Err(StoreError::Corrupt {
            what: "batch answer count",
            value: format!("{} for {} requests", decided.len(), batch.len()),
        });
    }
    decided
        .into_iter()
        .map(|decision| match decision {
            (false, _, _) => Ok(EnqueueOutcome::DuplicateDelivery),
            (true, Some(job), Some(true)) => Ok(EnqueueOutcome::NewJob(job)),
            (true, Some(job), _) => Ok(EnqueueOutcome::ActiveJobExists(job)),
            (true, None, _) => Err(StoreError::Corrupt {
                what: "enqueue without an active job",
                value: "a fresh delivery found no job".to_owned(),
            }),
        })
        .collect()
}

/// One transaction for the whole batch: each request's own failure is rolled back to its savepoint
/// and answered alone; only a failure of the transaction itself fails the batch.
async fn write_batch_one_by_one(
    conn: &mut SqliteConnection,
    batch: &[EnqueueRequest],
) -> Result<Vec<Answer>, StoreError> {
    let mut tx = conn
        .begin_with("BEGIN IMMEDIATE")
        .await
        .map_err(db("could not begin a transaction"))?;
    let mut answers = Vec::with_capacity(batch.len());
    for request in batch {
        answers.push(enqueue_alone(&mut tx, request).await?);
    }
    tx.commit().await.map_err(db("could not commit"))?;
    Ok(answers)
}

/// The request's own answer inside; `Err` outside only when its savepoint could not be undone.
async fn enqueue_alone(
    conn: &mut SqliteConnection,
    request: &EnqueueRequest,
) -> Result<Answer, StoreError> {
    let mut savepoint = conn
        .begin()
        .await
        .map_err(db("could not open a savepoint"))?;
    match dialect::sqlite::enqueue_in(&mut savepoint, &request.delivery, &request.key, request.now)
        .await
    {
        Ok(outcome) => {
            savepoint
                .commit()
                .await
                .map_err(db("could not release a savepoint"))?;
            Ok(Ok(outcome))
        }
        Err(error) => {
            savepoint
                .rollback()
                .await
                .map_err(db("could not roll back to a savepoint"))?;
            Ok(Err(error))
        }
    }
}
