//! The GitHub REST client behind the neutral `Forge` trait: personal token or GitHub App auth,
//! octocrab as the transport, GitHub's JSON mapped to neutral types at this edge.
//!
//! `client_config` says what a client is built from, `operations` carries out the `Forge`
//! operations, `paths` names repositories and issues in URLs; the client and its requests are here.

mod auth;
mod client_config;
mod fork;
mod operations;
mod paths;
#[cfg(test)]
mod tests;
mod transport;
mod wire;

use http::Method;
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;
use tokio::sync::OnceCell;

use self::auth::AppAuth;
pub use self::client_config::{
    GitHubAuth, GitHubClientConfig, GitHubClientSettings, GitHubCredentials, RetryPolicy,
};
pub use self::fork::APP_CANNOT_FORK;
use self::paths::{encode, repo_path};
use self::transport::{Answer, Call, Credential, Repeat, Transport};
use super::{ChangeRequest, ForgeError, ForgeUser, ForkWait, NewChangeRequest, RepoRef};

/// The public GitHub API root; GitHub Enterprise Server uses `https://HOST/api/v3`.
pub const DEFAULT_API_URL: &str = "https://api.github.com";

/// The user name git presents with a GitHub token over HTTPS.
pub const GIT_USERNAME: &str = "x-access-token";

/// What GitHub's 422 says when the branch already has an open pull request.
const PULL_REQUEST_EXISTS: &str = "A pull request already exists";

/// How requests on a repository are authorised.
enum ClientAuth {
    Token(SecretString),
    App(Box<AppAuth>),
}

/// A GitHub (or GitHub Enterprise Server) REST client implementing [`Forge`](super::Forge).
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
