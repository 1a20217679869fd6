//! What people say to the bot after the label — commands in comments, reviews of its change
//! request, the forge's verdict on its checks — as neutral events, and the command grammar.

use serde::{Deserialize, Serialize};

use super::{CommentId, ForgeUser, IssueNumber, RepoRef};

/// Where something was said: on an issue, or on a pull/merge request (GitHub's PR `number`,
/// GitLab's MR `iid`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Thread {
    Issue(IssueNumber),
    ChangeRequest(u64),
}

/// One thing said to the bot, from one delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remark {
    pub repo: RepoRef,
    pub thread: Thread,
    /// Who said it (for checks: who pushed the commit the checks ran on, when the forge says).
    pub actor: ForgeUser,
    pub said: Said,
}

/// What was said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Said {
    /// A comment whose first line starts with the command word: `/autofix retry`, …
    Command {
        command: Command,
        comment: CommentId,
    },
    /// A review submitted on a change request (GitHub `pull_request_review`).
    Review {
        /// GitHub `changes_requested`; a plain `commented` review is context, not a request.
        changes_requested: bool,
        body: String,
    },
    /// A comment on a line of the change request's diff (GitHub review comment, GitLab diff note).
    LineComment {
        comment: CommentId,
        body: String,
        path: String,
        /// The line in the new version of the file; `None` for a comment on a removed line.
        line: Option<u64>,
    },
    /// The checks of a change request's head commit ended in failure (GitHub `check_suite` /
    /// `check_run` completed, GitLab `Pipeline Hook` failed).
    ChecksFailed {
        head_branch: String,
        head_sha: String,
        /// What the forge calls the failed run: GitHub's check-run ids, GitLab's pipeline id.
        runs: Vec<u64>,
    },
}

/// A command given after the command word.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    /// A new attempt from the current default branch; the old change request is updated.
    Retry,
    /// Stop the running job at its next stage boundary and clean up after it.
    Cancel,
    /// Say where the work stands.
    Status,
    /// Go ahead with the plan that waits for approval.
    Approve,
    /// Plan again, with these words of the maintainer.
    Plan(String),
    /// Anything else after the command word: what to change in the change request.
    Revise(String),
}

impl Command {
    /// The command in `text` when its first non-blank line starts with `/<word>` (as a whole
    /// word, any case); `None` for every other comment. `/<word>` alone asks for the status.
    pub fn parse(text: &str, word: &str) -> Option<Command> {
        let text = text.trim_start();
        let rest = text.strip_prefix('/')?;
        let head = rest.get(..word.len())?;
        if !head.eq_ignore_ascii_case(word) {
            return None;
        }
        let rest = &rest[word.len()..];
        if rest.chars().next().is_some_and(|c| !c.is_whitespace()) {
            return None;
        }
        let rest = rest.trim();
        let (verb, after) = match rest.split_once(char::is_whitespace) {
            Some((verb, after)) => (verb, after.trim()),
            None => (rest, ""),
        };
        let command = match verb.to_ascii_lowercase().as_str() {
            "" => Command::Status,
            "retry" if after.is_empty() => Command::Retry,
            "cancel" if after.is_empty() => Command::Cancel,
            "status" if after.is_empty() => Command::Status,
            "approve" if after.is_empty() => Command::Approve,
            "plan" => Command::Plan(after.to_owned()),
            _ => Command::Revise(rest.to_owned()),
        };
        Some(command)
    }

    /// The command as a person types it after the word, for replies and history.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Retry => "retry",
            Command::Cancel => "cancel",
            Command::Status => "status",
            Command::Approve => "approve",
            Command::Plan(_) => "plan",
            Command::Revise(_) => "a revision request",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_command_word_is_read_whatever_its_case_and_spacing() {
        let parse = |text| Command::parse(text, "autofix");
        assert_eq!(parse("/autofix retry"), Some(Command::Retry));
        assert_eq!(parse("  /AutoFix   Cancel \n"), Some(Command::Cancel));
        assert_eq!(parse("/autofix status"), Some(Command::Status));
        assert_eq!(parse("/autofix"), Some(Command::Status));
        assert_eq!(parse("/autofix approve"), Some(Command::Approve));
        assert_eq!(
            parse("/autofix plan keep the old signature"),
            Some(Command::Plan("keep the old signature".into()))
        );
        assert_eq!(
            parse("/autofix rename x to y\nand add a test"),
            Some(Command::Revise("rename x to y\nand add a test".into()))
        );
        // A verb with more words after it is a revision request, not the command.
        assert_eq!(
            parse("/autofix retry the parser too"),
            Some(Command::Revise("retry the parser too".into()))
        );
    }

    #[test]
    fn other_comments_and_other_words_are_not_commands() {
        let parse = |text| Command::parse(text, "autofix");
        assert_eq!(parse("thanks! /autofix retry"), None);
        assert_eq!(parse("/autofixer retry"), None);
        assert_eq!(parse("autofix retry"), None);
        assert_eq!(parse(""), None);
        assert_eq!(
            Command::parse("/bot retry", "bot"),
            Some(Command::Retry),
            "the word is configurable"
        );
        assert_eq!(parse("/é"), None, "a multi-byte character is no panic");
    }
}
