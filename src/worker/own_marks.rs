//! What on a forge is autofix's own: a comment the bot wrote, and a change request the job store
//! recorded as opened by autofix and the bot opened. Every look-up of the bot's own things asks here.
//!
//! Hidden marks (`<!-- autofix:status … -->`, `<!-- autofix:reply … -->`, the change-request
//! line) tell the bot's own comments apart from each other; they never make anything the bot's,
//! since anyone can write them into a comment or a pull request from a fork.

use crate::forge::{ChangeRequest, Comment, ForgeKind, ForgeUser, RepoRef};
use crate::store::{ChangeRequestRecord, RepoKey, Store, StoreError};

/// The bot's identity on one forge, and the rule of what is its own there.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Own<'a> {
    kind: ForgeKind,
    bot: &'a ForgeUser,
}

impl<'a> Own<'a> {
    pub(crate) fn new(kind: ForgeKind, bot: &'a ForgeUser) -> Own<'a> {
        Own { kind, bot }
    }

    /// Whether `user` is the bot. GitLab: the same user id (a username can be given up and
    /// taken by someone else). GitHub: the same login, whatever its case; the API names a GitHub
    /// App's bot account `slug[bot]` but gives the App's id, not the account's, and logins are
    /// unique.
    pub(crate) fn is_the_bot(&self, user: &ForgeUser) -> bool {
        match self.kind {
            ForgeKind::GitLab => user.id == self.bot.id,
            ForgeKind::GitHub => user.login.eq_ignore_ascii_case(&self.bot.login),
        }
    }

    /// The first comment among `comments` that carries `mark` and that the bot wrote; the same
    /// mark in anyone else's comment is not it.
    pub(crate) fn comment<'c>(&self, comments: &'c [Comment], mark: &str) -> Option<&'c Comment> {
        comments
            .iter()
            .find(|comment| self.is_the_bot(&comment.author) && comment.body.contains(mark))
    }

    /// `recorded` (a change request the store says autofix opened) among the forge's `open`
    /// ones, if it is open and the bot is its author.
    pub(crate) fn change_request<'c>(
        &self,
        open: &'c [ChangeRequest],
        recorded: &ChangeRequestRecord,
    ) -> Option<&'c ChangeRequest> {
        open.iter()
            .find(|change| change.number == recorded.number && self.is_the_bot(&change.author))
    }

    /// The forge's `open` change requests of `repo` that are autofix's: opened by the bot and
    /// recorded by the store, each with its record.
    pub(crate) async fn open_change_requests(
        &self,
        store: &Store,
        repo: &RepoRef,
        open: Vec<ChangeRequest>,
    ) -> Result<Vec<(ChangeRequest, ChangeRequestRecord)>, StoreError> {
        let key = RepoKey::of(repo);
        let mut own = Vec::new();
        for change in open {
            if !self.is_the_bot(&change.author) {
                continue;
            }
            if let Some(record) = store.change_request(&key, change.number).await? {
                own.push((change, record));
            }
        }
        Ok(own)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forge::{BranchHome, CommentId, ForgeKind};
    use crate::store::{JobId, JobKey};

    fn user(login: &str, id: u64) -> ForgeUser {
        ForgeUser {
            login: login.into(),
            id,
            is_bot: false,
        }
    }

    fn comment(id: u64, author: ForgeUser, body: &str) -> Comment {
        Comment {
            id: CommentId(id),
            body: body.into(),
            author,
        }
    }

    #[test]
    fn github_knows_the_bot_by_login_and_gitlab_by_user_id() {
        let app = user("autofix-app[bot]", 424_242);
        let github = Own::new(ForgeKind::GitHub, &app);
        assert!(github.is_the_bot(&user("AutoFix-App[bot]", 99)));
        assert!(!github.is_the_bot(&user("mallory", 424_242)));
        let bot = user("autofix-bot", 1);
        let gitlab = Own::new(ForgeKind::GitLab, &bot);
        assert!(gitlab.is_the_bot(&user("renamed-bot", 1)));
        assert!(!gitlab.is_the_bot(&user("autofix-bot", 2)));
    }

    #[test]
    fn a_marked_comment_is_the_bots_only_when_the_bot_wrote_it() {
        let bot = user("autofix-bot", 1);
        let own = Own::new(ForgeKind::GitHub, &bot);
        let mark = "<!-- autofix:status job=3 -->";
        let comments = [
            comment(10, user("mallory", 6), &format!("gotcha\n{mark}")),
            comment(11, bot.clone(), "<!-- autofix:status job=4 -->"),
            comment(12, bot.clone(), &format!("### autofix is working\n{mark}")),
        ];
        assert_eq!(
            own.comment(&comments, mark).map(|c| c.id),
            Some(CommentId(12))
        );
        assert_eq!(own.comment(&comments[..2], mark), None);
    }

    #[test]
    fn a_recorded_change_request_is_the_bots_only_while_the_bot_is_its_author() {
        let bot = user("autofix-bot", 1);
        let own = Own::new(ForgeKind::GitLab, &bot);
        let change = |number: u64, author: ForgeUser| ChangeRequest {
            number,
            url: format!("https://gitlab.example/acme/widgets/-/merge_requests/{number}"),
            title: "fix(calc): clamp".into(),
            body: String::new(),
            head: "fix/7-clamp".into(),
            base: "main".into(),
            draft: false,
            author,
        };
        let record = ChangeRequestRecord {
            key: JobKey::new(ForgeKind::GitLab, "acme/widgets", 7),
            number: 3,
            branch: "fix/7-clamp".into(),
            url: String::new(),
            job: JobId(1),
            ci_repairs: 0,
            ci_head: None,
            home: BranchHome::Base,
        };
        let open = [change(2, bot.clone()), change(3, user("mallory", 6))];
        assert_eq!(own.change_request(&open, &record), None);
        let open = [change(3, bot.clone())];
        assert_eq!(
            own.change_request(&open, &record).map(|c| c.number),
            Some(3)
        );
    }
}
