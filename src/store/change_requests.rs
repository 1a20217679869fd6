//! The pull and merge requests autofix opened, kept in the job store: recorded when opened or
//! adopted, found by number or by issue, closed, and the failed checks each has had repaired.

use chrono::{DateTime, Utc};

use super::dialect::attempts;
use super::records::home_of;
use super::{
    ChangeRequestRecord, JobId, JobKey, RepoKey, SqliteStore, Store, StoreError, db, to_millis,
};
use crate::forge::IssueNumber;

macro_rules! change_request_dialect {
    ($name:ident, $Db:ty) => {
        mod $name {
            use super::*;
            use sqlx::Pool;

            type Db = $Db;

            pub(super) async fn record_change_request(
                pool: &Pool<Db>,
                record: &ChangeRequestRecord,
                now: DateTime<Utc>,
            ) -> Result<(), StoreError> {
                let (head_repo, head_clone_url) = record.home_columns();
                sqlx::query(
                    "INSERT INTO change_requests (forge, repo, number, issue_number, branch, url, job_id, created_at, \
                     head_repo, head_clone_url) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
                     ON CONFLICT (forge, repo, number) DO UPDATE SET issue_number = $4, branch = $5, url = $6, job_id = $7, \
                     state = 'open', head_repo = $9, head_clone_url = $10",
                )
                .bind(record.key.repo.forge)
                .bind(&record.key.repo.path)
                .bind(IssueNumber(record.number))
                .bind(record.key.issue)
                .bind(&record.branch)
                .bind(&record.url)
                .bind(record.job)
                .bind(to_millis(now))
                .bind(head_repo)
                .bind(head_clone_url)
                .execute(pool)
                .await
                .map_err(db("could not record the change request"))?;
                Ok(())
            }

            /// The change request `number` of `forge`/`repo` (`by_issue`: the newest one of
            /// issue `number` instead).
            pub(super) async fn change_request(
                pool: &Pool<Db>,
                repo: &RepoKey,
                number: u64,
                by_issue: bool,
            ) -> Result<Option<ChangeRequestRecord>, StoreError> {
                let column = if by_issue { "issue_number" } else { "number" };
                type Row = (
                    IssueNumber, IssueNumber, String, String, JobId, i64, Option<String>, Option<String>, Option<String>,
                );
                let row: Option<Row> = sqlx::query_as(&format!(
                    "SELECT number, issue_number, branch, url, job_id, ci_repairs, ci_head, head_repo, head_clone_url \
                     FROM change_requests \
                     WHERE forge = $1 AND repo = $2 AND {column} = $3 ORDER BY created_at DESC, number DESC LIMIT 1"
                ))
                .bind(repo.forge)
                .bind(&repo.path)
                .bind(IssueNumber(number))
                .fetch_optional(pool)
                .await
                .map_err(db("could not read the change request"))?;
                row.map(|(number, issue, branch, url, job, ci_repairs, ci_head, head_repo, head_clone_url)| {
                    Ok(ChangeRequestRecord {
                        key: JobKey { repo: repo.clone(), issue },
                        number: number.0,
                        branch,
                        url,
                        job,
                        ci_repairs: attempts(ci_repairs)?,
                        ci_head,
                        home: home_of(repo.forge, head_repo, head_clone_url),
                    })
                })
                .transpose()
            }

            /// The open change requests autofix opened in `forge`/`repo`, by number.
            pub(super) async fn open_change_requests(
                pool: &Pool<Db>,
                repo: &RepoKey,
            ) -> Result<Vec<ChangeRequestRecord>, StoreError> {
                let numbers: Vec<(IssueNumber,)> = sqlx::query_as(
                    "SELECT number FROM change_requests WHERE forge = $1 AND repo = $2 AND state = 'open' \
                     ORDER BY number",
                )
                .bind(repo.forge)
                .bind(&repo.path)
                .fetch_all(pool)
                .await
                .map_err(db("could not list the open change requests"))?;
                let mut records = Vec::with_capacity(numbers.len());
                for (number,) in numbers {
                    if let Some(record) = change_request(pool, repo, number.0, false).await? {
                        records.push(record);
                    }
                }
                Ok(records)
            }

            /// Marks a change request closed (or merged): moves of the base no longer concern it.
            pub(super) async fn close_change_request(
                pool: &Pool<Db>,
                record: &ChangeRequestRecord,
            ) -> Result<(), StoreError> {
                sqlx::query(
                    "UPDATE change_requests SET state = 'closed' WHERE forge = $1 AND repo = $2 AND number = $3",
                )
                .bind(record.key.repo.forge)
                .bind(&record.key.repo.path)
                .bind(IssueNumber(record.number))
                .execute(pool)
                .await
                .map_err(db("could not mark the change request closed"))?;
                Ok(())
            }

            /// Notes that the failed checks of `head` were dealt with, counting a pushed repair.
            pub(super) async fn record_ci(
                pool: &Pool<Db>,
                record: &ChangeRequestRecord,
                head: &str,
                repaired: bool,
            ) -> Result<(), StoreError> {
                sqlx::query(
                    "UPDATE change_requests SET ci_head = $4, ci_repairs = ci_repairs + $5 \
                     WHERE forge = $1 AND repo = $2 AND number = $3",
                )
                .bind(record.key.repo.forge)
                .bind(&record.key.repo.path)
                .bind(IssueNumber(record.number))
                .bind(head)
                .bind(i64::from(repaired))
                .execute(pool)
                .await
                .map_err(db("could not record the checks dealt with"))?;
                Ok(())
            }
        }
    };
}

change_request_dialect!(sqlite, sqlx::Sqlite);
change_request_dialect!(postgres, sqlx::Postgres);

impl Store {
    /// Remembers a change request autofix opened (or adopted) for an issue.
    pub async fn record_change_request(
        &self,
        record: &ChangeRequestRecord,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        on_database!(self, => record_change_request(record, now))
    }

    /// Notes that the failed checks of `head` on `record` were dealt with (`repaired`: a repair
    /// was pushed, which counts towards the limit).
    pub async fn record_ci(
        &self,
        record: &ChangeRequestRecord,
        head: &str,
        repaired: bool,
    ) -> Result<(), StoreError> {
        on_database!(self, => record_ci(record, head, repaired))
    }

    /// Every change request autofix opened in `repo` that no job has found closed.
    pub async fn open_change_requests(
        &self,
        repo: &RepoKey,
    ) -> Result<Vec<ChangeRequestRecord>, StoreError> {
        on_database!(self, => open_change_requests(repo))
    }

    /// Marks a change request closed or merged, so a moved base no longer starts work for it.
    pub async fn close_change_request(
        &self,
        record: &ChangeRequestRecord,
    ) -> Result<(), StoreError> {
        on_database!(self, => close_change_request(record))
    }

    /// The change request autofix opened as `number` in `repo`, if it did.
    pub async fn change_request(
        &self,
        repo: &RepoKey,
        number: u64,
    ) -> Result<Option<ChangeRequestRecord>, StoreError> {
        self.change_request_where(repo, number, false).await
    }

    /// The newest change request autofix opened for `key`'s issue, if any.
    pub async fn change_request_for_issue(
        &self,
        key: &JobKey,
    ) -> Result<Option<ChangeRequestRecord>, StoreError> {
        self.change_request_where(&key.repo, key.issue.0, true)
            .await
    }

    async fn change_request_where(
        &self,
        repo: &RepoKey,
        number: u64,
        by_issue: bool,
    ) -> Result<Option<ChangeRequestRecord>, StoreError> {
        on_database!(self, => change_request(repo, number, by_issue))
    }
}
