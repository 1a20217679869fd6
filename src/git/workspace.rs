//! `Workspace`: one repository opened at the root of its work tree (or cloned from a local
//! source), with HEAD, the current branch and switching branches without losing changes.

use std::path::{Path, PathBuf};

use git2::build::CheckoutBuilder;
use git2::{BranchType, ErrorCode, Repository};

use super::{BranchName, CommitSha, GitError};

/// A non-bare repository whose work tree autofix may change.
pub struct Workspace {
    pub(super) repo: Repository,
    pub(super) root: PathBuf,
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace")
            .field("root", &self.root)
            .finish()
    }
}

impl Workspace {
    /// Opens the repository whose work tree is exactly `path`. A subdirectory of a work tree is
    /// refused: rollback cleans the whole work tree, which must be what the caller named.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, GitError> {
        let path = path.as_ref();
        let not_a_repository = |detail: String| GitError::NotARepository {
            path: path.to_path_buf(),
            detail,
        };
        let canonical = path
            .canonicalize()
            .map_err(|error| not_a_repository(format!("it cannot be opened ({error})")))?;
        if !canonical.is_dir() {
            return Err(not_a_repository("it is not a directory".into()));
        }
        match super::isolation::open_exactly(&canonical) {
            Ok(repo) => Self::from_repository(repo, path, &canonical),
            Err(error) if error.code() == ErrorCode::NotFound => {
                Err(Self::explain_missing_repository(path, &canonical))
            }
            Err(error) => Err(GitError::Git {
                action: format!("open the repository at {}", path.display()),
                source: error,
            }),
        }
    }

    /// Clones a local repository (a path or a `file://` URL) into `dest`, which must not exist
    /// or be an empty directory, and opens the clone. Network URLs are refused for now.
    pub fn clone_local(source: &str, dest: impl AsRef<Path>) -> Result<Self, GitError> {
        let dest = dest.as_ref();
        check_local_source(source)?;
        check_clone_destination(dest)?;
        super::isolation::clone_builder()
            .and_then(|mut builder| builder.clone(source, dest))
            .map_err(GitError::git(format!(
                "clone {source} into {}",
                dest.display()
            )))?;
        Self::open(dest)
    }

    /// The root of the work tree, with symlinks resolved.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The repository's git directory (`.git/`, or a linked worktree's own folder in it):
    /// a place for the bot's files that is never part of the work tree.
    pub fn git_dir(&self) -> &Path {
        self.repo.path()
    }

    /// The git directory every worktree of the repository shares (`.git/` of the main one).
    pub fn common_dir(&self) -> &Path {
        self.repo.commondir()
    }

    /// Whether the index holds `path`: the file itself, or files under it when it is a folder.
    pub fn tracks(&self, path: &str) -> Result<bool, GitError> {
        let index = self.repo.index().map_err(GitError::git("read the index"))?;
        let folder = format!("{}/", path.trim_end_matches('/'));
        Ok(index.get_path(Path::new(path), 0).is_some()
            || index
                .iter()
                .any(|entry| entry.path.starts_with(folder.as_bytes())))
    }

    /// The commit HEAD points to (detached or not); an unborn branch is [`GitError::UnbornHead`].
    pub fn head_commit(&self) -> Result<CommitSha, GitError> {
        let head = self.head_reference()?;
        let commit = head
            .peel_to_commit()
            .map_err(GitError::git("find the commit HEAD points to"))?;
        Ok(CommitSha::from_oid(commit.id()))
    }

    /// The checked-out branch; a detached HEAD is [`GitError::DetachedHead`].
    pub fn current_branch(&self) -> Result<BranchName, GitError> {
        if self.is_detached()? {
            return Err(GitError::DetachedHead {
                at: self.head_commit()?,
            });
        }
        let head = self.head_reference()?;
        let name = head
            .name()
            .and_then(|name| name.strip_prefix("refs/heads/"))
            .ok_or_else(|| GitError::Git {
                action: "read the branch HEAD points to".into(),
                source: git2::Error::from_str("HEAD does not point into refs/heads/"),
            })?;
        BranchName::new(name)
    }

    /// Switches to an existing branch. The tree must be clean, so nothing is carried over or lost.
    pub fn checkout(&self, name: &BranchName) -> Result<(), GitError> {
        self.ensure_clean()?;
        if self.find_local_branch(name)?.is_none() {
            return Err(GitError::BranchNotFound {
                name: name.to_string(),
            });
        }
        self.switch_to(name)
    }

    /// Checks out `name`'s tree without overwriting anything modified, then points HEAD at it.
    /// Callers have made sure the tree is clean; when the branch's tree is HEAD's tree, there is
    /// nothing to check out (as with `git checkout -b`), so only HEAD moves.
    pub(super) fn switch_to(&self, name: &BranchName) -> Result<(), GitError> {
        let target = self
            .repo
            .revparse_single(&name.full_ref())
            .and_then(|object| object.peel_to_commit())
            .map_err(GitError::git(format!("find the tip of branch {name}")))?;
        let same_tree = self
            .repo
            .head()
            .and_then(|head| head.peel_to_commit())
            .is_ok_and(|head| head.tree_id() == target.tree_id());
        if !same_tree {
            self.repo
                .checkout_tree(target.as_object(), Some(CheckoutBuilder::new().safe()))
                .map_err(|error| checkout_error(name.as_str(), error))?;
        }
        self.repo
            .set_head(&name.full_ref())
            .map_err(GitError::git(format!("point HEAD at branch {name}")))?;
        tracing::debug!(branch = %name, root = %self.root.display(), "checked out");
        Ok(())
    }

    pub(super) fn find_local_branch(
        &self,
        name: &BranchName,
    ) -> Result<Option<git2::Branch<'_>>, GitError> {
        match self.repo.find_branch(name.as_str(), BranchType::Local) {
            Ok(branch) => Ok(Some(branch)),
            Err(error) if error.code() == ErrorCode::NotFound => Ok(None),
            Err(error) => Err(GitError::Git {
                action: format!("look up branch {name}"),
                source: error,
            }),
        }
    }

    pub(super) fn find_commit(&self, sha: &CommitSha) -> Result<git2::Commit<'_>, GitError> {
        match self.repo.find_commit(sha.to_oid()) {
            Ok(commit) => Ok(commit),
            Err(error) if error.code() == ErrorCode::NotFound => {
                Err(GitError::UnknownCommit { sha: sha.clone() })
            }
            Err(error) => Err(GitError::Git {
                action: format!("read commit {sha}"),
                source: error,
            }),
        }
    }

    pub(super) fn is_detached(&self) -> Result<bool, GitError> {
        self.repo
            .head_detached()
            .map_err(GitError::git("read whether HEAD is detached"))
    }

    fn head_reference(&self) -> Result<git2::Reference<'_>, GitError> {
        match self.repo.head() {
            Ok(head) => Ok(head),
            Err(error) if error.code() == ErrorCode::UnbornBranch => Err(GitError::UnbornHead {
                branch: self.unborn_branch_name(),
            }),
            Err(error) => Err(GitError::Git {
                action: "read HEAD".into(),
                source: error,
            }),
        }
    }

    /// The branch an unborn HEAD names (`main` for a fresh `git init -b main`).
    fn unborn_branch_name(&self) -> String {
        self.repo
            .find_reference("HEAD")
            .ok()
            .and_then(|head| head.symbolic_target().map(str::to_string))
            .map(|target| {
                target
                    .strip_prefix("refs/heads/")
                    .map(str::to_string)
                    .unwrap_or(target)
            })
            .unwrap_or_else(|| "HEAD".to_string())
    }

    fn from_repository(repo: Repository, path: &Path, canonical: &Path) -> Result<Self, GitError> {
        let Some(workdir) = repo.workdir() else {
            return Err(GitError::Bare {
                path: path.to_path_buf(),
            });
        };
        let root = workdir
            .canonicalize()
            .unwrap_or_else(|_| workdir.to_path_buf());
        if root != canonical {
            return Err(GitError::NotRepositoryRoot {
                path: path.to_path_buf(),
                root,
            });
        }
        Ok(Workspace { repo, root })
    }

    /// Says whether `path` lies inside some repository (and which) or in none.
    fn explain_missing_repository(path: &Path, canonical: &Path) -> GitError {
        match super::isolation::discover(canonical) {
            Ok(outer) => match outer.workdir() {
                Some(workdir) => GitError::NotRepositoryRoot {
                    path: path.to_path_buf(),
                    root: workdir
                        .canonicalize()
                        .unwrap_or_else(|_| workdir.to_path_buf()),
                },
                None => GitError::Bare {
                    path: outer.path().to_path_buf(),
                },
            },
            Err(_) => GitError::NotARepository {
                path: path.to_path_buf(),
                detail: "there is no .git in it or in any folder above it".into(),
            },
        }
    }
}

/// A checkout refused because files would be overwritten is a conflict the caller can report.
pub(super) fn checkout_error(target: &str, error: git2::Error) -> GitError {
    match error.code() {
        ErrorCode::Conflict | ErrorCode::Uncommitted | ErrorCode::Modified => {
            GitError::CheckoutConflict {
                target: target.to_string(),
                detail: error.message().to_string(),
            }
        }
        _ => GitError::Git {
            action: format!("check out {target}"),
            source: error,
        },
    }
}

fn check_local_source(source: &str) -> Result<(), GitError> {
    let refuse = |reason| GitError::UnsupportedCloneSource {
        source_location: source.to_string(),
        reason,
    };
    if let Some(path) = source.strip_prefix("file://") {
        if path.is_empty() {
            return Err(refuse("the file:// URL names no path"));
        }
        return Ok(());
    }
    if source.contains("://") {
        return Err(refuse(
            "only local paths and file:// URLs can be cloned for now",
        ));
    }
    if !Path::new(source).is_dir() {
        return Err(refuse(
            "it is neither an existing directory nor a file:// URL",
        ));
    }
    Ok(())
}

/// Refuses a clone into a folder that is there and not empty.
pub(crate) fn check_clone_destination(dest: &Path) -> Result<(), GitError> {
    let occupied = match dest.read_dir() {
        Ok(mut entries) => entries.next().is_some(),
        Err(_) => dest.exists(),
    };
    if occupied {
        return Err(GitError::CloneDestinationNotEmpty {
            path: dest.to_path_buf(),
        });
    }
    Ok(())
}
