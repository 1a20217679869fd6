//! The model's change and nothing else: committing exactly the recorded contents of the files it
//! edited, and putting back whatever else a validation command changed in the work tree.

use std::io;
use std::path::Path;

use git2::build::CheckoutBuilder;
use git2::{ErrorCode, IndexEntry, IndexTime, Oid};

use super::{BranchName, CommitMessage, CommitSha, GitError, Identity, Workspace};

/// A file as the job wants it committed: its content, or `None` for a deletion.
pub type FileContent<'a> = (&'a str, Option<&'a [u8]>);

/// Git's mode for an ordinary file.
const REGULAR_FILE: u32 = 0o100_644;
/// How often, and after what pause, a branch ref that is locked is tried again.
const LOCKED_RETRIES: u32 = 5;
const LOCKED_PAUSE: std::time::Duration = std::time::Duration::from_millis(20);

impl Workspace {
    /// Commits `files` (paths relative to the root) with exactly the given contents on top of
    /// `parent`, and points `branch` (checked out) at the commit, whatever the work tree, the
    /// index or HEAD hold: a command that rewrote a file, left others behind or moved the branch
    /// changes nothing in the commit. A file keeps its mode in `parent`.
    pub fn commit_contents(
        &self,
        branch: &BranchName,
        parent: &CommitSha,
        message: &CommitMessage,
        files: &[FileContent<'_>],
        identity: &Identity,
    ) -> Result<CommitSha, GitError> {
        let parent = self.find_commit(parent)?;
        let index_error = GitError::git("stage the job's files");
        let parent_tree = parent
            .tree()
            .map_err(GitError::git("read the parent's tree"))?;
        let mut index = self.repo.index().map_err(&index_error)?;
        index.read_tree(&parent_tree).map_err(&index_error)?;
        for (path, content) in files {
            match content {
                Some(bytes) => {
                    let mode = index
                        .get_path(Path::new(path), 0)
                        .map_or(REGULAR_FILE, |entry| entry.mode);
                    index
                        .add_frombuffer(&entry_for(path, mode, bytes.len()), bytes)
                        .map_err(&index_error)?;
                }
                None => {
                    if index.get_path(Path::new(path), 0).is_some() {
                        index.remove_path(Path::new(path)).map_err(&index_error)?;
                    }
                }
            }
        }
        let tree_id = index.write_tree().map_err(&index_error)?;
        if tree_id == parent.tree_id() {
            return Err(GitError::EmptyCommit {
                parent: parent.id().to_string(),
            });
        }
        index.write().map_err(&index_error)?;
        let tree = self.repo.find_tree(tree_id).map_err(&index_error)?;
        let signature = identity.signature()?;
        let oid = self
            .repo
            .commit(
                None,
                &signature,
                &signature,
                &message.to_string(),
                &tree,
                &[&parent],
            )
            .map_err(GitError::git("write the commit"))?;
        self.point_branch_at(branch, oid)?;
        tracing::info!(commit = %oid, subject = message.subject(), files = files.len(), "committed");
        Ok(CommitSha::from_oid(oid))
    }

    /// Points `branch` at `commit` and checks it out, whatever it pointed at. A ref another
    /// process holds locked for a moment is tried again a few times.
    fn point_branch_at(&self, branch: &BranchName, commit: Oid) -> Result<(), GitError> {
        let reference = format!("refs/heads/{branch}");
        let mut tries = 0;
        loop {
            let pointed = self
                .repo
                .reference(&reference, commit, true, "autofix: commit the job's files")
                .and_then(|_| self.repo.set_head(&reference));
            match pointed {
                Err(error) if error.code() == ErrorCode::Locked && tries < LOCKED_RETRIES => {
                    tries += 1;
                    std::thread::sleep(LOCKED_PAUSE);
                }
                other => {
                    return other
                        .map_err(GitError::git(format!("point {branch} at the new commit")));
                }
            }
        }
    }

    /// The content of `path` in `commit`'s tree; `None` when it has no such file.
    pub fn file_at(&self, commit: &CommitSha, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        let tree = self
            .find_commit(commit)?
            .tree()
            .map_err(GitError::git(format!("read the tree of {commit}")))?;
        let Ok(entry) = tree.get_path(Path::new(path)) else {
            return Ok(None);
        };
        let blob = self
            .repo
            .find_blob(entry.id())
            .map_err(GitError::git(format!("read `{path}` at {commit}")))?;
        Ok(Some(blob.content().to_vec()))
    }

    /// Puts `paths` back as HEAD has them: a tracked file is checked out again, a file HEAD does
    /// not have is removed (and folders left empty by that, up to the root).
    pub fn discard(&self, paths: &[String]) -> Result<(), GitError> {
        if paths.is_empty() {
            return Ok(());
        }
        let head_tree = self
            .find_commit(&self.head_commit()?)?
            .tree()
            .map_err(GitError::git("read HEAD's tree"))?;
        let mut tracked = Vec::new();
        for path in paths {
            if head_tree.get_path(Path::new(path)).is_ok() {
                tracked.push(path.as_str());
                continue;
            }
            let absolute = self.root.join(path);
            remove_entry(&absolute).map_err(|source| GitError::Io {
                action: "remove a file validation left",
                path: absolute.clone(),
                source,
            })?;
            self.remove_empty_parents(&absolute);
        }
        if !tracked.is_empty() {
            let mut checkout = CheckoutBuilder::new();
            checkout.force().disable_pathspec_match(true);
            for path in &tracked {
                checkout.path(*path);
            }
            self.repo
                .checkout_head(Some(&mut checkout))
                .map_err(GitError::git("check out the files validation changed"))?;
        }
        Ok(())
    }

    fn remove_empty_parents(&self, path: &Path) {
        let mut current = path.parent();
        while let Some(dir) = current {
            if dir == self.root || !dir.starts_with(&self.root) || std::fs::remove_dir(dir).is_err()
            {
                break;
            }
            current = dir.parent();
        }
    }
}

fn entry_for(path: &str, mode: u32, size: usize) -> IndexEntry {
    IndexEntry {
        ctime: IndexTime::new(0, 0),
        mtime: IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode,
        uid: 0,
        gid: 0,
        file_size: u32::try_from(size).unwrap_or(u32::MAX),
        id: Oid::zero(),
        flags: 0,
        flags_extended: 0,
        path: path.as_bytes().to_vec(),
    }
}

/// Removes a file, symlink or whole folder; one already gone is fine.
fn remove_entry(path: &Path) -> io::Result<()> {
    match path.symlink_metadata() {
        Ok(metadata) if metadata.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error),
    }
}
