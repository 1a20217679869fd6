//! GitHub's REST JSON as the client reads it (only the fields it uses) and the mapping of each
//! shape to the neutral forge types; nothing here leaves `forge::github_api`.

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::forge::{
    ChangeRequest, Comment, CommentId, ForgeUser, IssueInfo, IssueNumber, Permission,
};

#[derive(Debug, Deserialize)]
pub(super) struct User {
    pub login: String,
    pub id: u64,
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
}

impl User {
    pub fn into_neutral(self) -> ForgeUser {
        let is_bot = self.kind.as_deref() == Some("Bot") || self.login.ends_with("[bot]");
        ForgeUser {
            login: self.login,
            id: self.id,
            is_bot,
        }
    }
}

/// `GET /app`: the App's slug names its bot account, `{slug}[bot]`.
#[derive(Debug, Deserialize)]
pub(super) struct App {
    pub id: u64,
    pub slug: String,
}

impl App {
    pub fn bot_user(self) -> ForgeUser {
        ForgeUser {
            login: format!("{}[bot]", self.slug),
            id: self.id,
            is_bot: true,
        }
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct Installation {
    pub id: u64,
}

/// One entry of `GET /app/installations`: where the App is installed.
#[derive(Debug, Deserialize)]
pub(super) struct AppInstallation {
    /// The user or organisation; GitHub documents it as nullable (an enterprise installation).
    pub account: Option<Account>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Account {
    pub login: String,
}

#[derive(Debug, Deserialize)]
pub(super) struct InstallationToken {
    pub token: String,
    pub expires_at: DateTime<Utc>,
}

#[derive(Debug, Deserialize)]
pub(super) struct CollaboratorPermission {
    pub permission: Option<String>,
    pub role_name: Option<String>,
}

impl CollaboratorPermission {
    /// `role_name` is the finer scale (it knows maintain and triage); `permission` is legacy.
    pub fn into_neutral(self) -> Permission {
        self.role_name
            .or(self.permission)
            .map(|role| Permission::from_github_role(&role))
            .unwrap_or(Permission::None)
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct Label {
    pub name: String,
}

#[derive(Debug, Deserialize)]
pub(super) struct Issue {
    pub number: u64,
    pub title: String,
    pub body: Option<String>,
    #[serde(default)]
    pub labels: Vec<Label>,
    pub state: String,
    #[serde(default)]
    pub locked: bool,
    pub user: User,
}

impl Issue {
    pub fn into_neutral(self) -> IssueInfo {
        IssueInfo {
            number: IssueNumber(self.number),
            title: self.title,
            body: self.body.unwrap_or_default(),
            labels: self.labels.into_iter().map(|label| label.name).collect(),
            open: self.state == "open",
            locked: self.locked,
            author: self.user.into_neutral(),
        }
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct Repository {
    pub default_branch: String,
}

/// A repository that may be a fork: `GET /repos/{o}/{r}`, and the 202 answer of
/// `POST /repos/{o}/{r}/forks` (the same full-repository shape). `parent` is the repository it
/// was forked from, present on forks only.
#[derive(Debug, Deserialize)]
pub(super) struct ForkRepository {
    pub full_name: String,
    pub clone_url: String,
    pub default_branch: String,
    #[serde(default)]
    pub fork: bool,
    pub owner: User,
    #[serde(default)]
    pub parent: Option<RepositoryName>,
}

#[derive(Debug, Deserialize)]
pub(super) struct RepositoryName {
    pub full_name: String,
}

impl ForkRepository {
    /// Whether this is `owner`'s fork of `base` (GitHub compares names without case).
    pub fn is_fork_of(&self, base: &crate::forge::RepoRef, owner: &str) -> bool {
        self.fork
            && self.owner.login.eq_ignore_ascii_case(owner)
            && self
                .parent
                .as_ref()
                .is_some_and(|parent| parent.full_name.eq_ignore_ascii_case(&base.owner_path))
    }

    pub fn into_repo_ref(self) -> crate::forge::RepoRef {
        crate::forge::RepoRef {
            forge: crate::forge::ForgeKind::GitHub,
            owner_path: self.full_name,
            clone_url: self.clone_url,
            default_branch: Some(self.default_branch),
        }
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct IssueComment {
    pub id: u64,
    pub body: Option<String>,
    pub user: User,
}

impl IssueComment {
    pub fn into_neutral(self) -> Comment {
        Comment {
            id: CommentId(self.id),
            body: self.body.unwrap_or_default(),
            author: self.user.into_neutral(),
        }
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct CreatedComment {
    pub id: u64,
}

#[derive(Debug, Deserialize)]
pub(super) struct BranchRef {
    #[serde(rename = "ref")]
    pub name: String,
}

#[derive(Debug, Deserialize)]
pub(super) struct PullRequest {
    pub number: u64,
    pub html_url: String,
    pub title: String,
    pub body: Option<String>,
    pub head: BranchRef,
    pub base: BranchRef,
    #[serde(default)]
    pub draft: bool,
    pub user: User,
}

impl PullRequest {
    pub fn into_neutral(self) -> ChangeRequest {
        ChangeRequest {
            number: self.number,
            url: self.html_url,
            title: self.title,
            body: self.body.unwrap_or_default(),
            head: self.head.name,
            base: self.base.name,
            draft: self.draft,
            author: self.user.into_neutral(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture<T: serde::de::DeserializeOwned>(text: &str) -> T {
        serde_json::from_str(text).expect("the recorded fixture parses")
    }

    #[test]
    fn the_recorded_issue_reads_as_a_locked_open_issue_with_its_labels() {
        let issue: Issue = fixture(include_str!(
            "../../../tests/data/github/api/issues-get.issue.json"
        ));
        insta::assert_debug_snapshot!(issue.into_neutral());
    }

    #[test]
    fn the_recorded_pull_request_reads_with_its_branches_and_browser_url() {
        let pull: PullRequest = fixture(include_str!(
            "../../../tests/data/github/api/pulls-create.pull-request.json"
        ));
        insta::assert_debug_snapshot!(pull.into_neutral());
    }

    #[test]
    fn the_recorded_pull_request_list_reads_item_by_item() {
        let pulls: Vec<PullRequest> = fixture(include_str!(
            "../../../tests/data/github/api/pulls-list.pull-request-simple-items.json"
        ));
        let neutral: Vec<ChangeRequest> =
            pulls.into_iter().map(PullRequest::into_neutral).collect();
        insta::assert_debug_snapshot!(neutral);
    }

    #[test]
    fn the_recorded_comment_reads_with_its_author() {
        let comment: IssueComment = fixture(include_str!(
            "../../../tests/data/github/api/issues-create-comment.issue-comment.json"
        ));
        insta::assert_debug_snapshot!(comment.into_neutral());
    }

    #[test]
    fn the_recorded_admin_permission_reads_from_the_legacy_field() {
        let permission: CollaboratorPermission = fixture(include_str!(
            "../../../tests/data/github/api/repos-get-collaborator-permission-level.json"
        ));
        assert_eq!(permission.into_neutral(), Permission::Admin);
    }

    #[test]
    fn role_name_is_preferred_to_the_legacy_permission() {
        let permission: CollaboratorPermission =
            fixture(r#"{"permission":"write","role_name":"maintain","user":null}"#);
        assert_eq!(permission.into_neutral(), Permission::Maintain);
    }

    #[test]
    fn the_recorded_installation_token_reads_with_its_expiry() {
        let token: InstallationToken = fixture(include_str!(
            "../../../tests/data/github/api/apps-create-installation-access-token.json"
        ));
        assert_eq!(token.expires_at.to_rfc3339(), "2016-07-11T22:14:10+00:00");
    }

    #[test]
    fn the_recorded_full_repository_names_its_parent_but_is_no_fork_of_it() {
        // The docs' `full-repository` example, also the documented 202 answer of a fork's
        // creation: it names `parent` but says `fork: false`, so it is not taken for one.
        let repository: ForkRepository = fixture(include_str!(
            "../../../tests/data/github/api/repos-get.full-repository.json"
        ));
        let base = crate::forge::RepoRef {
            forge: crate::forge::ForgeKind::GitHub,
            owner_path: "Octocat/hello-world".into(),
            clone_url: String::new(),
            default_branch: None,
        };
        assert_eq!(
            repository.parent.as_ref().unwrap().full_name,
            "octocat/Hello-World"
        );
        assert!(!repository.is_fork_of(&base, "octocat"));
        let fork = ForkRepository {
            fork: true,
            ..repository
        };
        assert!(
            fork.is_fork_of(&base, "OCTOCAT"),
            "names compare without case"
        );
        assert!(!fork.is_fork_of(&base, "someone-else"));
        let repo = fork.into_repo_ref();
        assert_eq!(repo.clone_url, "https://github.com/octocat/Hello-World.git");
        assert_eq!(repo.default_branch.as_deref(), Some("master"));
    }

    #[test]
    fn the_recorded_repository_names_its_default_branch() {
        let repository: Repository = fixture(include_str!(
            "../../../tests/data/github/api/repos-get.full-repository.json"
        ));
        assert_eq!(repository.default_branch, "master");
    }
}

/// `GET /repos/{o}/{r}/commits/{ref}/check-runs`.
#[derive(Debug, Deserialize)]
pub(super) struct CheckRuns {
    pub check_runs: Vec<CheckRun>,
}

#[derive(Debug, Deserialize)]
pub(super) struct CheckRun {
    pub id: u64,
    pub name: String,
    pub conclusion: Option<String>,
    #[serde(default)]
    pub output: Option<CheckOutput>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct CheckOutput {
    pub title: Option<String>,
    pub summary: Option<String>,
    pub text: Option<String>,
}

impl CheckRun {
    /// Whether the run ended in a failure a change can cause.
    pub fn failed(&self) -> bool {
        matches!(
            self.conclusion.as_deref(),
            Some("failure" | "timed_out" | "startup_failure")
        )
    }

    pub fn into_neutral(self) -> crate::forge::FailedCheck {
        let output = self.output.unwrap_or_default();
        let summary = [output.title, output.summary, output.text]
            .into_iter()
            .flatten()
            .filter(|part| !part.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
        crate::forge::FailedCheck {
            id: self.id,
            name: self.name,
            summary,
        }
    }
}
