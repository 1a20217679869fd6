//! The neutral `Forge` operations carried out on GitLab: the bot user and its access, issues,
//! notes, labels, merge requests, failed jobs and their logs, git credentials and forks.

use async_trait::async_trait;
use reqwest::Method;

use super::json;
use super::names::{check_label, merge_request_title, thread_name};
use super::{ALREADY_EXISTS, FORGE, GIT_USERNAME, GitLabClient, invalid};
use crate::forge::{
    Access, ChangeRequest, Comment, CommentId, FailedCheck, Forge, ForgeError, ForgeKind,
    ForgeUser, GitCredentials, IssueInfo, IssueNumber, NewChangeRequest, Opened, Permission,
    RepoRef, Thread,
};

#[async_trait]
impl Forge for GitLabClient {
    fn kind(&self) -> ForgeKind {
        ForgeKind::GitLab
    }

    async fn bot_user(&self) -> Result<ForgeUser, ForgeError> {
        let action = "read the token's own user";
        let reply = self.get(self.endpoint(&["user"]), action).await?;
        json::user(&reply.body).map_err(invalid(action))
    }

    /// The token's user, then its scopes (`GET /personal_access_tokens/self`, GitLab 15.5 and
    /// later, also for project and group tokens): the bot needs `api`.
    async fn verify_access(&self) -> Result<Access, ForgeError> {
        let user = self.bot_user().await?;
        let action = "read the token's scopes";
        let url = self.endpoint(&["personal_access_tokens", "self"]);
        let scopes: Vec<String> = match self.get(url, action).await {
            Ok(reply) => reply.body["scopes"]
                .as_array()
                .map(|scopes| {
                    scopes
                        .iter()
                        .filter_map(|scope| scope.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            // An older GitLab, or a token of another kind: the scopes stay unknown.
            Err(ForgeError::NotFound { .. }) => {
                return Ok(Access {
                    facts: format!(
                        "the token acts as {} (GitLab does not say its scopes)",
                        user.login
                    ),
                    problem: None,
                });
            }
            Err(err) => return Err(err),
        };
        let facts = format!(
            "the token acts as {}, with scopes {}",
            user.login,
            scopes.join(", ")
        );
        let problem = (!scopes.iter().any(|scope| scope == "api")).then(|| {
            format!(
                "the token lacks the `api` scope the bot needs to comment, label and open merge \
                 requests (it has: {})",
                scopes.join(", ")
            )
        });
        Ok(Access { facts, problem })
    }

    async fn permission(&self, repo: &RepoRef, user: &ForgeUser) -> Result<Permission, ForgeError> {
        let action = format!(
            "read the membership of {} in {}",
            user.login, repo.owner_path
        );
        let user_id = user.id.to_string();
        let url = self.project_endpoint(repo, &["members", "all", &user_id])?;
        match self.get(url, &action).await {
            Ok(reply) => json::membership(&reply.body).map_err(invalid(&action)),
            Err(ForgeError::NotFound { .. }) => Ok(Permission::None),
            Err(err) => Err(err),
        }
    }

    async fn issue(&self, repo: &RepoRef, issue: IssueNumber) -> Result<IssueInfo, ForgeError> {
        let action = format!("read issue {issue} of {}", repo.owner_path);
        let reply = self
            .get(self.issue_endpoint(repo, issue, &[])?, &action)
            .await?;
        json::issue(&reply.body).map_err(invalid(&action))
    }

    async fn default_branch(&self, repo: &RepoRef) -> Result<String, ForgeError> {
        let action = format!("read the project {}", repo.owner_path);
        let reply = self.get(self.project_endpoint(repo, &[])?, &action).await?;
        json::default_branch(&reply.body).map_err(invalid(&action))
    }

    async fn comments(
        &self,
        repo: &RepoRef,
        issue: IssueNumber,
    ) -> Result<Vec<Comment>, ForgeError> {
        self.thread_comments(repo, Thread::Issue(issue)).await
    }

    async fn create_comment(
        &self,
        repo: &RepoRef,
        issue: IssueNumber,
        body: &str,
    ) -> Result<CommentId, ForgeError> {
        self.comment_on(repo, Thread::Issue(issue), body).await
    }

    async fn thread_comments(
        &self,
        repo: &RepoRef,
        thread: Thread,
    ) -> Result<Vec<Comment>, ForgeError> {
        let action = format!(
            "list the notes of {} of {}",
            thread_name(thread),
            repo.owner_path
        );
        let mut url = self.thread_endpoint(repo, thread, &["notes"])?;
        url.query_pairs_mut()
            .append_pair("sort", "asc")
            .append_pair("order_by", "created_at");
        let notes = self.all_pages(url, &action).await?;
        let comments = notes.iter().map(json::note).collect::<Result<Vec<_>, _>>();
        Ok(comments
            .map_err(invalid(&action))?
            .into_iter()
            .flatten()
            .collect())
    }

    async fn comment_on(
        &self,
        repo: &RepoRef,
        thread: Thread,
        body: &str,
    ) -> Result<CommentId, ForgeError> {
        let action = format!("comment on {} of {}", thread_name(thread), repo.owner_path);
        let url = self.thread_endpoint(repo, thread, &["notes"])?;
        let reply = self
            .send_json(Method::POST, url, json!({ "body": body }), &action)
            .await?;
        json::note_id(&reply.body).map_err(invalid(&action))
    }

    async fn update_comment(
        &self,
        repo: &RepoRef,
        issue: IssueNumber,
        comment: CommentId,
        body: &str,
    ) -> Result<(), ForgeError> {
        let action = format!(
            "edit note {} on issue {issue} of {}",
            comment.0, repo.owner_path
        );
        let note = comment.0.to_string();
        let url = self.issue_endpoint(repo, issue, &["notes", &note])?;
        self.send_json(Method::PUT, url, json!({ "body": body }), &action)
            .await
            .map(drop)
    }

    async fn add_label(
        &self,
        repo: &RepoRef,
        issue: IssueNumber,
        label: &str,
    ) -> Result<(), ForgeError> {
        let action = format!(
            "add the label {label:?} to issue {issue} of {}",
            repo.owner_path
        );
        self.edit_labels(repo, issue, "add_labels", label, action)
            .await
    }

    async fn remove_label(
        &self,
        repo: &RepoRef,
        issue: IssueNumber,
        label: &str,
    ) -> Result<(), ForgeError> {
        let action = format!(
            "remove the label {label:?} from issue {issue} of {}",
            repo.owner_path
        );
        self.edit_labels(repo, issue, "remove_labels", label, action)
            .await
    }

    async fn open_change_requests(&self, repo: &RepoRef) -> Result<Vec<ChangeRequest>, ForgeError> {
        let action = format!("list the open merge requests of {}", repo.owner_path);
        let mut url = self.project_endpoint(repo, &["merge_requests"])?;
        url.query_pairs_mut().append_pair("state", "opened");
        let requests = self.all_pages(url, &action).await?;
        requests
            .iter()
            .map(json::merge_request)
            .collect::<Result<_, _>>()
            .map_err(invalid(&action))
    }

    async fn open_change_request(
        &self,
        repo: &RepoRef,
        request: &NewChangeRequest,
    ) -> Result<Opened, ForgeError> {
        let action = format!(
            "open a merge request from {} into {} of {}",
            request.head, request.base, repo.owner_path
        );
        for label in &request.labels {
            check_label(label)?;
        }
        let mut body = json!({
            "source_branch": request.head,
            "target_branch": request.base,
            "title": merge_request_title(request),
            "description": request.body,
            "labels": request.labels.join(","),
        });
        // A merge request from a fork is created in the fork, naming the project it targets.
        let url = match &request.head_repo {
            Some(fork) => {
                body["target_project_id"] = json!(self.project_id(repo).await?);
                self.project_endpoint(fork, &["merge_requests"])?
            }
            None => self.project_endpoint(repo, &["merge_requests"])?,
        };
        let reviewer_ids = self.reviewer_ids(&request.reviewers).await;
        if !reviewer_ids.is_empty() {
            body["reviewer_ids"] = json!(reviewer_ids);
        }
        match self.send_json(Method::POST, url, body, &action).await {
            Ok(reply) => json::merge_request(&reply.body)
                .map(Opened::Created)
                .map_err(invalid(&action)),
            Err(ForgeError::Rejected {
                status: 409,
                message,
                ..
            }) if message.contains(ALREADY_EXISTS) => {
                match self.open_for_branch(repo, &request.head).await? {
                    Some(existing) => Ok(Opened::Adopted(existing)),
                    // Closed or merged between GitLab's answer and our look: nothing to adopt.
                    None => Err(ForgeError::Rejected {
                        forge: FORGE,
                        action,
                        status: 409,
                        message: format!(
                            "{message}; but no open merge request from that branch was found"
                        ),
                    }),
                }
            }
            Err(err) => Err(err),
        }
    }

    async fn failed_checks(
        &self,
        repo: &RepoRef,
        head: &str,
        runs: &[u64],
    ) -> Result<Vec<FailedCheck>, ForgeError> {
        let pipelines = match runs {
            [] => self
                .newest_pipeline(repo, head)
                .await?
                .into_iter()
                .collect(),
            runs => runs.to_vec(),
        };
        let mut failed = Vec::new();
        for pipeline in pipelines {
            let action = format!(
                "list the failed jobs of pipeline {pipeline} of {}",
                repo.owner_path
            );
            let id = pipeline.to_string();
            let mut url = self.project_endpoint(repo, &["pipelines", &id, "jobs"])?;
            url.query_pairs_mut().append_pair("scope[]", "failed");
            let jobs = self.all_pages(url, &action).await?;
            for job in &jobs {
                failed.push(json::failed_job(job).map_err(invalid(&action))?);
            }
        }
        Ok(failed)
    }

    async fn check_log(&self, repo: &RepoRef, check: &FailedCheck) -> Result<String, ForgeError> {
        let action = format!(
            "read the trace of job `{}` of {}",
            check.name, repo.owner_path
        );
        let id = check.id.to_string();
        let url = self.project_endpoint(repo, &["jobs", &id, "trace"])?;
        let limits = crate::forge::log_tail::LogLimits::default();
        self.transport.get_log(url, &action, &limits).await
    }

    async fn git_credentials(&self, _repo: &RepoRef) -> Result<GitCredentials, ForgeError> {
        Ok(GitCredentials {
            username: GIT_USERNAME.to_owned(),
            token: self.token.clone(),
        })
    }

    async fn bot_fork(&self, repo: &RepoRef) -> Result<RepoRef, ForgeError> {
        self.find_or_create_fork(repo).await
    }
}
