//! The bot user's fork of a repository on GitHub: found among its repositories, or created with
//! `POST /repos/{owner}/{repo}/forks` (202, made in the background) and waited for.

use http::Method;
use serde_json::json;

use super::{ClientAuth, GitHubClient, encode, repo_path, wire};
use crate::forge::{Forge, ForgeError, ForgeKind, RepoRef};

/// Why `forge.push_to = "fork"` cannot work with a GitHub App.
pub const APP_CANNOT_FORK: &str = "a GitHub App's installation token cannot create or own a \
    fork: the App's bot account has no user account for one";

impl GitHubClient {
    /// The bot user's fork of `repo`: its own when it has one, else the one GitHub makes now,
    /// once its default branch can be read.
    pub(super) async fn find_or_create_fork(&self, repo: &RepoRef) -> Result<RepoRef, ForgeError> {
        if let ClientAuth::App(_) = &self.auth {
            return Err(ForgeError::Configuration(APP_CANNOT_FORK.into()));
        }
        repo_path(repo)?;
        let bot = self.bot_user().await?;
        let name = repo.owner_path.split('/').nth(1).unwrap_or_default();
        let mine = RepoRef {
            forge: ForgeKind::GitHub,
            owner_path: format!("{}/{name}", bot.login),
            clone_url: String::new(),
            default_branch: None,
        };
        let fork = match self.repository(&mine).await? {
            Some(found) if found.is_fork_of(repo, &bot.login) => found,
            // Missing, or the name is taken by another repository (GitHub then names the fork
            // `name-1`): GitHub's answer names the fork either way.
            _ => self.create_fork(repo).await?,
        };
        if !fork.is_fork_of(repo, &bot.login) {
            return Err(ForgeError::Rejected {
                forge: "GitHub",
                action: format!("fork {}", repo.owner_path),
                status: 202,
                message: format!(
                    "GitHub answered with {}, which is not {}'s fork of it",
                    fork.full_name, bot.login
                ),
            });
        }
        let branch = fork.default_branch.clone();
        let fork = fork.into_repo_ref();
        self.wait_for_fork(&fork, &branch).await?;
        Ok(fork)
    }

    /// `repo` as GitHub shows it, or `None` when there is no such repository.
    async fn repository(&self, repo: &RepoRef) -> Result<Option<wire::ForkRepository>, ForgeError> {
        let action = format!("read repository {}", repo.owner_path);
        let target = format!("/repos/{}", repo_path(repo)?);
        let (answer, credential) = self.send(repo, Method::GET, target, None, &action).await?;
        match answer.status.as_u16() {
            404 => Ok(None),
            _ if answer.is_success() => Ok(Some(answer.json(&action)?)),
            _ => Err(answer.into_error(&action, &credential)),
        }
    }

    /// Asks GitHub for the bot's fork of `repo` with its default branch only (the bot's branches
    /// start from it). GitHub answers 202 at once, with the fork it is making or the one the
    /// user has already.
    async fn create_fork(&self, repo: &RepoRef) -> Result<wire::ForkRepository, ForgeError> {
        let action = format!("fork {}", repo.owner_path);
        let target = format!("/repos/{}/forks", repo_path(repo)?);
        let answer = self
            .send_ok(
                repo,
                Method::POST,
                target,
                Some(json!({ "default_branch_only": true })),
                &action,
            )
            .await?;
        answer.json(&action)
    }

    /// Waits until the fork's default branch can be read: GitHub copies a fork's git data in
    /// the background, and a push before that fails.
    async fn wait_for_fork(&self, fork: &RepoRef, branch: &str) -> Result<(), ForgeError> {
        let action = format!("wait for the fork {} to be ready", fork.owner_path);
        let branch_path: Vec<String> = branch.split('/').map(encode).collect();
        let target = format!(
            "/repos/{}/git/ref/heads/{}",
            repo_path(fork)?,
            branch_path.join("/")
        );
        let looks = self.fork_wait.looks();
        for look in 1..=looks {
            let (answer, credential) = self
                .send(fork, Method::GET, target.clone(), None, &action)
                .await?;
            match answer.status.as_u16() {
                // Not there yet: 404 while the repository or its ref is missing, 409 while its
                // git data is still empty.
                404 | 409 if look < looks => tokio::time::sleep(self.fork_wait.poll).await,
                404 | 409 => break,
                _ if answer.is_success() => return Ok(()),
                _ => return Err(answer.into_error(&action, &credential)),
            }
        }
        Err(ForgeError::Transient {
            forge: "GitHub",
            action,
            message: format!(
                "its branch {branch} is still missing after {:?}",
                self.fork_wait.limit
            ),
        })
    }
}
