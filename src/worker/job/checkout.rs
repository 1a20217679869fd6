//! What every job that works on a copy of the repository does first: the mirror brought up to
//! date, a fork's branches fetched into it, the default branch named, a fresh working-copy folder.

use std::path::PathBuf;

use crate::failure::Stage;
use crate::forge::{Forge, GitCredentials, RepoRef};
use crate::git::Mirror;

use super::prepare::mirror_key;
use super::stop::{Stop, failed_io, forge_stop, git_stop};
use super::{JobRun, Request, remove_dir_if_present};

impl JobRun {
    /// The repository's mirror, brought up to date with the forge.
    pub(super) fn synced_mirror(
        &self,
        request: &Request,
        credentials: &GitCredentials,
        stage: Stage,
    ) -> Result<Mirror, Stop> {
        self.ctx
            .mirrors
            .sync(
                &mirror_key(&request.repo),
                &request.repo.clone_url,
                credentials,
            )
            .map_err(git_stop(stage))
    }

    /// Fetches `fork`'s branches into `mirror`, with the credentials the forge gives for it.
    pub(super) async fn fetch_fork(
        &mut self,
        forge: &dyn Forge,
        mirror: &Mirror,
        fork: &RepoRef,
        stage: Stage,
    ) -> Result<(), Stop> {
        let credentials = self.git_credentials_for(forge, fork, stage).await?;
        mirror
            .fetch_fork(&fork.clone_url, &credentials)
            .map_err(git_stop(stage))
    }

    /// The repository's default branch: as the delivery named it, else as the forge says.
    pub(super) async fn default_branch(
        &self,
        forge: &dyn Forge,
        request: &Request,
        stage: Stage,
    ) -> Result<String, Stop> {
        match &request.repo.default_branch {
            Some(branch) => Ok(branch.clone()),
            None => forge
                .default_branch(&request.repo)
                .await
                .map_err(forge_stop(stage)),
        }
    }

    /// The job's working-copy folder, emptied of what an earlier attempt left.
    pub(super) fn fresh_worktree_dir(&self, stage: Stage) -> Result<PathBuf, Stop> {
        let worktree = self.job_dir().join("worktree");
        remove_dir_if_present(&worktree).map_err(|error| {
            failed_io(
                stage,
                format!("cannot clear {}: {error}", worktree.display()),
            )
        })?;
        Ok(worktree)
    }
}
