//! The model's change and nothing else: committing exactly the recorded contents of the files it
//! edited, and putting back whatever else a validation command changed in the work tree.

use std::io;
use std::path::Path;

use git2::{ErrorCode, IndexEntry, IndexTime, Oid};

use super::{BranchName, CommitMessage, CommitSha, GitError, Identity, Workspace};
use crate::anchored::{Entry, Permissions, Tree, TreeError, Way};

/// A file as the job wants it committed: its content, or `None` for a deletion.
pub type FileContent<'a> = (&'a str, Option<&'a [u8]>);

/// Git's modes for an ordinary file, an executable, a link, a folder and a submodule.
const REGULAR_FILE: u32 = 0o100_644;
const EXECUTABLE_FILE: i32 = 0o100_755;
const LINK: i32 = 0o120_000;
const FOLDER: i32 = 0o040_000;
const SUBMODULE: i32 = 0o160_000;
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

    /// Puts `paths` back as HEAD has them, in the work tree and the index: a tracked file is
    /// written again (a tracked link made again), a file HEAD does not have is removed (and
    /// folders left empty by that, up to the root). Every write goes through the work tree's
    /// anchored handle: a link or file a command put where a folder was is removed, never
    /// followed.
    pub fn discard(&self, paths: &[String]) -> Result<(), GitError> {
        if paths.is_empty() {
            return Ok(());
        }
        let head = self.find_commit(&self.head_commit()?)?;
        let head_tree = head.tree().map_err(GitError::git("read HEAD's tree"))?;
        let tree = Tree::open(&self.root).map_err(|source| GitError::Io {
            action: "open the work tree",
            path: self.root.clone(),
            source,
        })?;
        for path in paths {
            let relative = path.trim_end_matches('/');
            let put_back = match head_tree.get_path(Path::new(relative)) {
                Ok(entry) => self.put_back_entry(&tree, relative, &entry),
                Err(_) => tree
                    .remove(relative, Way::Clear)
                    .and_then(|()| tree.remove_empty_folders_above(relative)),
            };
            put_back.map_err(|error| GitError::Io {
                action: "put back a file validation changed",
                path: self.root.join(relative),
                source: error.into(),
            })?;
        }
        self.index_follows_head(&head_tree, paths)
    }

    /// The index entries of `paths` made HEAD's again, as `git reset HEAD -- paths` would but
    /// path by path (a pathspec would read `[` and `*` in a file name as patterns).
    fn index_follows_head(
        &self,
        head_tree: &git2::Tree<'_>,
        paths: &[String],
    ) -> Result<(), GitError> {
        let index_error = GitError::git("reset the index of the files validation changed");
        let mut index = self.repo.index().map_err(&index_error)?;
        for path in paths {
            let relative = path.trim_end_matches('/');
            match head_tree.get_path(Path::new(relative)) {
                Ok(entry) if matches!(entry.kind(), Some(git2::ObjectType::Blob)) => {
                    let mut staged = entry_for(relative, entry.filemode() as u32, 0);
                    staged.id = entry.id();
                    index.add(&staged).map_err(&index_error)?;
                }
                Ok(_) => {}
                Err(_) => {
                    if index.get_path(Path::new(relative), 0).is_some() {
                        index
                            .remove_path(Path::new(relative))
                            .map_err(&index_error)?;
                    }
                }
            }
        }
        index.write().map_err(&index_error)
    }

    /// Writes HEAD's `entry` at `relative`: a file with git's mode, a link, or (for a folder
    /// HEAD has there) nothing but the removal of a link or file that took its place.
    fn put_back_entry(
        &self,
        tree: &Tree,
        relative: &str,
        entry: &git2::TreeEntry<'_>,
    ) -> Result<(), TreeError> {
        let blob = || {
            self.repo
                .find_blob(entry.id())
                .map(|blob| blob.content().to_vec())
                .map_err(|error| TreeError::Io {
                    action: "read HEAD's content of",
                    at: relative.to_string(),
                    source: io::Error::other(error.message().to_string()),
                })
        };
        match entry.filemode() {
            EXECUTABLE_FILE => tree.write(
                relative,
                &blob()?,
                Permissions::Git { executable: true },
                Way::Clear,
            ),
            LINK => tree.write_link(relative, &blob()?, Way::Clear),
            FOLDER => match tree.entry(relative) {
                Ok(Entry::Folder) => Ok(()),
                _ => tree.remove(relative, Way::Clear),
            },
            // A submodule's commit: git leaves its folder to the submodule.
            SUBMODULE => Ok(()),
            _ => tree.write(
                relative,
                &blob()?,
                Permissions::Git { executable: false },
                Way::Clear,
            ),
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
