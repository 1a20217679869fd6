//! `commit_all`: records every change of the work tree (as `git add -A` sees it, .gitignore
//! respected) as one commit on the current branch.

use git2::{ErrorCode, Oid};

use super::{CommitMessage, CommitSha, GitError, Identity, Workspace};

impl Workspace {
    /// Stages additions, modifications and deletions, then commits them on the checked-out
    /// branch (an unborn branch gets its first commit). Refuses a detached HEAD, unresolved
    /// conflicts and a commit that would change nothing; a refused commit leaves the index alone.
    pub fn commit_all(
        &self,
        message: &CommitMessage,
        author: &Identity,
        committer: &Identity,
    ) -> Result<CommitSha, GitError> {
        if self.is_detached()? {
            return Err(GitError::DetachedHead {
                at: self.head_commit()?,
            });
        }
        let parent = self.head_commit_if_born()?;
        let index_error = GitError::git("stage the changes of the work tree");
        let mut index = self.repo.index().map_err(&index_error)?;
        if index.has_conflicts() {
            return Err(GitError::UnresolvedConflicts {
                paths: conflicted_paths(&index),
            });
        }
        // One status walk finds what changed; staging just those paths is `git add -A` without
        // a second and third pass over every file of the tree.
        for path in self.changed_paths()? {
            let relative = std::path::Path::new(&path);
            if std::fs::symlink_metadata(self.root.join(relative)).is_ok() {
                index.add_path(relative).map_err(&index_error)?;
            } else {
                index.remove_path(relative).map_err(&index_error)?;
            }
        }
        let tree_id = index.write_tree().map_err(&index_error)?;
        if tree_id == self.tree_of(parent.as_ref())? {
            return Err(GitError::EmptyCommit {
                parent: parent.map_or_else(|| "the empty tree".to_string(), |p| p.id().to_string()),
            });
        }
        index.write().map_err(&index_error)?;
        let tree = self.repo.find_tree(tree_id).map_err(&index_error)?;
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let oid = self
            .repo
            .commit(
                Some("HEAD"),
                &author.signature()?,
                &committer.signature()?,
                &message.to_string(),
                &tree,
                &parents,
            )
            .map_err(GitError::git("write the commit"))?;
        tracing::info!(commit = %oid, subject = message.subject(), "committed");
        Ok(CommitSha::from_oid(oid))
    }

    fn head_commit_if_born(&self) -> Result<Option<git2::Commit<'_>>, GitError> {
        match self.repo.head() {
            Ok(head) => head
                .peel_to_commit()
                .map(Some)
                .map_err(GitError::git("find the commit HEAD points to")),
            Err(error) if error.code() == ErrorCode::UnbornBranch => Ok(None),
            Err(error) => Err(GitError::Git {
                action: "read HEAD".into(),
                source: error,
            }),
        }
    }

    /// The tree of `commit`, or the empty tree for the first commit of a branch.
    fn tree_of(&self, commit: Option<&git2::Commit<'_>>) -> Result<Oid, GitError> {
        match commit {
            Some(commit) => Ok(commit.tree_id()),
            None => self
                .repo
                .treebuilder(None)
                .and_then(|builder| builder.write())
                .map_err(GitError::git("write the empty tree")),
        }
    }
}

fn conflicted_paths(index: &git2::Index) -> Vec<String> {
    let Ok(conflicts) = index.conflicts() else {
        return Vec::new();
    };
    let mut paths: Vec<String> = conflicts
        .filter_map(Result::ok)
        .filter_map(|conflict| conflict.our.or(conflict.their).or(conflict.ancestor))
        .map(|entry| String::from_utf8_lossy(&entry.path).into_owned())
        .collect();
    paths.sort();
    paths.dedup();
    paths
}
