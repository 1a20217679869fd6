//! The bot's durable job store: webhook deliveries, the jobs they enqueue, leases and event logs,
//! on an embedded SQLite file by default or on PostgreSQL when the database URL says `postgres://`.

/// Calls the query function `f` of the database the store is on, with its pool first:
/// `on_database!(self, dialect => claim(owner, until, now))` runs `dialect::sqlite::claim` or
/// `dialect::postgres::claim` (`on_database!(self, => f(..))` the current module's).
macro_rules! on_database {
    ($store:expr, $($module:ident)? => $f:ident($($arg:expr),* $(,)?)) => {
        match $store {
            Store::Sqlite(SqliteStore { pool, .. }) => $($module::)? sqlite::$f(pool, $($arg),*).await,
            Store::Postgres(pool) => $($module::)? postgres::$f(pool, $($arg),*).await,
        }
    };
}

mod change_requests;
mod deliveries;
mod dialect;
mod enqueue_writer;
mod keys;
mod records;
mod spend;

pub use keys::{JobId, JobKey, RepoKey};
pub use records::{
    ChangeRequestRecord, ClaimedJob, Delivery, EnqueueOutcome, Finish, JobDetail, JobEvent,
    JobFilter, JobRecord, JobState, ParsedDelivery, StoredDelivery,
};
pub use spend::{DaySpend, JobSpend, Spend, utc_day};

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};

use crate::failure::{Failure, Stage};
use crate::forge::RepoPath;
use enqueue_writer::EnqueueWriter;
use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

/// A job's first retry waits this long; each later one waits twice as long as the one before.
pub const RETRY_BASE: Duration = Duration::from_secs(15);
/// No retry of a job waits longer than this, however many attempts came before: a fault that
/// lasts (an unreachable forge) ends the job within minutes, after 15 + 30 + 60 + 60 s of waits
/// with the default five attempts. Only a rate limit's reset is waited for beyond it.
pub const RETRY_CAP: Duration = Duration::from_secs(60);
/// The first new try of a failure report the forge did not take waits this long, doubling from
/// there: the job has ended, so its report can wait for a forge that is down for a while.
pub const REPORT_RETRY_BASE: Duration = Duration::from_secs(30);
/// No new try of a failure report waits longer than this.
pub const REPORT_RETRY_CAP: Duration = Duration::from_secs(60 * 60);

/// How long opening the store or starting a transaction waits for a connection before giving up.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// What can go wrong in the store; callers branch on `LeaseLost` and `JobNotFound`.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "job {job} is no longer leased to worker {owner:?} (its lease expired or another worker took it)"
    )]
    LeaseLost { job: JobId, owner: String },
    #[error("job {0} does not exist")]
    JobNotFound(JobId),
    #[error(
        "database URL scheme {scheme:?} is not supported: use postgres://, postgresql://, sqlite: or a file path"
    )]
    UnsupportedUrl { scheme: String },
    #[error("database {context}: {source}")]
    Database {
        context: &'static str,
        #[source]
        source: sqlx::Error,
    },
    #[error(
        "no job store at {0}: the SQLite file does not exist (`autofix serve` creates it on first start)"
    )]
    NoSqliteFile(PathBuf),
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("database holds an invalid {what}: {value:?}")]
    Corrupt { what: &'static str, value: String },
    #[error(
        "an in-memory SQLite store would lose every job when the server stops: give database.url a file path"
    )]
    InMemorySqlite,
    #[error("database {context}: {source}")]
    Sqlite {
        context: &'static str,
        #[source]
        source: rusqlite::Error,
    },
    #[error("the SQLite writer has stopped, so nothing can be recorded")]
    WriterStopped,
    #[error("the SQLite writer thread could not start: {0}")]
    WriterNotStarted(String),
    #[error("database could not commit the batch of deliveries this one was written in: {0}")]
    BatchFailed(enqueue_writer::BatchFailure),
}

/// The SQLite file a `sqlite:` URL or a plain path names; another scheme is refused.
fn sqlite_options(url: &str) -> Result<SqliteConnectOptions, StoreError> {
    if url.starts_with("sqlite:") {
        return SqliteConnectOptions::from_str(url).map_err(db("URL is invalid"));
    }
    if let Some((scheme, _)) = url.split_once("://") {
        return Err(StoreError::UnsupportedUrl {
            scheme: scheme.to_owned(),
        });
    }
    Ok(SqliteConnectOptions::new().filename(url))
}

impl StoreError {
    /// Whether the database could not be reached at all (refused, timed out, no route), rather
    /// than answering with an error of its own (a refused password, a missing database).
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            StoreError::Database {
                source: sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::Tls(_),
                ..
            }
        )
    }
}

pub(crate) fn db(context: &'static str) -> impl FnOnce(sqlx::Error) -> StoreError {
    move |source| StoreError::Database { context, source }
}

/// How long the retry after `attempts` claims waits: doubling from [`RETRY_BASE`], capped at [`RETRY_CAP`].
pub fn retry_backoff(attempts: u32) -> Duration {
    doubling(RETRY_BASE, RETRY_CAP, attempts)
}

/// How long a failure report waits after its `tries`-th try: doubling from
/// [`REPORT_RETRY_BASE`], capped at [`REPORT_RETRY_CAP`].
pub fn report_backoff(tries: u32) -> Duration {
    doubling(REPORT_RETRY_BASE, REPORT_RETRY_CAP, tries)
}

/// `base` for the first time, twice the previous wait for each later one, never above `cap`.
fn doubling(base: Duration, cap: Duration, times: u32) -> Duration {
    let doublings = times.saturating_sub(1).min(16);
    base.saturating_mul(1u32 << doublings).min(cap)
}

/// The job store over one of the two supported databases.
#[derive(Debug, Clone)]
pub enum Store {
    Sqlite(SqliteStore),
    Postgres(PgPool),
}

/// An SQLite file: a pool for reads and worker writes, and one writer thread for webhook enqueues,
/// because concurrent SQLite writers only queue on the file lock with a busy backoff.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    enqueues: EnqueueWriter,
}

impl Store {
    /// Opens `url` and brings its schema up to date: `postgres://` or `postgresql://` selects PostgreSQL,
    /// `sqlite:` or a plain file path selects an SQLite file (created on first start).
    pub async fn open(url: &str) -> Result<Store, StoreError> {
        Self::open_url(url, true).await
    }

    /// Like [`Store::open`], except that a missing SQLite file is an error instead of created: an
    /// operator command must not make an empty store at a mistyped path.
    pub async fn open_existing(url: &str) -> Result<Store, StoreError> {
        Self::open_url(url, false).await
    }

    /// Asks the database at `url` one question without changing it (no migration, no file
    /// created): what it is, for `config check --online` and the setup page.
    pub async fn probe(url: &str) -> Result<String, StoreError> {
        use sqlx::Connection;
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let mut connection =
                tokio::time::timeout(ACQUIRE_TIMEOUT, sqlx::postgres::PgConnection::connect(url))
                    .await
                    .map_err(|_| db("could not connect to PostgreSQL")(sqlx::Error::PoolTimedOut))?
                    .map_err(db("could not connect to PostgreSQL"))?;
            let (version,): (String,) = sqlx::query_as("SHOW server_version")
                .fetch_one(&mut connection)
                .await
                .map_err(db("did not answer a query"))?;
            let _ = connection.close().await;
            return Ok(format!("PostgreSQL {version} answers"));
        }
        let options = sqlite_options(url)?;
        if !options.get_filename().exists() {
            return Err(StoreError::NoSqliteFile(
                options.get_filename().to_path_buf(),
            ));
        }
        let mut connection = sqlx::sqlite::SqliteConnection::connect_with(&options.read_only(true))
            .await
            .map_err(db("could not open the SQLite file"))?;
        let (tables,): (i64,) =
            sqlx::query_as("SELECT count(*) FROM sqlite_master WHERE type = 'table'")
                .fetch_one(&mut connection)
                .await
                .map_err(db("did not answer a query"))?;
        let _ = connection.close().await;
        Ok(format!("the SQLite file opens ({tables} tables)"))
    }

    async fn open_url(url: &str, create: bool) -> Result<Store, StoreError> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Self::open_postgres(url).await;
        }
        if url.starts_with("sqlite:") && (url.contains(":memory:") || url.contains("mode=memory")) {
            return Err(StoreError::InMemorySqlite);
        }
        let options = sqlite_options(url)?;
        if !create && !options.get_filename().exists() {
            return Err(StoreError::NoSqliteFile(
                options.get_filename().to_path_buf(),
            ));
        }
        Self::open_sqlite_with(options).await
    }

    /// Opens (creating it if missing) the SQLite file at `path` and runs its migrations.
    pub async fn open_sqlite(path: &Path) -> Result<Store, StoreError> {
        Self::open_sqlite_with(SqliteConnectOptions::new().filename(path)).await
    }

    async fn open_sqlite_with(options: SqliteConnectOptions) -> Result<Store, StoreError> {
        // WAL lets readers (`autofix jobs`) proceed while a worker writes. NORMAL syncs the WAL at
        // checkpoints, not at each commit: a committed delivery survives a process crash, though
        // not a power loss (GitHub and GitLab redeliver what was not acknowledged).
        let options = options
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            // The enqueue writer checkpoints in the background instead (see `enqueue_writer`).
            .pragma("wal_autocheckpoint", "0")
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options.clone())
            .await
            .map_err(db("could not open the SQLite file"))?;
        sqlx::migrate!("migrations/sqlite").run(&pool).await?;
        let enqueues = EnqueueWriter::start(options.get_filename(), pool.clone())?;
        Ok(Store::Sqlite(SqliteStore { pool, enqueues }))
    }

    /// Connects to PostgreSQL at `url` and runs its migrations.
    pub async fn open_postgres(url: &str) -> Result<Store, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect(url)
            .await
            .map_err(db("could not connect to PostgreSQL"))?;
        sqlx::migrate!("migrations/postgres").run(&pool).await?;
        Ok(Store::Postgres(pool))
    }

    /// Records `delivery` and, in the same transaction, enqueues a job for `key` unless the delivery
    /// was seen before (nothing written) or a job for `key` is already active (the delivery joins it).
    pub async fn record_delivery_and_enqueue(
        &self,
        delivery: &Delivery,
        key: &JobKey,
        now: DateTime<Utc>,
    ) -> Result<EnqueueOutcome, StoreError> {
        self.record_owned_delivery_and_enqueue(delivery.clone(), key, now)
            .await
    }

    /// [`Store::record_delivery_and_enqueue`] for a caller done with `delivery`: the SQLite writer
    /// takes it as is instead of copying its payload.
    pub async fn record_owned_delivery_and_enqueue(
        &self,
        delivery: Delivery,
        key: &JobKey,
        now: DateTime<Utc>,
    ) -> Result<EnqueueOutcome, StoreError> {
        self.record_delivery_and_enqueue_after(delivery, key, now, now)
            .await
    }

    /// [`Store::record_owned_delivery_and_enqueue`] whose new job waits until `run_after`: more
    /// remarks said together (a review and its line comments) join it before it starts.
    pub async fn record_delivery_and_enqueue_after(
        &self,
        delivery: Delivery,
        key: &JobKey,
        now: DateTime<Utc>,
        run_after: DateTime<Utc>,
    ) -> Result<EnqueueOutcome, StoreError> {
        let times = (now, run_after);
        match self {
            Store::Sqlite(sqlite) => sqlite.enqueues.enqueue(delivery, key.clone(), times).await,
            Store::Postgres(pool) => {
                dialect::postgres::record_delivery_and_enqueue(pool, &delivery, key, times).await
            }
        }
    }

    /// Leases the oldest runnable job to `owner` for `lease`: a queued job whose `run_after` has passed,
    /// or a running job whose lease expired because its worker died.
    pub async fn claim(
        &self,
        owner: &str,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<Option<ClaimedJob>, StoreError> {
        let until = lease_end(now, lease);
        on_database!(self, dialect => claim(owner, until, now))
    }

    /// Extends `owner`'s lease on `job` to `now + lease`; fails with `LeaseLost` once it expired or moved.
    pub async fn renew(
        &self,
        job: JobId,
        owner: &str,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<DateTime<Utc>, StoreError> {
        let until = lease_end(now, lease);
        on_database!(self, dialect => renew(job, owner, until, now))?;
        Ok(until)
    }

    /// Puts `job` back in the queue, runnable at once, if `owner` still holds it; its attempt is
    /// not counted (a draining worker stopped it between two stages). Whether it was released.
    pub async fn release(
        &self,
        job: JobId,
        owner: &str,
        why: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let released = self.release_where(owner, Some(job), why, now).await?;
        Ok(!released.is_empty())
    }

    /// Puts every job `owner` still holds back in the queue, as [`Store::release`] does: what
    /// a stopping server does with the jobs that did not reach a stage's end in time.
    pub async fn release_all(
        &self,
        owner: &str,
        why: &str,
        now: DateTime<Utc>,
    ) -> Result<Vec<JobId>, StoreError> {
        self.release_where(owner, None, why, now).await
    }

    async fn release_where(
        &self,
        owner: &str,
        job: Option<JobId>,
        why: &str,
        now: DateTime<Utc>,
    ) -> Result<Vec<JobId>, StoreError> {
        on_database!(self, dialect => release(owner, job, why, now))
    }

    /// Marks `stage` completed on `job` and appends `message` to its history.
    pub async fn record_stage(
        &self,
        job: JobId,
        owner: &str,
        stage: Stage,
        message: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let stage = stage.as_str();
        on_database!(self, dialect => record_stage(job, owner, stage, message, now))
    }

    /// Saves the worker's `checkpoint` for `job` (replacing the previous one), checked against the
    /// lease like [`Store::record_stage`].
    pub async fn save_checkpoint(
        &self,
        job: JobId,
        owner: &str,
        checkpoint: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        on_database!(self, dialect => save_checkpoint(job, owner, checkpoint, now))
    }

    /// Ends `job` for good and frees its dedupe key, so a later label starts a new job.
    pub async fn finish(
        &self,
        job: JobId,
        owner: &str,
        outcome: &Finish,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.finish_where(job, owner, outcome, None, now)
            .await
            .map(drop)
    }

    /// [`Store::finish`] for a job that handled the deliveries `seen`: any other delivery that
    /// joined it meanwhile (a comment that arrived while it ran) goes, in the same transaction,
    /// to a new queued job for the same issue, whose id is returned.
    pub async fn finish_and_follow_up(
        &self,
        job: JobId,
        owner: &str,
        outcome: &Finish,
        seen: &[String],
        now: DateTime<Utc>,
    ) -> Result<Option<JobId>, StoreError> {
        self.finish_where(job, owner, outcome, Some(seen), now)
            .await
    }

    async fn finish_where(
        &self,
        job: JobId,
        owner: &str,
        outcome: &Finish,
        seen: Option<&[String]>,
        now: DateTime<Utc>,
    ) -> Result<Option<JobId>, StoreError> {
        on_database!(self, dialect => finish(job, owner, outcome, seen, now))
    }

    /// Ends `job` as failed with `code` although its report could not be posted (`why`); the
    /// report alone is tried again later, at most `max_tries` times in all. Returns the next try.
    #[allow(clippy::too_many_arguments)]
    pub async fn finish_unreported(
        &self,
        job: JobId,
        owner: &str,
        failure: &Failure,
        why: &str,
        max_tries: u32,
        now: DateTime<Utc>,
    ) -> Result<Option<DateTime<Utc>>, StoreError> {
        on_database!(self, dialect => finish_unreported(job, owner, failure, why, max_tries, now))
    }

    /// Puts `job` back in the queue after [`retry_backoff`] of its attempts, or at `not_before`
    /// when that is later (a rate limit's reset); returns when it may run again.
    pub async fn retry_later(
        &self,
        job: JobId,
        owner: &str,
        error: &str,
        not_before: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<DateTime<Utc>, StoreError> {
        on_database!(self, dialect => retry_later(job, owner, error, not_before, now))
    }

    /// The `limit` most recently created jobs, newest first.
    pub async fn jobs_list(&self, limit: u32) -> Result<Vec<JobRecord>, StoreError> {
        on_database!(self, dialect => jobs_list(limit))
    }

    /// `job` with its history; `JobNotFound` when no such job exists.
    /// The jobs `filter` selects, newest first, each with its checkpoint.
    pub async fn jobs_page(
        &self,
        filter: &JobFilter,
    ) -> Result<Vec<(JobRecord, Option<String>)>, StoreError> {
        on_database!(self, dialect => jobs_page(filter))
    }

    /// How many jobs are in each state (states with none left out).
    pub async fn job_counts(&self) -> Result<Vec<(JobState, u64)>, StoreError> {
        on_database!(self, dialect => job_counts())
    }

    /// Every repository with a job, in name order.
    pub async fn job_repos(&self) -> Result<Vec<RepoPath>, StoreError> {
        on_database!(self, dialect => job_repos())
    }

    pub async fn job_show(&self, job: JobId) -> Result<JobDetail, StoreError> {
        on_database!(self, dialect => job_show(job))
    }

    /// Whether the database answers (and, on SQLite, the enqueue writer still runs): `/readyz`.
    pub async fn ping(&self) -> Result<(), StoreError> {
        match self {
            Store::Sqlite(sqlite) if !sqlite.enqueues.is_running() => {
                Err(StoreError::WriterStopped)
            }
            Store::Sqlite(SqliteStore { pool, .. }) => dialect::sqlite::ping(pool).await,
            Store::Postgres(pool) => dialect::postgres::ping(pool).await,
        }
    }

    /// Closes every pooled connection.
    pub async fn close(&self) {
        match self {
            Store::Sqlite(SqliteStore { pool, .. }) => pool.close().await,
            Store::Postgres(pool) => pool.close().await,
        }
    }
}

pub(crate) fn lease_end(now: DateTime<Utc>, lease: Duration) -> DateTime<Utc> {
    chrono::TimeDelta::from_std(lease)
        .ok()
        .and_then(|delta| now.checked_add_signed(delta))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

pub(crate) fn to_millis(at: DateTime<Utc>) -> i64 {
    at.timestamp_millis()
}

pub(crate) fn from_millis(millis: i64) -> Result<DateTime<Utc>, StoreError> {
    Utc.timestamp_millis_opt(millis)
        .single()
        .ok_or_else(|| StoreError::Corrupt {
            what: "timestamp",
            value: millis.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forge::{BotEvent, ForgeKind};

    fn delivery(id: &str, payload: &[u8]) -> Delivery {
        Delivery {
            id: id.to_owned(),
            forge: ForgeKind::GitHub,
            event: "issues".to_owned(),
            received_at: from_millis(1_700_000_000_000).unwrap(),
            payload: payload.to_vec(),
            parsed: BotEvent::Ignored {
                reason: "a test delivery".into(),
            },
        }
    }

    #[tokio::test]
    async fn an_owned_delivery_is_recorded_and_deduplicated_like_a_borrowed_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(&dir.path().join("autofix.db"))
            .await
            .unwrap();
        let key = JobKey::new(ForgeKind::GitHub, "octo/hello", 7);
        let now = from_millis(1_700_000_000_000).unwrap();

        let first = store
            .record_owned_delivery_and_enqueue(delivery("d-1", b"{\"n\":1}"), &key, now)
            .await
            .unwrap();
        let EnqueueOutcome::NewJob(job) = first else {
            panic!("expected a new job, got {first:?}");
        };
        let again = store
            .record_delivery_and_enqueue(&delivery("d-1", b"{\"n\":1}"), &key, now)
            .await
            .unwrap();
        assert_eq!(again, EnqueueOutcome::DuplicateDelivery);
        let joined = store
            .record_owned_delivery_and_enqueue(delivery("d-2", b"{\"n\":2}"), &key, now)
            .await
            .unwrap();
        assert_eq!(joined, EnqueueOutcome::ActiveJobExists(job));

        let stored = store.delivery("d-1").await.unwrap().unwrap();
        assert_eq!(stored.payload, b"{\"n\":1}");
        assert_eq!(stored.job_id, Some(job));
    }
}
