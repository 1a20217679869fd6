//! Several candidate changes for one job: each asked for under its own number, applied in a
//! work tree of its own, validated in its own sandbox and repaired on its own, side by side.
//!
//! The choice among them is made by evidence in `choice.rs`; this file makes the trees, runs
//! the candidates (stopping the rest once one passes everything) and brings the chosen one home.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use futures_util::stream::{FuturesUnordered, StreamExt};
use serde::Serialize;

use super::choice::{self, CandidateEnd, Evidence};
use super::edit::Edited;
use super::preflight::Ready;
use super::{FixOptions, FixSummary, Job};
use crate::config::repo::ValidationCommand;
use crate::edits::paths::ProjectRoot;
use crate::exec::StopSignal;
use crate::failure::{Failure, FailureCode, Stage};
use crate::git::{CommitSha, Workspace};
use crate::index::Ranking;
use crate::llm::LlmProvider;
use crate::pipeline::checks::CheckRun;
use crate::pipeline::plan::Plan;
use crate::pipeline::prompts::ProofShown;
use crate::pipeline::run_log::RunLog;

/// The service's limits on a job's candidates.
#[derive(Debug, Clone)]
pub struct CandidateLimits {
    /// Most candidates per job (`candidates.max`); a repository asking for more gets this many.
    pub max: u32,
    /// Candidates validated at the same time (`exec.parallel_candidates`).
    pub parallel: usize,
    /// Where the candidates' work trees are made (a folder no sandbox is shown); `None`: the
    /// system's temporary folder.
    pub scratch: Option<PathBuf>,
    /// Whether the caller can open a draft for an unproven change (the bot); `autofix fix`
    /// fails either way.
    pub drafts: bool,
}

impl Default for CandidateLimits {
    fn default() -> Self {
        CandidateLimits {
            max: crate::config::repo::MAX_CANDIDATES,
            parallel: 2,
            scratch: None,
            drafts: false,
        }
    }
}

/// One candidate as `RESULT.json` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CandidateReport {
    pub number: u32,
    /// `passed`, `reproduction_failing`, `checks_worse`, `review_rejected`, `not_applied`,
    /// `stopped` or `failed`.
    pub verdict: String,
    pub chosen: bool,
    /// Lines the change adds and removes (the reproduction's tests not counted).
    pub changed_lines: usize,
    /// The earlier candidate whose change this one's equals, line for line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_as: Option<u32>,
    /// One line for people: what the evidence says.
    pub why: String,
}

/// What every candidate starts from: the job's state once the reproduction is settled.
struct Start {
    started: Instant,
    tokens: Arc<AtomicU64>,
    base_runs: Vec<CheckRun>,
    proof: Option<ProofShown>,
    instructions: String,
    /// The reproduction's files (path → content), written into each candidate's tree.
    proof_files: BTreeMap<String, Option<String>>,
    reproduction: Option<crate::pipeline::proof::Reproduction>,
    cache_home: PathBuf,
}

/// One candidate's own things: its tree, its artifacts, its summary and its stop signal.
struct Candidate {
    number: u32,
    ready: Ready,
    log: RunLog,
    summary: FixSummary,
    stop: StopSignal,
}

impl Job<'_> {
    /// The candidates this job asks for: the repository's count, lowered to the service's
    /// bound (said in the run log).
    pub(super) fn candidate_count(&mut self) -> u32 {
        let asked = self.ready.config.candidates.count.max(1);
        let max = self.options.candidates.max.max(1);
        if asked > max {
            self.log.line(&format!(
                "candidates: {asked} asked for, lowered to the service's candidates.max = {max}"
            ));
            self.summary.candidates_lowered_to = Some(max);
            return max;
        }
        asked
    }

    /// Asks for `count` candidates, each edited, validated and repaired in a work tree of its
    /// own, up to `exec.parallel_candidates` at once; once one passes everything the others
    /// stop. The best by evidence is written into the job's tree; without a proven one the
    /// job fails with its evidence.
    pub(super) async fn edit_candidates(
        &mut self,
        count: u32,
        plan: &Plan,
        ranking: &Ranking,
        work_base: &CommitSha,
    ) -> Result<(), Failure> {
        let parallel = self.options.candidates.parallel.max(1);
        self.log.line(&format!(
            "candidates: asking for {count}, validated {} at a time, each in a work tree of its own",
            parallel.min(count as usize)
        ));
        let scratch = self.candidate_scratch()?;
        let start = Start {
            started: self.started,
            tokens: self.tokens.clone(),
            base_runs: self.base_runs.clone(),
            proof: self.proof.clone(),
            instructions: self.instructions.clone(),
            proof_files: self.applied.clone(),
            reproduction: self.summary.reproduction.clone(),
            cache_home: self.ready.cache_home.clone(),
        };
        let mut candidates = Vec::new();
        for number in 1..=count {
            candidates.push(self.candidate(number, scratch.path(), &start)?);
        }
        let began = Instant::now();
        let ends = run_all(
            self.options,
            self.llm,
            &start,
            &mut candidates,
            parallel,
            (plan, ranking, work_base),
        )
        .await;
        let wall = began.elapsed();
        for candidate in &candidates {
            self.summary.input_tokens += candidate.summary.input_tokens;
            self.summary.output_tokens += candidate.summary.output_tokens;
            self.summary.corrections += candidate.summary.corrections;
        }
        // A maintainer's cancel stopped every candidate: that, not their evidence, ends the job.
        self.check_cancelled(Stage::Edit)?;
        let evidence: Vec<Evidence> = ends
            .iter()
            .map(|end| {
                let candidate = &candidates[end.number as usize - 1];
                choice::evidence(end, &candidate.summary, &candidate.ready, work_base)
            })
            .collect();
        for (end, evidence) in ends.iter().zip(&evidence) {
            let dir = &candidates[end.number as usize - 1].log;
            let _ = dir.write_text("diff", &evidence.diff);
        }
        let decision = choice::choose(&evidence, count, start.reproduction.as_ref());
        self.summary.candidates = decision.reports.clone();
        self.summary.candidates_wall_ms = wall.as_millis() as u64;
        self.summary.candidates_validation_ms = candidates
            .iter()
            .map(|candidate| validation_ms(&candidate.summary))
            .sum();
        self.summary.candidates_line = Some(decision.line.clone());
        self.log.line(&format!("candidates: {}", decision.line));
        let Some(best) = decision.best else {
            return Err(Failure::new(
                FailureCode::ValidationFailed,
                Stage::Edit,
                format!("no candidate could be applied: {}", decision.line),
            ));
        };
        let chosen = &candidates[best as usize - 1];
        let end = &ends[ends.iter().position(|end| end.number == best).unwrap_or(0)];
        self.take_candidate(chosen, end)?;
        if decision.proven {
            return Ok(());
        }
        let failure = end.result.clone().err().unwrap_or_else(|| {
            Failure::new(
                FailureCode::ValidationFailed,
                Stage::Validate,
                "the change is not proven",
            )
        });
        let reason = format!("{}; {}", decision.line, failure.reason);
        if self.drafts_unproven() {
            self.log.line(&format!(
                "candidates: none proven; the best is kept for a draft ([candidates] on_unproven = \"draft\"): {reason}"
            ));
            self.summary.unproven = Some(reason);
            return Ok(());
        }
        Err(Failure::new(
            if failure.code == FailureCode::Cancelled {
                FailureCode::ValidationFailed
            } else {
                failure.code
            },
            failure.stage,
            reason,
        ))
    }

    /// The folder the candidates' trees are made in, removed when the job is done with them.
    fn candidate_scratch(&self) -> Result<tempfile::TempDir, Failure> {
        let parent = self
            .options
            .candidates
            .scratch
            .clone()
            .unwrap_or_else(std::env::temp_dir);
        std::fs::create_dir_all(&parent)
            .and_then(|()| {
                tempfile::Builder::new()
                    .prefix("autofix-candidates-")
                    .tempdir_in(&parent)
            })
            .map_err(|err| {
                Failure::new(
                    FailureCode::Preflight,
                    Stage::Edit,
                    format!(
                        "cannot make a folder for the candidates in {}: {err}",
                        parent.display()
                    ),
                )
            })
    }

    /// Candidate `number`'s tree: a local clone of the job's tree at its work base (objects
    /// linked, not copied), with the job's local ignore list, and its own artifacts folder.
    fn candidate(&self, number: u32, scratch: &Path, start: &Start) -> Result<Candidate, Failure> {
        let failed = |reason: String| Failure::new(FailureCode::Preflight, Stage::Edit, reason);
        let ready = self.ready;
        let path = scratch.join(number.to_string());
        let source = ready.workspace.root().display().to_string();
        let workspace = Workspace::clone_local(&source, &path)
            .map_err(|err| failed(format!("cannot make candidate {number}'s work tree: {err}")))?;
        let exclude = ready.workspace.common_dir().join("info").join("exclude");
        if exclude.is_file() {
            let into = workspace.common_dir().join("info");
            std::fs::create_dir_all(&into)
                .and_then(|()| std::fs::copy(&exclude, into.join("exclude")).map(|_| ()))
                .map_err(|err| failed(format!("cannot copy the local ignore list: {err}")))?;
        }
        let root = ProjectRoot::new(workspace.root()).map_err(|err| failed(err.to_string()))?;
        let log = RunLog::create(
            &self.log.dir().join("candidates").join(number.to_string()),
            self.options.redactor.clone(),
        )
        .map_err(|error| failed(format!("{error:#}")))?;
        let mut summary = FixSummary::new(log.dir().to_path_buf());
        summary.reproduction = start.reproduction.clone();
        let cand_ready = Ready {
            workspace,
            root,
            issue: ready.issue.clone(),
            number: ready.number,
            config: ready.config.clone(),
            protected: ready.protected.clone(),
            setup: moved_to(&ready.setup, ready.workspace.root(), &path),
            validation: moved_to(&ready.validation, ready.workspace.root(), &path),
            detection: ready.detection.clone(),
            cache_dir: scratch.join(format!("{number}-cache")),
            cache_home: start.cache_home.clone(),
            instructions: ready.instructions.clone(),
            original_branch: ready.original_branch.clone(),
            baseline: ready.baseline.clone(),
        };
        Ok(Candidate {
            number,
            ready: cand_ready,
            log,
            summary,
            stop: self.stop.child(),
        })
    }

    /// Writes the chosen candidate's change into the job's tree and takes its evidence as the
    /// job's own.
    fn take_candidate(&mut self, chosen: &Candidate, end: &CandidateEnd) -> Result<(), Failure> {
        let edits: BTreeMap<String, Option<String>> = end
            .applied
            .iter()
            .filter(|(path, _)| !self.applied.contains_key(*path))
            .map(|(path, content)| (path.clone(), content.clone()))
            .collect();
        self.log.line(&format!(
            "candidates: #{} written into the work tree ({} file(s))",
            chosen.number,
            edits.len()
        ));
        self.write_files(&edits)?;
        let from = &chosen.summary;
        self.summary.repairs = from.repairs;
        self.summary.reviews = from.reviews;
        self.summary.validated = from.validated;
        self.summary.validation = from.validation.clone();
        self.summary.checks = from.checks.clone();
        self.summary.flaky = from.flaky.clone();
        self.summary.last_failing_output = from.last_failing_output.clone();
        for line in &from.networked_commands {
            if !self.summary.networked_commands.contains(line) {
                self.summary.networked_commands.push(line.clone());
            }
        }
        self.summary.reproduction = from.reproduction.clone();
        Ok(())
    }
}

/// Runs every candidate in this one task, `parallel` at a time (their commands run on the
/// blocking pool side by side). First each is set up and asked for its change; candidates whose
/// changes agree line for line are one change, validated once, the most common first. Once
/// one passes everything, the running ones are stopped and the rest not started. Returns each
/// candidate's end, in number order.
async fn run_all(
    options: &FixOptions,
    llm: &dyn LlmProvider,
    start: &Start,
    candidates: &mut [Candidate],
    parallel: usize,
    work: (&Plan, &Ranking, &CommitSha),
) -> Vec<CandidateEnd> {
    let stops: Vec<StopSignal> = candidates.iter().map(|c| c.stop.clone()).collect();
    let mut jobs: Vec<Job<'_>> = candidates
        .iter_mut()
        .map(|candidate| candidate.job(options, llm, start))
        .collect();
    let firsts = ask_every_first_answer(&mut jobs, start, parallel, work).await;
    let changes: Vec<Vec<String>> = jobs
        .iter()
        .map(|job| job.change_signature(start, work.2))
        .collect();
    let (order, same_as) = equal_changes_grouped(&changes);
    let results =
        validate_until_one_passes(&mut jobs, firsts, &order, &stops, parallel, work).await;
    let settled_by = results
        .iter()
        .position(|result| matches!(result, Some(Ok(()))));
    jobs.into_iter()
        .enumerate()
        .map(|(index, job)| {
            let number = index as u32 + 1;
            let result = match (same_as[index], &results[index]) {
                (Some(earlier), _) => Err(Failure::new(
                    FailureCode::ValidationFailed,
                    Stage::Validate,
                    format!("the same change as #{}, validated once", earlier + 1),
                )),
                (None, Some(result)) => result.clone(),
                (None, None) => Err(Failure::new(
                    FailureCode::Cancelled,
                    Stage::Validate,
                    match settled_by {
                        Some(winner) => format!("not validated: #{} passed first", winner + 1),
                        None => "not validated".to_string(),
                    },
                )),
            };
            job.finish(number, &result);
            CandidateEnd {
                number,
                result,
                applied: job.applied.clone(),
                proof_files: start.proof_files.keys().cloned().collect(),
                same_as: same_as[index].map(|earlier| earlier as u32 + 1),
            }
        })
        .collect()
}

/// Each candidate set up and its first answer applied, `parallel` at a time.
async fn ask_every_first_answer(
    jobs: &mut [Job<'_>],
    start: &Start,
    parallel: usize,
    (plan, ranking, _): (&Plan, &Ranking, &CommitSha),
) -> Vec<Option<Result<Edited, Failure>>> {
    let mut firsts: Vec<Option<Result<Edited, Failure>>> = vec![None; jobs.len()];
    let mut waiting = jobs.iter_mut().enumerate();
    let mut running = FuturesUnordered::new();
    for (index, job) in waiting.by_ref().take(parallel) {
        running.push(ask_first(index, job, start, plan, ranking));
    }
    while let Some((index, edited)) = running.next().await {
        firsts[index] = Some(edited);
        if let Some((index, job)) = waiting.next() {
            running.push(ask_first(index, job, start, plan, ranking));
        }
    }
    firsts
}

/// The candidates to validate, one per distinct change, the most common first (a candidate
/// that changed nothing last), and for each candidate the earlier one whose change it repeats.
fn equal_changes_grouped(changes: &[Vec<String>]) -> (Vec<usize>, Vec<Option<usize>>) {
    let mut order: Vec<usize> = Vec::new();
    let mut same_as: Vec<Option<usize>> = vec![None; changes.len()];
    for index in 0..changes.len() {
        let applied = !changes[index].is_empty();
        match (0..index).find(|&earlier| applied && changes[earlier] == changes[index]) {
            Some(earlier) => same_as[index] = Some(same_as[earlier].unwrap_or(earlier)),
            None => order.push(index),
        }
    }
    let votes = |index: usize| same_as.iter().filter(|s| **s == Some(index)).count() + 1;
    order.sort_by_key(|&index| {
        (
            changes[index].is_empty(),
            std::cmp::Reverse(votes(index)),
            index,
        )
    });
    (order, same_as)
}

/// The candidates in `order` validated, reviewed and repaired, `parallel` at a time, until one
/// passes everything: then the others are stopped and the rest never started (`None`).
async fn validate_until_one_passes(
    jobs: &mut [Job<'_>],
    mut firsts: Vec<Option<Result<Edited, Failure>>>,
    order: &[usize],
    stops: &[StopSignal],
    parallel: usize,
    work: (&Plan, &Ranking, &CommitSha),
) -> Vec<Option<Result<(), Failure>>> {
    let mut results: Vec<Option<Result<(), Failure>>> = vec![None; jobs.len()];
    let mut by_index: Vec<Option<&mut Job<'_>>> = jobs.iter_mut().map(Some).collect();
    let mut waiting = order.iter().map(|&index| {
        let job = by_index[index].take().expect("each candidate runs once");
        let edited = firsts[index].take().expect("each candidate was asked once");
        (index, job, edited)
    });
    let mut running = FuturesUnordered::new();
    for (index, job, edited) in waiting.by_ref().take(parallel) {
        running.push(accept_one(index, job, edited, work));
    }
    let mut settled = false;
    while let Some((index, result)) = running.next().await {
        if !settled && result.is_ok() {
            settled = true;
            for (other, stop) in stops.iter().enumerate() {
                if other != index {
                    stop.stop();
                }
            }
        }
        results[index] = Some(result);
        if !settled && let Some((index, job, edited)) = waiting.next() {
            running.push(accept_one(index, job, edited, work));
        }
    }
    results
}

/// Candidate `index`'s setup and first answer.
async fn ask_first(
    index: usize,
    job: &mut Job<'_>,
    start: &Start,
    plan: &Plan,
    ranking: &Ranking,
) -> (usize, Result<Edited, Failure>) {
    (index, job.set_up_and_ask(start, plan, ranking).await)
}

/// Candidate `index` from its first answer on: validated, reviewed, repaired.
async fn accept_one(
    index: usize,
    job: &mut Job<'_>,
    edited: Result<Edited, Failure>,
    (plan, ranking, work_base): (&Plan, &Ranking, &CommitSha),
) -> (usize, Result<(), Failure>) {
    let result = match edited {
        Ok(first) => job.accept(first, plan, ranking, work_base).await,
        Err(failed) => Err(failed),
    };
    job.record_proof_outcome();
    (index, result)
}

impl Candidate {
    /// The job that runs this candidate, starting from the job's state at the fork.
    fn job<'a>(
        &'a mut self,
        options: &'a FixOptions,
        llm: &'a dyn LlmProvider,
        start: &Start,
    ) -> Job<'a> {
        let mut job = Job::new(options, llm, &self.ready, &self.log, &mut self.summary);
        job.stop = self.stop.clone();
        job.candidate = Some(self.number);
        job.started = start.started;
        job.tokens = start.tokens.clone();
        job.base_runs = start.base_runs.clone();
        job.proof = start.proof.clone();
        job.instructions = start.instructions.clone();
        job
    }
}

impl Job<'_> {
    /// A candidate's own setup, the reproduction's files, and its first answer applied.
    async fn set_up_and_ask(
        &mut self,
        start: &Start,
        plan: &Plan,
        ranking: &Ranking,
    ) -> Result<Edited, Failure> {
        let number = self.candidate.unwrap_or(1);
        self.log
            .line(&format!("candidate {number}: setting up its work tree"));
        self.setup().await?;
        self.write_files(&start.proof_files)?;
        self.first_edit(plan, ranking).await
    }

    /// The candidate's changed lines, trimmed and sorted: equal for changes that agree line
    /// for line; empty when it changed nothing.
    fn change_signature(&self, start: &Start, work_base: &CommitSha) -> Vec<String> {
        let paths: Vec<String> = self
            .applied
            .keys()
            .filter(|path| !start.proof_files.contains_key(*path))
            .cloned()
            .collect();
        let diff = self
            .ready
            .workspace
            .diff_paths_from(work_base, &paths)
            .unwrap_or_default();
        choice::signature(&diff)
    }

    /// The candidate's last words in its run log and its `RESULT.json`.
    fn finish(&self, number: u32, result: &Result<(), Failure>) {
        match result {
            Ok(()) => self
                .log
                .line(&format!("candidate {number}: passed everything")),
            Err(failed) => self.log.line(&format!(
                "candidate {number}: FAILED {} at {}: {}",
                failed.code, failed.stage, failed.reason
            )),
        }
        let _ = self.log.write_json("RESULT.json", &*self.summary);
    }
}

/// `commands` as they run in the tree at `to`: each working folder moved from under `from`.
fn moved_to(commands: &[ValidationCommand], from: &Path, to: &Path) -> Vec<ValidationCommand> {
    commands
        .iter()
        .map(|command| {
            let mut command = command.clone();
            if let Ok(inside) = command.spec.cwd.strip_prefix(from) {
                command.spec.cwd = to.join(inside);
            }
            command
        })
        .collect()
}

/// The time a candidate's validation commands took, in milliseconds.
fn validation_ms(summary: &FixSummary) -> u64 {
    summary.validation_ms
}
