//! The model's cost kept in the job store: each job run's spend with its UTC day, summed per
//! repository and day (the daily caps) and per job (the jobs pages), and the once-a-day notice.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::{JobId, JobKey, RepoKey, SqliteStore, Store, StoreError, db, to_millis};

/// One job run's spend.
#[derive(Debug, Clone, PartialEq)]
pub struct Spend {
    pub job: JobId,
    pub model: String,
    pub usd: f64,
    /// The model had a known price.
    pub priced: bool,
}

/// What was spent on one UTC day: on one repository, and on all of them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DaySpend {
    pub repository_usd: f64,
    pub all_usd: f64,
}

/// What one job spent over all its runs, and whether some run's model had no known price.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct JobSpend {
    pub usd: f64,
    pub price_unknown: bool,
}

/// `2026-11-26`: the UTC day `at` falls on, the unit of the daily caps.
pub fn utc_day(at: DateTime<Utc>) -> String {
    at.date_naive().format("%Y-%m-%d").to_string()
}

macro_rules! spend_dialect {
    ($name:ident, $Db:ty) => {
        mod $name {
            use super::*;
            use sqlx::Pool;

            pub(super) async fn record(
                pool: &Pool<$Db>,
                key: &JobKey,
                spend: &Spend,
                now: DateTime<Utc>,
            ) -> Result<(), StoreError> {
                sqlx::query(
                    "INSERT INTO llm_spend (forge, repo, day, job_id, model, usd, priced, recorded_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                )
                .bind(key.repo.forge)
                .bind(&key.repo.path)
                .bind(utc_day(now))
                .bind(spend.job)
                .bind(&spend.model)
                .bind(spend.usd)
                .bind(i64::from(spend.priced))
                .bind(to_millis(now))
                .execute(pool)
                .await
                .map_err(db("could not record the model's cost"))?;
                Ok(())
            }

            pub(super) async fn day(
                pool: &Pool<$Db>,
                repo: &RepoKey,
                day: &str,
            ) -> Result<DaySpend, StoreError> {
                let (repository_usd, all_usd): (f64, f64) = sqlx::query_as(
                    "SELECT COALESCE(SUM(CASE WHEN forge = $1 AND repo = $2 THEN usd ELSE 0.0 END), 0.0), \
                     COALESCE(SUM(usd), 0.0) FROM llm_spend WHERE day = $3",
                )
                .bind(repo.forge)
                .bind(&repo.path)
                .bind(day)
                .fetch_one(pool)
                .await
                .map_err(db("could not sum the day's spend"))?;
                Ok(DaySpend {
                    repository_usd,
                    all_usd,
                })
            }

            pub(super) async fn jobs(
                pool: &Pool<$Db>,
                first: JobId,
                last: JobId,
            ) -> Result<HashMap<JobId, JobSpend>, StoreError> {
                let rows: Vec<(JobId, f64, i64)> = sqlx::query_as(
                    "SELECT job_id, COALESCE(SUM(usd), 0.0), MIN(priced) FROM llm_spend \
                     WHERE job_id >= $1 AND job_id <= $2 GROUP BY job_id",
                )
                .bind(first)
                .bind(last)
                .fetch_all(pool)
                .await
                .map_err(db("could not sum the jobs' spend"))?;
                Ok(rows
                    .into_iter()
                    .map(|(job, usd, priced)| {
                        let price_unknown = priced == 0;
                        (job, JobSpend { usd, price_unknown })
                    })
                    .collect())
            }

            pub(super) async fn first_notice(
                pool: &Pool<$Db>,
                key: &JobKey,
                now: DateTime<Utc>,
            ) -> Result<bool, StoreError> {
                let inserted = sqlx::query(
                    "INSERT INTO spend_notices (forge, repo, day, issue_number, at) VALUES ($1, $2, $3, $4, $5) \
                     ON CONFLICT (forge, repo, day) DO NOTHING",
                )
                .bind(key.repo.forge)
                .bind(&key.repo.path)
                .bind(utc_day(now))
                .bind(key.issue)
                .bind(to_millis(now))
                .execute(pool)
                .await
                .map_err(db("could not note the spending cap's notice"))?;
                Ok(inserted.rows_affected() == 1)
            }
        }
    };
}

spend_dialect!(sqlite, sqlx::Sqlite);
spend_dialect!(postgres, sqlx::Postgres);

impl Store {
    /// Adds what a run of `key`'s job spent, on today's UTC day.
    pub async fn record_spend(
        &self,
        key: &JobKey,
        spend: &Spend,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        on_database!(self, => record(key, spend, now))
    }

    /// What was spent on `repo`, and on every repository, on `now`'s UTC day.
    pub async fn day_spend(
        &self,
        repo: &RepoKey,
        now: DateTime<Utc>,
    ) -> Result<DaySpend, StoreError> {
        let day = utc_day(now);
        on_database!(self, => day(repo, &day))
    }

    /// What each job of `jobs` spent (a job that spent nothing is left out).
    pub async fn jobs_spend(&self, jobs: &[JobId]) -> Result<HashMap<JobId, JobSpend>, StoreError> {
        let (Some(first), Some(last)) = (jobs.iter().min(), jobs.iter().max()) else {
            return Ok(HashMap::new());
        };
        let mut spent = on_database!(self, => jobs(*first, *last))?;
        spent.retain(|job, _| jobs.contains(job));
        Ok(spent)
    }

    /// What `job` spent over all its runs.
    pub async fn job_spend(&self, job: JobId) -> Result<JobSpend, StoreError> {
        Ok(self
            .jobs_spend(&[job])
            .await?
            .remove(&job)
            .unwrap_or_default())
    }

    /// Notes that `key`'s repository was told today it is over its daily cap: `true` the first
    /// time on `now`'s UTC day, `false` after (the notice is not repeated).
    pub async fn first_spend_notice(
        &self,
        key: &JobKey,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        on_database!(self, => first_notice(key, now))
    }
}
