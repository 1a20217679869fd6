//! GitLab's REST v4 API as a [`Forge`]: one client per instance (gitlab.com or self-managed),
//! authenticated with a token, projects addressed by their URL-encoded path.

mod fork;
mod json;
mod retry;
mod transport;

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::{Method, Url};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

pub use retry::{RATE_LIMIT_RESET, RetryPolicy};
pub use transport::gitlab_message;

use self::transport::{Reply, Transport};
use super::{
    Access, ChangeRequest, Comment, CommentId, FailedCheck, Forge, ForgeError, ForgeKind,
    ForgeUser, ForkWait, GitCredentials, IssueInfo, IssueNumber, NewChangeRequest, Opened,
    Permission, RepoRef, Thread,
};
use crate::config::GitLabSection;

/// How errors and logs name this forge.
pub const FORGE: &str = "GitLab";

/// The user name git presents with a GitLab token over HTTPS.
pub const GIT_USERNAME: &str = "oauth2";

/// GitLab's largest page; fewer round trips for long note threads.
const PER_PAGE: &str = "100";
const NEXT_PAGE_HEADER: &str = "x-next-page";

/// GitLab's 409 text when the source branch already has an open merge request.
const ALREADY_EXISTS: &str = "already exists";

pub struct GitLabClient {
    api: Url,
    token: SecretString,
    transport: Transport,
    fork_wait: ForkWait,
}

impl fmt::Debug for GitLabClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitLabClient")
            .field("api", &self.api.as_str())
            .finish_non_exhaustive()
    }
}

impl GitLabClient {
    /// A client for the API at `api_url` (`https://gitlab.com/api/v4`, or a self-managed
    /// instance's `/api/v4`), sending `token` as `PRIVATE-TOKEN`.
    pub fn new(
        api_url: &str,
        token: SecretString,
        request_timeout: Duration,
        retry: RetryPolicy,
    ) -> Result<GitLabClient, ForgeError> {
        if token.expose_secret().trim().is_empty() {
            return Err(ForgeError::Configuration(
                "the GitLab token is empty".into(),
            ));
        }
        if request_timeout.is_zero() {
            return Err(ForgeError::Configuration(
                "the GitLab request timeout must be longer than zero".into(),
            ));
        }
        let api = parse_api_url(api_url)?;
        let transport = Transport::new(&token, request_timeout, retry)?;
        Ok(GitLabClient {
            api,
            token,
            transport,
            fork_wait: ForkWait::default(),
        })
    }

    /// How long the bot's fork may take to be copied after GitLab accepted it.
    pub fn with_fork_wait(mut self, wait: ForkWait) -> GitLabClient {
        self.fork_wait = wait;
        self
    }

    /// The client `[gitlab]` describes, with the default retry policy; `None` without a token.
    pub fn from_config(section: &GitLabSection) -> Result<Option<GitLabClient>, ForgeError> {
        if section.token.expose_secret().trim().is_empty() {
            return Ok(None);
        }
        if section.request_timeout_secs == 0 {
            return Err(ForgeError::Configuration(
                "gitlab.request_timeout_secs must be at least 1".into(),
            ));
        }
        GitLabClient::new(
            &section.api_url,
            section.token.clone(),
            Duration::from_secs(section.request_timeout_secs),
            RetryPolicy::default(),
        )
        .map(Some)
        .map_err(|err| ForgeError::Configuration(format!("[gitlab]: {err}")))
    }

    /// The API root, without a trailing slash.
    pub fn api_url(&self) -> &str {
        self.api.as_str().trim_end_matches('/')
    }

    /// `api/v4` + `segments`, each percent-encoded whole (so `group/project` becomes one segment).
    fn endpoint<S: AsRef<str>>(&self, segments: &[S]) -> Url {
        let mut url = self.api.clone();
        url.path_segments_mut()
            .expect("an http(s) URL, checked when the client was built")
            .pop_if_empty()
            .extend(segments.iter().map(AsRef::as_ref));
        url
    }

    fn project_endpoint(&self, repo: &RepoRef, rest: &[&str]) -> Result<Url, ForgeError> {
        let path = project_path(repo)?;
        let mut segments = vec!["projects", path];
        segments.extend_from_slice(rest);
        Ok(self.endpoint(&segments))
    }

    fn issue_endpoint(
        &self,
        repo: &RepoRef,
        issue: IssueNumber,
        rest: &[&str],
    ) -> Result<Url, ForgeError> {
        let iid = issue.0.to_string();
        let mut segments = vec!["issues", iid.as_str()];
        segments.extend_from_slice(rest);
        self.project_endpoint(repo, &segments)
    }

    /// The id of the newest pipeline of `git_ref`, if it has any.
    async fn newest_pipeline(
        &self,
        repo: &RepoRef,
        git_ref: &str,
    ) -> Result<Option<u64>, ForgeError> {
        let action = format!(
            "find the newest pipeline of {git_ref} in {}",
            repo.owner_path
        );
        let mut url = self.project_endpoint(repo, &["pipelines"])?;
        url.query_pairs_mut()
            .append_pair("ref", git_ref)
            .append_pair("order_by", "id")
            .append_pair("sort", "desc")
            .append_pair("per_page", "1");
        let reply = self.get(url, &action).await?;
        let pipelines = json::list(&reply.body).map_err(invalid(&action))?;
        pipelines
            .first()
            .map(|pipeline| json::id(pipeline).map_err(invalid(&action)))
            .transpose()
    }

    /// `…/issues/<iid>/<rest>` or `…/merge_requests/<iid>/<rest>`.
    fn thread_endpoint(
        &self,
        repo: &RepoRef,
        thread: Thread,
        rest: &[&str],
    ) -> Result<Url, ForgeError> {
        let (kind, iid) = match thread {
            Thread::Issue(issue) => ("issues", issue.0),
            Thread::ChangeRequest(iid) => ("merge_requests", iid),
        };
        let iid = iid.to_string();
        let mut segments = vec![kind, iid.as_str()];
        segments.extend_from_slice(rest);
        self.project_endpoint(repo, &segments)
    }

    async fn get(&self, url: Url, action: &str) -> Result<Reply, ForgeError> {
        self.transport.send(Method::GET, url, None, action).await
    }

    async fn send_json(
        &self,
        method: Method,
        url: Url,
        body: Value,
        action: &str,
    ) -> Result<Reply, ForgeError> {
        self.transport.send(method, url, Some(&body), action).await
    }

    /// Every item of a list endpoint, following `x-next-page` until GitLab leaves it empty.
    async fn all_pages(&self, url: Url, action: &str) -> Result<Vec<Value>, ForgeError> {
        let mut items = Vec::new();
        let mut page = 1;
        loop {
            let mut this_page = url.clone();
            this_page
                .query_pairs_mut()
                .append_pair("per_page", PER_PAGE)
                .append_pair("page", &page.to_string());
            let reply = self.get(this_page, action).await?;
            items.extend(
                json::list(&reply.body)
                    .map_err(invalid(action))?
                    .iter()
                    .cloned(),
            );
            match next_page(&reply.headers).map_err(invalid(action))? {
                None => return Ok(items),
                Some(next) if next > page => page = next,
                Some(next) => {
                    return Err(invalid(action)(format!(
                        "`{NEXT_PAGE_HEADER}: {next}` does not come after page {page}"
                    )));
                }
            }
        }
    }

    /// Ids of the reviewers GitLab knows; the others are logged and left out, since a missing
    /// reviewer must not cost the merge request.
    async fn reviewer_ids(&self, names: &[String]) -> Vec<u64> {
        let mut ids = Vec::new();
        for name in names {
            match self.user_id(name).await {
                Ok(Some(id)) => ids.push(id),
                Ok(None) => {
                    tracing::warn!(reviewer = %name, "no GitLab user by that name; not asked to review")
                }
                Err(err) => {
                    tracing::warn!(reviewer = %name, error = %err, "could not look up a reviewer; not asked to review")
                }
            }
        }
        ids
    }

    async fn user_id(&self, username: &str) -> Result<Option<u64>, ForgeError> {
        if username.is_empty() || username.contains('/') {
            return Ok(None);
        }
        let action = format!("look up the user {username}");
        let mut url = self.endpoint(&["users"]);
        url.query_pairs_mut().append_pair("username", username);
        let reply = self.get(url, &action).await?;
        let users = json::list(&reply.body).map_err(invalid(&action))?;
        let found = users
            .iter()
            .map(json::user)
            .collect::<Result<Vec<_>, _>>()
            .map_err(invalid(&action))?;
        Ok(found
            .into_iter()
            .find(|user| user.login.eq_ignore_ascii_case(username))
            .map(|user| user.id))
    }

    /// The open merge request whose source branch is `head`, after GitLab said one exists.
    async fn open_for_branch(
        &self,
        repo: &RepoRef,
        head: &str,
    ) -> Result<Option<ChangeRequest>, ForgeError> {
        let action = format!(
            "find the open merge request of {} from {head}",
            repo.owner_path
        );
        let mut url = self.project_endpoint(repo, &["merge_requests"])?;
        url.query_pairs_mut()
            .append_pair("state", "opened")
            .append_pair("source_branch", head);
        let reply = self.get(url, &action).await?;
        let requests = json::list(&reply.body)
            .and_then(|items| {
                items
                    .iter()
                    .map(json::merge_request)
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(invalid(&action))?;
        Ok(requests.into_iter().find(|mr| mr.head == head))
    }

    async fn edit_labels(
        &self,
        repo: &RepoRef,
        issue: IssueNumber,
        field: &str,
        label: &str,
        action: String,
    ) -> Result<(), ForgeError> {
        check_label(label)?;
        let url = self.issue_endpoint(repo, issue, &[])?;
        self.send_json(Method::PUT, url, json!({ field: label }), &action)
            .await
            .map(drop)
    }
}

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

/// `issue #7` or `merge request !12`, for error messages.
fn thread_name(thread: Thread) -> String {
    match thread {
        Thread::Issue(issue) => format!("issue {issue}"),
        Thread::ChangeRequest(iid) => format!("merge request !{iid}"),
    }
}

fn parse_api_url(api_url: &str) -> Result<Url, ForgeError> {
    let refuse =
        |why: &str| ForgeError::Configuration(format!("the GitLab API URL `{api_url}` {why}"));
    let url = Url::parse(api_url.trim()).map_err(|err| refuse(&format!("is not a URL ({err})")))?;
    if !matches!(url.scheme(), "http" | "https") || url.cannot_be_a_base() {
        return Err(refuse("is not an http(s) URL"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refuse(
            "must not carry credentials; the token is configured on its own",
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(refuse("must not have a query or fragment"));
    }
    Ok(url)
}

/// The project's full path, which GitLab takes in place of its numeric id once URL-encoded.
fn project_path(repo: &RepoRef) -> Result<&str, ForgeError> {
    if repo.forge != ForgeKind::GitLab {
        return Err(ForgeError::Configuration(format!(
            "{} is a {:?} repository, not a GitLab project",
            repo.owner_path, repo.forge
        )));
    }
    let path = repo.owner_path.trim_matches('/');
    if path.is_empty() || path.split('/').any(str::is_empty) {
        return Err(ForgeError::Configuration(format!(
            "`{}` is not a GitLab project path like group/project",
            repo.owner_path
        )));
    }
    Ok(path)
}

/// GitLab splits `add_labels` on commas, so a comma would silently become two labels.
fn check_label(label: &str) -> Result<(), ForgeError> {
    if label.trim().is_empty() {
        return Err(ForgeError::Configuration(
            "a GitLab label name cannot be empty".into(),
        ));
    }
    if label.contains(',') {
        return Err(ForgeError::Configuration(format!(
            "the label {label:?} contains a comma, which GitLab would read as two labels"
        )));
    }
    Ok(())
}

/// GitLab has no draft flag on creation: a `Draft: ` title prefix makes one.
fn merge_request_title(request: &NewChangeRequest) -> String {
    if request.draft && !request.title.starts_with(json::DRAFT_PREFIX) {
        format!("{}{}", json::DRAFT_PREFIX, request.title)
    } else {
        request.title.clone()
    }
}

/// `x-next-page`: a page number, or empty (or absent) on the last page.
fn next_page(headers: &reqwest::header::HeaderMap) -> Result<Option<u64>, String> {
    let Some(value) = headers.get(NEXT_PAGE_HEADER) else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or("(not text)").trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse()
        .map(Some)
        .map_err(|_| format!("`{NEXT_PAGE_HEADER}: {text}` is not a page number"))
}

fn invalid(action: &str) -> impl Fn(String) -> ForgeError + '_ {
    move |message| ForgeError::InvalidResponse {
        forge: FORGE,
        action: action.to_owned(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(path: &str) -> RepoRef {
        RepoRef {
            forge: ForgeKind::GitLab,
            owner_path: path.into(),
            clone_url: format!("https://gitlab.example.com/{path}.git"),
            default_branch: None,
        }
    }

    fn client(api: &str) -> GitLabClient {
        GitLabClient::new(
            api,
            SecretString::from("glpat-0123456789abcdef"),
            Duration::from_secs(5),
            RetryPolicy::default(),
        )
        .unwrap()
    }

    #[test]
    fn a_nested_project_path_becomes_one_encoded_segment() {
        let client = client("https://gitlab.example.com/api/v4/");
        let url = client
            .issue_endpoint(&repo("group/sub/project"), IssueNumber(7), &["notes"])
            .unwrap();
        assert_eq!(
            url.as_str(),
            "https://gitlab.example.com/api/v4/projects/group%2Fsub%2Fproject/issues/7/notes"
        );
        assert_eq!(client.api_url(), "https://gitlab.example.com/api/v4");
    }

    #[test]
    fn a_github_repository_is_refused_by_name() {
        let mut github = repo("octocat/Hello-World");
        github.forge = ForgeKind::GitHub;
        let err = project_path(&github).unwrap_err().to_string();
        assert!(
            err.contains("octocat/Hello-World") && err.contains("GitHub"),
            "{err}"
        );
    }

    #[test]
    fn an_empty_path_segment_is_refused() {
        let err = project_path(&repo("group//project"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("group//project"), "{err}");
    }

    #[test]
    fn api_urls_with_credentials_or_other_schemes_are_refused() {
        let token = || SecretString::from("glpat-0123456789abcdef");
        for (url, why) in [
            ("ftp://gitlab.example.com/api/v4", "http(s)"),
            ("https://user:pw@gitlab.example.com/api/v4", "credentials"),
            ("gitlab.example.com", "not a URL"),
            ("https://gitlab.example.com/api/v4?x=1", "query"),
        ] {
            let err =
                GitLabClient::new(url, token(), Duration::from_secs(1), RetryPolicy::default())
                    .unwrap_err()
                    .to_string();
            assert!(err.contains(why), "{url}: {err}");
        }
    }

    #[test]
    fn labels_with_commas_or_nothing_in_them_are_refused() {
        assert!(check_label("needs review").is_ok());
        assert!(
            check_label("a,b")
                .unwrap_err()
                .to_string()
                .contains("comma")
        );
        assert!(check_label(" ").unwrap_err().to_string().contains("empty"));
    }

    #[test]
    fn a_draft_gets_the_prefix_once() {
        let mut request = NewChangeRequest {
            title: "fix(lib): handle empty input".into(),
            body: String::new(),
            head: "autofix/7".into(),
            head_repo: None,
            base: "main".into(),
            draft: true,
            reviewers: vec![],
            labels: vec![],
        };
        assert_eq!(
            merge_request_title(&request),
            "Draft: fix(lib): handle empty input"
        );
        request.title = "Draft: already".into();
        assert_eq!(merge_request_title(&request), "Draft: already");
        request.draft = false;
        request.title = "ready".into();
        assert_eq!(merge_request_title(&request), "ready");
    }
}
