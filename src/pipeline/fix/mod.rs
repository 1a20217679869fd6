//! `autofix fix`: the whole pipeline on a local repository, driven stage by stage from here —
//! preflight, triage, plan, branch, setup, base, reproduce, edit ⇄ validate (repair) ⇄ audit, commit.
//!
//! Each stage is a file of this folder adding its methods to [`Job`]; this file holds the run's
//! frame (artifacts, `RESULT.json`) and the driver that calls the stages, in order.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use super::checks::{CheckRun, Verdict};
pub use super::dep_cache::DepCacheOptions;
use super::dep_cache::JobCaches;
use super::issue::Issue;
use super::plan::Plan;
use super::prompts::ProofShown;
use super::run_log::RunLog;
use super::triage::Triage;
use crate::edits::paths;
use crate::exec::StopSignal;
use crate::failure::{Failure, FailureCode, Stage};
use crate::git::{CommitSha, Workspace};
use crate::index::Ranking;
use crate::llm::LlmProvider;
use crate::telemetry::StageClock;

mod ask;
mod caches;
mod candidates;
mod choice;
mod commands;
mod commit;
mod edit;
mod options;
mod planning;
mod preflight;
mod reproduce;
mod summary;
mod tree;
mod validate;

pub use candidates::{CandidateLimits, CandidateReport};
pub use options::{Approval, CancelFlag, FixOptions, IssueInput, ProposedPlan, Revision};
use planning::revision_triage;
use preflight::{Ready, preflight};
pub use summary::FixSummary;

/// Rounds in which the planner may ask to see files or symbols before it plans.
pub const LOOKUP_ROUNDS: usize = 2;

/// Most bytes of a failing command's output quoted back to the model.
pub const FEEDBACK_TAIL_BYTES: usize = 6 * 1024;

/// Runs the pipeline. `Err` only when not even the artifact folder can be written.
pub async fn fix(options: &FixOptions, llm: &dyn LlmProvider) -> anyhow::Result<FixSummary> {
    run(options, llm, Work::Fix).await
}

/// Validates a change made elsewhere — a change request's commits replayed onto a base that
/// moved — on the base `options.repo` has checked out: `files` (path → content, `None`: deleted)
/// are written over it, the checks run and are compared with the base's, and the work tree is
/// put back. The model is not asked anything. `Err` as for [`fix`].
pub async fn revalidate(
    options: &FixOptions,
    llm: &dyn LlmProvider,
    files: BTreeMap<String, Option<String>>,
) -> anyhow::Result<FixSummary> {
    run(options, llm, Work::Revalidate(files)).await
}

/// What a run does once preflight has passed.
enum Work {
    Fix,
    Revalidate(BTreeMap<String, Option<String>>),
}

/// A run's frame: the artifact folder, the run log, preflight, the work, and `RESULT.json`.
async fn run(
    options: &FixOptions,
    llm: &dyn LlmProvider,
    work: Work,
) -> anyhow::Result<FixSummary> {
    let workspace = Workspace::open(&options.repo);
    let issue = match &options.issue {
        IssueInput::Given(issue) => Ok(issue.clone()),
        IssueInput::File(path) => Issue::read(path),
    };
    let number = options
        .issue_number
        .or(issue.as_ref().ok().and_then(|issue| issue.number));
    let name = run_name(number, chrono::Local::now());
    let artifacts = match (&options.artifacts, &workspace) {
        (Some(dir), _) => dir.clone(),
        (None, Ok(ws)) => ws.git_dir().join("autofix").join("runs").join(name),
        (None, Err(_)) => std::env::temp_dir().join("autofix-runs").join(name),
    };
    let log = RunLog::create(&artifacts, options.redactor.clone())?;
    if log.dir() != artifacts {
        log.line(&format!(
            "artifacts: {} holds another run; this run's are in {}",
            artifacts.display(),
            log.dir().display()
        ));
    }
    let mut summary = FixSummary::new(log.dir().to_path_buf());
    let spent_before = options.spend.spent();
    let pricing = options.spend.pricing();
    summary.price_unknown = !pricing.known();
    log.line(&format!("price: {}", pricing.describe()));
    let clock = options.stages.start(Stage::Preflight);
    let outcome = match finish_stage(clock, preflight(options, issue, workspace, &log)) {
        Err(failed) => Err(failed),
        Ok(ready) => {
            if let Some(max_usd) = ready.config.budget.max_usd
                && let Some(lowered) = options.spend.limit_job(max_usd)
            {
                log.line(&lowered);
            }
            let mut job = Job::new(options, llm, &ready, &log, &mut summary);
            match work {
                Work::Fix => job.run().await,
                Work::Revalidate(files) => {
                    let outcome = job.revalidate(files).await;
                    if let Err(err) = ready.workspace.rollback(&ready.baseline) {
                        log.line(&format!("rollback failed: {err}"));
                    }
                    outcome
                }
            }
        }
    };
    if let Err(failure) = outcome {
        log.line(&format!("FAILED {failure}"));
        summary.failure = Some(failure.with_output_tail(summary.last_failing_output.clone()));
    }
    summary.cost_usd = options.spend.spent() - spent_before;
    log.write_json("RESULT.json", &summary)?;
    Ok(summary)
}

/// The default artifact folder's name: `issue-<number>-<time>`, `issue-<time>` without a number.
fn run_name(number: Option<u64>, at: chrono::DateTime<chrono::Local>) -> String {
    let stamp = at.format("%Y%m%d-%H%M%S");
    match number {
        Some(number) => format!("issue-{number}-{stamp}"),
        None => format!("issue-{stamp}"),
    }
}

/// One job between its stages.
struct Job<'a> {
    options: &'a FixOptions,
    llm: &'a dyn LlmProvider,
    ready: &'a Ready,
    log: &'a RunLog,
    summary: &'a mut FixSummary,
    started: Instant,
    /// Number of LLM exchanges so far, for artifact names.
    round: u32,
    /// Every file the model's applied edits wrote, with its content (`None`: deleted): all
    /// that will be committed, whatever commands leave in the tree.
    applied: BTreeMap<String, Option<String>>,
    /// What `[[setup]]` left in the tree (dependencies): kept, never committed.
    setup_outputs: Vec<String>,
    /// The dependency caches this job holds, once setup has opened them.
    deps: Option<JobCaches>,
    /// The validation commands' results on the base commit, in command order — with the
    /// reproduction's tests added, once there is a reproduction.
    base_runs: Vec<CheckRun>,
    /// The reproduction the edit must make pass, as the edit prompt shows it.
    proof: Option<ProofShown>,
    /// The instruction files the reproduce, edit and repair prompts show: the root's, then
    /// those nearest the planned files once there is a plan.
    instructions: String,
    /// Stops the job's running command: set by a maintainer's cancel, or (for a candidate)
    /// once another candidate passed everything.
    stop: StopSignal,
    /// Which of the job's candidates this is (1-based), when it asks for several.
    candidate: Option<u32>,
    /// Tokens spent by the whole job, every candidate included: the budget's measure.
    tokens: Arc<AtomicU64>,
}

impl<'a> Job<'a> {
    fn new(
        options: &'a FixOptions,
        llm: &'a dyn LlmProvider,
        ready: &'a Ready,
        log: &'a RunLog,
        summary: &'a mut FixSummary,
    ) -> Job<'a> {
        if let Some(detection) = &ready.detection {
            summary.detected = detection.commands();
            summary.detected_left_out = detection.left_out.clone();
        }
        Job {
            options,
            llm,
            ready,
            log,
            summary,
            started: Instant::now(),
            round: 0,
            applied: BTreeMap::new(),
            setup_outputs: Vec::new(),
            deps: None,
            base_runs: Vec::new(),
            proof: None,
            instructions: ready.instructions.clone(),
            stop: options.cancel.signal(),
            candidate: None,
            tokens: Arc::new(AtomicU64::new(0)),
        }
    }
}

impl Job<'_> {
    /// Setup and the checks on the base, then `files` written over the base and the checks
    /// run again: an error when the change makes one worse.
    async fn revalidate(&mut self, files: BTreeMap<String, Option<String>>) -> Result<(), Failure> {
        finish_stage(self.start(Stage::Setup), self.setup().await)?;
        finish_stage(self.start(Stage::Base), self.check_base().await)?;
        self.reproduction_settled(None);
        let clock = self.start(Stage::Validate);
        let validated = match self.write_files(&files) {
            Ok(()) => self.validate().await,
            Err(failed) => Err(failed),
        };
        let validated = finish_stage(clock, validated);
        self.record_proof_outcome();
        let (judgement, _) = validated?;
        if let Some(worse) = judgement.first_worse() {
            let why = match &worse.verdict {
                Verdict::Worse { why } => why.clone(),
                _ => String::new(),
            };
            return Err(Failure::new(
                FailureCode::ValidationFailed,
                Stage::Validate,
                format!("`{}` fails on the new base: {why}", worse.command.join(" ")),
            ));
        }
        self.summary.validated = !self.ready.validation.is_empty();
        self.summary.changed_files = files.keys().cloned().collect();
        Ok(())
    }

    async fn run(&mut self) -> Result<(), Failure> {
        let repo_files = paths::project_files(self.ready.workspace.root()).map_err(|err| {
            Failure::new(
                FailureCode::Preflight,
                Stage::Preflight,
                format!("cannot list the files: {err}"),
            )
        })?;
        self.check_cancelled(Stage::Index)?;
        let clock = self.start(Stage::Index);
        let located = finish_stage(clock, Ok(self.locate(&repo_files)))?;
        let approved = match &self.options.approval {
            Approval::Approved(approved) => Some(approved.as_ref().clone()),
            _ => None,
        };
        let (triage, plan) = match approved {
            Some(ProposedPlan { triage, plan }) => {
                self.log
                    .line("plan: approved by a maintainer; triage and plan are not asked again");
                let plan = self.planned(plan)?;
                (triage, plan)
            }
            None => {
                let triage = match &self.options.revision {
                    Some(revision) => revision_triage(revision),
                    None => {
                        self.check_cancelled(Stage::Triage)?;
                        let clock = self.start(Stage::Triage);
                        finish_stage(clock, self.triage(&located).await)?
                    }
                };
                self.check_cancelled(Stage::Plan)?;
                let clock = self.start(Stage::Plan);
                let plan = finish_stage(clock, self.plan(&triage, &located, &repo_files).await)?;
                (triage, plan)
            }
        };
        if matches!(self.options.approval, Approval::Ask) && self.ready.config.approval.required {
            self.log
                .line("plan: waiting for a maintainer's approval ([approval] required = true)");
            self.summary.proposed = Some(ProposedPlan { triage, plan });
            return Ok(());
        }
        self.check_cancelled(Stage::Branch)?;
        let clock = self.start(Stage::Branch);
        let (branch, outcome) = finish_stage(clock, self.branch(&triage).await)?;
        let work_base = outcome.head().clone();
        let result = self
            .prove_and_fix(&triage, &plan, &located.ranking, &repo_files, &work_base)
            .await;
        match result {
            Ok(()) => {
                let clock = self.start(Stage::Commit);
                finish_stage(clock, self.commit(&triage, &plan, &branch, &work_base))
            }
            Err(failed) => {
                self.put_back(&branch, &outcome, &work_base);
                Err(failed)
            }
        }
    }

    /// On the feature branch: the repository's setup, its checks on the base, a test that
    /// reproduces the issue, then edits until the change is accepted.
    async fn prove_and_fix(
        &mut self,
        triage: &Triage,
        plan: &Plan,
        ranking: &Ranking,
        repo_files: &[String],
        work_base: &CommitSha,
    ) -> Result<(), Failure> {
        self.instructions = self.instructions_near(plan);
        finish_stage(self.start(Stage::Setup), self.setup().await)?;
        finish_stage(self.start(Stage::Base), self.check_base().await)?;
        if !self.reproduction_settled(Some(triage)) {
            self.check_cancelled(Stage::Reproduce)?;
            let clock = self.start(Stage::Reproduce);
            let reproduced = self.reproduce(plan, ranking, repo_files).await;
            finish_stage(clock, reproduced)?;
        }
        let count = self.candidate_count();
        if count > 1 {
            self.check_cancelled(Stage::Edit)?;
            return self.edit_candidates(count, plan, ranking, work_base).await;
        }
        let proof_files = self.applied.len();
        let fixed = self.edit_until_accepted(plan, ranking, work_base).await;
        self.record_proof_outcome();
        match fixed {
            Err(failed)
                if failed.code == FailureCode::ValidationFailed
                    && self.applied.len() > proof_files
                    && self.drafts_unproven() =>
            {
                self.log.line(&format!(
                    "edit: the change is not proven; kept for a draft ([candidates] on_unproven = \"draft\"): {}",
                    failed.reason
                ));
                self.summary.unproven = Some(failed.reason);
                Ok(())
            }
            other => other,
        }
    }

    /// Whether an unproven change is kept for a draft instead of failing the job: the
    /// repository asks for it and the caller can open one (the bot).
    fn drafts_unproven(&self) -> bool {
        self.ready.config.candidates.on_unproven == crate::config::repo::OnUnproven::Draft
            && self.options.candidates.drafts
    }
}

impl Job<'_> {
    /// The root's instruction files and those nearest each file `plan` changes (root to leaf,
    /// the nearest last), each nested one read named in the run log.
    fn instructions_near(&self, plan: &Plan) -> String {
        let planned: Vec<String> = plan
            .file_changes
            .iter()
            .map(|change| change.path.clone())
            .collect();
        let ready = self.ready;
        let found = ready.config.read_instructions_near(&ready.root, &planned);
        for file in &found.files {
            if file.path.contains('/') && !ready.config.instructions.files.contains(&file.path) {
                self.log.line(&format!(
                    "instructions: {} (nearest to the planned files)",
                    file.path
                ));
            }
        }
        crate::pipeline::sections::instruction_text(&found)
    }
}

/// Stops `clock` as `result` says: a failure with its code and reason.
fn finish_stage<T>(clock: StageClock, result: Result<T, Failure>) -> Result<T, Failure> {
    clock.finish(result, |failed| {
        format!("{} {}", failed.code, failed.reason)
    })
}

/// A file of the run that could not be written (or read) ends it at `stage`, saying which and
/// why (the whole chain of an `anyhow` error).
fn io_failure<E: std::fmt::Display>(stage: Stage) -> impl Fn(E) -> Failure {
    move |error| Failure::new(FailureCode::Preflight, stage, format!("{error:#}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn the_default_folder_is_named_by_the_issue_number_and_the_second_the_run_started() {
        let at = chrono::Local
            .with_ymd_and_hms(2026, 11, 26, 10, 15, 0)
            .unwrap();
        assert_eq!(run_name(Some(7), at), "issue-7-20261126-101500");
        assert_eq!(run_name(None, at), "issue-20261126-101500");
    }
}
