//! A default branch that moved: autofix's change request is left alone while it still merges
//! cleanly; otherwise its own commits are replayed onto the new base and validated again, or,
//! when they conflict or fail there, the change is made again on the new base.

use std::collections::BTreeMap;

use crate::failure::{FailureCode, Stage};
use crate::forge::{ChangeRequest, Forge, Thread};
use crate::git::{BranchName, CommitSha, GitError, Rebased, Workspace};
use crate::pipeline::fix::{self, Approval};
use crate::pipeline::proof::Reproduction;
use crate::store::{ChangeRequestRecord, Finish};
use crate::worker::own_marks::Own;
use crate::worker::replies;

use super::prepare::validation_detail;
use super::stop::{Fault, Stop, failed_io, forge_stop, git_stop};
use super::{JobRun, Request};

/// What following the base came to.
pub(super) enum Followed {
    Done(Finish),
    /// Replaying the commits did not work: make the change again on the new base.
    Redo,
}

impl JobRun {
    /// The change request the store recorded as `record`, as the forge shows it now: `None`
    /// when it is no longer open, or when the bot is not its author.
    pub(super) async fn own_open_change_request(
        &self,
        forge: &dyn Forge,
        request: &Request,
        record: &ChangeRequestRecord,
        stage: Stage,
    ) -> Result<Option<ChangeRequest>, Stop> {
        let bot = self.ctx.bot_user(forge).await.map_err(forge_stop(stage))?;
        let open = forge
            .open_change_requests(&request.repo)
            .await
            .map_err(forge_stop(stage))?;
        let own = Own::new(forge.kind(), &bot);
        Ok(own.change_request(&open, record).cloned())
    }

    /// Brings autofix's change request for the issue onto the moved default branch.
    pub(super) async fn follow_base(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
    ) -> Result<Followed, Stop> {
        let stage = Stage::Rebase;
        let Some(record) = self.change_request_record().await? else {
            return Ok(Followed::Done(Finish::Succeeded));
        };
        let open = self
            .own_open_change_request(forge, request, &record, stage)
            .await?;
        if open.is_none() {
            self.ctx.store.close_change_request(&record).await?;
            self.event(
                stage,
                "the change request is closed; the moved base does not concern it",
            )
            .await?;
            return Ok(Followed::Done(Finish::Succeeded));
        }
        let credentials = forge
            .git_credentials(&request.repo)
            .await
            .map_err(forge_stop(stage))?;
        self.redactor.register(&credentials.token);
        let default_branch = self.default_branch(forge, request, stage).await?;
        let mirror = self.synced_mirror(request, &credentials, stage)?;
        let head = match record.home.fork() {
            None => mirror.branch_tip(&record.branch),
            Some(fork) => {
                self.fetch_fork(forge, &mirror, fork, stage).await?;
                mirror.fork_branch_tip(&record.branch)
            }
        };
        let Some(head) = head.map_err(git_stop(stage))? else {
            return Ok(Followed::Done(Finish::Succeeded));
        };
        let worktree = self.fresh_worktree_dir(stage)?;
        let workspace = mirror
            .worktree(&worktree, &default_branch)
            .map_err(git_stop(stage))?;
        let base = workspace.head_commit().map_err(git_stop(stage))?;
        if workspace
            .merges_cleanly(&head, &base)
            .map_err(git_stop(stage))?
        {
            self.event(
                stage,
                &format!("{} still merges cleanly into {base}", record.branch),
            )
            .await?;
            return Ok(Followed::Done(Finish::Succeeded));
        }
        let commits = workspace
            .commits_since(&head, &base)
            .map_err(git_stop(stage))?;
        let theirs = commits.iter().filter(|(_, ours)| !ours).count();
        let thread = Thread::ChangeRequest(record.number);
        let short: String = base.as_str().chars().take(7).collect();
        if theirs > 0 {
            let word = &self.ctx.settings.command_word;
            let text = replies::cannot_rebase(&default_branch, &short, theirs, word);
            self.reply_on(
                forge,
                &request.repo,
                thread,
                &format!("base-{short}"),
                &text,
            )
            .await?;
            return Ok(Followed::Done(Finish::failed(
                FailureCode::GitConflict,
                stage,
                format!("the base moved and {theirs} commit(s) on the branch are a person's"),
            )));
        }
        let shas: Vec<CommitSha> = commits.into_iter().map(|(sha, _)| sha).collect();
        let rebased = workspace
            .replay_onto(&shas, &base, &self.ctx.identity)
            .map_err(git_stop(stage))?;
        let Rebased::Onto { tip, commits } = rebased else {
            self.event(
                stage,
                "the commits conflict with the new base; making the change again",
            )
            .await?;
            return Ok(Followed::Redo);
        };
        let (detail, reproduction) = match self.revalidate(request, &workspace, &base, &tip).await?
        {
            Some(revalidated) => revalidated,
            None => return Ok(Followed::Redo),
        };
        self.push_rebased(forge, request, &workspace, &record, (&head, &tip))
            .await?;
        let text = replies::rebased(
            &default_branch,
            &short,
            commits,
            &detail,
            reproduction.as_ref(),
        );
        self.reply_on(
            forge,
            &request.repo,
            thread,
            &format!("base-{short}"),
            &text,
        )
        .await?;
        Ok(Followed::Done(Finish::Succeeded))
    }

    /// The replayed change validated on the new base (the tests that reproduced the issue run
    /// again): how it went and the proof, or `None` when it fails there.
    async fn revalidate(
        &mut self,
        request: &Request,
        workspace: &Workspace,
        base: &CommitSha,
        tip: &CommitSha,
    ) -> Result<Option<(String, Option<Reproduction>)>, Stop> {
        let stage = Stage::Rebase;
        let mut files = BTreeMap::new();
        for path in workspace
            .paths_changed_between(base, tip)
            .map_err(git_stop(stage))?
        {
            let content = workspace.file_at(tip, &path).map_err(git_stop(stage))?;
            let content = match content {
                Some(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => Some(text),
                    // A binary file cannot be written back as the pipeline writes files.
                    Err(_) => return Ok(None),
                },
                None => None,
            };
            files.insert(path, content);
        }
        let issue = match self.checkpoint.issue.clone() {
            Some(issue) => issue,
            None => crate::pipeline::issue::Issue {
                number: Some(request.issue.0),
                title: format!(
                    "keep the change for issue {} on the moved base",
                    request.issue
                ),
                body: String::new(),
                labels: Vec::new(),
            },
        };
        let purse = self.purse(request).await?;
        let mut options = self.fix_options(
            request,
            workspace,
            issue,
            None,
            Approval::NotAsked,
            purse.clone(),
        );
        options.earlier_reproduction = self.earlier_reproduction().await?;
        let summary = fix::revalidate(&options, self.ctx.llm.as_ref(), files).await;
        self.book(&purse, 0.0).await?;
        let summary = summary.map_err(|error| failed_io(stage, format!("{error:#}")))?;
        if let Some(failure) = &summary.failure {
            self.event(
                stage,
                &format!(
                    "the replayed change fails on the new base: {}",
                    failure.reason
                ),
            )
            .await?;
            return Ok(None);
        }
        Ok(Some((validation_detail(&summary), summary.reproduction)))
    }

    /// Replaces the branch (all autofix's commits) with the replayed ones, if it is still at
    /// `head`.
    async fn push_rebased(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
        workspace: &Workspace,
        record: &ChangeRequestRecord,
        (head, tip): (&CommitSha, &CommitSha),
    ) -> Result<(), Stop> {
        let branch = BranchName::new(&record.branch).map_err(git_stop(Stage::Push))?;
        let home = record.home.repo(&request.repo).clone();
        let credentials = &self.git_credentials_for(forge, &home, Stage::Push).await?;
        let pushed = crate::git::push_branch(
            workspace,
            &home.clone_url,
            &branch,
            tip,
            Some(head.clone()),
            credentials,
        );
        match pushed {
            Ok(pushed) => {
                self.save(
                    Stage::Push,
                    &format!("pushed the rebased {pushed} to {branch}"),
                )
                .await
            }
            Err(GitError::RemoteBranchMoved { .. }) => Err(Stop::Retry(Fault::moved(
                Stage::Push,
                "the branch moved while it was rebased; following the base again",
            ))),
            Err(error) => Err(git_stop(Stage::Push)(error)),
        }
    }
}
