//! The names the store gives its rows: a job's id, the repository and issue a job is about, and
//! how those and the forge's own types (forge, path, issue number, failure code) sit in columns.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::{Database, Decode, Encode, Type};

use crate::failure::FailureCode;
use crate::forge::{ForgeKind, IssueNumber, RepoPath, RepoRef};

/// A job's number in the store, as `autofix jobs show 42` and the jobs page name it.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct JobId(pub i64);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for JobId {
    type Err = std::num::ParseIntError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        text.parse().map(JobId)
    }
}

/// Which repository: its forge and its path there.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RepoKey {
    pub forge: ForgeKind,
    pub path: RepoPath,
}

impl RepoKey {
    pub fn new(forge: ForgeKind, path: impl Into<RepoPath>) -> RepoKey {
        RepoKey {
            forge,
            path: path.into(),
        }
    }

    /// The key of the repository the bot addresses as `repo`.
    pub fn of(repo: &RepoRef) -> RepoKey {
        RepoKey::new(repo.forge, repo.path())
    }
}

impl fmt::Display for RepoKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.forge, self.path)
    }
}

/// Which issue a job works on; at most one queued or running job exists per key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JobKey {
    pub repo: RepoKey,
    pub issue: IssueNumber,
}

impl JobKey {
    pub fn new(forge: ForgeKind, path: impl Into<RepoPath>, issue: u64) -> Self {
        JobKey {
            repo: RepoKey::new(forge, path),
            issue: IssueNumber(issue),
        }
    }

    /// The key for `issue` of `repo`.
    pub fn for_issue(repo: &RepoRef, issue: IssueNumber) -> Self {
        JobKey {
            repo: RepoKey::of(repo),
            issue,
        }
    }

    /// `forge:repo:issue`, the value the `jobs.dedupe_key` unique column holds while the job is active.
    pub fn dedupe_key(&self) -> String {
        format!("{}:{}", self.repo, self.issue.0)
    }
}

/// A value kept in a column of another type: `write` gives what is written, `read` the value
/// back from what was stored, a stored value that does not read being an error of the row.
macro_rules! column_as {
    ($ty:ty, $column:ty, write: $write:expr, read: $read:expr) => {
        impl $ty {
            fn column_value(&self) -> $column {
                let write: fn(&$ty) -> $column = $write;
                write(self)
            }

            fn from_column(stored: $column) -> Result<$ty, BoxDynError> {
                let read: fn($column) -> Result<$ty, BoxDynError> = $read;
                read(stored)
            }
        }

        impl<DB: Database> Type<DB> for $ty
        where
            $column: Type<DB>,
        {
            fn type_info() -> DB::TypeInfo {
                <$column as Type<DB>>::type_info()
            }

            fn compatible(ty: &DB::TypeInfo) -> bool {
                <$column as Type<DB>>::compatible(ty)
            }
        }

        impl<'q, DB: Database> Encode<'q, DB> for $ty
        where
            $column: Encode<'q, DB>,
        {
            fn encode_by_ref(
                &self,
                buf: &mut <DB as Database>::ArgumentBuffer<'q>,
            ) -> Result<IsNull, BoxDynError> {
                <$column as Encode<'q, DB>>::encode(self.column_value(), buf)
            }
        }

        impl<'r, DB: Database> Decode<'r, DB> for $ty
        where
            $column: Decode<'r, DB>,
        {
            fn decode(value: <DB as Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
                <$ty>::from_column(<$column as Decode<'r, DB>>::decode(value)?)
            }
        }

        impl rusqlite::ToSql for $ty {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(rusqlite::types::ToSqlOutput::from(self.column_value()))
            }
        }
    };
}

column_as!(JobId, i64, write: |id| id.0, read: |stored| Ok(JobId(stored)));
column_as!(ForgeKind, String,
    write: |forge| forge.as_str().to_owned(),
    read: |stored| Ok(stored.parse()?));
column_as!(RepoPath, String,
    write: |path| path.as_str().to_owned(),
    read: |stored| Ok(RepoPath::new(stored)));
// Issue numbers are small positive integers on both forges; a larger one is saturated, not wrapped.
column_as!(IssueNumber, i64,
    write: |issue| i64::try_from(issue.0).unwrap_or(i64::MAX),
    read: |stored| Ok(IssueNumber(u64::try_from(stored)?)));
column_as!(FailureCode, String,
    write: |code| code.as_str().to_owned(),
    read: |stored| FailureCode::ALL
        .into_iter()
        .find(|code| code.as_str() == stored)
        .ok_or_else(|| format!("unknown failure code {stored:?}").into()));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_key_is_deduplicated_by_forge_repository_and_issue() {
        let key = JobKey::new(ForgeKind::GitLab, "group/sub/project", 7);
        assert_eq!(key.dedupe_key(), "gitlab:group/sub/project:7");
    }

    #[test]
    fn job_ids_read_as_people_write_them() {
        assert_eq!("42".parse::<JobId>().unwrap(), JobId(42));
        assert_eq!(JobId(42).to_string(), "42");
        assert!("#42".parse::<JobId>().is_err());
    }
}
