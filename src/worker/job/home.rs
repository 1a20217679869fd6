//! Where a job's branch lives: decided once (the repository itself, or the bot's fork, as
//! `forge.push_to` says; a change request already opened keeps its own), kept in the
//! checkpoint and recorded with the change request, so every push goes to the same place.

use crate::failure::Stage;
use crate::forge::{BranchHome, Forge, GitCredentials, PushTo, RepoRef};

use super::stop::{Stop, forge_stop};
use super::{JobRun, Request};

impl JobRun {
    /// The home of this job's branch, decided on first use. A job that works on the open change
    /// request of its issue (a `retry`, the change made again on a moved base) pushes where that
    /// change request's branch lives; any other goes where `forge.push_to` says, the bot's fork
    /// being created (once) when it has none.
    pub(super) async fn branch_home(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
    ) -> Result<BranchHome, Stop> {
        if let Some(home) = &self.checkpoint.home {
            return Ok(home.clone());
        }
        let home = match self.open_change_request_home().await? {
            Some(home) => home,
            None => match self.ctx.settings.push_to {
                PushTo::Base => BranchHome::Base,
                PushTo::Fork => BranchHome::Fork(
                    forge
                        .bot_fork(&request.repo)
                        .await
                        .map_err(forge_stop(Stage::Fetch))?,
                ),
            },
        };
        self.checkpoint.home = Some(home.clone());
        if home != BranchHome::Base {
            self.save(
                Stage::Fetch,
                &format!("the branch goes to {}", home.describe()),
            )
            .await?;
        }
        Ok(home)
    }

    /// Where the branch of the issue's open change request lives, when this job works on it.
    async fn open_change_request_home(&self) -> Result<Option<BranchHome>, Stop> {
        if !(self.checkpoint.retry || self.checkpoint.following) {
            return Ok(None);
        }
        let key = &self.job.key;
        let open = self.ctx.store.open_change_requests(&key.repo).await?;
        Ok(open
            .into_iter()
            .filter(|record| record.key.issue == key.issue)
            .max_by_key(|record| record.job)
            .map(|record| record.home))
    }

    /// The home already decided for this job's branch; a checkpoint from before homes were
    /// recorded pushed to the repository itself.
    pub(super) fn decided_home(&self) -> BranchHome {
        self.checkpoint.home.clone().unwrap_or(BranchHome::Base)
    }

    /// What git presents to `repo`, its token hidden from everything the job writes.
    pub(super) async fn git_credentials_for(
        &mut self,
        forge: &dyn Forge,
        repo: &RepoRef,
        stage: Stage,
    ) -> Result<GitCredentials, Stop> {
        let credentials = forge
            .git_credentials(repo)
            .await
            .map_err(forge_stop(stage))?;
        self.redactor.register(&credentials.token);
        Ok(credentials)
    }
}
