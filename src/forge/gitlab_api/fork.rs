//! The bot user's fork of a project on GitLab: found among the project's forks it owns, or made
//! with `POST /projects/:id/fork` in its own namespace and waited for until its `import_status`
//! says the copy is done.

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{FORGE, GitLabClient, invalid};
use crate::forge::{Forge, ForgeError, ForgeKind, RepoRef};

/// A project as the projects and forks APIs show it: what a push and a merge request need.
#[derive(Debug, Deserialize)]
pub(super) struct Project {
    pub id: u64,
    pub path_with_namespace: String,
    pub http_url_to_repo: String,
    #[serde(default)]
    pub default_branch: Option<String>,
    pub namespace: Namespace,
    /// `none`, `scheduled`, `started`, `finished` or `failed`; a fork is usable once it is
    /// `finished` (or `none`: nothing was ever copied into it in the background).
    #[serde(default)]
    pub import_status: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Namespace {
    pub full_path: String,
}

impl Project {
    fn read(value: &Value, action: &str) -> Result<Project, ForgeError> {
        serde_json::from_value(value.clone()).map_err(|err| invalid(action)(err.to_string()))
    }

    fn into_repo_ref(self) -> RepoRef {
        RepoRef {
            forge: ForgeKind::GitLab,
            owner_path: self.path_with_namespace,
            clone_url: self.http_url_to_repo,
            default_branch: self.default_branch,
        }
    }
}

impl GitLabClient {
    /// The token user's fork of `repo` in its own namespace: the one it has, else a new one,
    /// returned once GitLab has finished copying it.
    pub(super) async fn find_or_create_fork(&self, repo: &RepoRef) -> Result<RepoRef, ForgeError> {
        let bot = self.bot_user().await?;
        let fork = match self.own_fork(repo, &bot.login).await? {
            Some(fork) => fork,
            None => self.create_fork(repo).await?,
        };
        if !fork.namespace.full_path.eq_ignore_ascii_case(&bot.login) {
            return Err(ForgeError::Rejected {
                forge: FORGE,
                action: format!("fork {}", repo.owner_path),
                status: 201,
                message: format!(
                    "GitLab made the fork {} outside {}'s own namespace",
                    fork.path_with_namespace, bot.login
                ),
            });
        }
        Ok(self.wait_for_fork(fork).await?.into_repo_ref())
    }

    /// The numeric id of `repo`, which a merge request from a fork names as its target.
    pub(super) async fn project_id(&self, repo: &RepoRef) -> Result<u64, ForgeError> {
        let action = format!("read the project {}", repo.owner_path);
        let reply = self.get(self.project_endpoint(repo, &[])?, &action).await?;
        Ok(Project::read(&reply.body, &action)?.id)
    }

    /// The fork of `repo` in `login`'s namespace among those the token's user owns.
    async fn own_fork(&self, repo: &RepoRef, login: &str) -> Result<Option<Project>, ForgeError> {
        let action = format!("list {login}'s forks of {}", repo.owner_path);
        let mut url = self.project_endpoint(repo, &["forks"])?;
        url.query_pairs_mut().append_pair("owned", "true");
        for value in self.all_pages(url, &action).await? {
            let project = Project::read(&value, &action)?;
            if project.namespace.full_path.eq_ignore_ascii_case(login) {
                return Ok(Some(project));
            }
        }
        Ok(None)
    }

    /// Forks `repo` into the token user's namespace (GitLab's default without a namespace).
    async fn create_fork(&self, repo: &RepoRef) -> Result<Project, ForgeError> {
        let action = format!("fork {}", repo.owner_path);
        let url = self.project_endpoint(repo, &["fork"])?;
        let reply = self
            .send_json(Method::POST, url, json!({}), &action)
            .await?;
        Project::read(&reply.body, &action)
    }

    /// Looks at the fork every `fork_wait.poll` until its copy is finished.
    async fn wait_for_fork(&self, mut fork: Project) -> Result<Project, ForgeError> {
        let action = format!("wait for the fork {} to be ready", fork.path_with_namespace);
        let looks = self.fork_wait.looks();
        for look in 1..=looks {
            match fork.import_status.as_deref() {
                None | Some("none" | "finished") => return Ok(fork),
                Some("failed") => {
                    return Err(ForgeError::Rejected {
                        forge: FORGE,
                        action,
                        status: 200,
                        message: "GitLab could not copy the repository into the fork \
                                  (`import_status: failed`)"
                            .into(),
                    });
                }
                Some(_) if look == looks => break,
                Some(_) => {}
            }
            tokio::time::sleep(self.fork_wait.poll).await;
            let id = fork.id.to_string();
            let reply = self.get(self.endpoint(&["projects", &id]), &action).await?;
            fork = Project::read(&reply.body, &action)?;
        }
        Err(ForgeError::Transient {
            forge: FORGE,
            action,
            message: format!(
                "its copy is still `{}` after {:?}",
                fork.import_status.unwrap_or_default(),
                self.fork_wait.limit
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Value {
        let path = format!(
            "{}/tests/data/gitlab/api/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    }

    #[test]
    fn the_recorded_forks_list_reads_as_a_finished_project_in_its_namespace() {
        let forks = fixture("list_forks.json");
        let fork = Project::read(&forks[0], "list forks").unwrap();
        assert_eq!(fork.namespace.full_path, "diaspora");
        assert_eq!(fork.import_status.as_deref(), Some("none"));
        let repo = fork.into_repo_ref();
        assert_eq!(repo.owner_path, "diaspora/diaspora-project-site");
        assert_eq!(
            repo.clone_url,
            "http://example.com/diaspora/diaspora-project-site.git"
        );
        assert_eq!(repo.default_branch.as_deref(), Some("main"));
    }

    #[test]
    fn the_recorded_project_reads_with_its_id() {
        let project = Project::read(&fixture("get_project.json"), "read").unwrap();
        assert_eq!(project.id, 3);
    }
}
