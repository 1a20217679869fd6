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
