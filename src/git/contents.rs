//! The model's change and nothing else: committing exactly the recorded contents of the files it
//! edited, and putting back whatever else a validation command changed in the work tree.

use std::io;
use std::path::Path;

use git2::build::CheckoutBuilder;
use git2::{IndexEntry, IndexTime, Oid};

use super::{CommitMessage, CommitSha, GitError, Identity, Workspace};

/// A file as the job wants it committed: its content, or `None` for a deletion.
pub type FileContent<'a> = (&'a str, Option<&'a [u8]>);

/// Git's mode for an ordinary file.
const REGULAR_FILE: u32 = 0o100_644;

impl Workspace {
    /// Commits `files` (paths relative to the root) with exactly the given contents on the
    /// checked-out branch, whatever the work tree holds: a command that rewrote one of them, or
    /// left other files behind, changes nothing in the commit. A file keeps its mode in HEAD.
    pub fn commit_contents(
        &self,
        message: &CommitMessage,
        files: &[FileContent<'_>],
        author: &Identity,
        committer: &Identity,
    ) -> Result<CommitSha, GitError> {
        if self.is_detached()? {
            return Err(GitError::DetachedHead {
                at: self.head_commit()?,
            });
        }
        let head = self.find_commit(&self.head_commit()?)?;
        let index_error = GitError::git("stage the job's files");
        let head_tree = head.tree().map_err(GitError::git("read HEAD's tree"))?;
        let mut index = self.repo.index().map_err(&index_error)?;
        index.read_tree(&head_tree).map_err(&index_error)?;
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
        if tree_id == head.tree_id() {
            return Err(GitError::EmptyCommit {
                parent: head.id().to_string(),
            });
        }
        index.write().map_err(&index_error)?;
        let tree = self.repo.find_tree(tree_id).map_err(&index_error)?;
        let oid = self
            .repo
            .commit(
                Some("HEAD"),
                &author.signature()?,
                &committer.signature()?,
                &message.to_string(),
                &tree,
                &[&head],
            )
            .map_err(GitError::git("write the commit"))?;
        tracing::info!(commit = %oid, subject = message.subject(), files = files.len(), "committed");
        Ok(CommitSha::from_oid(oid))
    }

    /// The content of `path` in HEAD's tree; `None` when HEAD has no such file.
    pub fn head_file(&self, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        let tree = self
            .find_commit(&self.head_commit()?)?
            .tree()
            .map_err(GitError::git("read HEAD's tree"))?;
        let Ok(entry) = tree.get_path(Path::new(path)) else {
            return Ok(None);
        };
        let blob = self
            .repo
            .find_blob(entry.id())
            .map_err(GitError::git(format!("read `{path}` at HEAD")))?;
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
