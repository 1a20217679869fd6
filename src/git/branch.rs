//! The job's branch: `prepare_branch` creates it or reuses it when it holds only this job's
//! commits (so a retried job lands on its own work), `delete_branch` removes it again, and
//! `is_left_by_autofix` tells a branch an earlier run left behind from someone else's.

use git2::Oid;

use super::ids::check_job_id;
use super::message::JOB_TRAILER;
use super::{BranchName, CommitSha, GitError, Workspace};

/// What `prepare_branch` did; either way the branch is checked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BranchOutcome {
    /// The branch did not exist and now points at the base.
    Created { head: CommitSha },
    /// The branch existed with no commits beyond the base but this job's; it was kept as it is
    /// (it may not contain the base if the base moved on since).
    Reused { head: CommitSha },
}

impl BranchOutcome {
    pub fn head(&self) -> &CommitSha {
        match self {
            BranchOutcome::Created { head } | BranchOutcome::Reused { head } => head,
        }
    }
}

impl Workspace {
    /// Creates `name` at `base` or reuses it when every commit on it that `base` lacks carries
    /// `Autofix-Job: <job_id>`, then checks it out. The tree must be clean first.
    pub fn prepare_branch(
        &self,
        name: &BranchName,
        base: &CommitSha,
        job_id: &str,
    ) -> Result<BranchOutcome, GitError> {
        check_job_id(job_id)?;
        self.ensure_clean()?;
        let base_commit = self.find_commit(base)?;
        let Some(existing) = self.find_local_branch(name)? else {
            self.repo
                .branch(name.as_str(), &base_commit, false)
                .map_err(GitError::git(format!("create branch {name} at {base}")))?;
            if let Err(error) = self.switch_to(name) {
                self.forget_new_branch(name);
                return Err(error);
            }
            tracing::info!(branch = %name, %base, "created the job's branch");
            return Ok(BranchOutcome::Created { head: base.clone() });
        };
        let head = existing
            .get()
            .peel_to_commit()
            .map_err(GitError::git(format!("find the tip of branch {name}")))?
            .id();
        let foreign =
            self.count_commits_lacking_trailer(head, base_commit.id(), |job| job == job_id)?;
        if foreign > 0 {
            return Err(GitError::BranchExists {
                name: name.to_string(),
                foreign,
            });
        }
        self.switch_to(name)?;
        let head = CommitSha::from_oid(head);
        tracing::info!(branch = %name, %head, "reused the job's branch");
        Ok(BranchOutcome::Reused { head })
    }

    /// Deletes a local branch; `Ok(false)` when there was none. The checked-out branch is
    /// refused: check out another one first.
    pub fn delete_branch(&self, name: &BranchName) -> Result<bool, GitError> {
        let Some(mut branch) = self.find_local_branch(name)? else {
            return Ok(false);
        };
        if branch.is_head() {
            return Err(GitError::BranchCheckedOut {
                name: name.to_string(),
            });
        }
        branch
            .delete()
            .map_err(GitError::git(format!("delete branch {name}")))?;
        tracing::info!(branch = %name, "deleted branch");
        Ok(true)
    }

    /// Whether the branch at `tip` is one an earlier autofix run left behind, which a later run for
    /// the same issue may replace: every commit on it that the local branch `base` lacks carries an
    /// `Autofix-Job` trailer, whichever job's. A tip this copy does not hold (pushed since the
    /// mirror was fetched) is not.
    pub fn is_left_by_autofix(&self, tip: &CommitSha, base: &BranchName) -> Result<bool, GitError> {
        let tip = match self.find_commit(tip) {
            Ok(commit) => commit.id(),
            Err(GitError::UnknownCommit { .. }) => return Ok(false),
            Err(error) => return Err(error),
        };
        let Some(base_branch) = self.find_local_branch(base)? else {
            return Ok(false);
        };
        let base = base_branch
            .get()
            .peel_to_commit()
            .map_err(GitError::git(format!("find the tip of branch {base}")))?
            .id();
        let foreign = self.count_commits_lacking_trailer(tip, base, |job| !job.is_empty())?;
        Ok(foreign == 0)
    }

    /// Commits reachable from `head` but not from `base` without an `Autofix-Job` trailer whose
    /// value `accepts`.
    fn count_commits_lacking_trailer(
        &self,
        head: Oid,
        base: Oid,
        accepts: impl Fn(&str) -> bool,
    ) -> Result<usize, GitError> {
        let walk_error = GitError::git("walk the commits of the existing branch");
        let mut walk = self.repo.revwalk().map_err(&walk_error)?;
        walk.push(head).map_err(&walk_error)?;
        walk.hide(base).map_err(&walk_error)?;
        let mut foreign = 0;
        for oid in walk {
            let oid = oid.map_err(&walk_error)?;
            let commit = self.repo.find_commit(oid).map_err(&walk_error)?;
            if !carries_job_trailer(commit.message(), &accepts) {
                foreign += 1;
            }
        }
        Ok(foreign)
    }

    /// Undoes a branch creation whose checkout failed, so a retry starts from the same state.
    fn forget_new_branch(&self, name: &BranchName) {
        if let Ok(Some(mut branch)) = self.find_local_branch(name)
            && let Err(error) = branch.delete()
        {
            tracing::warn!(branch = %name, %error, "could not delete the branch whose checkout failed");
        }
    }
}

/// Trailer keys compare case-insensitively, as git's do; the (trimmed) value must be one `accepts`.
fn carries_job_trailer(message: Option<&str>, accepts: impl Fn(&str) -> bool) -> bool {
    let Some(message) = message else {
        return false;
    };
    let Ok(trailers) = git2::message_trailers_strs(message) else {
        return false;
    };
    trailers
        .iter()
        .any(|(key, value)| key.eq_ignore_ascii_case(JOB_TRAILER) && accepts(value.trim()))
}
