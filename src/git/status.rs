//! The state of the work tree: the clean-tree preflight (`ensure_clean`) and the list of paths
//! that differ from HEAD. Both only read; neither writes the index.

use git2::{RepositoryState, Status, StatusOptions};

use super::error::{DIRTY_PATHS_LISTED, DirtyKind, DirtyPath};
use super::{GitError, Workspace};

const STAGED: Status = Status::INDEX_NEW
    .union(Status::INDEX_MODIFIED)
    .union(Status::INDEX_DELETED)
    .union(Status::INDEX_RENAMED)
    .union(Status::INDEX_TYPECHANGE);

const UNSTAGED: Status = Status::WT_MODIFIED
    .union(Status::WT_DELETED)
    .union(Status::WT_RENAMED)
    .union(Status::WT_TYPECHANGE)
    .union(Status::WT_UNREADABLE);

impl Workspace {
    /// Succeeds when nothing is staged, modified or untracked (ignored files do not count) and
    /// no merge, rebase or similar is under way; otherwise lists what is in the way.
    pub fn ensure_clean(&self) -> Result<(), GitError> {
        self.ensure_no_operation_in_progress()?;
        let mut dirty = self.dirty_paths()?;
        if dirty.is_empty() {
            return Ok(());
        }
        dirty.sort_by(|a, b| (a.kind, &a.path).cmp(&(b.kind, &b.path)));
        let total = dirty.len();
        dirty.truncate(DIRTY_PATHS_LISTED);
        Err(GitError::DirtyTree {
            root: self.root.clone(),
            paths: dirty,
            total,
        })
    }

    /// Every path that differs from HEAD (staged, modified, deleted or untracked, but not
    /// ignored), relative to the root with `/` separators, sorted and each listed once.
    pub fn changed_paths(&self) -> Result<Vec<String>, GitError> {
        let mut paths: Vec<String> = self
            .dirty_paths()?
            .into_iter()
            .map(|dirty| dirty.path)
            .collect();
        paths.sort();
        paths.dedup();
        Ok(paths)
    }

    fn ensure_no_operation_in_progress(&self) -> Result<(), GitError> {
        let operation = match self.repo.state() {
            RepositoryState::Clean => return Ok(()),
            RepositoryState::Merge => "merge",
            RepositoryState::Revert | RepositoryState::RevertSequence => "revert",
            RepositoryState::CherryPick | RepositoryState::CherryPickSequence => "cherry-pick",
            RepositoryState::Bisect => "bisect",
            RepositoryState::Rebase
            | RepositoryState::RebaseInteractive
            | RepositoryState::RebaseMerge => "rebase",
            RepositoryState::ApplyMailbox | RepositoryState::ApplyMailboxOrRebase => "git am",
        };
        Err(GitError::OperationInProgress {
            root: self.root.clone(),
            operation: operation.to_string(),
        })
    }

    /// One entry per path and kind, in git's order.
    fn dirty_paths(&self) -> Result<Vec<DirtyPath>, GitError> {
        let mut options = StatusOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false)
            .include_unmodified(false);
        let statuses = self
            .repo
            .statuses(Some(&mut options))
            .map_err(GitError::git("read the status of the work tree"))?;
        let mut dirty = Vec::new();
        for entry in statuses.iter() {
            let path = String::from_utf8_lossy(entry.path_bytes()).into_owned();
            for kind in kinds_of(entry.status()) {
                dirty.push(DirtyPath {
                    path: path.clone(),
                    kind,
                });
            }
        }
        Ok(dirty)
    }
}

fn kinds_of(status: Status) -> Vec<DirtyKind> {
    if status.is_conflicted() {
        return vec![DirtyKind::Conflicted];
    }
    let mut kinds = Vec::new();
    if status.intersects(STAGED) {
        kinds.push(DirtyKind::Staged);
    }
    if status.intersects(UNSTAGED) {
        kinds.push(DirtyKind::Unstaged);
    }
    if status.contains(Status::WT_NEW) {
        kinds.push(DirtyKind::Untracked);
    }
    kinds
}
