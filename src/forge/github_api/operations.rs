//! The neutral `Forge` operations carried out on GitHub: the bot user and its access, issues,
//! comments, labels, pull requests, failed checks and their logs, git credentials and forks.

use std::time::Duration;

use async_trait::async_trait;
use http::Method;
use serde_json::json;

use super::paths::{encode, issue_action, owner_of, repo_path, thread_number};
use super::wire;
use super::{ClientAuth, GIT_USERNAME, GitHubClient, PULL_REQUEST_EXISTS};
use crate::forge::log_tail::{self, LogLimits, LogSource};
use crate::forge::{
    Access, ChangeRequest, Comment, CommentId, FailedCheck, Forge, ForgeError, ForgeKind,
    ForgeUser, GitCredentials, IssueInfo, IssueNumber, MAX_CHECK_LOG_BYTES, NewChangeRequest,
    Opened, Permission, RepoRef, Thread,
};

#[async_trait]
impl Forge for GitHubClient {
    fn kind(&self) -> ForgeKind {
        ForgeKind::GitHub
    }

    async fn bot_user(&self) -> Result<ForgeUser, ForgeError> {
        self.bot
            .get_or_try_init(|| self.fetch_bot_user())
            .await
            .cloned()
    }

    async fn verify_access(&self) -> Result<Access, ForgeError> {
        let user = self.fetch_bot_user().await?;
        let ClientAuth::App(app) = &self.auth else {
            return Ok(Access {
                facts: format!("the token acts as {}", user.login),
                problem: None,
            });
        };
        let action = "list the GitHub App's installations";
        let installations: Vec<wire::AppInstallation> = self
            .transport
            .get_all_pages(
                "/app/installations?per_page=100".into(),
                &app.jwt()?,
                action,
            )
            .await?;
        let accounts: Vec<&str> = installations
            .iter()
            .map(|one| {
                one.account
                    .as_ref()
                    .map_or("an enterprise", |a| a.login.as_str())
            })
            .collect();
        let facts = match accounts.len() {
            0 => format!(
                "the App acts as {}; it is installed nowhere yet (install it on the repositories \
                 it should serve)",
                user.login
            ),
            count => format!(
                "the App acts as {}; installed on {count} account(s): {}",
                user.login,
                accounts.join(", ")
            ),
        };
        Ok(Access {
            facts,
            problem: None,
        })
    }

    async fn permission(&self, repo: &RepoRef, user: &ForgeUser) -> Result<Permission, ForgeError> {
        let action = format!("read {}'s permission on {}", user.login, repo.owner_path);
        let target = format!(
            "/repos/{}/collaborators/{}/permission",
            repo_path(repo)?,
            encode(&user.login)
        );
        let (answer, credential) = self.send(repo, Method::GET, target, None, &action).await?;
        match answer.status.as_u16() {
            404 => Ok(Permission::None),
            _ if answer.is_success() => Ok(answer
                .json::<wire::CollaboratorPermission>(&action)?
                .into_neutral()),
            _ => Err(answer.into_error(&action, &credential)),
        }
    }

    async fn issue(&self, repo: &RepoRef, issue: IssueNumber) -> Result<IssueInfo, ForgeError> {
        let action = issue_action("read", repo, issue);
        let target = format!("/repos/{}/issues/{}", repo_path(repo)?, issue.0);
        let answer = self
            .send_ok(repo, Method::GET, target, None, &action)
            .await?;
        Ok(answer.json::<wire::Issue>(&action)?.into_neutral())
    }

    async fn default_branch(&self, repo: &RepoRef) -> Result<String, ForgeError> {
        let action = format!("read repository {}", repo.owner_path);
        let target = format!("/repos/{}", repo_path(repo)?);
        let answer = self
            .send_ok(repo, Method::GET, target, None, &action)
            .await?;
        Ok(answer.json::<wire::Repository>(&action)?.default_branch)
    }

    async fn comments(
        &self,
        repo: &RepoRef,
        issue: IssueNumber,
    ) -> Result<Vec<Comment>, ForgeError> {
        let action = issue_action("read the comments of", repo, issue);
        let first = format!(
            "/repos/{}/issues/{}/comments?per_page=100",
            repo_path(repo)?,
            issue.0
        );
        let comments: Vec<wire::IssueComment> = self.all_pages(repo, first, &action).await?;
        Ok(comments
            .into_iter()
            .map(wire::IssueComment::into_neutral)
            .collect())
    }

    async fn thread_comments(
        &self,
        repo: &RepoRef,
        thread: Thread,
    ) -> Result<Vec<Comment>, ForgeError> {
        // A pull request is an issue to GitHub's comment API.
        self.comments(repo, thread_number(thread)).await
    }

    async fn comment_on(
        &self,
        repo: &RepoRef,
        thread: Thread,
        body: &str,
    ) -> Result<CommentId, ForgeError> {
        self.create_comment(repo, thread_number(thread), body).await
    }

    async fn create_comment(
        &self,
        repo: &RepoRef,
        issue: IssueNumber,
        body: &str,
    ) -> Result<CommentId, ForgeError> {
        let action = issue_action("comment on", repo, issue);
        let target = format!("/repos/{}/issues/{}/comments", repo_path(repo)?, issue.0);
        let answer = self
            .send_ok(
                repo,
                Method::POST,
                target,
                Some(json!({ "body": body })),
                &action,
            )
            .await?;
        Ok(CommentId(answer.json::<wire::CreatedComment>(&action)?.id))
    }

    async fn update_comment(
        &self,
        repo: &RepoRef,
        issue: IssueNumber,
        comment: CommentId,
        body: &str,
    ) -> Result<(), ForgeError> {
        let action = format!(
            "edit comment {} on issue {issue} of {}",
            comment.0, repo.owner_path
        );
        let target = format!("/repos/{}/issues/comments/{}", repo_path(repo)?, comment.0);
        self.send_ok(
            repo,
            Method::PATCH,
            target,
            Some(json!({ "body": body })),
            &action,
        )
        .await
        .map(drop)
    }

    async fn add_label(
        &self,
        repo: &RepoRef,
        issue: IssueNumber,
        label: &str,
    ) -> Result<(), ForgeError> {
        self.add_labels(repo, issue.0, &[label.to_owned()]).await
    }

    async fn remove_label(
        &self,
        repo: &RepoRef,
        issue: IssueNumber,
        label: &str,
    ) -> Result<(), ForgeError> {
        let action = format!(
            "remove label {label} from issue {issue} of {}",
            repo.owner_path
        );
        let target = format!(
            "/repos/{}/issues/{}/labels/{}",
            repo_path(repo)?,
            issue.0,
            encode(label)
        );
        let (answer, credential) = self
            .send(repo, Method::DELETE, target, None, &action)
            .await?;
        match answer.status.as_u16() {
            404 => Ok(()),
            _ if answer.is_success() => Ok(()),
            _ => Err(answer.into_error(&action, &credential)),
        }
    }

    async fn open_change_requests(&self, repo: &RepoRef) -> Result<Vec<ChangeRequest>, ForgeError> {
        let action = format!("list the open pull requests of {}", repo.owner_path);
        let first = format!("/repos/{}/pulls?state=open&per_page=100", repo_path(repo)?);
        let pulls: Vec<wire::PullRequest> = self.all_pages(repo, first, &action).await?;
        Ok(pulls
            .into_iter()
            .map(wire::PullRequest::into_neutral)
            .collect())
    }

    async fn open_change_request(
        &self,
        repo: &RepoRef,
        request: &NewChangeRequest,
    ) -> Result<Opened, ForgeError> {
        let action = format!(
            "open a pull request from {} into {} in {}",
            request.head, request.base, repo.owner_path
        );
        let target = format!("/repos/{}/pulls", repo_path(repo)?);
        let head_owner = match &request.head_repo {
            Some(fork) => owner_of(fork)?,
            None => owner_of(repo)?,
        };
        let mut body = json!({
            "title": request.title,
            "head": request.head,
            "base": request.base,
            "body": request.body,
            "draft": request.draft,
        });
        if request.head_repo.is_some() {
            // A branch in another repository is named `owner:branch`; maintainers may push to
            // it, as they may to a branch of their own repository.
            body["head"] = json!(format!("{head_owner}:{}", request.head));
            body["maintainer_can_modify"] = json!(true);
        }
        let (answer, credential) = self
            .send(repo, Method::POST, target, Some(body), &action)
            .await?;
        let opened = if answer.is_success() {
            Opened::Created(answer.json::<wire::PullRequest>(&action)?.into_neutral())
        } else if answer.status.as_u16() == 422
            && answer.has_error_message_containing(PULL_REQUEST_EXISTS)
        {
            match self
                .open_pull_for_branch(repo, head_owner, &request.head)
                .await?
            {
                Some(existing) => Opened::Adopted(existing),
                None => return Err(answer.into_error(&action, &credential)),
            }
        } else {
            return Err(answer.into_error(&action, &credential));
        };
        self.decorate_pull_request(repo, opened.change_request(), request)
            .await;
        Ok(opened)
    }

    async fn failed_checks(
        &self,
        repo: &RepoRef,
        head: &str,
        _runs: &[u64],
    ) -> Result<Vec<FailedCheck>, ForgeError> {
        let action = format!("list the check runs of {head} in {}", repo.owner_path);
        let target = format!(
            "/repos/{}/commits/{}/check-runs?per_page=100",
            repo_path(repo)?,
            encode(head)
        );
        let answer = self
            .send_ok(repo, Method::GET, target, None, &action)
            .await?;
        let runs: wire::CheckRuns = answer.json(&action)?;
        Ok(runs
            .check_runs
            .into_iter()
            .filter(wire::CheckRun::failed)
            .map(wire::CheckRun::into_neutral)
            .collect())
    }

    async fn check_log(&self, repo: &RepoRef, check: &FailedCheck) -> Result<String, ForgeError> {
        let action = format!(
            "read the log of check `{}` in {}",
            check.name, repo.owner_path
        );
        let target = format!("/repos/{}/actions/jobs/{}/logs", repo_path(repo)?, check.id);
        let (answer, credential) = self.send(repo, Method::GET, target, None, &action).await?;
        match answer.status.as_u16() {
            200 => Ok(log_tail::tail_of(&answer.body, MAX_CHECK_LOG_BYTES)),
            301 | 302 | 303 | 307 | 308 => {
                let location = answer
                    .headers
                    .get(http::header::LOCATION)
                    .and_then(|value| value.to_str().ok())
                    .ok_or_else(|| ForgeError::InvalidResponse {
                        forge: "GitHub",
                        action: action.clone(),
                        message: "a redirect without a Location".into(),
                    })?;
                download_log(location, &action).await
            }
            // Not an Actions job (another CI's check run): what the check run says is all.
            404 => Ok(check.summary.clone()),
            _ => Err(answer.into_error(&action, &credential)),
        }
    }

    async fn git_credentials(&self, repo: &RepoRef) -> Result<GitCredentials, ForgeError> {
        repo_path(repo)?;
        Ok(GitCredentials {
            username: GIT_USERNAME.to_owned(),
            token: self.token_for(repo).await?,
        })
    }

    async fn bot_fork(&self, repo: &RepoRef) -> Result<RepoRef, ForgeError> {
        self.find_or_create_fork(repo).await
    }
}

/// A job log from the short-lived address GitHub redirects to. The address carries its own
/// signature: the token is never sent there (it is another host), nor are redirects followed
/// with it.
async fn download_log(location: &str, action: &str) -> Result<String, ForgeError> {
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::limited(3))
        .build()
        .map_err(|error| {
            ForgeError::Configuration(format!("cannot build an HTTP client: {error}"))
        })?;
    let source = LogSource {
        forge: "GitHub",
        action,
    };
    log_tail::download(client.get(location), &LogLimits::default(), &source).await
}
