//! Following a base that moved: whether a branch still merges cleanly into it, whose commits
//! the branch holds, and replaying the branch's commits onto it (a rebase without a work tree).

use git2::{MergeOptions, Oid};

use super::message::JOB_TRAILER;
use super::{CommitSha, GitError, Identity, Workspace};

/// How replaying a branch onto a new base went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rebased {
    /// Every commit applied; `tip` is the last of the new commits (no ref points at it yet).
    Onto { tip: CommitSha, commits: usize },
    /// `commit` does not apply on the new base; nothing was changed.
    Conflict { commit: CommitSha },
}

impl Workspace {
    /// The paths whose content differs between commits `from` and `to`.
    pub fn paths_changed_between(
        &self,
        from: &CommitSha,
        to: &CommitSha,
    ) -> Result<Vec<String>, GitError> {
        let error = GitError::git(format!("compare {from} with {to}"));
        let from = self.find_commit(from)?.tree().map_err(&error)?;
        let to = self.find_commit(to)?.tree().map_err(&error)?;
        let diff = self
            .repo
            .diff_tree_to_tree(Some(&from), Some(&to), None)
            .map_err(&error)?;
        let mut paths = Vec::new();
        for delta in diff.deltas() {
            for file in [delta.old_file(), delta.new_file()] {
                if let Some(path) = file.path().and_then(|path| path.to_str())
                    && !paths.iter().any(|known| known == path)
                {
                    paths.push(path.to_owned());
                }
            }
        }
        Ok(paths)
    }

    /// Whether `head` merges into `base` without a conflict.
    pub fn merges_cleanly(&self, head: &CommitSha, base: &CommitSha) -> Result<bool, GitError> {
        let head = self.find_commit(head)?;
        let base = self.find_commit(base)?;
        let index = self
            .repo
            .merge_commits(&base, &head, Some(&MergeOptions::new()))
            .map_err(GitError::git(format!(
                "merge {} into {}",
                head.id(),
                base.id()
            )))?;
        Ok(!index.has_conflicts())
    }

    /// The commits of `head` that `base` lacks, oldest first, each with whether it is autofix's
    /// own (it carries an `Autofix-Job` trailer). Merge commits count as a person's.
    pub fn commits_since(
        &self,
        head: &CommitSha,
        base: &CommitSha,
    ) -> Result<Vec<(CommitSha, bool)>, GitError> {
        let error = GitError::git("walk the branch's commits");
        let mut walk = self.repo.revwalk().map_err(&error)?;
        walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)
            .map_err(&error)?;
        walk.push(self.find_commit(head)?.id()).map_err(&error)?;
        walk.hide(self.find_commit(base)?.id()).map_err(&error)?;
        let mut commits = Vec::new();
        for oid in walk {
            let commit = self
                .repo
                .find_commit(oid.map_err(&error)?)
                .map_err(&error)?;
            let ours = commit.parent_count() == 1 && carries_a_job_trailer(commit.message());
            commits.push((CommitSha::from_oid(commit.id()), ours));
        }
        Ok(commits)
    }

    /// Replays `commits` (oldest first, each with one parent) onto `onto`, as new commits no
    /// ref points at yet: each keeps its author and message, and the committer is `identity`.
    /// The work tree, the index and every branch are left as they are.
    pub fn replay_onto(
        &self,
        commits: &[CommitSha],
        onto: &CommitSha,
        identity: &Identity,
    ) -> Result<Rebased, GitError> {
        let committer = identity.signature()?;
        let mut tip: Oid = self.find_commit(onto)?.id();
        for sha in commits {
            let commit = self.find_commit(sha)?;
            let base = self
                .repo
                .find_commit(tip)
                .map_err(GitError::git("find the rebased tip"))?;
            let mut index = self
                .repo
                .cherrypick_commit(&commit, &base, 0, None)
                .map_err(GitError::git(format!("replay {sha} onto {tip}")))?;
            if index.has_conflicts() {
                return Ok(Rebased::Conflict {
                    commit: sha.clone(),
                });
            }
            let tree_id = index
                .write_tree_to(&self.repo)
                .map_err(GitError::git(format!("write the tree of {sha} replayed")))?;
            let tree = self
                .repo
                .find_tree(tree_id)
                .map_err(GitError::git("read a replayed tree"))?;
            tip = self
                .repo
                .commit(
                    None,
                    &commit.author(),
                    &committer,
                    commit.message().unwrap_or_default(),
                    &tree,
                    &[&base],
                )
                .map_err(GitError::git(format!("commit {sha} replayed")))?;
        }
        Ok(Rebased::Onto {
            tip: CommitSha::from_oid(tip),
            commits: commits.len(),
        })
    }
}

fn carries_a_job_trailer(message: Option<&str>) -> bool {
    let Some(message) = message else {
        return false;
    };
    git2::message_trailers_strs(message).is_ok_and(|trailers| {
        trailers
            .iter()
            .any(|(key, value)| key.eq_ignore_ascii_case(JOB_TRAILER) && !value.trim().is_empty())
    })
}
