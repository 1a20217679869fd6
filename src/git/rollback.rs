//! `rollback`: puts the work tree and the current branch back at the baseline commit, as
//! `git reset --hard <baseline>` followed by `git clean -fd` would, and proves the tree clean.

use git2::ResetType;

use super::{CommitSha, GitError, Workspace};
use crate::anchored::{Entry, Tree};

impl Workspace {
    /// Moves HEAD (and its branch) to `baseline`, resets index and work tree to it (staged and
    /// unstaged changes undone, deleted files restored), removes untracked files and folders,
    /// keeps ignored files, and forgets any merge or rebase under way. The work tree is put
    /// back through [`Workspace::discard`], never through a link a command left.
    pub fn rollback(&self, baseline: &CommitSha) -> Result<(), GitError> {
        let commit = self.find_commit(baseline)?;
        self.repo
            .cleanup_state()
            .map_err(GitError::git("forget the operation in progress"))?;
        // HEAD, its branch and the index move; the work tree is left to the anchored writes.
        self.repo
            .reset(commit.as_object(), ResetType::Mixed, None)
            .map_err(GitError::git(format!("reset the branch to {baseline}")))?;
        let changed: Vec<String> = self
            .changed_paths()?
            .into_iter()
            .filter(|path| !self.is_nested_repository(path))
            .collect();
        self.discard(&changed)?;
        tracing::info!(%baseline, root = %self.root.display(), "rolled back");
        self.ensure_clean()
    }

    /// An untracked folder holding its own repository, which `git clean -fd` leaves in place
    /// (and the final clean check then reports loudly rather than destroying it).
    fn is_nested_repository(&self, path: &str) -> bool {
        let Some(folder) = path.strip_suffix('/') else {
            return false;
        };
        let nested = Tree::open(&self.root)
            .map(|tree| {
                matches!(
                    tree.entry(&format!("{folder}/.git")),
                    Ok(Entry::Folder | Entry::File { .. })
                )
            })
            .unwrap_or(false);
        if nested {
            tracing::warn!(
                path,
                "left a nested repository in place, as git clean -fd does"
            );
        }
        nested
    }
}
