//! The change a job made, as a unified diff of the work tree (untracked files included,
//! ignored files not) against a commit: what the reviewer reads and the PR will show.

use git2::{DiffFormat, DiffOptions};

use super::error::GitError;
use super::{BranchName, CommitSha, Workspace};

impl Workspace {
    /// `git diff <base>` of the work tree, with new untracked files shown in full.
    pub fn diff_from(&self, base: &CommitSha) -> Result<String, GitError> {
        self.diff_of(base, None)
    }

    /// [`diff_from`](Self::diff_from) limited to exactly `paths`: the job's own files, without
    /// what setup commands left in the tree.
    pub fn diff_paths_from(&self, base: &CommitSha, paths: &[String]) -> Result<String, GitError> {
        if paths.is_empty() {
            return Ok(String::new());
        }
        self.diff_of(base, Some(paths))
    }

    /// Where HEAD's history left `origin/<upstream>` (their merge base): what a change
    /// request's own diff is taken against in a copy cloned from the mirror.
    pub fn fork_point(&self, upstream: &BranchName) -> Result<CommitSha, GitError> {
        let error = GitError::git(format!("find where HEAD left origin/{upstream}"));
        let upstream = self
            .repo
            .refname_to_id(&format!("refs/remotes/origin/{upstream}"))
            .map_err(&error)?;
        let head = self
            .repo
            .head()
            .and_then(|head| head.peel_to_commit())
            .map_err(&error)?;
        let base = self.repo.merge_base(head.id(), upstream).map_err(&error)?;
        Ok(CommitSha::from_oid(base))
    }

    fn diff_of(&self, base: &CommitSha, paths: Option<&[String]>) -> Result<String, GitError> {
        let tree = self
            .find_commit(base)?
            .tree()
            .map_err(GitError::git("read the base tree"))?;
        let mut options = DiffOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .show_untracked_content(true)
            .context_lines(3);
        if let Some(paths) = paths {
            options.disable_pathspec_match(true);
            for path in paths {
                options.pathspec(path);
            }
        }
        let diff = self
            .repo
            .diff_tree_to_workdir_with_index(Some(&tree), Some(&mut options))
            .map_err(GitError::git("diff the work tree"))?;
        let mut text = String::new();
        diff.print(DiffFormat::Patch, |_delta, _hunk, line| {
            if matches!(line.origin(), '+' | '-' | ' ') {
                text.push(line.origin());
            }
            text.push_str(&String::from_utf8_lossy(line.content()));
            true
        })
        .map_err(GitError::git("print the diff"))?;
        Ok(text)
    }
}
