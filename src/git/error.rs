//! `GitError`: every way the git layer refuses or fails, each variant one a caller can branch on,
//! and the one mapping from a variant to the shared `FailureCode`.

use std::fmt;
use std::path::PathBuf;

use crate::failure::FailureCode;

use super::CommitSha;

/// Paths listed in a dirty-tree message; the rest are only counted.
pub const DIRTY_PATHS_LISTED: usize = 10;

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("{path} is not a git repository: {detail}")]
    NotARepository { path: PathBuf, detail: String },

    #[error(
        "{path} is inside the git repository whose work tree is {root}; open the repository at its root"
    )]
    NotRepositoryRoot { path: PathBuf, root: PathBuf },

    #[error("{path} is a bare git repository: it has no work tree to change")]
    Bare { path: PathBuf },

    #[error("the work tree at {root} is not clean: {}", DirtyListing(.paths, *.total))]
    DirtyTree {
        root: PathBuf,
        /// The first [`DIRTY_PATHS_LISTED`] offending paths, sorted by path.
        paths: Vec<DirtyPath>,
        /// How many paths are dirty in all.
        total: usize,
    },

    #[error("the repository at {root} is in the middle of a {operation}; finish or abort it first")]
    OperationInProgress { root: PathBuf, operation: String },

    #[error("HEAD is detached at {at}; a branch must be checked out")]
    DetachedHead { at: CommitSha },

    #[error("HEAD points to branch {branch}, which has no commits yet")]
    UnbornHead { branch: String },

    #[error(
        "branch {name} already exists with {foreign} commit(s) not made by this job; refusing to reuse it"
    )]
    BranchExists { name: String, foreign: usize },

    #[error("branch {name} does not exist")]
    BranchNotFound { name: String },

    #[error("branch {name} is checked out; check out another branch before deleting it")]
    BranchCheckedOut { name: String },

    #[error("commit {sha} does not exist in this repository")]
    UnknownCommit { sha: CommitSha },

    #[error("checking out {target} would overwrite local changes: {detail}")]
    CheckoutConflict { target: String, detail: String },

    #[error("the index has unresolved conflicts in: {}", .paths.join(", "))]
    UnresolvedConflicts { paths: Vec<String> },

    #[error("nothing to commit: the work tree matches {parent}")]
    EmptyCommit { parent: String },

    #[error("invalid branch name {name:?}: it {reason}")]
    InvalidBranchName { name: String, reason: String },

    #[error("invalid branch template {template:?}: {reason}")]
    InvalidBranchTemplate { template: String, reason: String },

    #[error("invalid commit message {part}: {reason}")]
    InvalidCommitMessage { part: &'static str, reason: String },

    #[error("invalid {field} {value:?}: {reason}")]
    InvalidIdentity {
        field: &'static str,
        value: String,
        reason: &'static str,
    },

    #[error("invalid commit sha {value:?}: {reason}")]
    InvalidCommitSha { value: String, reason: &'static str },

    #[error("invalid job id {value:?}: {reason}")]
    InvalidJobId { value: String, reason: &'static str },

    #[error("cannot clone {source_location}: {reason}")]
    UnsupportedCloneSource {
        source_location: String,
        reason: &'static str,
    },

    #[error("cannot clone into {path}: it exists and is not an empty directory")]
    CloneDestinationNotEmpty { path: PathBuf },

    #[error("cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("invalid remote URL {url}: {reason}")]
    InvalidRemoteUrl {
        /// The URL as given, with any embedded credentials masked.
        url: String,
        reason: &'static str,
    },

    #[error("invalid mirror key {key:?}: {reason}")]
    InvalidMirrorKey { key: String, reason: &'static str },

    #[error("the forge refused the token for {operation} {url}: {detail}")]
    RemoteAuthRefused {
        operation: RemoteOperation,
        url: String,
        detail: String,
    },

    #[error("{operation} {url} timed out: {detail}")]
    RemoteTimeout {
        operation: RemoteOperation,
        url: String,
        detail: String,
    },

    #[error("cannot {operation} {url}: {detail}")]
    RemoteUnavailable {
        operation: RemoteOperation,
        url: String,
        detail: String,
        /// Whether trying again later may succeed (network faults, 5xx), unlike a 404.
        transient: bool,
    },

    #[error(
        "branch {branch} on {url} is at {actual}, not {} as this job expected; refusing to overwrite someone else's work",
        ExpectedTip(.expected.as_ref())
    )]
    RemoteBranchMoved {
        branch: String,
        url: String,
        expected: Option<CommitSha>,
        actual: CommitSha,
    },

    #[error(
        "refusing to {action} branch {branch} of {url}: it is the repository's default branch, and the bot writes only its own branches"
    )]
    DefaultBranchProtected {
        /// `push to` or `delete`.
        action: &'static str,
        branch: String,
        url: String,
    },

    #[error("{url} rejected the update of branch {branch}: {reason}")]
    PushRejected {
        branch: String,
        url: String,
        reason: String,
    },

    #[error("branch {branch} does not exist in the mirror of {url}")]
    MirrorBranchNotFound { branch: String, url: String },

    #[error("git failed to {action}: {source}")]
    Git {
        action: String,
        #[source]
        source: git2::Error,
    },
}

/// Why one path makes the tree dirty. Declared in the order a listing shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DirtyKind {
    /// Left with merge conflicts.
    Conflicted,
    /// Changed in the index compared with HEAD.
    Staged,
    /// Changed in the work tree compared with the index.
    Unstaged,
    /// Not tracked and not ignored.
    Untracked,
}

impl DirtyKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DirtyKind::Staged => "staged",
            DirtyKind::Unstaged => "unstaged",
            DirtyKind::Untracked => "untracked",
            DirtyKind::Conflicted => "conflicted",
        }
    }
}

/// One offending path of a dirty tree; a path both staged and modified again is listed once per kind.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DirtyPath {
    pub path: String,
    pub kind: DirtyKind,
}

impl GitError {
    /// The failure code a job reports for this error.
    pub fn failure_code(&self) -> FailureCode {
        match self {
            GitError::NotARepository { .. }
            | GitError::NotRepositoryRoot { .. }
            | GitError::Bare { .. }
            | GitError::DirtyTree { .. }
            | GitError::OperationInProgress { .. }
            | GitError::DetachedHead { .. }
            | GitError::UnbornHead { .. } => FailureCode::Preflight,
            GitError::BranchExists { .. } => FailureCode::BranchExists,
            GitError::CheckoutConflict { .. } | GitError::UnresolvedConflicts { .. } => {
                FailureCode::GitConflict
            }
            // The edits changed nothing a commit could hold.
            GitError::EmptyCommit { .. } => FailureCode::InvalidDiff,
            GitError::BranchNotFound { .. }
            | GitError::BranchCheckedOut { .. }
            | GitError::UnknownCommit { .. }
            | GitError::InvalidBranchName { .. }
            | GitError::InvalidBranchTemplate { .. }
            | GitError::InvalidCommitMessage { .. }
            | GitError::InvalidIdentity { .. }
            | GitError::InvalidCommitSha { .. }
            | GitError::InvalidJobId { .. }
            | GitError::UnsupportedCloneSource { .. }
            | GitError::CloneDestinationNotEmpty { .. }
            | GitError::InvalidRemoteUrl { .. }
            | GitError::InvalidMirrorKey { .. }
            | GitError::DefaultBranchProtected { .. }
            | GitError::MirrorBranchNotFound { .. } => FailureCode::InvalidInput,
            GitError::RemoteAuthRefused { .. } => FailureCode::PermissionDenied,
            GitError::RemoteTimeout { .. } => FailureCode::Timeout,
            GitError::RemoteBranchMoved { .. } => FailureCode::BranchExists,
            // The remote branch changed between the lease check and the push, or a server-side
            // rule (protected branch, hook) declined it: either way the job's branch did not land.
            GitError::PushRejected { .. } => FailureCode::GitConflict,
            // The forge cannot be reached or refuses for a reason other than the token.
            GitError::RemoteUnavailable { .. } => FailureCode::Preflight,
            // The work tree cannot be changed as the job needs.
            GitError::Io { .. } => FailureCode::Preflight,
            GitError::Git { source, .. } => failure_code_of_libgit2(source),
        }
    }

    /// Whether the same job may succeed if retried later without any change: the forge was
    /// unreachable, slow or failing on its side.
    pub fn is_transient(&self) -> bool {
        match self {
            GitError::RemoteTimeout { .. } => true,
            GitError::RemoteUnavailable { transient, .. } => *transient,
            _ => false,
        }
    }

    /// Wraps a libgit2 error with what we were doing when it happened.
    pub(crate) fn git(action: impl Into<String>) -> impl Fn(git2::Error) -> GitError {
        let action = action.into();
        move |source| GitError::Git {
            action: action.clone(),
            source,
        }
    }
}

/// libgit2 reports a moved ref, a lock held by someone else or a conflicting file with these
/// codes: the repository changed under the job. Anything else means it cannot be used as it is.
fn failure_code_of_libgit2(error: &git2::Error) -> FailureCode {
    use git2::ErrorCode;
    match error.code() {
        ErrorCode::Conflict
        | ErrorCode::MergeConflict
        | ErrorCode::Locked
        | ErrorCode::Modified
        | ErrorCode::NotFastForward
        | ErrorCode::Uncommitted => FailureCode::GitConflict,
        _ => FailureCode::Preflight,
    }
}

/// What the git layer was doing with a remote, as error messages say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RemoteOperation {
    Fetch,
    ListBranches,
    Push,
    DeleteBranch,
}

impl RemoteOperation {
    pub fn as_str(self) -> &'static str {
        match self {
            RemoteOperation::Fetch => "fetch from",
            RemoteOperation::ListBranches => "list the branches of",
            RemoteOperation::Push => "push to",
            RemoteOperation::DeleteBranch => "delete a branch of",
        }
    }
}

impl fmt::Display for RemoteOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `at 1a2b…` or `absent` for the tip a lease expected.
struct ExpectedTip<'a>(Option<&'a CommitSha>);

impl fmt::Display for ExpectedTip<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(sha) => write!(f, "at {sha}"),
            None => f.write_str("absent"),
        }
    }
}

/// `staged: a.rs, b.rs; untracked: new/c.rs (and 3 more)`.
struct DirtyListing<'a>(&'a [DirtyPath], usize);

impl fmt::Display for DirtyListing<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let DirtyListing(paths, total) = *self;
        let kinds = [
            DirtyKind::Conflicted,
            DirtyKind::Staged,
            DirtyKind::Unstaged,
            DirtyKind::Untracked,
        ];
        let mut groups = kinds.iter().filter_map(|kind| {
            let of_kind: Vec<&str> = paths
                .iter()
                .filter(|dirty| dirty.kind == *kind)
                .map(|dirty| dirty.path.as_str())
                .collect();
            (!of_kind.is_empty()).then(|| format!("{}: {}", kind.as_str(), of_kind.join(", ")))
        });
        if let Some(first) = groups.next() {
            f.write_str(&first)?;
        }
        for group in groups {
            write!(f, "; {group}")?;
        }
        if total > paths.len() {
            write!(f, " (and {} more)", total - paths.len())?;
        }
        Ok(())
    }
}
