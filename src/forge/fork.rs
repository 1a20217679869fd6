//! Where the bot's branches live: in the repository itself, or in a fork owned by the bot's user
//! (`forge.push_to`), and how long a client waits for a fork the forge makes in the background.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::RepoRef;

/// Where the bot pushes the branch of a new change request (`forge.push_to`).
///
/// A branch in the repository itself runs the repository's `pull_request` workflows (GitHub) and
/// its branch and merge request pipelines (GitLab) with the repository's secrets; a fork's pull
/// request runs them without.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum PushTo {
    /// A branch of the repository the issue is in.
    #[default]
    Base,
    /// A branch of the bot user's own fork of that repository, created once when missing.
    Fork,
}

/// A `forge.push_to` that names no push target; says which values there are, so a typo in the
/// configuration reads as one clear line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not a push target (valid: \"base\", \"fork\")")]
pub struct UnknownPushTo {
    pub value: String,
}

impl TryFrom<String> for PushTo {
    type Error = UnknownPushTo;

    fn try_from(value: String) -> Result<PushTo, UnknownPushTo> {
        match value.trim() {
            "base" => Ok(PushTo::Base),
            "fork" => Ok(PushTo::Fork),
            other => Err(UnknownPushTo {
                value: other.to_owned(),
            }),
        }
    }
}

impl PushTo {
    pub fn as_str(self) -> &'static str {
        match self {
            PushTo::Base => "base",
            PushTo::Fork => "fork",
        }
    }
}

/// Where one change request's branch lives, recorded with it so that every later push (a
/// revision, a CI repair, a replay onto a moved base, a deletion) goes to the same place,
/// whatever `forge.push_to` says by then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum BranchHome {
    /// The repository the issue is in.
    Base,
    /// The bot's fork of it.
    Fork(RepoRef),
}

impl BranchHome {
    /// The repository the branch is pushed to, given the one the issue is in.
    pub fn repo<'a>(&'a self, base: &'a RepoRef) -> &'a RepoRef {
        match self {
            BranchHome::Base => base,
            BranchHome::Fork(fork) => fork,
        }
    }

    /// The fork, when the branch lives in one.
    pub fn fork(&self) -> Option<&RepoRef> {
        match self {
            BranchHome::Base => None,
            BranchHome::Fork(fork) => Some(fork),
        }
    }

    /// `the repository` or `the fork owner/name`, for job histories and logs.
    pub fn describe(&self) -> String {
        match self {
            BranchHome::Base => "the repository".to_owned(),
            BranchHome::Fork(fork) => format!("the fork {}", fork.owner_path),
        }
    }
}

/// How a client waits for a fork the forge creates in the background (GitHub answers 202 at
/// once; GitLab's `import_status` says when its copy is done): one look every `poll`, for at
/// most `limit` in all, after which the job is tried again later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForkWait {
    pub poll: Duration,
    pub limit: Duration,
}

impl Default for ForkWait {
    /// GitHub's note: a fork taking longer than five minutes is a case for its support.
    fn default() -> Self {
        ForkWait {
            poll: Duration::from_secs(2),
            limit: Duration::from_secs(5 * 60),
        }
    }
}

impl ForkWait {
    /// How many looks fit in `limit`, the first included.
    pub fn looks(&self) -> u32 {
        let poll = self.poll.as_millis().max(1);
        u32::try_from(self.limit.as_millis() / poll)
            .unwrap_or(u32::MAX)
            .saturating_add(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forge::ForgeKind;

    #[test]
    fn a_fork_home_names_the_fork_and_the_base_home_the_repository() {
        let base = RepoRef {
            forge: ForgeKind::GitHub,
            owner_path: "acme/widgets".into(),
            clone_url: "https://github.com/acme/widgets.git".into(),
            default_branch: Some("main".into()),
        };
        let fork = RepoRef {
            owner_path: "autofix-bot/widgets".into(),
            clone_url: "https://github.com/autofix-bot/widgets.git".into(),
            ..base.clone()
        };
        assert_eq!(BranchHome::Base.repo(&base), &base);
        let home = BranchHome::Fork(fork.clone());
        assert_eq!(home.repo(&base), &fork);
        assert_eq!(home.describe(), "the fork autofix-bot/widgets");
    }

    #[test]
    fn the_wait_counts_its_looks() {
        let wait = ForkWait {
            poll: Duration::from_millis(500),
            limit: Duration::from_secs(2),
        };
        assert_eq!(wait.looks(), 5);
        assert_eq!(ForkWait::default().looks(), 151);
    }
}
