//! GitLab's REST v4 API as a [`Forge`]: one client per instance (gitlab.com or self-managed),
//! authenticated with a token, projects addressed by their URL-encoded path.
//!
//! `operations` carries out the `Forge` operations, `names` checks and makes the names GitLab is
//! given, `settings` is what the client is built from; the client, its endpoints and its requests
//! are here.
//!
//! [`Forge`]: super::Forge

mod fork;
mod json;
mod names;
mod operations;
mod retry;
mod settings;
#[cfg(test)]
mod tests;
mod transport;

use std::fmt;
use std::time::Duration;

use reqwest::{Method, Url};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

pub use retry::{RATE_LIMIT_RESET, RetryPolicy};
pub use settings::GitLabClientSettings;
pub use transport::gitlab_message;

use self::names::{check_label, parse_api_url, project_path};
use self::transport::{Reply, Transport};
use super::{ChangeRequest, ForgeError, ForkWait, IssueNumber, RepoRef, Thread};

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
            match next_page(&reply.headers, action)? {
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

/// `x-next-page`: a page number, or empty (or absent) on the last page.
fn next_page(
    headers: &reqwest::header::HeaderMap,
    action: &str,
) -> Result<Option<u64>, ForgeError> {
    let Some(value) = headers.get(NEXT_PAGE_HEADER) else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or("(not text)").trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse()
        .map(Some)
        .map_err(|_| invalid(action)(format!("`{NEXT_PAGE_HEADER}: {text}` is not a page number")))
}

/// A 2xx answer to `action` the client cannot read, and why.
fn invalid<E: fmt::Display>(action: &str) -> impl Fn(E) -> ForgeError + '_ {
    move |message| ForgeError::InvalidResponse {
        forge: FORGE,
        action: action.to_owned(),
        message: message.to_string(),
    }
}
