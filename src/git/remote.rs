//! Git against forge remotes over HTTP(S), on libgit2 only: the mirror cache and job working
//! copies, reading a remote branch, and lease-checked pushes and deletions of the bot's branch.

mod mirror;
mod session;
mod timeouts;
mod url;

use std::cell::RefCell;

use git2::{Direction, Odb, PushOptions, Repository};

use self::session::Session;
use self::timeouts::ensure_network_timeouts;
use self::url::RemoteUrl;
use super::error::RemoteOperation;
use super::{BranchName, CommitSha, GitError, Workspace};
use crate::forge::GitCredentials;

pub use mirror::{Mirror, MirrorCache};
pub use timeouts::{NetworkTimeouts, set_network_timeouts};

/// The tip of `branch` on the forge now, or `None` when it does not exist.
pub fn remote_branch_tip(
    url: &str,
    branch: &BranchName,
    creds: &GitCredentials,
) -> Result<Option<CommitSha>, GitError> {
    let url = RemoteUrl::parse(url)?;
    let listing = RemoteListing::read(&url, creds, RemoteOperation::ListBranches)?;
    Ok(listing.tip(branch))
}

/// Pushes `commit` (the one the job recorded, whatever the local branch points to now) to
/// `branch` of `url` and returns it. Force-with-lease: the remote branch must be absent or at
/// `expected_remote` (the tip this job pushed before), else [`GitError::RemoteBranchMoved`];
/// the server checks the same tip atomically when it applies the push. The forge's default
/// branch is never pushed to.
///
/// The push reads only the workspace's objects, never its configuration: nothing written into
/// `.git/config` (an `insteadOf`, a push URL) can send it, or the token, anywhere but `url`.
pub fn push_branch(
    workspace: &Workspace,
    url: &str,
    branch: &BranchName,
    commit: &CommitSha,
    expected_remote: Option<CommitSha>,
    creds: &GitCredentials,
) -> Result<CommitSha, GitError> {
    let url = RemoteUrl::parse(url)?;
    workspace.find_commit(commit)?;
    let local_tip = commit.clone();
    let listing = RemoteListing::read(&url, creds, RemoteOperation::Push)?;
    listing.refuse_default_branch(branch, &url, "push to")?;
    let update = RefUpdate {
        url: &url,
        branch,
        refspec: format!("+{local_tip}:{}", branch.full_ref()),
        operation: RemoteOperation::Push,
    };
    let objects_only = workspace
        .repo
        .odb()
        .and_then(crate::git::isolation::from_odb)
        .map_err(GitError::git("open the job's objects to push from"))?;
    update.run(&objects_only, creds, |actual| match actual {
        Some(actual) if *actual == local_tip => Lease::AlreadyDone,
        // Recreating the bot's branch that someone deleted overwrites nobody's work.
        None => Lease::Granted,
        Some(actual) if Some(actual) == expected_remote.as_ref() => Lease::Granted,
        Some(actual) => Lease::Refused(GitError::RemoteBranchMoved {
            branch: branch.to_string(),
            url: url.to_string(),
            expected: expected_remote.clone(),
            actual: actual.clone(),
        }),
    })?;
    tracing::info!(%url, %branch, tip = %local_tip, "branch pushed");
    Ok(local_tip)
}

/// Deletes `branch` from `url` if it is still at `expected`; a branch already gone is fine.
pub fn delete_remote_branch(
    url: &str,
    branch: &BranchName,
    expected: CommitSha,
    creds: &GitCredentials,
) -> Result<(), GitError> {
    let url = RemoteUrl::parse(url)?;
    let listing = RemoteListing::read(&url, creds, RemoteOperation::DeleteBranch)?;
    listing.refuse_default_branch(branch, &url, "delete")?;
    if listing.tip(branch).is_none() {
        return Ok(());
    }
    // A deletion sends no objects, so an empty in-memory repository is enough to push from.
    let scratch = Odb::new()
        .and_then(crate::git::isolation::from_odb)
        .map_err(GitError::git(
            "make an empty repository to push a deletion from",
        ))?;
    let update = RefUpdate {
        url: &url,
        branch,
        refspec: format!(":{}", branch.full_ref()),
        operation: RemoteOperation::DeleteBranch,
    };
    update.run(&scratch, creds, |actual| match actual {
        None => Lease::AlreadyDone,
        Some(actual) if *actual == expected => Lease::Granted,
        Some(actual) => Lease::Refused(GitError::RemoteBranchMoved {
            branch: branch.to_string(),
            url: url.to_string(),
            expected: Some(expected.clone()),
            actual: actual.clone(),
        }),
    })?;
    tracing::info!(%url, %branch, "remote branch deleted");
    Ok(())
}

/// What a fetch connection advertises: the branches and where HEAD points. (Receive-pack does
/// not advertise HEAD, hence a fetch connection even before a push.)
struct RemoteListing {
    default_branch: Option<String>,
    heads: Vec<(String, CommitSha)>,
}

impl RemoteListing {
    fn read(
        url: &RemoteUrl,
        creds: &GitCredentials,
        operation: RemoteOperation,
    ) -> Result<Self, GitError> {
        ensure_network_timeouts();
        let mut remote = crate::git::isolation::detached_remote(url.as_str())
            .map_err(GitError::git(format!("prepare a connection to {url}")))?;
        let session = Session::new(url, creds, operation);
        let connection = remote
            .connect_auth(Direction::Fetch, Some(session.callbacks()), None)
            .map_err(|error| session.error(error))?;
        let heads = advertised_heads(connection.list().map_err(|error| session.error(error))?);
        let default_branch = connection
            .default_branch()
            .ok()
            .and_then(|head| head.as_str().map(str::to_string));
        Ok(RemoteListing {
            default_branch,
            heads,
        })
    }

    fn tip(&self, branch: &BranchName) -> Option<CommitSha> {
        let full_ref = branch.full_ref();
        self.heads
            .iter()
            .find(|(name, _)| *name == full_ref)
            .map(|(_, tip)| tip.clone())
    }

    fn refuse_default_branch(
        &self,
        branch: &BranchName,
        url: &RemoteUrl,
        action: &'static str,
    ) -> Result<(), GitError> {
        if self.default_branch.as_deref() == Some(branch.full_ref().as_str()) {
            return Err(GitError::DefaultBranchProtected {
                action,
                branch: branch.to_string(),
                url: url.to_string(),
            });
        }
        Ok(())
    }
}

/// What the lease check says about the remote branch as the push connection sees it.
enum Lease {
    Granted,
    /// The remote is already as the update would leave it.
    AlreadyDone,
    Refused(GitError),
}

/// One ref update (push or deletion) of one branch, checked against the tip the push
/// connection advertises: that same tip is sent as the old value, so the server refuses the
/// update if the branch moves between the check and the push.
struct RefUpdate<'a> {
    url: &'a RemoteUrl,
    branch: &'a BranchName,
    refspec: String,
    operation: RemoteOperation,
}

impl RefUpdate<'_> {
    fn run(
        &self,
        repo: &Repository,
        creds: &GitCredentials,
        lease: impl FnOnce(Option<&CommitSha>) -> Lease,
    ) -> Result<(), GitError> {
        ensure_network_timeouts();
        let mut remote = repo
            .remote_anonymous(self.url.as_str())
            .map_err(GitError::git(format!("prepare a push to {}", self.url)))?;
        let session = Session::new(self.url, creds, self.operation);
        let mut connection = remote
            .connect_auth(Direction::Push, Some(session.callbacks()), None)
            .map_err(|error| session.error(error))?;
        let heads = advertised_heads(connection.list().map_err(|error| session.error(error))?);
        let full_ref = self.branch.full_ref();
        let actual = heads
            .iter()
            .find(|(name, _)| *name == full_ref)
            .map(|(_, tip)| tip);
        match lease(actual) {
            Lease::Granted => {}
            Lease::AlreadyDone => return Ok(()),
            Lease::Refused(error) => return Err(error),
        }
        let rejection = RefCell::new(None);
        let mut callbacks = session.callbacks();
        callbacks.push_update_reference(|refname, status| {
            if let Some(status) = status {
                *rejection.borrow_mut() = Some(format!("{refname}: {status}"));
            }
            Ok(())
        });
        let mut options = PushOptions::new();
        options.remote_callbacks(callbacks);
        connection
            .remote()
            .push(&[self.refspec.as_str()], Some(&mut options))
            .map_err(|error| session.error(error))?;
        drop(options);
        match rejection.into_inner() {
            Some(reason) => Err(GitError::PushRejected {
                branch: self.branch.to_string(),
                url: self.url.to_string(),
                reason,
            }),
            None => Ok(()),
        }
    }
}

fn advertised_heads(heads: &[git2::RemoteHead<'_>]) -> Vec<(String, CommitSha)> {
    heads
        .iter()
        .filter(|head| head.name().starts_with("refs/heads/"))
        .map(|head| (head.name().to_string(), CommitSha::from_oid(head.oid())))
        .collect()
}
