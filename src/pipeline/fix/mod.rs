//! `autofix fix`: the whole pipeline on a local repository, driven stage by stage from here —
//! preflight, triage, plan, branch, setup, base, reproduce, edit ⇄ validate (repair) ⇄ audit, commit.
//!
//! Each stage is a file of this folder adding its methods to [`Job`]; this file holds the run's
//! options and summary, its frame (artifacts, `RESULT.json`) and the driver that calls the stages.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use serde::Serialize;

use super::checks::{CheckRun, Comparison, Verdict};
pub use super::dep_cache::DepCacheOptions;
use super::dep_cache::JobCaches;
use super::issue::Issue;
use super::plan::Plan;
use super::prompts::ProofShown;
use super::proof::Reproduction;
use super::run_log::RunLog;
use super::settings::PipelineSettings;
use super::test_report::CommandReport;
use super::triage::Triage;
use crate::config::repo::LoadedRepoConfig;
use crate::detect::{DetectedCommand, LeftOut};
use crate::edits::paths;
use crate::exec::StopSignal;
use crate::failure::{Failure, FailureCode, Stage};
use crate::git::{CommitKind, CommitSha, Identity, Workspace};
use crate::index::Ranking;
use crate::llm::LlmProvider;
use crate::llm::spend::SpendGuard;
use crate::redact::Redactor;
use crate::telemetry::{StageClock, Stages};

mod ask;
mod caches;
mod candidates;
mod choice;
mod commands;
mod commit;
mod edit;
mod planning;
mod preflight;
mod reproduce;
mod tree;
mod validate;

pub use candidates::{CandidateLimits, CandidateReport};
use planning::revision_triage;
pub use preflight::read_issue_file;
use preflight::{Ready, preflight};

/// Rounds in which the planner may ask to see files or symbols before it plans.
pub const LOOKUP_ROUNDS: usize = 2;

/// Most bytes of a failing command's output quoted back to the model.
pub const FEEDBACK_TAIL_BYTES: usize = 6 * 1024;

/// Where the issue comes from: a file (`autofix fix`) or the forge (the bot's worker).
pub enum IssueInput {
    File(PathBuf),
    Given(Issue),
}

/// A revision of an open change request: the work tree is checked out at its branch (a
/// person's commits on it included), the issue text carries what the reviewers asked, and the
/// run ends in one more commit on that branch. Triage is skipped: a maintainer asked.
#[derive(Debug, Clone)]
pub struct Revision {
    /// The type of the new commit: the change request's own.
    pub kind: CommitKind,
}

/// How the plan is agreed when `.autofix.toml` says `[approval] required = true`.
#[derive(Debug, Clone, Default)]
pub enum Approval {
    /// Plan approval does not apply (`autofix fix` on a person's own machine).
    #[default]
    NotAsked,
    /// Stop after triage and plan when the repository requires approval, returning them as
    /// [`FixSummary::proposed`].
    Ask,
    /// Edit to the triage and plan a maintainer approved, without asking for them again.
    Approved(Box<ProposedPlan>),
}

/// A triage and plan waiting for (or given) a maintainer's approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ProposedPlan {
    pub triage: Triage,
    pub plan: Plan,
}

/// Set from outside (a maintainer's `cancel`) to stop a run at its next stage boundary; a
/// command running then is stopped at once.
#[derive(Debug, Clone, Default)]
pub struct CancelFlag(StopSignal);

impl CancelFlag {
    pub fn cancel(&self) {
        self.0.stop();
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.is_stopped()
    }

    /// A signal the job's commands stop by: set by this cancel, or on its own.
    fn signal(&self) -> StopSignal {
        self.0.child()
    }
}

/// Everything one `autofix fix` needs besides the LLM.
pub struct FixOptions {
    pub repo: PathBuf,
    pub issue: IssueInput,
    /// Overrides the number in the issue file.
    pub issue_number: Option<u64>,
    /// The `Autofix-Job` trailer of the commit; `fix-<issue>` when not given.
    pub job_id: Option<String>,
    /// Artifact folder; by default `<git dir>/autofix/runs/issue-<number>-<time>`. Either way a
    /// folder another run holds is left alone and `<folder>-2` (`-3`, …) used instead.
    pub artifacts: Option<PathBuf>,
    pub identity: Identity,
    /// The service's settings for every run: time limits, output and prompt sizes, the sandbox.
    pub settings: PipelineSettings,
    /// Hides every secret the process knows from the artifacts and from what the model reads.
    pub redactor: Redactor,
    /// The job's cache folder: writable by `[[setup]]`, read-only to validation, named to both
    /// as `CACHE_DIR`. `None`: a folder beside the artifacts.
    pub cache_dir: Option<PathBuf>,
    /// The dependency caches kept between jobs on the repository (`exec.cache_max_bytes`).
    pub dep_cache: DepCacheOptions,
    /// The repository's configuration as the caller already read it from `repo`'s work tree,
    /// so a job reads `.autofix.toml` once; `None`: read at preflight.
    pub repo_config: Option<LoadedRepoConfig>,
    /// Where the checks' results on a base commit are cached; by default
    /// `<git dir>/autofix/baselines`.
    pub baseline_cache: Option<PathBuf>,
    /// Told as each stage starts and ends (a terminal, the metrics).
    pub stages: Stages,
    /// `Some`: revise the change request checked out in `repo` instead of fixing from scratch.
    pub revision: Option<Revision>,
    /// Checked at every stage boundary.
    pub cancel: CancelFlag,
    /// Whether the plan waits for a maintainer's approval, or was approved.
    pub approval: Approval,
    /// The reproduction the change request was opened with (a revision, a replay onto a new
    /// base): no new one is asked for; its tests run again, must pass, and are reported again.
    pub earlier_reproduction: Option<Reproduction>,
    /// The model's price and the job's spending caps: checked before every model call and
    /// told each answer's cost. Shared by every clone (concurrent candidates included).
    pub spend: SpendGuard,
    /// The service's limits on candidates (`candidates.max`, `exec.parallel_candidates`).
    pub candidates: CandidateLimits,
}

/// How the run ended, as written to `RESULT.json`.
#[derive(Debug, Clone, Serialize)]
pub struct FixSummary {
    pub committed: bool,
    /// Why the run ended without its change; `None` when it did not fail.
    #[serde(flatten, serialize_with = "failure_fields")]
    pub failure: Option<Failure>,
    pub branch: Option<String>,
    pub commit: Option<String>,
    pub subject: Option<String>,
    pub repairs: u32,
    pub reviews: u32,
    /// Answers that could not be used and were asked for once more.
    pub corrections: u32,
    pub validated: bool,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// What this run's model calls cost, in US dollars (0 with `price_unknown`).
    pub cost_usd: f64,
    /// The model has no known price: its calls counted as $0.
    pub price_unknown: bool,
    /// The plan's steps, the change's summary for people.
    pub plan_steps: Vec<String>,
    /// The files the commit changed, in path order.
    pub changed_files: Vec<String>,
    /// The last run of the validation commands (the rerun, for a command that failed once).
    pub validation: Vec<CommandReport>,
    /// Each validation command on the base commit and on the change, compared.
    pub checks: Vec<Comparison>,
    /// Tests that failed and then passed on an immediate rerun of the same tree.
    pub flaky: Vec<String>,
    /// The end of the output of the command that failed last (secrets redacted): what a
    /// failure of the run quotes.
    #[serde(skip)]
    pub last_failing_output: Option<String>,
    /// Commands that ran with network: every `[[setup]]` step and `network = true` validation,
    /// each as "name (`argv`)", or "`argv`" when its name is the command itself.
    pub networked_commands: Vec<String>,
    /// The checks found in the repository and used because it configures no `[[validate]]`,
    /// each with why; empty when the configuration's own checks ran.
    pub detected: Vec<DetectedCommand>,
    /// What detection saw but did not use, and why.
    pub detected_left_out: Vec<LeftOut>,
    pub artifacts: PathBuf,
    /// The triage and plan that wait for a maintainer's approval; nothing was edited.
    pub proposed: Option<ProposedPlan>,
    /// The tests that show the issue and how they fared, or why there are none; `None` when the
    /// run ended before the reproduce stage.
    pub reproduction: Option<Reproduction>,
    /// The candidates, when the job asked for several: each one's verdict, and which was chosen.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<CandidateReport>,
    /// The choice in one line for people ("3 candidates: #2 chosen — …").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidates_line: Option<String>,
    /// The service's `candidates.max`, when the repository asked for more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidates_lowered_to: Option<u32>,
    /// How long the candidates took side by side, and the sum of their validations' times.
    #[serde(skip_serializing_if = "is_zero")]
    pub candidates_wall_ms: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub candidates_validation_ms: u64,
    /// Time the validation commands took on the change, every round included.
    pub validation_ms: u64,
    /// Why the committed change is not proven: set only when `[candidates] on_unproven =
    /// "draft"` keeps it for a draft (the bot), instead of failing the job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unproven: Option<String>,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// How `RESULT.json` shows the failure, as it always has: `failure_code`, `failure_stage`,
/// `reason` and `failure_output_tail`, each null when the run did not fail.
fn failure_fields<S: serde::Serializer>(
    failure: &Option<Failure>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct FailureFields<'a> {
        failure_code: Option<FailureCode>,
        failure_stage: Option<Stage>,
        reason: Option<&'a str>,
        failure_output_tail: Option<&'a str>,
    }
    let failure = failure.as_ref();
    FailureFields {
        failure_code: failure.map(|failure| failure.code),
        failure_stage: failure.map(|failure| failure.stage),
        reason: failure.map(|failure| failure.reason.as_str()),
        failure_output_tail: failure.and_then(|failure| failure.output_tail.as_deref()),
    }
    .serialize(serializer)
}

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

impl FixSummary {
    /// Nothing done yet, artifacts in `artifacts`.
    fn new(artifacts: PathBuf) -> FixSummary {
        FixSummary {
            committed: false,
            failure: None,
            branch: None,
            commit: None,
            subject: None,
            repairs: 0,
            corrections: 0,
            reviews: 0,
            validated: false,
            input_tokens: 0,
            output_tokens: 0,
            cost_usd: 0.0,
            price_unknown: false,
            plan_steps: Vec::new(),
            changed_files: Vec::new(),
            validation: Vec::new(),
            checks: Vec::new(),
            flaky: Vec::new(),
            last_failing_output: None,
            networked_commands: Vec::new(),
            detected: Vec::new(),
            detected_left_out: Vec::new(),
            artifacts,
            proposed: None,
            reproduction: None,
            candidates: Vec::new(),
            candidates_line: None,
            candidates_lowered_to: None,
            candidates_wall_ms: 0,
            candidates_validation_ms: 0,
            validation_ms: 0,
            unproven: None,
        }
    }
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
