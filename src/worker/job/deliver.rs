//! A job's last stages: push the committed branch (replacing only what autofix itself left there)
//! and open the pull or merge request, then report success.

use crate::failure::Stage;
use crate::forge::{Forge, NewChangeRequest};
use crate::git::{BranchName, CommitSha, Workspace};
use crate::store::ChangeRequestRecord;
use crate::worker::publish::{ChangeRequestFacts, StatusOutcome, Step, change_request_body};

use super::stop::{Fault, Stop, forge_stop, git_stop};
use super::{JobRun, Request};

impl JobRun {
    /// Pushes the job's branch where it lives (the repository, or the bot's fork), replacing
    /// only a remote tip this job itself pushed before.
    pub(super) async fn push(&mut self, forge: &dyn Forge, request: &Request) -> Result<(), Stop> {
        let stage = Stage::Push;
        let home = self.branch_home(forge, request).await?;
        let target = home.repo(&request.repo).clone();
        let credentials = &self.git_credentials_for(forge, &target, stage).await?;
        let fixed = self.fixed()?;
        let branch = BranchName::new(&fixed.branch).map_err(git_stop(stage))?;
        let workspace = Workspace::open(self.job_dir().join("worktree")).map_err(|_| {
            Stop::Retry(Fault::internal(
                stage,
                "the job's worktree is gone; the change will be made again",
            ))
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
        let url = &target.clone_url;
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
        // The commit the checkpoint recorded, never whatever the branch points to now.
        let commit = CommitSha::parse(&fixed.commit).map_err(git_stop(stage))?;
        let pushed =
            crate::git::push_branch(&workspace, url, &branch, &commit, expected, credentials)
                .map_err(git_stop(stage))?;
        self.checkpoint.pushed = Some(pushed.to_string());
        let detail = match home.fork() {
            Some(fork) => format!("`{branch}` in the fork {}", fork.owner_path),
            None => format!("`{branch}`"),
        };
        self.mark_done(Step::Pushed, detail);
        self.save(stage, &format!("pushed {pushed} to {branch}"))
            .await
    }

    /// Whether the remote branch at `tip` holds only commits of earlier autofix jobs (a kept branch
    /// of a failed run, or the branch of a closed or merged change request) and may be replaced.
    pub(super) fn left_by_earlier_run(
        &self,
        workspace: &Workspace,
        tip: &CommitSha,
    ) -> Result<bool, Stop> {
        let Some(default_branch) = &self.checkpoint.default_branch else {
            return Ok(false);
        };
        let base = BranchName::new(default_branch).map_err(git_stop(Stage::Push))?;
        workspace
            .is_left_by_autofix(tip, &base)
            .map_err(git_stop(Stage::Push))
    }

    pub(super) async fn open_change_request(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
    ) -> Result<(), Stop> {
        let stage = Stage::Open;
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
            checks: &fixed.checks,
            repairs: fixed.repairs,
            input_tokens: fixed.input_tokens,
            output_tokens: fixed.output_tokens,
            notes: &self.checkpoint.status.notes,
            reproduction: fixed.reproduction.as_ref(),
            detected: &fixed.detected,
            cost: self.checkpoint.status.cost,
            candidates: fixed.candidates.as_deref(),
            unproven: fixed.unproven.as_deref(),
        });
        let home = self.decided_home();
        let new = NewChangeRequest {
            title: self.redactor.redact(&match &fixed.unproven {
                Some(_) => format!("[unproven] {}", fixed.subject),
                None => fixed.subject.clone(),
            }),
            body: self.redactor.redact(&body),
            head: fixed.branch.clone(),
            head_repo: home.fork().cloned(),
            base,
            draft: fixed.draft(),
            reviewers: fixed.pull_request.reviewers.clone(),
            labels: fixed.pull_request.labels.clone(),
        };
        let opened = forge
            .open_change_request(&request.repo, &new)
            .await
            .map_err(forge_stop(stage))?;
        let change = opened.change_request();
        // Remembered so that comments, reviews and checks on it find this issue.
        let record = ChangeRequestRecord {
            key: self.job.key.clone(),
            number: change.number,
            branch: fixed.branch.clone(),
            url: change.url.clone(),
            job: self.job.id,
            ci_repairs: 0,
            ci_head: None,
            home,
        };
        self.ctx
            .store
            .record_change_request(&record, chrono::Utc::now())
            .await?;
        self.checkpoint.change_request = Some((change.number, change.url.clone()));
        let word = request.repo.forge.change_request_name();
        self.mark_done(Step::Opened, change.url.clone());
        self.save(stage, &format!("{word} {} open", change.url))
            .await
    }

    pub(super) async fn finish_success(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
    ) -> Result<(), Stop> {
        let (_, url) = self
            .checkpoint
            .change_request
            .clone()
            .expect("finish_success runs once the change request is recorded");
        self.checkpoint.status.current = None;
        self.checkpoint.status.outcome = Some(StatusOutcome::Succeeded {
            change_request_url: url,
            change_request_word: request.repo.forge.change_request_name().to_owned(),
        });
        self.publish_status(forge, request).await?;
        self.save(Stage::Done, "succeeded").await
    }
}
