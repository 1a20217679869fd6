//! What a job tells the issue: the status comment edited in place as stages complete, and on
//! failure the report, the failed label and the deletion of a pushed branch.

use crate::failure::{Failure, Stage};
use crate::forge::{CommentId, Forge, ForgeError};
use crate::git::{BranchName, CommitSha};
use crate::store::{Finish, JobId};
use crate::worker::own_marks::Own;
use crate::worker::publish::{
    FailureReport, StatusOutcome, StatusView, Step, status_comment, status_marker,
};

use super::stop::{Stop, forge_stop, git_stop};
use super::{JobEnd, JobRun, Request};

impl JobRun {
    /// Publishes a failure: the status comment says where and why, the issue gets the failed
    /// label, and a pushed branch is deleted unless the repository keeps it.
    pub(super) async fn fail(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
        failed: Failure,
    ) -> JobEnd {
        tracing::warn!(job = self.job.id.0, stage = %failed.stage, code = %failed.code, reason = %failed.reason, "job failed");
        let keep = self
            .checkpoint
            .fixed
            .as_ref()
            .is_some_and(|fixed| fixed.keep_on_failure);
        let report = FailureReport {
            failure: Failure {
                code: failed.code,
                stage: failed.stage,
                reason: self.redactor.redact(&failed.reason),
                output_tail: failed
                    .output_tail
                    .as_deref()
                    .map(|tail| self.redactor.redact(tail)),
            },
            trigger_label: self.ctx.settings.trigger_label.clone(),
            branch_kept: keep
                .then(|| self.checkpoint.fixed.as_ref().map(|f| f.branch.clone()))
                .flatten()
                .filter(|_| self.checkpoint.pushed.is_some()),
        };
        self.checkpoint.failure = Some(report.clone());
        if let Err(stop) = self.save(failed.stage, "failure decided").await {
            return self.stopped_before_forge(stop);
        }
        let published = self.publish_failure(forge, request, &report, keep).await;
        // The job's stage stays the one that failed, whatever publishing the report did after it.
        let note = match &published {
            Ok(()) => "the failure is reported on the issue",
            Err(_) => "the failure could not be reported on the issue",
        };
        if let Err(stop) = self.event(report.failure.stage, note).await {
            return self.stopped_before_forge(stop);
        }
        match published {
            Ok(()) => JobEnd::Finished(Finish::Failed(report.failure)),
            // The job has ended; only its report is owed, and tried again on its own.
            Err(Stop::Retry(fault)) => JobEnd::FailedUnreported {
                failure: report.failure,
                why: fault.reason,
            },
            Err(Stop::Finished(finish)) => JobEnd::Finished(finish),
            // Never returned while publishing: the failure is decided and saved.
            Err(Stop::Drained) => JobEnd::Released,
            Err(Stop::Failed(other)) => {
                tracing::error!(job = self.job.id.0, reason = %other.reason, "could not publish the failure");
                let reason = format!(
                    "{} (and publishing it failed: {})",
                    report.failure.reason, other.reason
                );
                JobEnd::Finished(Finish::Failed(Failure {
                    reason,
                    ..report.failure
                }))
            }
        }
    }

    pub(super) async fn publish_failure(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
        report: &FailureReport,
        keep: bool,
    ) -> Result<(), Stop> {
        let stage = Stage::Publish;
        if let (Some(pushed), false) = (self.checkpoint.pushed.clone(), keep) {
            self.delete_pushed_branch(forge, request, &pushed).await?;
        }
        if self.checkpoint.status.job == JobId(0) {
            self.checkpoint.status = StatusView {
                job: self.job.id,
                requested_by: request.actor.login.clone(),
                forge: Some(request.repo.forge),
                ..StatusView::default()
            };
        }
        self.checkpoint.status.outcome = Some(StatusOutcome::Failed(report.clone()));
        self.publish_status(forge, request).await?;
        forge
            .add_label(
                &request.repo,
                request.issue,
                &self.ctx.settings.failed_label,
            )
            .await
            .map_err(forge_stop(stage))?;
        self.save(stage, "failure published").await
    }

    pub(super) async fn delete_pushed_branch(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
        pushed: &str,
    ) -> Result<(), Stop> {
        let stage = Stage::Publish;
        let Some(fixed) = self.checkpoint.fixed.clone() else {
            return Ok(());
        };
        let home = self.decided_home();
        let target = home.repo(&request.repo).clone();
        let credentials = self.git_credentials_for(forge, &target, stage).await?;
        let branch = BranchName::new(&fixed.branch).map_err(git_stop(stage))?;
        let expected = CommitSha::parse(pushed).map_err(git_stop(stage))?;
        crate::git::delete_remote_branch(&target.clone_url, &branch, expected, &credentials)
            .map_err(git_stop(stage))?;
        self.checkpoint.pushed = None;
        self.save(stage, &format!("deleted the pushed branch {branch}"))
            .await
    }

    /// Creates the status comment, or edits it in place once it exists.
    pub(super) async fn publish_status(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
    ) -> Result<(), Stop> {
        let text = self
            .redactor
            .redact(&status_comment(&self.checkpoint.status));
        let stage = Stage::Status;
        if self.checkpoint.status_comment.is_none() && self.job.attempts > 1 {
            self.checkpoint.status_comment = self.find_status_comment(forge, request).await?;
        }
        match self.checkpoint.status_comment {
            Some(id) => {
                let updated = forge
                    .update_comment(&request.repo, request.issue, CommentId(id), &text)
                    .await;
                match updated {
                    Ok(()) => Ok(()),
                    Err(ForgeError::NotFound { .. }) => {
                        // Someone deleted it: a new one keeps the issue informed.
                        self.checkpoint.status_comment = None;
                        self.create_status(forge, request, &text).await
                    }
                    Err(error) => Err(forge_stop(stage)(error)),
                }
            }
            None => self.create_status(forge, request, &text).await,
        }
    }

    pub(super) async fn create_status(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
        text: &str,
    ) -> Result<(), Stop> {
        let id = forge
            .create_comment(&request.repo, request.issue, text)
            .await
            .map_err(forge_stop(Stage::Status))?;
        self.checkpoint.status_comment = Some(id.0);
        self.save(Stage::Status, &format!("status comment {}", id.0))
            .await
    }

    /// After a crash between posting the status comment and saving its id, the comment is
    /// found by its hidden marker among the bot's own comments instead of being posted twice.
    pub(super) async fn find_status_comment(
        &self,
        forge: &dyn Forge,
        request: &Request,
    ) -> Result<Option<u64>, Stop> {
        let marker = status_marker(self.job.id);
        let bot = self
            .ctx
            .bot_user(forge)
            .await
            .map_err(forge_stop(Stage::Status))?;
        let comments = forge
            .comments(&request.repo, request.issue)
            .await
            .map_err(forge_stop(Stage::Status))?;
        let own = Own::new(forge.kind(), &bot);
        Ok(own.comment(&comments, &marker).map(|comment| comment.id.0))
    }

    pub(super) fn mark_done(&mut self, step: Step, detail: String) {
        let status = &mut self.checkpoint.status;
        status.done.retain(|(done, _)| *done != step);
        status.done.push((step, detail));
        status.current = Step::ALL
            .iter()
            .copied()
            .find(|candidate| !status.done.iter().any(|(done, _)| done == candidate));
    }
}
