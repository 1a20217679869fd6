//! A job's first stages: is the request allowed, then a fresh worktree of the default branch and
//! the `autofix fix` pipeline run in it, ending in one commit on the job's branch.

use crate::config::repo::RepoConfig;
use crate::failure::{Failure, FailureCode, Stage};
use crate::forge::{Forge, GitCredentials, RepoRef};
use crate::git::Workspace;
use crate::llm::spend::SpendGuard;
use crate::pipeline::fix::{
    self, Approval, FixOptions, FixSummary, IssueInput, ProposedPlan, Revision,
};
use crate::pipeline::issue::Issue;
use crate::quote::{fenced, one_line};
use crate::store::Finish;
use crate::worker::authorize::{self, CheckError, Verdict};
use crate::worker::publish::{
    Cost, Refusal, ReproductionStatus, StatusOutcome, StatusView, Step, refusal_comment,
};

use super::checkpoint::FixedChange;
use super::stop::{Fault, Stop, failed_io, failure_of_run, forge_stop, git_stop};
use super::{JobRun, Request};

impl JobRun {
    pub(super) async fn authorize(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
    ) -> Result<(), Stop> {
        let stage = Stage::Authorize;
        let bot = self.ctx.bot_user(forge).await.map_err(forge_stop(stage))?;
        let retry = self.checkpoint.retry;
        let verdict = authorize::check(
            (forge, &self.ctx.store),
            &request.repo,
            request.issue,
            (&request.actor, &bot),
            retry,
            self.checkpoint.following,
        )
        .await
        .map_err(|error| match error {
            CheckError::Forge(error) => forge_stop(stage)(error),
            CheckError::Store(error) => Stop::from(error),
        })?;
        let info = match verdict {
            Verdict::Proceed(info) => info,
            Verdict::Ignore(reason) => {
                self.event(stage, &format!("ignored: {reason}")).await?;
                return Err(Stop::Finished(Finish::failed(
                    FailureCode::PermissionDenied,
                    stage,
                    reason,
                )));
            }
            Verdict::Refuse(refusal) => return Err(self.refuse(forge, request, refusal).await),
        };
        self.stop_if_over_daily_cap(forge, request).await?;
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
            forge: Some(request.repo.forge),
            done: vec![(Step::Authorized, String::new())],
            current: Some(Step::Fetched),
            notes: Vec::new(),
            outcome: None,
            reproduction: None,
            detected: Vec::new(),
            cost: None,
        };
        if !self.ctx.settings.pipeline.sandbox.is_confined() {
            self.checkpoint
                .status
                .notes
                .push(UNCONFINED_NOTE.to_owned());
        }
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
    pub(super) async fn refuse(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
        refusal: Refusal,
    ) -> Stop {
        let text = refusal_comment(&refusal, &self.ctx.settings.trigger_label, self.job.id);
        if let Err(error) = forge
            .create_comment(&request.repo, request.issue, &self.redactor.redact(&text))
            .await
        {
            if error.is_retryable() {
                return Stop::Retry(Fault::forge(Stage::Authorize, &error));
            }
            tracing::warn!(job = self.job.id.0, %error, "could not post the refusal comment");
        }
        let code = match refusal {
            Refusal::Bot { .. } | Refusal::NoPushRights { .. } => FailureCode::PermissionDenied,
            _ => FailureCode::InvalidInput,
        };
        Stop::Finished(Finish::failed(
            code,
            Stage::Authorize,
            format!("refused: {}", refusal.summary()),
        ))
    }

    /// The mirror brought up to date and a fresh worktree of the default branch for this job.
    pub(super) async fn fetch(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
        credentials: &GitCredentials,
    ) -> Result<Workspace, Stop> {
        let stage = Stage::Fetch;
        let default_branch = self.default_branch(forge, request, stage).await?;
        let mirror = self.synced_mirror(request, credentials, stage)?;
        // A branch an earlier run left in the bot's fork must be in the working copy too, so
        // the push can tell it from someone else's.
        if let Some(fork) = self.branch_home(forge, request).await?.fork() {
            self.fetch_fork(forge, &mirror, fork, stage).await?;
        }
        let worktree = self.fresh_worktree_dir(stage)?;
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
                self.repo_config = Some(loaded);
            }
            Err(error) => {
                return Err(Stop::Failed(Failure::new(
                    error.failure_code(),
                    stage,
                    error.to_string(),
                )));
            }
        }
        self.checkpoint.default_branch = Some(default_branch.clone());
        self.mark_done(Step::Fetched, format!("`{default_branch}` at {short}"));
        self.publish_status(forge, request).await?;
        self.save(stage, &format!("worktree of {default_branch} at {head}"))
            .await?;
        Ok(workspace)
    }

    pub(super) async fn fix(
        &mut self,
        request: &Request,
        workspace: &Workspace,
    ) -> Result<(), Stop> {
        let Some(issue) = self.checkpoint.issue.clone() else {
            return Err(Stop::Retry(Fault::internal(
                Stage::Fix,
                "the issue text is not at hand after a restart; reading it again",
            )));
        };
        let (issue, approval) = match (&self.checkpoint.approved, &self.checkpoint.replan) {
            (Some(approved), _) => (issue, Approval::Approved(Box::new(approved.clone()))),
            (None, Some((words, previous))) => {
                (replan_issue(&issue, words, previous), Approval::Ask)
            }
            (None, None) => (issue, Approval::Ask),
        };
        let purse = self.purse(request).await?;
        let options = self.fix_options(request, workspace, issue, None, approval, purse.clone());
        let summary = fix::fix(&options, self.ctx.llm.as_ref()).await;
        self.book(&purse, 0.0).await?;
        let summary = summary.map_err(|error| failed_io(Stage::Fix, format!("{error:#}")))?;
        self.checkpoint.status.cost = Some(Cost::of(&summary));
        if let Some(proposed) = summary.proposed.clone() {
            return self.propose(proposed).await;
        }
        // Shown whether the run goes on or fails (`REPRODUCTION_FAILED` says why in the list).
        self.checkpoint.status.reproduction =
            summary.reproduction.as_ref().map(ReproductionStatus::of);
        self.checkpoint.status.detected = summary.detected.clone();
        if let Some(max) = summary.candidates_lowered_to {
            let note = format!(
                "`[candidates] count` asks for more than this service's `candidates.max`: {max} candidates were asked for."
            );
            if !self.checkpoint.status.notes.contains(&note) {
                self.checkpoint.status.notes.push(note);
            }
        }
        let Some(branch) = summary.branch.clone().filter(|_| summary.committed) else {
            return Err(Stop::Failed(failure_of_run(&summary, Stage::Fix)));
        };
        let config = match &self.repo_config {
            Some(loaded) => loaded.config.clone(),
            None => RepoConfig::load(workspace.root())
                .map(|loaded| loaded.config)
                .unwrap_or_default(),
        };
        let asked_by = if summary.detected.is_empty() {
            "as `.autofix.toml` asks"
        } else {
            "to install what the repository declares"
        };
        for command in &summary.networked_commands {
            let note = format!("{command} ran with network access, {asked_by}.");
            if !self.checkpoint.status.notes.contains(&note) {
                self.checkpoint.status.notes.push(note);
            }
        }
        let detail = validation_detail(&summary);
        // A retry lands on the branch of the change request it replaces, so that one is
        // updated instead of a second one opened.
        let branch = match self.checkpoint.retry {
            true => self
                .ctx
                .store
                .change_request_for_issue(&self.job.key)
                .await?
                .map_or(branch, |record| record.branch),
            false => branch,
        };
        let fixed = FixedChange::committed(
            &summary,
            &branch,
            config.pull_request.clone(),
            config.branch.keep_on_failure,
        )
        .ok_or_else(|| Stop::Failed(failure_of_run(&summary, Stage::Fix)))?;
        let message = format!("committed {} on {branch}: {}", fixed.commit, fixed.subject);
        self.checkpoint.fixed = Some(fixed);
        self.mark_done(Step::Fixed, detail);
        self.save(Stage::Fix, &message).await
    }
}

impl JobRun {
    /// The pipeline's options for this job in `workspace`: a fix, or with `revision` one more
    /// commit on a change request's branch.
    pub(super) fn fix_options(
        &self,
        request: &Request,
        workspace: &Workspace,
        issue: Issue,
        revision: Option<Revision>,
        approval: Approval,
        spend: SpendGuard,
    ) -> FixOptions {
        let settings = &self.ctx.settings.pipeline;
        FixOptions {
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
            settings: settings.clone(),
            redactor: self.redactor.clone(),
            cache_dir: Some(self.job_dir().join("cache")),
            dep_cache: settings.dep_cache(
                Some(self.ctx.workdir.join("deps")),
                mirror_key(&request.repo),
            ),
            repo_config: self.repo_config.clone(),
            baseline_cache: Some(
                self.ctx
                    .workdir
                    .join("baselines")
                    .join(mirror_key(&request.repo)),
            ),
            stages: self.ctx.stages(),
            revision,
            cancel: self.cancel.clone(),
            approval,
            earlier_reproduction: None,
            spend,
            candidates: settings.candidate_limits(Some(self.job_dir().join("candidates")), true),
        }
    }
}

impl JobRun {
    /// Keeps the plan that waits for approval; the status comment shows it.
    async fn propose(&mut self, proposed: ProposedPlan) -> Result<(), Stop> {
        let plan = &proposed.plan;
        self.checkpoint.status.current = None;
        self.checkpoint.status.outcome = Some(StatusOutcome::AwaitingApproval {
            summary: plan.commit_summary.clone(),
            plan_steps: plan.plan_steps.clone(),
            files: plan
                .file_changes
                .iter()
                .map(|change| change.path.clone())
                .collect(),
            word: self.ctx.settings.command_word.clone(),
        });
        self.checkpoint.awaiting = Some(proposed);
        self.save(Stage::Plan, "the plan waits for a maintainer's approval")
            .await
    }
}

/// The issue as the planner reads it when a maintainer asked for another plan: their words,
/// and the plan they did not approve.
fn replan_issue(issue: &Issue, words: &str, previous: &ProposedPlan) -> Issue {
    let mut body = String::new();
    if !issue.body.trim().is_empty() {
        body.push_str("## The issue\n\n");
        body.push_str(&fenced("", &issue.body));
    }
    body.push_str("\n## A maintainer's words on the plan\n\n");
    body.push_str(&fenced("", words));
    body.push_str("\n## The plan they did not approve\n\n");
    for step in &previous.plan.plan_steps {
        body.push_str(&format!("- {}\n", one_line(step)));
    }
    let files: Vec<String> = previous
        .plan
        .file_changes
        .iter()
        .map(|change| one_line(&change.path))
        .collect();
    body.push_str(&format!("\nFiles: {}\n", files.join(", ")));
    Issue {
        body,
        ..issue.clone()
    }
}

/// `2 command(s) passed, 1 failing as on the base commit, 1 flaky test, 1 repair(s)`.
pub(super) fn validation_detail(summary: &FixSummary) -> String {
    let passed = summary.checks.iter().filter(|c| c.change.passed()).count();
    let as_before = summary.checks.len() - passed;
    let passed = if summary.checks.is_empty() {
        summary.validation.len()
    } else {
        passed
    };
    let mut detail = format!("{passed} command(s) passed");
    if as_before > 0 {
        detail.push_str(&format!(", {as_before} failing as on the base commit"));
    }
    if !summary.flaky.is_empty() {
        detail.push_str(&format!(", {} flaky test(s)", summary.flaky.len()));
    }
    detail.push_str(&format!(", {} repair(s)", summary.repairs));
    detail
}

/// Said in every status comment and pull request while the operator has turned the sandbox off.
pub(super) const UNCONFINED_NOTE: &str = "The repository's commands ran **unconfined**: this \
autofix runs with `exec.sandbox = \"none\"`, so they could reach the network and the bot's \
files.";

/// `github/octocat/Hello-World`: where the repository's mirror lives under the cache.
pub(super) fn mirror_key(repo: &RepoRef) -> String {
    format!("{}/{}", repo.forge, repo.owner_path)
}
