//! The git layer, on libgit2: opening or cloning a workspace, the clean-tree preflight, the job's
//! branch, conventional commits with sign-off, and rollback to the baseline.

mod branch;
mod branch_name;
mod commit;
mod contents;
mod diff;
mod error;
mod exclude;
mod ids;
mod isolation;
mod message;
mod rebase;
pub mod remote;
mod rollback;
mod slug;
mod status;
mod workspace;

pub use branch::BranchOutcome;
pub use branch_name::{BRANCH_NAME_MAX_LEN, BranchName, BranchTemplate, DEFAULT_BRANCH_TEMPLATE};
pub use contents::FileContent;
pub use error::{DIRTY_PATHS_LISTED, DirtyKind, DirtyPath, GitError, RemoteOperation};
pub use ids::{CommitSha, Identity};
pub use isolation::ignore_global_config;
pub use message::{CommitKind, CommitMessage, JOB_TRAILER, SUBJECT_PATTERN};
pub use rebase::Rebased;
pub use remote::{
    Mirror, MirrorCache, NetworkTimeouts, delete_remote_branch, push_branch, remote_branch_tip,
    set_network_timeouts,
};
pub use slug::{EMPTY_SLUG, SLUG_MAX_LEN, slugify};
pub use workspace::Workspace;
