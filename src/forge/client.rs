//! The one interface the worker uses to talk to a forge (issues, comments, labels, permissions,
//! pull/merge requests, git credentials), its neutral types, and the errors callers branch on.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use secrecy::SecretString;

use super::{ForgeKind, ForgeUser, IssueNumber, RepoRef, Thread};

/// What a person may do in a repository, on either forge's scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permission {
    /// Not a member, or no access at all.
    None,
    /// GitHub `read`, GitLab Guest (10) and Reporter (20).
    Read,
    /// GitHub `triage`.
    Triage,
    /// GitHub `write`, GitLab Developer (30).
    Write,
    /// GitHub `maintain`, GitLab Maintainer (40).
    Maintain,
    /// GitHub `admin`, GitLab Owner (50).
    Admin,
}

impl Permission {
    /// Whether this permission lets its holder push, and so ask the bot for work.
    pub fn may_push(self) -> bool {
        self >= Permission::Write
    }

    /// GitLab's numeric access levels: ≥ 30 (Developer) may push.
    pub fn from_gitlab_access_level(level: u64) -> Permission {
        match level {
            50.. => Permission::Admin,
            40..=49 => Permission::Maintain,
            30..=39 => Permission::Write,
            1..=29 => Permission::Read,
            0 => Permission::None,
        }
    }

    /// GitHub's role names (`role_name`, falling back to the legacy `permission` field).
    pub fn from_github_role(role: &str) -> Permission {
        match role {
            "admin" => Permission::Admin,
            "maintain" => Permission::Maintain,
            "write" | "push" => Permission::Write,
            "triage" => Permission::Triage,
            "read" | "pull" => Permission::Read,
            _ => Permission::None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Permission::None => "none",
            Permission::Read => "read",
            Permission::Triage => "triage",
            Permission::Write => "write",
            Permission::Maintain => "maintain",
            Permission::Admin => "admin",
        }
    }
}

/// An issue as the forge's API reports it now (the webhook may be stale by the time a job runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueInfo {
    pub number: IssueNumber,
    pub title: String,
    /// The description; empty when the issue has none.
    pub body: String,
    /// Label names.
    pub labels: Vec<String>,
    pub open: bool,
    pub locked: bool,
    pub author: ForgeUser,
}

/// A comment's id: GitHub's issue-comment id, GitLab's note id.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct CommentId(pub u64);

/// A comment on an issue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment {
    pub id: CommentId,
    pub body: String,
    pub author: ForgeUser,
}

/// What the bot asks the forge to open: a GitHub pull request or a GitLab merge request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewChangeRequest {
    pub title: String,
    pub body: String,
    /// The bot's branch.
    pub head: String,
    /// The repository `head` lives in when it is not the one the change request is opened in:
    /// the bot's fork (GitHub `head: "owner:branch"`, GitLab `source_project_id`).
    pub head_repo: Option<RepoRef>,
    /// The branch it merges into: the repository's default branch.
    pub base: String,
    pub draft: bool,
    /// User names asked for review (GitHub also takes `org/team`); failures to add them are
    /// logged, not fatal: the change request exists either way.
    pub reviewers: Vec<String>,
    pub labels: Vec<String>,
}

/// An open (or just opened) pull/merge request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeRequest {
    /// GitHub's PR `number`, GitLab's MR `iid`.
    pub number: u64,
    /// The page people open in a browser.
    pub url: String,
    pub title: String,
    pub body: String,
    pub head: String,
    pub base: String,
    pub draft: bool,
    /// Who opened it (GitHub `user`, GitLab `author`): anyone can write a body that looks like
    /// autofix's, so only the author (and the store's record) says whose it is.
    pub author: ForgeUser,
}

/// How opening a change request went: a new one, or one that already existed for the branch
/// (GitHub 422 "A pull request already exists", GitLab 409) and was adopted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opened {
    Created(ChangeRequest),
    Adopted(ChangeRequest),
}

impl Opened {
    pub fn change_request(&self) -> &ChangeRequest {
        match self {
            Opened::Created(change) | Opened::Adopted(change) => change,
        }
    }
}

/// A check of a commit that ended in failure: a GitHub check run, a GitLab job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedCheck {
    /// GitHub's check-run id (an Actions job's id), GitLab's job id.
    pub id: u64,
    pub name: String,
    /// What the forge says of it besides the log (a GitHub check run's output), maybe empty.
    pub summary: String,
}

/// Most bytes of a check's log the clients keep in memory: its end (see [`super::log_tail`]).
pub const MAX_CHECK_LOG_BYTES: usize = 4 * 1024 * 1024;

/// The user name and token git presents over HTTPS: GitHub `x-access-token`, GitLab `oauth2`.
#[derive(Debug, Clone)]
pub struct GitCredentials {
    pub username: String,
    pub token: SecretString,
}

/// What can go wrong talking to a forge; the worker retries only what [`ForgeError::is_retryable`] says.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ForgeError {
    /// 401: the token is wrong, expired or revoked.
    #[error("{forge} refused the credentials (401) when autofix tried to {action}: {message}")]
    Unauthorized {
        forge: &'static str,
        action: String,
        message: String,
    },
    /// 403 that is not a rate limit: the token lacks a scope or the repository forbids it.
    #[error("{forge} did not allow autofix to {action} (403): {message}")]
    Forbidden {
        forge: &'static str,
        action: String,
        message: String,
    },
    /// 404: the repository, issue or user does not exist or the token cannot see it.
    #[error("{forge} found nothing when autofix tried to {action} (404)")]
    NotFound { forge: &'static str, action: String },
    /// 409/422 other than an already-existing change request: the forge refused the request's content.
    #[error("{forge} refused to let autofix {action} ({status}): {message}")]
    Rejected {
        forge: &'static str,
        action: String,
        status: u16,
        message: String,
    },
    /// 403/429 rate limits, still limited after the waits the client allows itself.
    #[error("{forge} rate-limited autofix as it tried to {action}; allowed again at {reset_at}")]
    RateLimited {
        forge: &'static str,
        action: String,
        reset_at: DateTime<Utc>,
    },
    /// 5xx, timeouts, refused connections: worth trying again later.
    #[error("{forge} failed when autofix tried to {action}: {message}")]
    Transient {
        forge: &'static str,
        action: String,
        message: String,
    },
    /// A 2xx answer the client cannot read.
    #[error(
        "{forge} answered with a body autofix cannot read when it tried to {action}: {message}"
    )]
    InvalidResponse {
        forge: &'static str,
        action: String,
        message: String,
    },
    /// The client is not configured for what was asked (no token, unreadable App key, …).
    #[error("{0}")]
    Configuration(String),
}

impl ForgeError {
    /// Whether the same request may succeed later without anyone changing anything.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ForgeError::RateLimited { .. } | ForgeError::Transient { .. }
        )
    }
}

/// What a forge said of the bot's credentials when asked: who they act as and what they reach,
/// and what stops them from doing the bot's work, if anything does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub facts: String,
    pub problem: Option<String>,
}

/// How long a client waits on its own before giving a rate limit back to the caller as an error.
pub const MAX_RATE_LIMIT_WAIT: Duration = Duration::from_secs(60);

/// One forge, as the worker sees it. Implemented by the GitHub (octocrab) and GitLab (REST v4)
/// clients; every method maps the forge's JSON into the neutral types above at this edge.
#[async_trait]
pub trait Forge: Send + Sync {
    fn kind(&self) -> ForgeKind;

    /// The account the bot acts as (GitHub: the token's user or the App's `slug[bot]`), so its own
    /// labels and comments are recognised.
    async fn bot_user(&self) -> Result<ForgeUser, ForgeError>;

    /// Asks the forge, now, what the credentials are (GitHub: the token's user, or the App and
    /// where it is installed; GitLab: the token's user and scopes), for `config check --online`
    /// and the setup page. A refused credential is an error in the forge's own words.
    async fn verify_access(&self) -> Result<Access, ForgeError>;

    /// What `user` may do in `repo` (GitHub collaborator permission, GitLab member access level
    /// including inherited membership); `Permission::None` when not a member.
    async fn permission(&self, repo: &RepoRef, user: &ForgeUser) -> Result<Permission, ForgeError>;

    async fn issue(&self, repo: &RepoRef, issue: IssueNumber) -> Result<IssueInfo, ForgeError>;

    /// The repository's default branch (used when the event did not carry it).
    async fn default_branch(&self, repo: &RepoRef) -> Result<String, ForgeError>;

    /// Every comment on the issue, oldest first (all pages).
    async fn comments(
        &self,
        repo: &RepoRef,
        issue: IssueNumber,
    ) -> Result<Vec<Comment>, ForgeError>;

    async fn create_comment(
        &self,
        repo: &RepoRef,
        issue: IssueNumber,
        body: &str,
    ) -> Result<CommentId, ForgeError>;

    async fn update_comment(
        &self,
        repo: &RepoRef,
        issue: IssueNumber,
        comment: CommentId,
        body: &str,
    ) -> Result<(), ForgeError>;

    /// Every comment on an issue or a change request, oldest first (all pages).
    async fn thread_comments(
        &self,
        repo: &RepoRef,
        thread: Thread,
    ) -> Result<Vec<Comment>, ForgeError>;

    /// Posts a comment on an issue or a change request (GitLab: a note on the merge request).
    async fn comment_on(
        &self,
        repo: &RepoRef,
        thread: Thread,
        body: &str,
    ) -> Result<CommentId, ForgeError>;

    /// Adds `label` to the issue; adding one it already has is not an error.
    async fn add_label(
        &self,
        repo: &RepoRef,
        issue: IssueNumber,
        label: &str,
    ) -> Result<(), ForgeError>;

    /// Removes `label` from the issue; removing one it does not have is not an error.
    async fn remove_label(
        &self,
        repo: &RepoRef,
        issue: IssueNumber,
        label: &str,
    ) -> Result<(), ForgeError>;

    /// Every open pull/merge request of the repository (all pages).
    async fn open_change_requests(&self, repo: &RepoRef) -> Result<Vec<ChangeRequest>, ForgeError>;

    /// Opens the change request, or adopts the open one that already exists for `request.head`.
    async fn open_change_request(
        &self,
        repo: &RepoRef,
        request: &NewChangeRequest,
    ) -> Result<Opened, ForgeError>;

    /// The checks of `head` (a commit or a branch) that ended in failure. `runs` narrows them
    /// to the runs a webhook named, where the forge groups checks so (GitLab pipelines).
    async fn failed_checks(
        &self,
        repo: &RepoRef,
        head: &str,
        runs: &[u64],
    ) -> Result<Vec<FailedCheck>, ForgeError>;

    /// The log of a failed check (a GitHub Actions job's log, a GitLab job's trace), at most
    /// [`MAX_CHECK_LOG_BYTES`] of its end, read as a stream within a byte and a time cap.
    async fn check_log(&self, repo: &RepoRef, check: &FailedCheck) -> Result<String, ForgeError>;

    /// What git presents when it fetches and pushes `repo` over HTTPS (a fresh installation
    /// token for a GitHub App).
    async fn git_credentials(&self, repo: &RepoRef) -> Result<GitCredentials, ForgeError>;

    /// The bot user's own fork of `repo`, created through the API the first time it is asked
    /// for, and returned only once the forge says it can be pushed to (forks are made in the
    /// background). A fork owned by anyone else, or of another repository, is never used.
    async fn bot_fork(&self, repo: &RepoRef) -> Result<RepoRef, ForgeError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitlab_developers_and_above_may_push_and_reporters_may_not() {
        assert!(!Permission::from_gitlab_access_level(0).may_push());
        assert!(!Permission::from_gitlab_access_level(10).may_push());
        assert!(!Permission::from_gitlab_access_level(20).may_push());
        assert!(Permission::from_gitlab_access_level(30).may_push());
        assert!(Permission::from_gitlab_access_level(40).may_push());
        assert!(Permission::from_gitlab_access_level(50).may_push());
    }

    #[test]
    fn github_write_maintain_and_admin_may_push_and_triage_may_not() {
        for role in ["write", "maintain", "admin"] {
            assert!(Permission::from_github_role(role).may_push(), "{role}");
        }
        for role in ["triage", "read", "none", "something-new"] {
            assert!(!Permission::from_github_role(role).may_push(), "{role}");
        }
    }

    #[test]
    fn only_rate_limits_and_transient_faults_are_retried() {
        let rate_limited = ForgeError::RateLimited {
            forge: "GitHub",
            action: "create a comment".into(),
            reset_at: Utc::now(),
        };
        let not_found = ForgeError::NotFound {
            forge: "GitHub",
            action: "read issue #7".into(),
        };
        assert!(rate_limited.is_retryable());
        assert!(!not_found.is_retryable());
    }
}
