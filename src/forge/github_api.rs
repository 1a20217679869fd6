//! The GitHub REST client behind the neutral `Forge` trait: personal token or GitHub App auth,
//! octocrab as the transport, GitHub's JSON mapped to neutral types at this edge.

mod auth;
mod fork;
mod transport;
mod wire;

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use http::Method;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use secrecy::{ExposeSecret, SecretSlice, SecretString};
use serde_json::json;
use tokio::sync::OnceCell;

use self::auth::AppAuth;
pub use self::fork::APP_CANNOT_FORK;
use self::transport::{Answer, Call, Credential, Repeat, Transport};
use super::log_tail::{self, LogLimits, LogSource};
use super::{
    Access, ChangeRequest, Comment, CommentId, FailedCheck, Forge, ForgeError, ForgeKind,
    ForgeUser, ForkWait, GitCredentials, IssueInfo, IssueNumber, MAX_CHECK_LOG_BYTES,
    NewChangeRequest, Opened, Permission, RepoRef, Thread,
};
use crate::config::GitHubSection;

/// The public GitHub API root; GitHub Enterprise Server uses `https://HOST/api/v3`.
pub const DEFAULT_API_URL: &str = "https://api.github.com";

/// The user name git presents with a GitHub token over HTTPS.
pub const GIT_USERNAME: &str = "x-access-token";

/// What GitHub's 422 says when the branch already has an open pull request.
const PULL_REQUEST_EXISTS: &str = "A pull request already exists";

/// Characters left as they are in a path segment (RFC 3986 unreserved).
const PATH_SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// How the client proves who it is.
pub enum GitHubAuth {
    /// A personal access token (classic or fine-grained).
    Token(SecretString),
    /// A GitHub App: its id and its private key (PEM, as GitHub hands it out).
    App {
        app_id: u64,
        private_key_pem: SecretSlice<u8>,
    },
}

/// How patient the client is on its own before handing a failure back to the caller.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Attempts per request, the first included, for 5xx, timeouts, dead connections and
    /// rate limits it waits out.
    pub max_attempts: u32,
    /// The first wait after a transient fault; doubled after each further one.
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// A rate limit asking for a longer wait than this is returned as `RateLimited`.
    pub max_rate_limit_wait: Duration,
    /// The wait after a secondary rate limit that names no time (GitHub's docs: at least 1 min).
    pub secondary_rate_limit_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_rate_limit_wait: super::client::MAX_RATE_LIMIT_WAIT,
            secondary_rate_limit_wait: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait after the `attempt`-th (1-based) failed attempt.
    fn backoff(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(16);
        self.initial_backoff
            .saturating_mul(1 << doublings)
            .min(self.max_backoff)
    }
}

/// Everything a [`GitHubClient`] is built from.
pub struct GitHubClientConfig {
    /// `https://api.github.com`, `https://HOST/api/v3`, or a test server's `/api/v3`.
    pub api_url: String,
    pub auth: GitHubAuth,
    /// Limit for one HTTP exchange, body included.
    pub timeout: Duration,
    pub retry: RetryPolicy,
    /// An installation token is fetched again once it is this close to its `expires_at`.
    pub token_refresh_margin: Duration,
    /// How long the bot's fork may take to become ready after GitHub accepted it.
    pub fork_wait: ForkWait,
}

impl GitHubClientConfig {
    /// `api_url` and `auth` with the default timeout (30 s), retries and 5 min token margin.
    pub fn new(api_url: impl Into<String>, auth: GitHubAuth) -> Self {
        GitHubClientConfig {
            api_url: api_url.into(),
            auth,
            timeout: Duration::from_secs(30),
            retry: RetryPolicy::default(),
            token_refresh_margin: Duration::from_secs(5 * 60),
            fork_wait: ForkWait::default(),
        }
    }
}

/// How requests on a repository are authorised.
enum ClientAuth {
    Token(SecretString),
    App(Box<AppAuth>),
}

/// A GitHub (or GitHub Enterprise Server) REST client implementing [`Forge`].
pub struct GitHubClient {
    transport: Transport,
    auth: ClientAuth,
    bot: OnceCell<ForgeUser>,
    fork_wait: ForkWait,
}

impl GitHubClient {
    pub fn new(config: GitHubClientConfig) -> Result<GitHubClient, ForgeError> {
        let auth = match config.auth {
            GitHubAuth::Token(token) => {
                if token.expose_secret().trim().is_empty() {
                    return Err(ForgeError::Configuration(
                        "github.token is empty: set a personal access token or a GitHub App".into(),
                    ));
                }
                ClientAuth::Token(token)
            }
            GitHubAuth::App {
                app_id,
                private_key_pem,
            } => ClientAuth::App(Box::new(AppAuth::new(
                app_id,
                &private_key_pem,
                config.token_refresh_margin,
                "the GitHub App private key",
            )?)),
        };
        Ok(GitHubClient {
            transport: Transport::new(&config.api_url, config.timeout, config.retry)?,
            auth,
            bot: OnceCell::new(),
            fork_wait: config.fork_wait,
        })
    }

    /// The client the service configuration asks for: the App when `app_id` or
    /// `private_key_path` is set, else the token; `None` when neither is.
    pub fn from_config(section: &GitHubSection) -> Result<Option<GitHubClient>, ForgeError> {
        let Some(auth) = auth_from_config(section)? else {
            return Ok(None);
        };
        let api_url = match section.api_url.trim() {
            "" => DEFAULT_API_URL.to_owned(),
            url => url.to_owned(),
        };
        let mut config = GitHubClientConfig::new(api_url, auth);
        if section.request_timeout_secs > 0 {
            config.timeout = Duration::from_secs(section.request_timeout_secs);
        }
        GitHubClient::new(config).map(Some)
    }

    /// The credential for requests on `repo`: the token, or the installation's token.
    async fn credential_for(&self, repo: &RepoRef) -> Result<Credential, ForgeError> {
        Ok(Credential::Token(self.token_for(repo).await?))
    }

    async fn token_for(&self, repo: &RepoRef) -> Result<SecretString, ForgeError> {
        match &self.auth {
            ClientAuth::Token(token) => Ok(token.clone()),
            ClientAuth::App(app) => app.installation_token(&self.transport, repo).await,
        }
    }

    /// One request on `repo`; any status comes back. A refused installation token is dropped
    /// from the cache so the next request fetches a new one.
    async fn send(
        &self,
        repo: &RepoRef,
        method: Method,
        target: String,
        body: Option<serde_json::Value>,
        action: &str,
    ) -> Result<(Answer, Credential), ForgeError> {
        let credential = self.credential_for(repo).await?;
        let repeat = if method == Method::POST && target.ends_with("/comments") {
            Repeat::NotAfterTimeout
        } else {
            Repeat::Safe
        };
        let answer = self
            .transport
            .send(Call {
                method,
                target,
                body,
                credential: &credential,
                action,
                repeat,
            })
            .await?;
        if answer.status.as_u16() == 401
            && let (ClientAuth::App(app), Credential::Token(token)) = (&self.auth, &credential)
        {
            app.forget_token(token).await;
        }
        Ok((answer, credential))
    }

    /// One request on `repo` that must succeed (2xx).
    async fn send_ok(
        &self,
        repo: &RepoRef,
        method: Method,
        target: String,
        body: Option<serde_json::Value>,
        action: &str,
    ) -> Result<Answer, ForgeError> {
        let (answer, credential) = self.send(repo, method, target, body, action).await?;
        if answer.is_success() {
            Ok(answer)
        } else {
            Err(answer.into_error(action, &credential))
        }
    }

    async fn all_pages<T: serde::de::DeserializeOwned>(
        &self,
        repo: &RepoRef,
        first: String,
        action: &str,
    ) -> Result<Vec<T>, ForgeError> {
        let credential = self.credential_for(repo).await?;
        self.transport
            .get_all_pages(first, &credential, action)
            .await
    }

    async fn fetch_bot_user(&self) -> Result<ForgeUser, ForgeError> {
        let (target, credential, action) = match &self.auth {
            ClientAuth::Token(token) => (
                "/user",
                Credential::Token(token.clone()),
                "read the token's user",
            ),
            ClientAuth::App(app) => ("/app", app.jwt()?, "read the GitHub App"),
        };
        let answer = self
            .transport
            .send(Call {
                method: Method::GET,
                target: target.to_owned(),
                body: None,
                credential: &credential,
                action,
                repeat: Repeat::Safe,
            })
            .await?;
        if !answer.is_success() {
            return Err(answer.into_error(action, &credential));
        }
        Ok(match &self.auth {
            ClientAuth::Token(_) => answer.json::<wire::User>(action)?.into_neutral(),
            ClientAuth::App(_) => answer.json::<wire::App>(action)?.bot_user(),
        })
    }

    /// The open pull request of `repo` whose head is `branch` of `head_owner`'s repository (the
    /// repository's own owner, or the fork's), if any.
    async fn open_pull_for_branch(
        &self,
        repo: &RepoRef,
        head_owner: &str,
        branch: &str,
    ) -> Result<Option<ChangeRequest>, ForgeError> {
        let head = encode(&format!("{head_owner}:{branch}"));
        let action = format!(
            "find the open pull request of branch {branch} in {}",
            repo.owner_path
        );
        let first = format!(
            "/repos/{}/pulls?state=open&head={head}&per_page=100",
            repo_path(repo)?
        );
        let pulls: Vec<wire::PullRequest> = self.all_pages(repo, first, &action).await?;
        Ok(pulls
            .into_iter()
            .map(wire::PullRequest::into_neutral)
            .find(|pull| pull.head == branch))
    }

    /// Reviewers and labels on a pull request: worth asking for, not worth failing the job over.
    async fn decorate_pull_request(
        &self,
        repo: &RepoRef,
        pull: &ChangeRequest,
        request: &NewChangeRequest,
    ) {
        if let Err(err) = self
            .request_reviewers(repo, pull.number, &request.reviewers)
            .await
        {
            tracing::warn!(pull = pull.number, error = %err, "could not request reviewers");
        }
        if let Err(err) = self.add_labels(repo, pull.number, &request.labels).await {
            tracing::warn!(pull = pull.number, error = %err, "could not label the pull request");
        }
    }

    async fn request_reviewers(
        &self,
        repo: &RepoRef,
        number: u64,
        reviewers: &[String],
    ) -> Result<(), ForgeError> {
        if reviewers.is_empty() {
            return Ok(());
        }
        let (teams, users): (Vec<&String>, Vec<&String>) =
            reviewers.iter().partition(|name| name.contains('/'));
        let team_slugs: Vec<&str> = teams
            .iter()
            .filter_map(|team| team.split_once('/').map(|(_, slug)| slug))
            .collect();
        let action = format!(
            "request reviewers on pull request #{number} of {}",
            repo.owner_path
        );
        self.send_ok(
            repo,
            Method::POST,
            format!(
                "/repos/{}/pulls/{number}/requested_reviewers",
                repo_path(repo)?
            ),
            Some(json!({ "reviewers": users, "team_reviewers": team_slugs })),
            &action,
        )
        .await
        .map(drop)
    }

    async fn add_labels(
        &self,
        repo: &RepoRef,
        number: u64,
        labels: &[String],
    ) -> Result<(), ForgeError> {
        if labels.is_empty() {
            return Ok(());
        }
        let action = format!(
            "label #{number} of {} with {}",
            repo.owner_path,
            labels.join(", ")
        );
        self.send_ok(
            repo,
            Method::POST,
            format!("/repos/{}/issues/{number}/labels", repo_path(repo)?),
            Some(json!({ "labels": labels })),
            &action,
        )
        .await
        .map(drop)
    }
}

fn auth_from_config(section: &GitHubSection) -> Result<Option<GitHubAuth>, ForgeError> {
    let key_path = section.private_key_path.trim();
    match (section.app_id, key_path.is_empty()) {
        (0, true) => {}
        (0, false) => {
            return Err(ForgeError::Configuration(
                "github.private_key_path is set but github.app_id is not: set the App's id".into(),
            ));
        }
        (_, true) => {
            return Err(ForgeError::Configuration(
                "github.app_id is set but github.private_key_path is not: point it at the App's PEM key"
                    .into(),
            ));
        }
        (app_id, false) => {
            return Ok(Some(GitHubAuth::App {
                app_id,
                private_key_pem: read_private_key(Path::new(key_path))?,
            }));
        }
    }
    let token = section.token.expose_secret().trim();
    Ok((!token.is_empty()).then(|| GitHubAuth::Token(SecretString::from(token.to_owned()))))
}

fn read_private_key(path: &Path) -> Result<SecretSlice<u8>, ForgeError> {
    let bytes = std::fs::read(path).map_err(|err| {
        ForgeError::Configuration(format!(
            "github.private_key_path `{}` cannot be read: {err}",
            path.display()
        ))
    })?;
    if !bytes.windows(10).any(|window| window == b"-----BEGIN") {
        return Err(ForgeError::Configuration(format!(
            "github.private_key_path `{}` is not a PEM file (expected -----BEGIN RSA PRIVATE KEY-----)",
            path.display()
        )));
    }
    Ok(SecretSlice::from(bytes))
}

/// `owner/name` with each part percent-encoded, after checking `repo` is a GitHub repository.
fn repo_path(repo: &RepoRef) -> Result<String, ForgeError> {
    if repo.forge != ForgeKind::GitHub {
        return Err(ForgeError::Configuration(format!(
            "{} is not a GitHub repository; the GitHub client cannot reach it",
            repo.owner_path
        )));
    }
    match repo.owner_path.split('/').collect::<Vec<_>>().as_slice() {
        [owner, name] if !owner.is_empty() && !name.is_empty() => {
            Ok(format!("{}/{}", encode(owner), encode(name)))
        }
        _ => Err(ForgeError::Configuration(format!(
            "`{}` is not a GitHub repository path (expected owner/name)",
            repo.owner_path
        ))),
    }
}

/// The account that owns `repo` (`octocat` of `octocat/Hello-World`).
fn owner_of(repo: &RepoRef) -> Result<&str, ForgeError> {
    repo_path(repo)?;
    Ok(repo.owner_path.split('/').next().unwrap_or_default())
}

fn encode(segment: &str) -> String {
    utf8_percent_encode(segment, PATH_SEGMENT).to_string()
}

fn issue_action(verb: &str, repo: &RepoRef, issue: IssueNumber) -> String {
    format!("{verb} issue {issue} of {}", repo.owner_path)
}

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

/// Issues and pull requests share one number sequence and one comment API on GitHub.
fn thread_number(thread: Thread) -> IssueNumber {
    match thread {
        Thread::Issue(issue) => issue,
        Thread::ChangeRequest(number) => IssueNumber(number),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(forge: ForgeKind, owner_path: &str) -> RepoRef {
        RepoRef {
            forge,
            owner_path: owner_path.into(),
            clone_url: String::new(),
            default_branch: None,
        }
    }

    #[test]
    fn a_repository_path_without_an_owner_is_refused_by_name() {
        let err = repo_path(&repo(ForgeKind::GitHub, "hello-world")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "`hello-world` is not a GitHub repository path (expected owner/name)"
        );
    }

    #[test]
    fn a_gitlab_repository_is_refused_by_the_github_client() {
        let err = repo_path(&repo(ForgeKind::GitLab, "group/project")).unwrap_err();
        assert!(err.to_string().contains("not a GitHub repository"), "{err}");
    }

    #[test]
    fn label_names_are_percent_encoded_as_one_path_segment() {
        assert_eq!(encode("needs review/ui"), "needs%20review%2Fui");
        assert_eq!(encode("auto-fix"), "auto-fix");
    }

    #[test]
    fn backoff_doubles_up_to_its_ceiling() {
        let policy = RetryPolicy {
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
            ..RetryPolicy::default()
        };
        let waits: Vec<u128> = (1..=4).map(|n| policy.backoff(n).as_millis()).collect();
        assert_eq!(waits, [100, 200, 350, 350]);
    }
}
