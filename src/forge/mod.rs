//! The forge-neutral vocabulary (repositories, issues, users, the bot's own events) and the
//! webhook edge of each forge, which turns raw deliveries into these types and nothing else.

pub mod client;
pub mod conversation;
pub mod fork;
pub mod github;
pub mod github_api;
pub mod gitlab;
pub mod gitlab_api;
pub mod log_tail;
mod webhook;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use client::{
    Access, ChangeRequest, Comment, CommentId, FailedCheck, Forge, ForgeError, GitCredentials,
    IssueInfo, MAX_CHECK_LOG_BYTES, NewChangeRequest, Opened, Permission,
};
pub use conversation::{Command, Remark, Said, Thread};
pub use fork::{BranchHome, ForkWait, PushTo};
pub use webhook::{
    DeliveryId, MAX_DELIVERY_ID_LEN, MAX_NESTING_DEPTH, WebhookAuthError, WebhookError,
    WebhookParseError,
};

/// Which forge a repository lives on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ForgeKind {
    GitHub,
    GitLab,
}

impl ForgeKind {
    /// The forge as written in webhook routes, job keys and folder names: `github`, `gitlab`.
    pub fn as_str(self) -> &'static str {
        match self {
            ForgeKind::GitHub => "github",
            ForgeKind::GitLab => "gitlab",
        }
    }

    /// What the forge calls a change request, as a sentence starts it.
    pub fn change_request_name(self) -> &'static str {
        match self {
            ForgeKind::GitHub => "Pull request",
            ForgeKind::GitLab => "Merge request",
        }
    }

    /// The short form of [`ForgeKind::change_request_name`]: `PR`, `MR`.
    pub fn change_request_abbreviation(self) -> &'static str {
        match self {
            ForgeKind::GitHub => "PR",
            ForgeKind::GitLab => "MR",
        }
    }
}

impl fmt::Display for ForgeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A forge name that is neither `github` nor `gitlab`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown forge {0:?} (github or gitlab)")]
pub struct UnknownForge(pub String);

impl std::str::FromStr for ForgeKind {
    type Err = UnknownForge;

    fn from_str(name: &str) -> Result<Self, UnknownForge> {
        match name {
            "github" => Ok(ForgeKind::GitHub),
            "gitlab" => Ok(ForgeKind::GitLab),
            other => Err(UnknownForge(other.to_owned())),
        }
    }
}

/// A repository's path on its forge: `octocat/Hello-World` on GitHub, `group/sub/project` on
/// GitLab. With its [`ForgeKind`] it names the repository in the job store.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RepoPath(String);

impl RepoPath {
    pub fn new(path: impl Into<String>) -> RepoPath {
        RepoPath(path.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RepoPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for RepoPath {
    fn from(path: &str) -> RepoPath {
        RepoPath::new(path)
    }
}

impl From<String> for RepoPath {
    fn from(path: String) -> RepoPath {
        RepoPath(path)
    }
}

impl std::str::FromStr for RepoPath {
    type Err = std::convert::Infallible;

    fn from_str(path: &str) -> Result<Self, Self::Err> {
        Ok(RepoPath::new(path))
    }
}

/// A repository as the bot addresses it, whatever the forge.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RepoRef {
    pub forge: ForgeKind,
    /// `octocat/Hello-World` on GitHub, `group/sub/project` on GitLab.
    pub owner_path: String,
    /// The HTTPS clone URL, without credentials.
    pub clone_url: String,
    pub default_branch: Option<String>,
}

impl RepoRef {
    /// The repository's path on its forge, as the job store keys it.
    pub fn path(&self) -> RepoPath {
        RepoPath::new(self.owner_path.clone())
    }
}

/// The number people see on an issue: GitHub's `number`, GitLab's per-project `iid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct IssueNumber(pub u64);

impl fmt::Display for IssueNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// The person (or bot) who did something on the forge.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ForgeUser {
    pub login: String,
    pub id: u64,
    pub is_bot: bool,
}

/// What a webhook delivery means to the bot.
// One event per delivery, matched field by field downstream: boxing the big variant would
// cost readability for no measurable gain.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum BotEvent {
    /// The trigger label was added to an issue: the one event that starts a job.
    IssueLabeled {
        repo: RepoRef,
        issue: IssueNumber,
        title: String,
        /// The issue text; an issue without a description gives an empty string.
        body: String,
        /// Every label on the issue after the change.
        labels: Vec<String>,
        /// The trigger label as spelled on the forge.
        label_added: String,
        actor: ForgeUser,
        state_open: bool,
        locked: bool,
    },
    /// Something said to the bot on an issue or on a change request: a command, a review, a
    /// line comment, failed checks.
    Remark(Remark),
    /// The repository's default branch moved (a push to it): every open change request of
    /// autofix's there may need to follow.
    BaseMoved {
        repo: RepoRef,
        /// The default branch's name.
        branch: String,
        /// The commit it points to now.
        after: String,
    },
    /// A well-formed delivery the bot has nothing to do for, and why.
    Ignored { reason: String },
}

/// What makes a delivery ask for work: the trigger label, and the word after `/` that starts a
/// command in a comment (`autofix` for `/autofix retry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Triggers<'a> {
    pub label: &'a str,
    pub command: &'a str,
}

/// The command word when none is configured.
pub const DEFAULT_COMMAND_WORD: &str = "autofix";

impl BotEvent {
    fn ignored(reason: impl Into<String>) -> Self {
        BotEvent::Ignored {
            reason: reason.into(),
        }
    }
}

/// Reads one verified delivery of `forge`: `event_header` is its event header
/// (`X-GitHub-Event`, `X-Gitlab-Event`), `triggers` what makes a delivery ask for work.
pub fn parse_delivery(
    forge: ForgeKind,
    event_header: &str,
    body: &[u8],
    triggers: &Triggers<'_>,
) -> Result<BotEvent, WebhookParseError> {
    match forge {
        ForgeKind::GitHub => github::parse_event_with(event_header, body, triggers),
        ForgeKind::GitLab => gitlab::parse_event_with(event_header, body, triggers),
    }
}
