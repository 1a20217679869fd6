//! One job from claim to end: check the request, post the status comment, fetch, fix, push, open
//! the change request — each stage saved in the job's checkpoint, so a rerun resumes, never repeats.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::WorkerContext;
use crate::config::repo::LoadedRepoConfig;
use crate::failure::{Failure, FailureCode, Stage};
use crate::forge::{Forge, ForgeUser, IssueNumber, RepoRef};
use crate::pipeline::fix::CancelFlag;
use crate::redact::Redactor;
use crate::store::{ClaimedJob, Finish};

mod cancel;
mod checkout;
mod checkpoint;
mod ci;
mod converse;
mod deliver;
mod follow;
mod gather;
mod home;
mod prepare;
mod purse;
mod report;
mod reproduction;
mod revise;
mod stop;

use cancel::CancelledBy;
pub use checkpoint::JobFacts;
use checkpoint::{Checkpoint, FixedChange, FollowPhase, Phase};
use gather::Work;
use stop::{Fault, Stop, finish_stage, forge_stop, invalid};

/// How a run of a job ended, for the pool to record.
#[derive(Debug)]
pub enum JobEnd {
    Finished(Finish),
    /// A transient fault (`reason`): run the job again later, from its checkpoint, and not
    /// before `not_before` (a rate limit's reset) when that is later than its backoff.
    RetryLater {
        reason: String,
        not_before: Option<DateTime<Utc>>,
    },
    /// The job failed, and the forge did not take its failure report (`why`).
    FailedUnreported {
        failure: Failure,
        why: String,
    },
    /// The server is stopping: the job stopped between two stages, to go back to the queue.
    Released,
}

/// The issue a job works on and who asked, as the delivery that created it said.
struct Request {
    repo: RepoRef,
    issue: IssueNumber,
    actor: ForgeUser,
}

/// One claimed job and what it needs.
pub struct JobRun {
    ctx: Arc<WorkerContext>,
    job: ClaimedJob,
    owner: String,
    checkpoint: Checkpoint,
    redactor: Redactor,
    /// Set when a maintainer cancels the running job; checked at every stage boundary.
    cancel: CancelFlag,
    /// Who cancelled, and the delivery that said so.
    cancelled_by: CancelledBy,
    /// `.autofix.toml` as this run read it from the fetched work tree: read once, used by the
    /// pipeline and for the change request.
    repo_config: Option<LoadedRepoConfig>,
}

impl JobRun {
    pub fn new(ctx: Arc<WorkerContext>, job: ClaimedJob, owner: String) -> JobRun {
        let checkpoint = job
            .checkpoint
            .as_deref()
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default();
        // What the job posts, stores or sends names its folders, never where the host keeps them.
        let job_dir = ctx.workdir.join("jobs").join(job.id.to_string());
        let mut redactor = ctx.redactor.clone();
        redactor.hide_folder(&job_dir.join("worktree"), "<work tree>");
        redactor.hide_folder(&job_dir, "<job folder>");
        JobRun {
            ctx,
            job,
            owner,
            checkpoint,
            redactor,
            cancel: CancelFlag::default(),
            cancelled_by: CancelledBy::default(),
            repo_config: None,
        }
    }

    /// Runs the job from its checkpoint to an end, with the ids of the deliveries it handled
    /// (any other that joined it is a follow-up's). A finished job's working copy (with whatever
    /// its validation commands built) is removed; its artifacts stay for the operator.
    pub async fn run(mut self) -> (JobEnd, Vec<String>) {
        let end = self.run_stages().await;
        if matches!(end, JobEnd::Finished(_) | JobEnd::FailedUnreported { .. }) {
            let worktree = self.job_dir().join("worktree");
            if let Err(error) = remove_dir_if_present(&worktree) {
                let dir = worktree.display();
                tracing::warn!(job = self.job.id.0, %dir, %error, "could not remove the finished job's working copy");
            }
        }
        let mut seen = self.checkpoint.seen.clone();
        seen.extend(self.cancelled_by.delivery());
        (end, seen)
    }

    async fn run_stages(&mut self) -> JobEnd {
        let work = match self.gather().await {
            Ok(work) => work,
            Err(stop) => return self.stopped_before_forge(stop),
        };
        let forge = match self.ctx.forge(work.repo().forge) {
            Some(forge) => forge,
            None => {
                return JobEnd::Finished(Finish::failed(
                    FailureCode::InvalidInput,
                    Stage::Worker,
                    format!(
                        "no {:?} client is configured (token or App): the job cannot run",
                        work.repo().forge
                    ),
                ));
            }
        };
        let _watch = self.watch_for_cancel(forge.clone());
        match work {
            Work::Fix(request) => {
                let outcome = self.stages(forge.as_ref(), &request).await;
                self.ended(forge.as_ref(), &request, outcome).await
            }
            Work::Talk(talk) => self.talk(forge.as_ref(), talk).await,
            Work::Follow(repo) => self.follow(forge.as_ref(), repo).await,
        }
    }

    /// Follows a moved default branch; when the change must be made again, the fix stages run
    /// for the issue (on the change request's branch) and the change request is told.
    async fn follow(&mut self, forge: &dyn Forge, repo: RepoRef) -> JobEnd {
        let bot = match self.ctx.bot_user(forge).await {
            Ok(bot) => bot,
            Err(error) => return self.stopped_before_forge(forge_stop(Stage::Rebase)(error)),
        };
        let request = Request {
            repo,
            issue: self.job.key.issue,
            actor: bot,
        };
        if self.checkpoint.follow_phase() == FollowPhase::Comparing {
            match self.follow_base(forge, &request).await {
                Ok(follow::Followed::Done(finish)) => return JobEnd::Finished(finish),
                Ok(follow::Followed::Redo) => {}
                Err(stop) => return self.stopped_before_forge(stop),
            }
            self.checkpoint.following = true;
            self.checkpoint.retry = true;
            if let Err(stop) = self
                .save(Stage::Rebase, "making the change again on the new base")
                .await
            {
                return self.stopped_before_forge(stop);
            }
        }
        // Redoing: the fix's own phases, on the change request's branch.
        let outcome = self.stages(forge, &request).await;
        let succeeded = outcome.is_ok();
        let end = self.ended(forge, &request, outcome).await;
        if succeeded && let Err(stop) = self.say_redone(forge, &request).await {
            return self.stopped_before_forge(stop);
        }
        end
    }

    /// Tells the change request it was made again on the moved base.
    async fn say_redone(&mut self, forge: &dyn Forge, request: &Request) -> Result<(), Stop> {
        let Some(record) = self.change_request_record().await? else {
            return Ok(());
        };
        let branch = self.checkpoint.default_branch.clone().unwrap_or_default();
        let text = crate::worker::replies::redone(&branch);
        let thread = crate::forge::Thread::ChangeRequest(record.number);
        self.reply_on(forge, &request.repo, thread, "redone", &text)
            .await
    }

    /// How a fix (or a retry, or a revision) that ran its stages ended.
    async fn ended(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
        outcome: Result<(), Stop>,
    ) -> JobEnd {
        match outcome {
            Ok(()) => JobEnd::Finished(Finish::Succeeded),
            Err(Stop::Finished(finish)) => JobEnd::Finished(finish),
            Err(Stop::Retry(fault)) => match self.retry_or_fail(fault) {
                Ok(retry) => retry,
                Err(failed) => self.fail(forge, request, failed).await,
            },
            Err(Stop::Drained) => JobEnd::Released,
            Err(Stop::Failed(failed)) if failed.code == FailureCode::Cancelled => {
                self.cancelled(forge, request, failed).await
            }
            Err(Stop::Failed(failed)) => self.fail(forge, request, failed).await,
        }
    }

    fn stopped_before_forge(&self, stop: Stop) -> JobEnd {
        let failed = match stop {
            Stop::Retry(fault) => match self.retry_or_fail(fault) {
                Ok(retry) => return retry,
                Err(failed) => failed,
            },
            Stop::Drained => return JobEnd::Released,
            Stop::Finished(finish) => return JobEnd::Finished(finish),
            Stop::Failed(failed) => failed,
        };
        JobEnd::Finished(Finish::failed(
            failed.code,
            failed.stage,
            self.redactor.redact(&failed.reason),
        ))
    }

    /// A fault that may pass sends the job back to the queue, unless this was its last allowed
    /// attempt: then the fault, with its own code and words, is the job's failure.
    fn retry_or_fail(&self, fault: Fault) -> Result<JobEnd, Failure> {
        let attempts = self.job.attempts;
        if attempts < self.ctx.settings.max_attempts {
            return Ok(JobEnd::RetryLater {
                reason: self.redactor.redact(&fault.reason),
                not_before: fault.not_before,
            });
        }
        Err(fault.into_failure(attempts, self.job.id))
    }

    async fn stages(&mut self, forge: &dyn Forge, request: &Request) -> Result<(), Stop> {
        // A failure decided earlier is reported whatever the attempts.
        if let Some(report) = &self.checkpoint.failure {
            return Err(Stop::Failed(report.failure.clone()));
        }
        if self.job.attempts > self.ctx.settings.max_attempts {
            // A fault on the last allowed attempt ended the job there: only a crash (a panic,
            // a worker that died) brings it here, with the last fault any attempt recorded.
            let last = match &self.job.last_error {
                Some(error) => format!("; the last fault recorded: {error}"),
                None => String::new(),
            };
            return Err(Stop::Failed(Failure {
                stage: Stage::Worker,
                code: FailureCode::RetriesExhausted,
                reason: format!(
                    "the job was started {} times without finishing (crashes or lost workers{last}); \
                     history: `autofix jobs show {}`",
                    self.job.attempts - 1,
                    self.job.id
                ),
                output_tail: None,
            }));
        }
        let stages = self.ctx.stages();
        if self.checkpoint.phase() == Phase::Requested {
            let clock = stages.start(Stage::Authorize);
            finish_stage(clock, self.authorize(forge, request).await)?;
            self.stop_if_draining()?;
        }
        // Past the check of who asked, every step may need the repository's credentials.
        let credentials = forge
            .git_credentials(&request.repo)
            .await
            .map_err(forge_stop(Stage::Fetch))?;
        self.redactor.register(&credentials.token);
        loop {
            let phase = self.checkpoint.phase();
            match phase {
                // Decided, or checked, before the steps: no step leads back there.
                Phase::Failed | Phase::Requested => {
                    return Err(invalid(format!("the job went back to the {phase:?} phase")));
                }
                // Resumed after the plan was proposed: it waits, nothing more to do.
                Phase::AwaitingApproval => return self.publish_status(forge, request).await,
                Phase::Authorized => {
                    let clock = stages.start(Stage::Fetch);
                    let fetched = self.fetch(forge, request, &credentials).await;
                    let workspace = finish_stage(clock, fetched)?;
                    // The pipeline's own stages (triage, plan, edit, validate, …) are timed inside.
                    self.fix(request, &workspace).await?;
                    self.publish_status(forge, request).await?;
                    if self.checkpoint.phase() == Phase::AwaitingApproval {
                        return Ok(());
                    }
                    self.stop_if_draining()?;
                }
                Phase::Committed => {
                    let clock = stages.start(Stage::Push);
                    finish_stage(clock, self.push(forge, request).await)?;
                    self.publish_status(forge, request).await?;
                    self.stop_if_draining()?;
                }
                Phase::Pushed => {
                    let clock = stages.start(Stage::Open);
                    finish_stage(clock, self.open_change_request(forge, request).await)?;
                }
                Phase::Opened => return self.finish_success(forge, request).await,
            }
            if self.checkpoint.phase() == phase {
                return Err(invalid(format!(
                    "the job did not move past the {phase:?} phase"
                )));
            }
        }
    }

    /// The change request autofix opened for this job's issue, if it did.
    async fn change_request_record(
        &self,
    ) -> Result<Option<crate::store::ChangeRequestRecord>, Stop> {
        Ok(self
            .ctx
            .store
            .change_request_for_issue(&self.job.key)
            .await?)
    }

    /// Between two stages (everything before saved in the checkpoint): a stopping server's
    /// job ends here, to be resumed by another worker, and a cancelled one stops for good.
    fn stop_if_draining(&self) -> Result<(), Stop> {
        if self.cancel.is_cancelled() {
            return Err(Stop::Failed(Failure {
                stage: Stage::Worker,
                code: FailureCode::Cancelled,
                reason: "cancelled by a maintainer".into(),
                output_tail: None,
            }));
        }
        if self.ctx.draining() {
            return Err(Stop::Drained);
        }
        Ok(())
    }

    fn fixed(&self) -> Result<FixedChange, Stop> {
        self.checkpoint.fixed.clone().ok_or_else(|| {
            Stop::Retry(Fault::internal(
                Stage::Push,
                "the committed change is not recorded",
            ))
        })
    }

    /// Saves the checkpoint and notes the stage in the job's history; a lost lease ends this run.
    async fn save(&self, stage: Stage, message: &str) -> Result<(), Stop> {
        let text = serde_json::to_string(&self.checkpoint).expect("the checkpoint serialises");
        let now = Utc::now();
        let store = &self.ctx.store;
        store
            .save_checkpoint(self.job.id, &self.owner, &text, now)
            .await?;
        store
            .record_stage(self.job.id, &self.owner, stage, message, now)
            .await?;
        Ok(())
    }

    async fn event(&self, stage: Stage, message: &str) -> Result<(), Stop> {
        self.ctx
            .store
            .record_stage(self.job.id, &self.owner, stage, message, Utc::now())
            .await?;
        Ok(())
    }

    fn job_dir(&self) -> PathBuf {
        self.ctx.workdir.join("jobs").join(self.job.id.to_string())
    }
}

fn remove_dir_if_present(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        removed => removed,
    }
}
