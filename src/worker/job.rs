//! One job from claim to end: check the request, post the status comment, fetch, fix, push, open
//! the change request — each stage saved in the job's checkpoint, so a rerun resumes, never repeats.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::Utc;
use serde::{Deserialize, Serialize};

use super::WorkerContext;
use super::authorize::{self, Verdict};
use super::publish::{
    ChangeRequestFacts, FailureReport, Refusal, StatusOutcome, StatusView, Step,
    change_request_body, refusal_comment, status_comment, status_marker,
};
use crate::config::repo::{PullRequestSection, RepoConfig};
use crate::failure::FailureCode;
use crate::forge::{
    BotEvent, CommentId, Forge, ForgeError, ForgeKind, ForgeUser, GitCredentials, IssueNumber,
    NewChangeRequest, RepoRef, github, gitlab,
};
use crate::git::{BranchName, CommitSha, GitError, Workspace};
use crate::pipeline::fix::{self, FixOptions, FixSummary, IssueInput};
use crate::pipeline::issue::Issue;
use crate::pipeline::test_report::CommandReport;
use crate::redact::Redactor;
use crate::store::{ClaimedJob, Finish, StoreError};

/// How a run of a job ended, for the pool to record.
#[derive(Debug)]
pub enum JobEnd {
    Finished(Finish),
    /// A transient fault: run the job again later, from its checkpoint.
    RetryLater(String),
}

/// What a job has done so far, saved after every stage (the store's opaque checkpoint).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Checkpoint {
    /// The request was checked and accepted.
    authorized: bool,
    /// The issue as the API reported it when the request was accepted.
    issue: Option<Issue>,
    status: StatusView,
    status_comment: Option<u64>,
    default_branch: Option<String>,
    fixed: Option<FixedChange>,
    /// The commit a push was started with: a tip equal to it on the remote is this job's own.
    push_intent: Option<String>,
    pushed: Option<String>,
    change_request: Option<(u64, String)>,
    /// A failure decided but perhaps not yet published.
    failure: Option<FailureReport>,
}

/// The committed change, with everything the change request needs once the worktree is gone.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct FixedChange {
    branch: String,
    commit: String,
    subject: String,
    plan_steps: Vec<String>,
    changed_files: Vec<String>,
    validation: Vec<CommandReport>,
    repairs: u32,
    input_tokens: u64,
    output_tokens: u64,
    pull_request: PullRequestSection,
    keep_on_failure: bool,
}

/// The labelled issue a job works on, as the delivery that created it said.
struct Request {
    repo: RepoRef,
    issue: IssueNumber,
    actor: ForgeUser,
}

/// A failure: the stage, the code, one line of reason, and what output explains it.
struct Failed {
    stage: String,
    code: FailureCode,
    reason: String,
    output_tail: Option<String>,
}

/// Why a stage stopped.
enum Stop {
    Failed(Failed),
    Retry(String),
    Finished(Finish),
}

impl From<StoreError> for Stop {
    fn from(error: StoreError) -> Self {
        Stop::Retry(format!("the job store failed: {error}"))
    }
}

fn forge_stop(stage: &'static str) -> impl Fn(ForgeError) -> Stop {
    move |error| {
        if error.is_retryable() {
            return Stop::Retry(error.to_string());
        }
        let code = match error {
            ForgeError::Unauthorized { .. } | ForgeError::Forbidden { .. } => {
                FailureCode::PermissionDenied
            }
            _ => FailureCode::ForgeError,
        };
        Stop::Failed(Failed {
            stage: stage.into(),
            code,
            reason: error.to_string(),
            output_tail: None,
        })
    }
}

fn git_stop(stage: &'static str) -> impl Fn(GitError) -> Stop {
    move |error| {
        Stop::Failed(Failed {
            stage: stage.into(),
            code: error.failure_code(),
            reason: error.to_string(),
            output_tail: None,
        })
    }
}

/// One claimed job and what it needs.
pub struct JobRun {
    ctx: Arc<WorkerContext>,
    job: ClaimedJob,
    owner: String,
    checkpoint: Checkpoint,
    redactor: Redactor,
}

impl JobRun {
    pub fn new(ctx: Arc<WorkerContext>, job: ClaimedJob, owner: String) -> JobRun {
        let checkpoint = job
            .checkpoint
            .as_deref()
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default();
        let redactor = ctx.redactor.clone();
        JobRun {
            ctx,
            job,
            owner,
            checkpoint,
            redactor,
        }
    }

    /// Runs the job from its checkpoint to an end. A finished job's working copy (with whatever
    /// its validation commands built) is removed; its artifacts stay for the operator.
    pub async fn run(mut self) -> JobEnd {
        let end = self.run_stages().await;
        if matches!(end, JobEnd::Finished(_)) {
            let worktree = self.job_dir().join("worktree");
            if let Err(reason) = remove_dir_if_present(&worktree) {
                tracing::warn!(job = self.job.id, %reason, "could not remove the finished job's working copy");
            }
        }
        end
    }

    async fn run_stages(&mut self) -> JobEnd {
        let request = match self.request().await {
            Ok(request) => request,
            Err(stop) => return self.stopped_before_forge(stop),
        };
        let forge = match self.ctx.forge(request.repo.forge) {
            Some(forge) => forge,
            None => {
                return JobEnd::Finished(Finish::Failed {
                    code: FailureCode::InvalidInput.to_string(),
                    error: format!(
                        "no {:?} client is configured (token or App): the job cannot run",
                        request.repo.forge
                    ),
                });
            }
        };
        let outcome = self.stages(forge.as_ref(), &request).await;
        match outcome {
            Ok(()) => JobEnd::Finished(Finish::Succeeded),
            Err(Stop::Finished(finish)) => JobEnd::Finished(finish),
            Err(Stop::Retry(reason)) => JobEnd::RetryLater(reason),
            Err(Stop::Failed(failed)) => self.fail(forge.as_ref(), &request, failed).await,
        }
    }

    fn stopped_before_forge(&self, stop: Stop) -> JobEnd {
        match stop {
            Stop::Retry(reason) => JobEnd::RetryLater(reason),
            Stop::Finished(finish) => JobEnd::Finished(finish),
            Stop::Failed(failed) => JobEnd::Finished(Finish::Failed {
                code: failed.code.to_string(),
                error: failed.reason,
            }),
        }
    }

    /// The delivery that created the job, parsed again.
    async fn request(&self) -> Result<Request, Stop> {
        let delivery = self.ctx.store.job_delivery(self.job.id).await?;
        let Some(delivery) = delivery else {
            return Err(invalid(format!(
                "job {} has no stored delivery to read its issue from",
                self.job.id
            )));
        };
        let label = &self.ctx.settings.trigger_label;
        let parsed = match delivery.forge.as_str() {
            "github" => github::parse_event(&delivery.event, &delivery.payload, label),
            "gitlab" => gitlab::parse_event(&delivery.event, &delivery.payload, label),
            other => {
                return Err(invalid(format!(
                    "delivery {} is from an unknown forge {other:?}",
                    delivery.id
                )));
            }
        };
        match parsed {
            Ok(BotEvent::IssueLabeled {
                repo, issue, actor, ..
            }) => Ok(Request { repo, issue, actor }),
            Ok(BotEvent::Ignored { reason }) => Err(invalid(format!(
                "delivery {} no longer asks for work: {reason}",
                delivery.id
            ))),
            Err(error) => Err(invalid(format!(
                "delivery {} cannot be read: {error}",
                delivery.id
            ))),
        }
    }

    async fn stages(&mut self, forge: &dyn Forge, request: &Request) -> Result<(), Stop> {
        if let Some(failure) = self.checkpoint.failure.clone() {
            return Err(Stop::Failed(Failed {
                stage: failure.stage.clone(),
                code: failure.code,
                reason: failure.reason,
                output_tail: failure.output_tail,
            }));
        }
        if self.job.attempts > self.ctx.settings.max_attempts {
            return Err(Stop::Failed(Failed {
                stage: "worker".into(),
                code: FailureCode::RetriesExhausted,
                reason: format!(
                    "the job was started {} times without finishing (crashes or transient faults); \
                     see `autofix jobs show {}`",
                    self.job.attempts - 1,
                    self.job.id
                ),
                output_tail: None,
            }));
        }
        if !self.checkpoint.authorized {
            self.authorize(forge, request).await?;
        }
        let credentials = forge
            .git_credentials(&request.repo)
            .await
            .map_err(forge_stop("fetch"))?;
        self.redactor.register(&credentials.token);
        if self.checkpoint.fixed.is_none() {
            let workspace = self.fetch(forge, request, &credentials).await?;
            self.fix(request, &workspace).await?;
            self.publish_status(forge, request).await?;
        }
        if self.checkpoint.pushed.is_none() {
            self.push(request, &credentials).await?;
            self.publish_status(forge, request).await?;
        }
        if self.checkpoint.change_request.is_none() {
            self.open_change_request(forge, request).await?;
        }
        self.finish_success(forge, request).await
    }

    async fn authorize(&mut self, forge: &dyn Forge, request: &Request) -> Result<(), Stop> {
        let stage = "authorize";
        let bot = self.ctx.bot_user(forge).await.map_err(forge_stop(stage))?;
        let verdict = authorize::check(forge, &request.repo, request.issue, &request.actor, &bot)
            .await
            .map_err(forge_stop(stage))?;
        let info = match verdict {
            Verdict::Proceed(info) => info,
            Verdict::Ignore(reason) => {
                self.event(stage, &format!("ignored: {reason}")).await?;
                return Err(Stop::Finished(Finish::Failed {
                    code: FailureCode::PermissionDenied.to_string(),
                    error: reason,
                }));
            }
            Verdict::Refuse(refusal) => return Err(self.refuse(forge, request, refusal).await),
        };
        let failed_label = &self.ctx.settings.failed_label;
        if info
            .labels
            .iter()
            .any(|label| label.eq_ignore_ascii_case(failed_label))
        {
            forge
                .remove_label(&request.repo, request.issue, failed_label)
                .await
                .map_err(forge_stop(stage))?;
        }
        self.checkpoint.authorized = true;
        self.checkpoint.status = StatusView {
            job: self.job.id,
            requested_by: request.actor.login.clone(),
            done: vec![(Step::Authorized, String::new())],
            current: Some(Step::Fetched),
            notes: Vec::new(),
            outcome: None,
        };
        self.checkpoint.issue = Some(Issue {
            number: Some(info.number.0),
            title: info.title,
            body: info.body,
            labels: info.labels,
        });
        self.publish_status(forge, request).await?;
        self.save(stage, "request accepted; status comment posted")
            .await
    }

    /// Posts the one polite refusal and ends the job.
    async fn refuse(&mut self, forge: &dyn Forge, request: &Request, refusal: Refusal) -> Stop {
        let text = refusal_comment(&refusal, &self.ctx.settings.trigger_label, self.job.id);
        if let Err(error) = forge
            .create_comment(&request.repo, request.issue, &self.redactor.redact(&text))
            .await
        {
            if error.is_retryable() {
                return Stop::Retry(error.to_string());
            }
            tracing::warn!(job = self.job.id, %error, "could not post the refusal comment");
        }
        let code = match refusal {
            Refusal::Bot { .. } | Refusal::NoPushRights { .. } => FailureCode::PermissionDenied,
            _ => FailureCode::InvalidInput,
        };
        Stop::Finished(Finish::Failed {
            code: code.to_string(),
            error: format!("refused: {}", refusal.summary()),
        })
    }

    /// The mirror brought up to date and a fresh worktree of the default branch for this job.
    async fn fetch(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
        credentials: &GitCredentials,
    ) -> Result<Workspace, Stop> {
        let stage = "fetch";
        let default_branch = match &request.repo.default_branch {
            Some(branch) => branch.clone(),
            None => forge
                .default_branch(&request.repo)
                .await
                .map_err(forge_stop(stage))?,
        };
        let key = mirror_key(&request.repo);
        let mirror = self
            .ctx
            .mirrors
            .sync(&key, &request.repo.clone_url, credentials)
            .map_err(git_stop(stage))?;
        let worktree = self.job_dir().join("worktree");
        remove_dir_if_present(&worktree).map_err(|reason| failed_io(stage, reason))?;
        let workspace = mirror
            .worktree(&worktree, &default_branch)
            .map_err(git_stop(stage))?;
        let head = workspace.head_commit().map_err(git_stop(stage))?;
        let short: String = head.to_string().chars().take(7).collect();
        match RepoConfig::load(workspace.root()) {
            Ok(loaded) => {
                if let Some(note) = loaded.defaults_note() {
                    self.checkpoint.status.notes.push(note);
                }
            }
            Err(error) => {
                return Err(Stop::Failed(Failed {
                    stage: stage.into(),
                    code: error.failure_code(),
                    reason: error.to_string(),
                    output_tail: None,
                }));
            }
        }
        self.checkpoint.default_branch = Some(default_branch.clone());
        self.mark_done(Step::Fetched, format!("`{default_branch}` at {short}"));
        self.publish_status(forge, request).await?;
        self.save(stage, &format!("worktree of {default_branch} at {head}"))
            .await?;
        Ok(workspace)
    }

    async fn fix(&mut self, request: &Request, workspace: &Workspace) -> Result<(), Stop> {
        let Some(issue) = self.checkpoint.issue.clone() else {
            return Err(Stop::Retry(
                "the issue text is not at hand after a restart; reading it again".into(),
            ));
        };
        let options = FixOptions {
            repo: workspace.root().to_path_buf(),
            issue: IssueInput::Given(issue),
            issue_number: Some(request.issue.0),
            job_id: Some(format!("autofix-job-{}", self.job.id)),
            artifacts: Some(
                self.job_dir()
                    .join("artifacts")
                    .join(format!("attempt-{}", self.job.attempts)),
            ),
            identity: self.ctx.identity.clone(),
            default_validate_timeout: self.ctx.settings.default_validate_timeout,
            output_limit: self.ctx.settings.output_limit,
            context_tokens: self.ctx.settings.context_tokens,
            redactor: self.redactor.clone(),
        };
        let summary = fix::fix(&options, self.ctx.llm.as_ref())
            .await
            .map_err(|reason| failed_io("fix", reason))?;
        let FixSummary {
            committed: true,
            branch: Some(branch),
            commit: Some(commit),
            subject: Some(subject),
            ..
        } = &summary
        else {
            return Err(Stop::Failed(Failed {
                stage: summary
                    .failure_stage
                    .clone()
                    .unwrap_or_else(|| "fix".into()),
                code: summary
                    .failure_code
                    .unwrap_or(FailureCode::ValidationFailed),
                reason: summary
                    .reason
                    .clone()
                    .unwrap_or_else(|| "the pipeline ended without a commit".into()),
                output_tail: summary.failure_output_tail.clone(),
            }));
        };
        let config = RepoConfig::load(workspace.root())
            .map(|loaded| loaded.config)
            .unwrap_or_default();
        let passed = summary.validation.len();
        let detail = format!("{passed} command(s) passed, {} repair(s)", summary.repairs);
        self.checkpoint.fixed = Some(FixedChange {
            branch: branch.clone(),
            commit: commit.clone(),
            subject: subject.clone(),
            plan_steps: summary.plan_steps.clone(),
            changed_files: summary.changed_files.clone(),
            validation: summary.validation.clone(),
            repairs: summary.repairs,
            input_tokens: summary.input_tokens,
            output_tokens: summary.output_tokens,
            pull_request: config.pull_request.clone(),
            keep_on_failure: config.branch.keep_on_failure,
        });
        self.mark_done(Step::Fixed, detail);
        self.save("fix", &format!("committed {commit} on {branch}: {subject}"))
            .await
    }

    /// Pushes the job's branch, replacing only a remote tip this job itself pushed before.
    async fn push(&mut self, request: &Request, credentials: &GitCredentials) -> Result<(), Stop> {
        let stage = "push";
        let fixed = self.fixed()?;
        let branch = BranchName::new(&fixed.branch).map_err(git_stop(stage))?;
        let workspace = Workspace::open(self.job_dir().join("worktree")).map_err(|_| {
            Stop::Retry("the job's worktree is gone; the change will be made again".into())
        });
        let workspace = match workspace {
            Ok(workspace) => workspace,
            Err(stop) => {
                self.checkpoint.fixed = None;
                self.save(stage, "worktree missing; redoing the fix")
                    .await?;
                return Err(stop);
            }
        };
        let url = &request.repo.clone_url;
        let tip =
            crate::git::remote_branch_tip(url, &branch, credentials).map_err(git_stop(stage))?;
        let ours = |sha: &CommitSha| {
            let sha = sha.to_string();
            Some(&sha) == self.checkpoint.push_intent.as_ref()
                || Some(&sha) == self.checkpoint.pushed.as_ref()
        };
        let expected = match tip {
            Some(tip) if ours(&tip) => Some(tip),
            Some(tip) if self.left_by_earlier_run(&workspace, &tip)? => {
                let note =
                    format!("Replaced the branch `{branch}` an earlier autofix run left at {tip}.");
                // A push retried after a restart finds the same stale tip: say it once.
                if !self.checkpoint.status.notes.contains(&note) {
                    self.checkpoint.status.notes.push(note);
                }
                Some(tip)
            }
            // Someone else's branch: the push is refused with `BRANCH_EXISTS`.
            Some(_) | None => None,
        };
        self.checkpoint.push_intent = Some(fixed.commit.clone());
        self.save(stage, &format!("pushing {} to {branch}", fixed.commit))
            .await?;
        let pushed = crate::git::push_branch(&workspace, url, &branch, expected, credentials)
            .map_err(git_stop(stage))?;
        self.checkpoint.pushed = Some(pushed.to_string());
        self.mark_done(Step::Pushed, format!("`{branch}`"));
        self.save(stage, &format!("pushed {pushed} to {branch}"))
            .await
    }

    /// Whether the remote branch at `tip` holds only commits of earlier autofix jobs (a kept branch
    /// of a failed run, or the branch of a closed or merged change request) and may be replaced.
    fn left_by_earlier_run(&self, workspace: &Workspace, tip: &CommitSha) -> Result<bool, Stop> {
        let Some(default_branch) = &self.checkpoint.default_branch else {
            return Ok(false);
        };
        let base = BranchName::new(default_branch).map_err(git_stop("push"))?;
        workspace
            .is_left_by_autofix(tip, &base)
            .map_err(git_stop("push"))
    }

    async fn open_change_request(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
    ) -> Result<(), Stop> {
        let stage = "open";
        let fixed = self.fixed()?;
        let base = self
            .checkpoint
            .default_branch
            .clone()
            .or_else(|| request.repo.default_branch.clone());
        let base = match base {
            Some(base) => base,
            None => forge
                .default_branch(&request.repo)
                .await
                .map_err(forge_stop(stage))?,
        };
        let body = change_request_body(&ChangeRequestFacts {
            job: self.job.id,
            issue: request.issue.0,
            subject: &fixed.subject,
            plan_steps: &fixed.plan_steps,
            changed_files: &fixed.changed_files,
            validation: &fixed.validation,
            repairs: fixed.repairs,
            input_tokens: fixed.input_tokens,
            output_tokens: fixed.output_tokens,
            notes: &self.checkpoint.status.notes,
        });
        let new = NewChangeRequest {
            title: fixed.subject.clone(),
            body: self.redactor.redact(&body),
            head: fixed.branch.clone(),
            base,
            draft: fixed.pull_request.draft,
            reviewers: fixed.pull_request.reviewers.clone(),
            labels: fixed.pull_request.labels.clone(),
        };
        let opened = forge
            .open_change_request(&request.repo, &new)
            .await
            .map_err(forge_stop(stage))?;
        let change = opened.change_request();
        self.checkpoint.change_request = Some((change.number, change.url.clone()));
        let word = change_request_word(request.repo.forge);
        self.mark_done(Step::Opened, change.url.clone());
        self.save(stage, &format!("{word} {} open", change.url))
            .await
    }

    async fn finish_success(&mut self, forge: &dyn Forge, request: &Request) -> Result<(), Stop> {
        let (_, url) = self
            .checkpoint
            .change_request
            .clone()
            .expect("finish_success runs once the change request is recorded");
        self.checkpoint.status.current = None;
        self.checkpoint.status.outcome = Some(StatusOutcome::Succeeded {
            change_request_url: url,
            change_request_word: change_request_word(request.repo.forge).to_owned(),
        });
        self.publish_status(forge, request).await?;
        self.save("done", "succeeded").await
    }

    /// Publishes a failure: the status comment says where and why, the issue gets the failed
    /// label, and a pushed branch is deleted unless the repository keeps it.
    async fn fail(&mut self, forge: &dyn Forge, request: &Request, failed: Failed) -> JobEnd {
        tracing::warn!(job = self.job.id, stage = %failed.stage, code = %failed.code, reason = %failed.reason, "job failed");
        let keep = self
            .checkpoint
            .fixed
            .as_ref()
            .is_some_and(|fixed| fixed.keep_on_failure);
        let report = FailureReport {
            stage: failed.stage.clone(),
            code: failed.code,
            reason: self.redactor.redact(&failed.reason),
            output_tail: failed
                .output_tail
                .as_deref()
                .map(|tail| self.redactor.redact(tail)),
            trigger_label: self.ctx.settings.trigger_label.clone(),
            branch_kept: keep
                .then(|| self.checkpoint.fixed.as_ref().map(|f| f.branch.clone()))
                .flatten()
                .filter(|_| self.checkpoint.pushed.is_some()),
        };
        self.checkpoint.failure = Some(report.clone());
        if let Err(stop) = self.save(&failed.stage, "failure decided").await {
            return self.stopped_before_forge(stop);
        }
        match self.publish_failure(forge, request, &report, keep).await {
            Ok(()) => JobEnd::Finished(Finish::Failed {
                code: report.code.to_string(),
                error: report.reason,
            }),
            Err(Stop::Retry(reason)) => JobEnd::RetryLater(reason),
            Err(Stop::Finished(finish)) => JobEnd::Finished(finish),
            Err(Stop::Failed(other)) => {
                tracing::error!(job = self.job.id, reason = %other.reason, "could not publish the failure");
                JobEnd::Finished(Finish::Failed {
                    code: report.code.to_string(),
                    error: format!(
                        "{} (and publishing it failed: {})",
                        report.reason, other.reason
                    ),
                })
            }
        }
    }

    async fn publish_failure(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
        report: &FailureReport,
        keep: bool,
    ) -> Result<(), Stop> {
        let stage = "publish";
        if let (Some(pushed), false) = (self.checkpoint.pushed.clone(), keep) {
            self.delete_pushed_branch(forge, request, &pushed).await?;
        }
        if self.checkpoint.status.job == 0 {
            self.checkpoint.status = StatusView {
                job: self.job.id,
                requested_by: request.actor.login.clone(),
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

    async fn delete_pushed_branch(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
        pushed: &str,
    ) -> Result<(), Stop> {
        let stage = "publish";
        let Some(fixed) = self.checkpoint.fixed.clone() else {
            return Ok(());
        };
        let credentials = forge
            .git_credentials(&request.repo)
            .await
            .map_err(forge_stop(stage))?;
        let branch = BranchName::new(&fixed.branch).map_err(git_stop(stage))?;
        let expected = CommitSha::parse(pushed).map_err(git_stop(stage))?;
        crate::git::delete_remote_branch(&request.repo.clone_url, &branch, expected, &credentials)
            .map_err(git_stop(stage))?;
        self.checkpoint.pushed = None;
        self.save(stage, &format!("deleted the pushed branch {branch}"))
            .await
    }

    /// Creates the status comment, or edits it in place once it exists.
    async fn publish_status(&mut self, forge: &dyn Forge, request: &Request) -> Result<(), Stop> {
        let text = self
            .redactor
            .redact(&status_comment(&self.checkpoint.status));
        let stage = "status";
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

    async fn create_status(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
        text: &str,
    ) -> Result<(), Stop> {
        let id = forge
            .create_comment(&request.repo, request.issue, text)
            .await
            .map_err(forge_stop("status"))?;
        self.checkpoint.status_comment = Some(id.0);
        self.save("status", &format!("status comment {}", id.0))
            .await
    }

    /// After a crash between posting the status comment and saving its id, the comment is
    /// found by its hidden marker instead of being posted twice.
    async fn find_status_comment(
        &self,
        forge: &dyn Forge,
        request: &Request,
    ) -> Result<Option<u64>, Stop> {
        let marker = status_marker(self.job.id);
        let comments = forge
            .comments(&request.repo, request.issue)
            .await
            .map_err(forge_stop("status"))?;
        Ok(comments
            .iter()
            .find(|comment| comment.body.contains(&marker))
            .map(|comment| comment.id.0))
    }

    fn mark_done(&mut self, step: Step, detail: String) {
        let status = &mut self.checkpoint.status;
        status.done.retain(|(done, _)| *done != step);
        status.done.push((step, detail));
        status.current = Step::ALL
            .iter()
            .copied()
            .find(|candidate| !status.done.iter().any(|(done, _)| done == candidate));
    }

    fn fixed(&self) -> Result<FixedChange, Stop> {
        self.checkpoint
            .fixed
            .clone()
            .ok_or_else(|| Stop::Retry("the committed change is not recorded".into()))
    }

    /// Saves the checkpoint and notes the stage in the job's history; a lost lease ends this run.
    async fn save(&self, stage: &str, message: &str) -> Result<(), Stop> {
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

    async fn event(&self, stage: &str, message: &str) -> Result<(), Stop> {
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

fn change_request_word(forge: ForgeKind) -> &'static str {
    match forge {
        ForgeKind::GitHub => "Pull request",
        ForgeKind::GitLab => "Merge request",
    }
}

/// `github/octocat/Hello-World`: where the repository's mirror lives under the cache.
fn mirror_key(repo: &RepoRef) -> String {
    let forge = match repo.forge {
        ForgeKind::GitHub => "github",
        ForgeKind::GitLab => "gitlab",
    };
    format!("{forge}/{}", repo.owner_path)
}

fn remove_dir_if_present(dir: &Path) -> Result<(), String> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(format!("cannot clear {}: {error}", dir.display())),
    }
}

fn failed_io(stage: &'static str, reason: String) -> Stop {
    Stop::Failed(Failed {
        stage: stage.into(),
        code: FailureCode::Preflight,
        reason,
        output_tail: None,
    })
}

fn invalid(reason: String) -> Stop {
    Stop::Failed(Failed {
        stage: "worker".into(),
        code: FailureCode::InvalidInput,
        reason,
        output_tail: None,
    })
}
