//! `rollback`: puts the work tree and the current branch back at the baseline commit, as
//! `git reset --hard <baseline>` followed by `git clean -fd` would, and proves the tree clean.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use git2::build::CheckoutBuilder;
use git2::{ResetType, Status, StatusOptions};

use super::{CommitSha, GitError, Workspace};

impl Workspace {
    /// Moves HEAD (and its branch) to `baseline`, resets index and work tree to it (staged and
    /// unstaged changes undone, deleted files restored), removes untracked files and folders,
    /// keeps ignored files, and forgets any merge or rebase under way.
    pub fn rollback(&self, baseline: &CommitSha) -> Result<(), GitError> {
        let commit = self.find_commit(baseline)?;
        self.repo
            .cleanup_state()
            .map_err(GitError::git("forget the operation in progress"))?;
        let mut checkout = CheckoutBuilder::new();
        checkout.force();
        self.repo
            .reset(commit.as_object(), ResetType::Hard, Some(&mut checkout))
            .map_err(GitError::git(format!("reset the work tree to {baseline}")))?;
        self.remove_untracked()?;
        tracing::info!(%baseline, root = %self.root.display(), "rolled back");
        self.ensure_clean()
    }

    /// `git clean -fd`: libgit2's reset leaves untracked files alone, so they are removed here,
    /// sparing ignored files and nested repositories (which then fail the final clean check
    /// loudly rather than being destroyed). Empty folders git never reports are left.
    fn remove_untracked(&self) -> Result<(), GitError> {
        for path in self.untracked_entries()? {
            self.remove_unless_ignored(&path)
                .map_err(|source| GitError::Io {
                    action: "remove an untracked file",
                    path: path.clone(),
                    source,
                })?;
        }
        Ok(())
    }

    /// Untracked files, and untracked folders as one entry each (`dir/`), as absolute paths.
    fn untracked_entries(&self) -> Result<Vec<PathBuf>, GitError> {
        let mut options = StatusOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(false)
            .include_ignored(false);
        let statuses = self
            .repo
            .statuses(Some(&mut options))
            .map_err(GitError::git("list the untracked files"))?;
        Ok(statuses
            .iter()
            .filter(|entry| entry.status().contains(Status::WT_NEW))
            .map(|entry| self.root.join(OsStr::from_bytes(entry.path_bytes())))
            .collect())
    }

    fn remove_unless_ignored(&self, path: &Path) -> io::Result<()> {
        let metadata = path.symlink_metadata()?;
        if !metadata.is_dir() {
            return std::fs::remove_file(path);
        }
        if path.join(".git").exists() {
            tracing::warn!(path = %path.display(), "left a nested repository in place, as git clean -fd does");
            return Ok(());
        }
        for entry in std::fs::read_dir(path)? {
            let entry_path = entry?.path();
            if !self.is_ignored(&entry_path) {
                self.remove_unless_ignored(&entry_path)?;
            }
        }
        match std::fs::remove_dir(path) {
            Err(error) if error.kind() == io::ErrorKind::DirectoryNotEmpty => Ok(()),
            other => other,
        }
    }

    /// Asked per entry because an ignored file may sit inside an untracked folder.
    fn is_ignored(&self, path: &Path) -> bool {
        let Ok(relative) = path.strip_prefix(&self.root) else {
            return false;
        };
        self.repo.is_path_ignored(relative).unwrap_or(false)
    }
}
