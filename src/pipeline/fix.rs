//! `autofix fix`: the whole pipeline on a local repository — preflight, triage, plan, feature
//! branch, edit ⇄ validate (repair) ⇄ audit, one commit; on failure, everything put back.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use super::StageOutputError;
use super::audit::{self, Review};
use super::baseline_cache::{self, BaselineCache};
use super::checkout::Checkout;
use super::checks::{self, CheckRun, Comparison, Judgement, Relevance, Verdict};
use super::context::{self, Context};
use super::issue::Issue;
use super::json_stage::{OutputCaps, Problem, corrective_prompt};
use super::plan::{self, Plan, PlanAnswer};
use super::plan_files;
use super::prompts::{Feedback, edit_prompt};
use super::proof::Reproduction;
use super::repo_map::{LookedUp, look_up, looked_up_section, repo_map_section};
use super::run_log::RunLog;
use super::sanitise;
use super::test_report::{self, CommandReport, TestReport};
use super::triage::{self, Triage};
use crate::anchored::{Entry, Permissions, Tree, TreeError, Way};
use crate::config::repo::{RepoConfig, ValidationCommand};
use crate::edits::apply::{self, ApplyError, ApplyPolicy};
use crate::edits::paths::{self, ProjectRoot, ProtectedPaths};
use crate::edits::{Change, EditSet, detect};
use crate::exec::{self, Access, ExecError, Jail, Sandbox};
use crate::failure::FailureCode;
use crate::git::{
    BranchName, BranchOutcome, CommitKind, CommitMessage, CommitSha, FileContent, Identity,
    Workspace, slugify,
};
use crate::index::query::IssueQuery;
use crate::index::retrieve::{Method, rank};
use crate::index::{Ranking, RepoIndex};
use crate::llm::{LlmProvider, LlmRequest, LlmResponse, ResponseSchema};
use crate::redact::Redactor;
use crate::telemetry::{StageClock, Stages};

/// Rounds in which the planner may ask to see files or symbols before it plans.
pub const LOOKUP_ROUNDS: usize = 2;

/// Most tokens of the planner's repository map (a quarter of `pipeline.context_tokens`, at most this).
const MAX_MAP_TOKENS: usize = 8_000;

/// Most bytes of a failing command's output quoted back to the model.
const FEEDBACK_TAIL_BYTES: usize = 6 * 1024;

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

/// Set from outside (a maintainer's `cancel`) to stop a run at its next stage boundary.
#[derive(Debug, Clone, Default)]
pub struct CancelFlag(Arc<AtomicBool>);

impl CancelFlag {
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
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
    pub default_validate_timeout: Duration,
    pub output_limit: usize,
    pub context_tokens: usize,
    /// Hides every secret the process knows from the artifacts and from what the model reads.
    pub redactor: Redactor,
    /// Where the repository's setup and validation commands run.
    pub sandbox: Sandbox,
    /// The job's cache folder: writable by `[[setup]]`, read-only to validation, named to both
    /// as `CACHE_DIR`. `None`: a folder beside the artifacts.
    pub cache_dir: Option<PathBuf>,
    /// The output-token cap of each stage's requests.
    pub output_caps: OutputCaps,
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
}

/// How the run ended, as written to `RESULT.json`.
#[derive(Debug, Clone, Serialize)]
pub struct FixSummary {
    pub committed: bool,
    pub failure_code: Option<FailureCode>,
    pub failure_stage: Option<String>,
    pub reason: Option<String>,
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
    /// The end of the output of the command that failed last (secrets redacted).
    pub failure_output_tail: Option<String>,
    /// Commands that ran with network: every `[[setup]]` step and `network = true` validation.
    pub networked_commands: Vec<String>,
    pub artifacts: PathBuf,
    /// The triage and plan that wait for a maintainer's approval; nothing was edited.
    pub proposed: Option<ProposedPlan>,
    /// The tests that show the issue and how they fared, or why there are none; `None` when the
    /// run ended before the reproduce stage.
    pub reproduction: Option<Reproduction>,
}

/// A failure: its code, the stage it happened in, and one line of reason.
#[derive(Debug, Clone)]
struct Failed {
    code: FailureCode,
    stage: &'static str,
    reason: String,
}

impl Failed {
    fn new(code: FailureCode, stage: &'static str, reason: impl Into<String>) -> Self {
        Failed {
            code,
            stage,
            reason: reason.into(),
        }
    }
}

/// Runs the pipeline. `Err` only when not even the artifact folder can be written.
pub async fn fix(options: &FixOptions, llm: &dyn LlmProvider) -> Result<FixSummary, String> {
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
) -> Result<FixSummary, String> {
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
) -> Result<FixSummary, String> {
    let workspace = Workspace::open(&options.repo);
    let issue = match &options.issue {
        IssueInput::Given(issue) => Ok(issue.clone()),
        IssueInput::File(path) => read_issue_file(path),
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
    let clock = options.stages.start("preflight");
    let outcome = match finish_stage(clock, preflight(options, issue, workspace, &log)) {
        Err(failed) => Err(failed),
        Ok(ready) => {
            let mut job = Job::new(options, llm, &ready, &log, &mut summary);
            match work {
                Work::Fix => job.run().await,
                Work::Revalidate(files) => {
                    let outcome = job.revalidate(files);
                    if let Err(err) = ready.workspace.rollback(&ready.baseline) {
                        log.line(&format!("rollback failed: {err}"));
                    }
                    outcome
                }
            }
        }
    };
    if let Err(failed) = outcome {
        log.line(&format!(
            "FAILED {} at {}: {}",
            failed.code, failed.stage, failed.reason
        ));
        summary.failure_code = Some(failed.code);
        summary.failure_stage = Some(failed.stage.to_string());
        summary.reason = Some(failed.reason);
    }
    log.write_json("RESULT.json", &summary)?;
    Ok(summary)
}

impl FixSummary {
    /// Nothing done yet, artifacts in `artifacts`.
    fn new(artifacts: PathBuf) -> FixSummary {
        FixSummary {
            committed: false,
            failure_code: None,
            failure_stage: None,
            reason: None,
            branch: None,
            commit: None,
            subject: None,
            repairs: 0,
            corrections: 0,
            reviews: 0,
            validated: false,
            input_tokens: 0,
            output_tokens: 0,
            plan_steps: Vec::new(),
            changed_files: Vec::new(),
            validation: Vec::new(),
            checks: Vec::new(),
            flaky: Vec::new(),
            failure_output_tail: None,
            networked_commands: Vec::new(),
            artifacts,
            proposed: None,
            reproduction: None,
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

pub fn read_issue_file(path: &std::path::Path) -> Result<Issue, String> {
    let bytes = std::fs::read(path)
        .map_err(|err| format!("cannot read the issue file {}: {err}", path.display()))?;
    let text = String::from_utf8(bytes).map_err(|_| "the issue file is not UTF-8 text")?;
    Issue::parse(&text)
}

/// The issue with what a reader does not see taken out of its title and body (HTML comments,
/// invisible and bidi characters, image alt text), each removal listed in the run log.
fn sanitised(issue: Issue, log: &RunLog) -> Issue {
    let (title, title_removals) = sanitise::sanitise(&issue.title);
    let (body, body_removals) = sanitise::sanitise(&issue.body);
    for (part, removals) in [("title", title_removals), ("body", body_removals)] {
        for removal in removals {
            log.line(&format!("issue {part}: {removal}"));
        }
    }
    Issue {
        title,
        body,
        ..issue
    }
}

/// What the job starts from once preflight has passed.
struct Ready {
    workspace: Workspace,
    root: ProjectRoot,
    issue: Issue,
    number: u64,
    config: RepoConfig,
    protected: ProtectedPaths,
    setup: Vec<ValidationCommand>,
    validation: Vec<ValidationCommand>,
    cache_dir: PathBuf,
    instructions: String,
    original_branch: BranchName,
    baseline: CommitSha,
}

fn preflight(
    options: &FixOptions,
    issue: Result<Issue, String>,
    workspace: Result<Workspace, crate::git::GitError>,
    log: &RunLog,
) -> Result<Ready, Failed> {
    let invalid = |reason: String| Failed::new(FailureCode::InvalidInput, "preflight", reason);
    let git =
        |err: crate::git::GitError| Failed::new(err.failure_code(), "preflight", err.to_string());
    let issue = sanitised(issue.map_err(invalid)?, log);
    let number = options.issue_number.or(issue.number).ok_or_else(|| {
        invalid("the issue has no number: give one in the file or with --issue-number".into())
    })?;
    let preflight_failure =
        |(code, reason): (FailureCode, String)| Failed::new(code, "preflight", reason);
    let Checkout {
        workspace,
        root,
        baseline,
        config,
        config_source,
        protected,
        setup,
        validation,
    } = Checkout::prepare(
        workspace.map_err(git)?,
        options.default_validate_timeout,
        options.output_limit,
    )
    .map_err(preflight_failure)?;
    let original_branch = workspace.current_branch().map_err(git)?;
    match &config_source {
        Some(path) => log.line(&format!("configuration: {}", path.display())),
        None => log.line("configuration: none found, defaults apply"),
    }
    if validation.is_empty() {
        log.line("validation: the repository configures no [[validate]] commands; the change is unvalidated");
    }
    let instructions = config
        .read_instructions(&root)
        .files
        .iter()
        .map(|file| format!("## {}\n{}", file.path, file.text))
        .collect::<Vec<_>>()
        .join("\n\n");
    log.line(&format!("baseline: {baseline} on {original_branch}"));
    let sandbox = &options.sandbox;
    log.line(&format!(
        "sandbox: {}{}",
        sandbox.mode().as_str(),
        if sandbox.is_confined() {
            ""
        } else {
            " (commands run unconfined: exec.sandbox = \"none\")"
        }
    ));
    let cache_dir = options
        .cache_dir
        .clone()
        .unwrap_or_else(|| log.dir().join("cache"));
    Ok(Ready {
        workspace,
        root,
        issue,
        number,
        config,
        protected,
        setup,
        validation,
        cache_dir,
        instructions,
        original_branch,
        baseline,
    })
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
    /// The validation commands' results on the base commit, in command order.
    base_runs: Vec<CheckRun>,
}

impl<'a> Job<'a> {
    fn new(
        options: &'a FixOptions,
        llm: &'a dyn LlmProvider,
        ready: &'a Ready,
        log: &'a RunLog,
        summary: &'a mut FixSummary,
    ) -> Job<'a> {
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
            base_runs: Vec::new(),
        }
    }
}

impl Job<'_> {
    /// Setup and the checks on the base, then `files` written over the base and the checks
    /// run again: an error when the change makes one worse.
    fn revalidate(&mut self, files: BTreeMap<String, Option<String>>) -> Result<(), Failed> {
        finish_stage(self.start("setup"), self.setup())?;
        finish_stage(self.start("base"), self.check_base())?;
        let clock = self.start("validate");
        let written = self.write_files(&files);
        let validated = written.and_then(|()| self.validate());
        let (judgement, _) = finish_stage(clock, validated)?;
        if let Some(worse) = judgement.first_worse() {
            let why = match &worse.verdict {
                Verdict::Worse { why } => why.clone(),
                _ => String::new(),
            };
            return Err(Failed::new(
                FailureCode::ValidationFailed,
                "validate",
                format!("`{}` fails on the new base: {why}", worse.command.join(" ")),
            ));
        }
        self.summary.validated = !self.ready.validation.is_empty();
        self.summary.changed_files = files.keys().cloned().collect();
        Ok(())
    }

    /// Writes `files` into the work tree as the change to validate, never through a link the
    /// new base or its checks put on the way.
    fn write_files(&mut self, files: &BTreeMap<String, Option<String>>) -> Result<(), Failed> {
        let tree = self.tree("validate")?;
        for (path, content) in files {
            let path = paths::normalise(path).map_err(|err| {
                Failed::new(
                    FailureCode::WriteScopeViolation,
                    "validate",
                    err.to_string(),
                )
            })?;
            let written = match content {
                Some(text) => tree.write(
                    &path,
                    text.as_bytes(),
                    Permissions::KeepExisting,
                    Way::Refuse,
                ),
                None => tree.remove(&path, Way::Refuse),
            };
            written.map_err(|err| tree_failure("validate", &path, "write", err))?;
            self.applied.insert(path, content.clone());
        }
        Ok(())
    }

    /// The work tree's anchored handle, through which every write of the job goes.
    fn tree(&self, stage: &'static str) -> Result<Tree, Failed> {
        Tree::open(self.ready.workspace.root()).map_err(|err| {
            Failed::new(
                FailureCode::Preflight,
                stage,
                format!("cannot open the work tree: {err}"),
            )
        })
    }

    async fn run(&mut self) -> Result<(), Failed> {
        let repo_files = paths::project_files(self.ready.workspace.root()).map_err(|err| {
            Failed::new(
                FailureCode::Preflight,
                "preflight",
                format!("cannot list the files: {err}"),
            )
        })?;
        self.check_cancelled("index")?;
        let clock = self.start("index");
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
                        self.check_cancelled("triage")?;
                        let clock = self.start("triage");
                        finish_stage(clock, self.triage(&repo_files).await)?
                    }
                };
                self.check_cancelled("plan")?;
                let clock = self.start("plan");
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
        self.check_cancelled("branch")?;
        let clock = self.start("branch");
        let (branch, outcome) = finish_stage(clock, self.branch(&triage).await)?;
        let work_base = outcome.head().clone();
        let clock = self.start("setup");
        let result = match finish_stage(clock, self.setup()) {
            Ok(()) => match finish_stage(self.start("base"), self.check_base()) {
                Ok(()) => {
                    self.edit_until_accepted(&plan, &located.ranking, &work_base)
                        .await
                }
                Err(failed) => Err(failed),
            },
            Err(failed) => Err(failed),
        };
        match result {
            Ok(()) => {
                let clock = self.start("commit");
                finish_stage(clock, self.commit(&triage, &plan, &branch, &work_base))
            }
            Err(failed) => {
                self.put_back(&branch, &outcome, &work_base);
                Err(failed)
            }
        }
    }

    async fn triage(&mut self, repo_files: &[String]) -> Result<Triage, Failed> {
        let ready = self.ready;
        let prompt = triage::prompt(&ready.issue, repo_files, &ready.instructions);
        let cap = self.options.output_caps.triage;
        let triage = self
            .ask_json("triage", prompt, triage::schema(), cap, triage::parse)
            .await?;
        self.log
            .write_json("TRIAGE.json", &triage)
            .map_err(io_failure("triage"))?;
        self.log.line(&format!(
            "triage: {} risk {:?}, actionable {}",
            triage.classification, triage.risk, triage.actionable
        ));
        if !triage.actionable {
            return Err(Failed::new(
                FailureCode::InvalidInput,
                "triage",
                format!("the issue is not actionable: {}", triage.reason),
            ));
        }
        Ok(triage)
    }

    /// Indexes the work tree and ranks its files and spans for the issue, without the model.
    fn locate(&self, repo_files: &[String]) -> Located {
        let started = Instant::now();
        let issue = &self.ready.issue;
        let index = RepoIndex::build(self.ready.workspace.root(), repo_files);
        let ranking = rank(
            &index,
            &IssueQuery::parse(&issue.title, &issue.body),
            Method::Full,
        );
        let top: Vec<&str> = ranking
            .files
            .iter()
            .take(5)
            .map(|f| f.path.as_str())
            .collect();
        self.log.line(&format!(
            "index: {} files in {} ms; ranked first: {}",
            repo_files.len(),
            started.elapsed().as_millis(),
            top.join(", ")
        ));
        Located { index, ranking }
    }

    /// Asks for the plan, showing the repository map; the planner may first ask to see up to
    /// [`LOOKUP_ROUNDS`] rounds of files or symbols by name. `repo_files` are the work tree's
    /// files, offered in place of a file the plan names that is not there.
    async fn plan(
        &mut self,
        triage: &Triage,
        located: &Located,
        repo_files: &[String],
    ) -> Result<Plan, Failed> {
        let ready = self.ready;
        let map_tokens = (self.options.context_tokens / 4).min(MAX_MAP_TOKENS);
        let map = repo_map_section(
            &located.index,
            &located.ranking,
            &ready.protected,
            map_tokens,
        );
        let mut looked_up: Vec<LookedUp> = Vec::new();
        for round in 0..=LOOKUP_ROUNDS {
            let lookups_left = LOOKUP_ROUNDS - round;
            match self
                .plan_round(triage, &map, &looked_up, lookups_left, repo_files)
                .await?
            {
                PlanAnswer::Plan(plan) => return self.planned(plan),
                PlanAnswer::Need(names) => {
                    self.log
                        .line(&format!("plan: asked to see {}", names.join(", ")));
                    looked_up.extend(look_up(&located.index, &ready.protected, &names));
                }
            }
        }
        Err(Failed::new(
            FailureCode::LlmOutputInvalid,
            "plan",
            "the planner kept asking to see more instead of planning",
        ))
    }

    async fn plan_round(
        &mut self,
        triage: &Triage,
        map: &str,
        looked_up: &[LookedUp],
        lookups_left: usize,
        repo_files: &[String],
    ) -> Result<PlanAnswer, Failed> {
        let ready = self.ready;
        let prompt = plan::prompt(
            &ready.issue,
            triage,
            map,
            &looked_up_section(looked_up),
            &ready.instructions,
            lookups_left,
        );
        let cap = self.options.output_caps.plan;
        let title = ready.issue.title.clone();
        let may_ask = lookups_left > 0;
        // A plan naming a path outside the repository or a protected one, or a file to change
        // that is not there, is asked for once more, naming the paths; a second such plan ends
        // the job (a scope violation, or input that names nothing real).
        let refused: std::cell::RefCell<Option<(FailureCode, String)>> = Default::default();
        let asked = self
            .ask_json("plan", prompt, plan::schema(may_ask), cap, |text| {
                *refused.borrow_mut() = None;
                let plan = match plan::parse_answer(text, &title, may_ask)? {
                    PlanAnswer::Plan(plan) => plan,
                    need => return Ok(need),
                };
                let (code, refusal, hint) = match plan_refusal(ready, &plan, repo_files) {
                    Some(refusal) => refusal,
                    None => return Ok(PlanAnswer::Plan(plan)),
                };
                *refused.borrow_mut() = Some((code, refusal.clone()));
                Err(StageOutputError::new("plan", format!("{refusal}; {hint}")))
            })
            .await;
        match (asked, refused.into_inner()) {
            (Ok(answer), _) => Ok(answer),
            // Only an answer refused twice is the plan's fault; a model that failed to answer
            // the corrective round keeps its own code.
            (Err(failed), Some((code, refusal)))
                if failed.code == FailureCode::LlmOutputInvalid =>
            {
                Err(Failed::new(code, "plan", refusal))
            }
            (Err(failed), _) => Err(failed),
        }
    }

    /// Records the plan the planner settled on.
    fn planned(&mut self, plan: Plan) -> Result<Plan, Failed> {
        self.summary.plan_steps = plan.plan_steps.clone();
        self.log
            .write_json("PLAN.json", &plan)
            .map_err(io_failure("plan"))?;
        self.log.line(&format!(
            "plan: {} steps, files {}",
            plan.plan_steps.len(),
            plan.file_changes
                .iter()
                .map(|c| c.path.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        Ok(plan)
    }

    /// The commit type: what the issue's labels say when one maps, else the triage's call.
    fn commit_kind(&self, triage: &Triage) -> CommitKind {
        let config = &self.ready.config;
        let labelled = self.ready.issue.labels.iter().any(|label| {
            config
                .commit
                .type_by_label
                .keys()
                .any(|known| known.eq_ignore_ascii_case(label))
        });
        if labelled {
            config.commit_type_for(&self.ready.issue.labels)
        } else {
            triage.classification
        }
    }

    async fn branch(&mut self, triage: &Triage) -> Result<(BranchName, BranchOutcome), Failed> {
        let ready = self.ready;
        let failed =
            |err: crate::git::GitError| Failed::new(err.failure_code(), "branch", err.to_string());
        if self.options.revision.is_some() {
            // The change request's branch, as it is: its commits, a person's included, stay.
            let branch = ready.original_branch.clone();
            self.summary.branch = Some(branch.to_string());
            self.log.line(&format!(
                "branch: {branch} (the change request's, at {})",
                ready.baseline
            ));
            let head = ready.baseline.clone();
            return Ok((branch, BranchOutcome::Reused { head }));
        }
        let name = ready.config.branch_name(
            self.commit_kind(triage),
            ready.number,
            &slugify(&ready.issue.title),
        );
        let branch = BranchName::new(&name).map_err(failed)?;
        let outcome = ready
            .workspace
            .prepare_branch(&branch, &ready.baseline, &self.job_id())
            .map_err(failed)?;
        self.summary.branch = Some(branch.to_string());
        self.log.line(&format!(
            "branch: {branch} ({})",
            match outcome {
                BranchOutcome::Created { .. } => "created",
                BranchOutcome::Reused { .. } => "reused",
            }
        ));
        Ok((branch, outcome))
    }

    fn start(&self, stage: &str) -> StageClock {
        self.options.stages.start(stage)
    }

    fn job_id(&self) -> String {
        self.options
            .job_id
            .clone()
            .unwrap_or_else(|| format!("fix-{}", self.ready.number))
    }

    /// Edit, validate and review until the change is accepted or a budget is spent.
    async fn edit_until_accepted(
        &mut self,
        plan: &Plan,
        ranking: &Ranking,
        work_base: &CommitSha,
    ) -> Result<(), Failed> {
        let config = &self.ready.config;
        let mut repairs_left = config.repair.max_attempts;
        let mut reviews_left = if config.audit.enabled {
            config.audit.max_rounds
        } else {
            0
        };
        let mut feedback: Option<Feedback> = None;
        loop {
            let stage = if feedback.is_none() { "edit" } else { "repair" };
            let clock = self.start(stage);
            let edited = self.edit(stage, plan, ranking, feedback.as_ref()).await;
            match &edited {
                Ok(Ok(())) => clock.ok(),
                Ok(Err((refused, _))) | Err(refused) => clock.failed(&refused.reason),
            }
            let failure = match edited? {
                Err((failed, refusal)) => (failed, refusal),
                Ok(()) => {
                    let clock = self.start("validate");
                    let validated = self.validate();
                    match &validated {
                        Ok((judgement, _)) => match judgement.first_worse() {
                            Some(worse) => {
                                clock.failed(&format!("`{}` is worse", worse.command.join(" ")))
                            }
                            None => clock.ok(),
                        },
                        Err(failed) => clock.failed(&failed.reason),
                    }
                    let (judgement, failing_tail) = validated?;
                    if let Some(worse) = judgement.first_worse() {
                        let code = if worse.change.last().timed_out {
                            FailureCode::Timeout
                        } else {
                            FailureCode::ValidationFailed
                        };
                        let why = match &worse.verdict {
                            Verdict::Worse { why } => why.clone(),
                            _ => String::new(),
                        };
                        let command = worse.command.join(" ");
                        (
                            Failed::new(code, "validate", format!("`{command}` failed: {why}")),
                            Feedback::ValidationFailed {
                                command,
                                why,
                                already_failing: worse.left_alone(),
                                output_tail: failing_tail.unwrap_or_default(),
                            },
                        )
                    } else {
                        self.summary.validated = !self.ready.validation.is_empty();
                        if !config.audit.enabled {
                            return Ok(());
                        }
                        reviews_left -= 1;
                        let clock = self.start("audit");
                        let review =
                            finish_stage(clock, self.audit(plan, work_base, &judgement).await)?;
                        if review.accepts(&judgement) {
                            return Ok(());
                        }
                        let failed = Failed::new(
                            FailureCode::ValidationFailed,
                            "audit",
                            format!(
                                "the review rejected the change: {}",
                                review.must_fixes.join("; ")
                            ),
                        );
                        if reviews_left == 0 {
                            return Err(failed);
                        }
                        feedback = Some(Feedback::ReviewRejected {
                            must_fixes: review.must_fixes,
                            reasons: review.reasons,
                        });
                        continue;
                    }
                }
            };
            let (failed, next) = failure;
            if repairs_left == 0 {
                return Err(failed);
            }
            repairs_left -= 1;
            self.summary.repairs += 1;
            self.log.line(&format!(
                "repair {}: after {}",
                self.summary.repairs, failed.reason
            ));
            feedback = Some(next);
        }
    }

    /// Asks for edits and applies them; `Ok(Err(..))` is a refused answer the next round can fix.
    async fn edit(
        &mut self,
        stage: &'static str,
        plan: &Plan,
        ranking: &Ranking,
        feedback: Option<&Feedback>,
    ) -> Result<Result<(), (Failed, Feedback)>, Failed> {
        let ready = self.ready;
        let context = context::build(
            &ready.root,
            &ready.protected,
            plan,
            ranking,
            self.options.context_tokens,
        );
        let prompt = edit_prompt(&ready.issue, plan, &context, &ready.instructions, feedback);
        let cap = self
            .options
            .output_caps
            .edit_for(planned_bytes(&ready.root, plan));
        let response = self.ask(stage, prompt, cap, None).await?;
        let refused = |code: FailureCode, reason: String| {
            Ok(Err((
                Failed::new(code, "edit", reason.clone()),
                Feedback::EditRefused { reason },
            )))
        };
        if response.truncated() {
            // A cut-off answer may end inside a file: nothing of it is applied.
            return refused(
                FailureCode::LlmOutputTruncated,
                format!(
                    "the answer was cut off at the {cap}-token output cap, so none of it was \
                     applied; send smaller edits (search/replace blocks rather than whole files)"
                ),
            );
        }
        let text = response.text;
        let edits = match detect::parse(&text, None) {
            Ok(edits) => edits,
            Err(err) => return refused(FailureCode::InvalidDiff, err.to_string()),
        };
        let planned: Vec<String> = plan
            .file_changes
            .iter()
            .filter_map(|change| paths::normalise(&change.path).ok())
            .collect();
        if let Some(outside) = edits
            .edits
            .iter()
            .find(|edit| paths::normalise(&edit.path).map_or(true, |path| !planned.contains(&path)))
        {
            return refused(
                FailureCode::WriteScopeViolation,
                format!(
                    "`{}` is not one of the planned files ({}); edit only those",
                    outside.path,
                    planned.join(", ")
                ),
            );
        }
        if let Some(refusal) = whole_write_of_a_part(&edits, &context) {
            return refused(FailureCode::InvalidDiff, refusal);
        }
        let policy = ApplyPolicy::new(ready.protected.clone());
        match apply::apply(&ready.root, &edits, &policy) {
            Ok(files) => {
                for file in &files {
                    self.log.line(&format!("{stage}: {}", file.summary()));
                    self.applied.insert(file.path.clone(), file.after.clone());
                }
                Ok(Ok(()))
            }
            Err(err @ (ApplyError::PathRefused { .. } | ApplyError::Protected { .. })) => {
                refused(FailureCode::WriteScopeViolation, err.to_string())
            }
            Err(err) => refused(FailureCode::InvalidDiff, err.to_string()),
        }
    }

    /// Runs the repository's validation commands in order on the change, each compared with
    /// its run on the base commit, stopping at the first one the change made worse (its
    /// output tail is returned for the next prompt). Afterwards the tree holds the model's work
    /// and nothing else the commands wrote.
    fn validate(&mut self) -> Result<(Judgement, Option<String>), Failed> {
        let result = self.run_validation();
        self.keep_only_the_model_work("validate")?;
        result
    }

    fn run_validation(&mut self) -> Result<(Judgement, Option<String>), Failed> {
        let mut judgement = Judgement::default();
        let mut failing_tail = None;
        let issue = &self.ready.issue;
        let relevance = Relevance::new(
            &format!("{}\n{}", issue.title, issue.body),
            self.applied.keys(),
        );
        for (index, command) in self.ready.validation.iter().enumerate() {
            let (run, tail) = self.run_check("validate", command)?;
            let comparison = checks::compare(self.base_runs.get(index), run, &relevance);
            let line = match &comparison.verdict {
                Verdict::Passed => "passed".to_string(),
                Verdict::NoWorse => format!(
                    "FAILED as on the base commit, no worse (still failing: {})",
                    listed(&comparison.still_failing)
                ),
                Verdict::Worse { why } => format!("FAILED: {why}"),
            };
            self.log.line(&format!("validate: {} {line}", command.name));
            if !comparison.flaky.is_empty() {
                self.log.line(&format!(
                    "validate: flaky in {}: {}",
                    command.name,
                    comparison.flaky.join(", ")
                ));
            }
            let acceptable = comparison.acceptable();
            judgement.comparisons.push(comparison);
            if !acceptable {
                failing_tail = tail;
                break;
            }
        }
        self.summary.validation = judgement
            .comparisons
            .iter()
            .map(|c| c.change.last().clone())
            .collect();
        self.summary.checks = judgement.comparisons.clone();
        self.summary.flaky = judgement.flaky();
        self.summary.failure_output_tail = failing_tail
            .as_deref()
            .map(|tail| self.options.redactor.redact(tail));
        let report = TestReport {
            commands: self.summary.validation.clone(),
        };
        self.log
            .write_json("TEST_REPORT.json", &report)
            .map_err(io_failure("validate"))?;
        self.log
            .write_json("CHECKS.json", &judgement)
            .map_err(io_failure("validate"))?;
        Ok((judgement, failing_tail))
    }

    /// Runs the validation commands on the base commit (before any edit) so the change is
    /// judged by what it makes worse; the results are cached per base commit and configuration.
    fn check_base(&mut self) -> Result<(), Failed> {
        let ready = self.ready;
        if ready.validation.is_empty() {
            return Ok(());
        }
        let cache = BaselineCache::new(self.baseline_dir());
        let key = baseline_cache::key(
            &ready.baseline.to_string(),
            self.options.sandbox.mode().as_str(),
            ready.workspace.root(),
            &ready.setup,
            &ready.validation,
        );
        let cached = cache
            .load(&key)
            .filter(|stored| stored.runs.len() == ready.validation.len());
        let runs = match cached {
            Some(stored) => {
                self.log.line(&format!(
                    "base: the checks' results on {} come from the cache ({key})",
                    stored.commit
                ));
                stored.runs
            }
            None => {
                let mut runs = Vec::new();
                for command in &ready.validation {
                    let (run, _) = self.run_check("base", command)?;
                    runs.push(run);
                }
                self.keep_only_the_model_work("base")?;
                if let Err(reason) = cache.store(&key, &ready.baseline.to_string(), &runs) {
                    self.log
                        .line(&format!("base: results not cached: {reason}"));
                }
                runs
            }
        };
        for run in &runs {
            let state = if !run.passed() {
                format!("already FAILS (failing: {})", listed(&run.failing()))
            } else if run.rerun.is_some() {
                "passed on the rerun".to_string()
            } else {
                "passes".to_string()
            };
            self.log.line(&format!("base: {} {state}", run.first.name));
        }
        self.log
            .write_json("BASE_REPORT.json", &runs)
            .map_err(io_failure("base"))?;
        self.base_runs = runs;
        Ok(())
    }

    fn baseline_dir(&self) -> PathBuf {
        match &self.options.baseline_cache {
            Some(dir) => dir.clone(),
            None => self
                .ready
                .workspace
                .git_dir()
                .join("autofix")
                .join("baselines"),
        }
    }

    /// One validation command on the tree as it is, rerun once at once when it fails without
    /// timing out (on the same tree: what the first run wrote is put back first), with the
    /// output tail of the last run when that failed.
    fn run_check(
        &mut self,
        stage: &'static str,
        command: &ValidationCommand,
    ) -> Result<(CheckRun, Option<String>), Failed> {
        let (first, output) = self.run_reported(stage, command, "")?;
        if first.passed {
            return Ok((CheckRun::new(first, None), None));
        }
        if first.timed_out {
            // A hang is not a flake worth waiting out twice.
            let tail = exec::output_tail(&output, FEEDBACK_TAIL_BYTES);
            return Ok((CheckRun::new(first, None), Some(tail)));
        }
        self.keep_only_the_model_work(stage)?;
        let (rerun, output) = self.run_reported(stage, command, "-rerun")?;
        let tail = (!rerun.passed).then(|| exec::output_tail(&output, FEEDBACK_TAIL_BYTES));
        Ok((CheckRun::new(first, Some(rerun)), tail))
    }

    /// One run of a validation command, its output kept as an artifact and its report read.
    fn run_reported(
        &mut self,
        stage: &'static str,
        command: &ValidationCommand,
        suffix: &str,
    ) -> Result<(CommandReport, String), Failed> {
        self.check_budget(stage)?;
        let started = SystemTime::now();
        let outcome = self.run_confined(stage, command, Access::ReadOnly)?;
        let log_name = if stage == "base" {
            format!("base-{}{suffix}", command.name)
        } else {
            format!("{}{suffix}", command.name)
        };
        self.log
            .write_command_log(&log_name, &outcome.output)
            .map_err(io_failure(stage))?;
        let report = test_report::report_for(
            &command.name,
            &argv_of(command),
            &outcome,
            self.ready.workspace.root(),
            started,
            command.fail_on_warnings,
        );
        self.log.line(&format!(
            "{stage}: ran {}{suffix} ({})",
            command.name,
            outcome.describe()
        ));
        Ok((report, outcome.output))
    }

    /// Runs the repository's `[[setup]]` commands once, on the base commit, with network and
    /// the job's cache writable. What they leave in the tree is kept for validation and never
    /// committed.
    fn setup(&mut self) -> Result<(), Failed> {
        if self.ready.setup.is_empty() {
            return Ok(());
        }
        let cache = &self.ready.cache_dir;
        std::fs::create_dir_all(cache).map_err(|err| {
            Failed::new(
                FailureCode::Preflight,
                "setup",
                format!("cannot create the cache folder {}: {err}", cache.display()),
            )
        })?;
        for command in &self.ready.setup {
            self.check_budget("setup")?;
            let outcome = self.run_confined("setup", command, Access::Writable)?;
            self.log
                .write_command_log(&format!("setup-{}", command.name), &outcome.output)
                .map_err(io_failure("setup"))?;
            self.log.line(&format!(
                "setup: {} {} ({})",
                command.name,
                if outcome.success() {
                    "passed"
                } else {
                    "FAILED"
                },
                outcome.describe()
            ));
            if !outcome.success() {
                self.summary.failure_output_tail = Some(
                    self.options
                        .redactor
                        .redact(&exec::output_tail(&outcome.output, FEEDBACK_TAIL_BYTES)),
                );
                let code = if outcome.timed_out {
                    FailureCode::Timeout
                } else {
                    FailureCode::ValidationFailed
                };
                return Err(Failed::new(
                    code,
                    "setup",
                    format!("`{}` failed", argv_of(command).join(" ")),
                ));
            }
        }
        let ws = &self.ready.workspace;
        self.setup_outputs = ws
            .changed_paths()
            .map_err(|err| Failed::new(err.failure_code(), "setup", err.to_string()))?;
        if !self.setup_outputs.is_empty() {
            self.log.line(&format!(
                "setup: left {} file(s) in the tree, kept for validation and never committed",
                self.setup_outputs.len()
            ));
        }
        Ok(())
    }

    /// Runs one repository command in the job's sandbox: the work tree writable, its `.git` not,
    /// the cache folder with `cache` access, the network only when the step asks for it.
    fn run_confined(
        &mut self,
        stage: &'static str,
        command: &ValidationCommand,
        cache: Access,
    ) -> Result<exec::CommandOutcome, Failed> {
        let ready = self.ready;
        let mut jail: Jail = self
            .options
            .sandbox
            .jail(ready.workspace.root())
            .with_network(command.network);
        let mut spec = command.spec.clone();
        if ready.cache_dir.is_dir() {
            jail = jail.with_dir(&ready.cache_dir, cache);
            spec = spec.with_env("CACHE_DIR", ready.cache_dir.display().to_string());
        }
        if command.network {
            let line = format!("{} (`{}`)", command.name, argv_of(command).join(" "));
            if !self.summary.networked_commands.contains(&line) {
                self.summary.networked_commands.push(line);
            }
        }
        exec::run(&spec.confined(jail)).map_err(|err| match err {
            ExecError::SandboxUnavailable { .. } => Failed::new(
                FailureCode::SandboxUnavailable,
                stage,
                self.options.redactor.redact(&err.to_string()),
            ),
            ExecError::Spawn { .. } => Failed::new(
                FailureCode::ValidationFailed,
                stage,
                self.options.redactor.redact(&err.to_string()),
            ),
        })
    }

    /// Puts the tree back to the model's work. First everything a command changed or left
    /// (besides what setup fetched) is discarded, links and files that took a folder's place
    /// included; then a file the model wrote that a command changed gets the model's content
    /// again, written through real folders only. Each is listed in the run log.
    fn keep_only_the_model_work(&mut self, stage: &'static str) -> Result<(), Failed> {
        let tree = self.tree(stage)?;
        let ws = &self.ready.workspace;
        let failed =
            |err: crate::git::GitError| Failed::new(err.failure_code(), stage, err.to_string());
        let changed_by_a_command: Vec<&String> = self
            .applied
            .iter()
            .filter(|(path, content)| !holds(&tree, path, content.as_deref()))
            .map(|(path, _)| path)
            .collect();
        let left: Vec<String> = ws
            .changed_paths()
            .map_err(failed)?
            .into_iter()
            .filter(|path| !self.applied.contains_key(path) && !self.setup_outputs.contains(path))
            .collect();
        for path in &left {
            self.log.line(&format!(
                "{stage}: discarded `{path}`, which a command left in the tree"
            ));
        }
        ws.discard(&left).map_err(failed)?;
        for path in changed_by_a_command {
            self.log.line(&format!(
                "{stage}: `{path}` was changed by a command; restored the model's version"
            ));
            let restored = match &self.applied[path] {
                Some(text) => {
                    tree.write(path, text.as_bytes(), Permissions::KeepExisting, Way::Clear)
                }
                None => tree.remove(path, Way::Clear),
            };
            restored.map_err(|err| tree_failure(stage, path, "restore", err))?;
        }
        Ok(())
    }

    async fn audit(
        &mut self,
        plan: &Plan,
        work_base: &CommitSha,
        judgement: &Judgement,
    ) -> Result<Review, Failed> {
        let ready = self.ready;
        let paths: Vec<String> = self.applied.keys().cloned().collect();
        let diff = ready
            .workspace
            .diff_paths_from(work_base, &paths)
            .map_err(|err| Failed::new(err.failure_code(), "audit", err.to_string()))?;
        let prompt = audit::prompt(&ready.issue, plan, &diff, judgement);
        let cap = self.options.output_caps.audit;
        let review = self
            .ask_json("audit", prompt, audit::schema(), cap, audit::parse)
            .await?;
        self.summary.reviews += 1;
        self.log
            .write_json("REVIEW.json", &review)
            .map_err(io_failure("audit"))?;
        self.log
            .line(&format!("audit: {:?}", review.decision).to_lowercase());
        Ok(review)
    }

    fn commit(
        &mut self,
        triage: &Triage,
        plan: &Plan,
        branch: &BranchName,
        work_base: &CommitSha,
    ) -> Result<(), Failed> {
        let ready = self.ready;
        let failed =
            |err: crate::git::GitError| Failed::new(err.failure_code(), "commit", err.to_string());
        let scope = plan
            .scope
            .clone()
            .unwrap_or_else(|| ready.config.commit.default_scope.clone());
        let mut body = String::new();
        if !plan.plan_steps.is_empty() {
            body.push_str("Plan:\n");
        }
        // One line per step: a line break in the model's words cannot add a trailer.
        for step in &plan.plan_steps {
            let step = step.split_whitespace().collect::<Vec<_>>().join(" ");
            body.push_str(&format!("- {step}\n"));
        }
        let message = CommitMessage::new(
            self.commit_kind(triage),
            &scope,
            &plan.commit_summary,
            Some(&body),
            Some(ready.number),
            &self.options.identity,
            Some(&self.job_id()),
        )
        .map_err(failed)?;
        let files = files_to_commit(self.ready, &self.applied, work_base, "commit")?;
        self.summary.changed_files = files.iter().map(|(path, _)| path.to_string()).collect();
        let sha = ready
            .workspace
            .commit_contents(branch, work_base, &message, &files, &self.options.identity)
            .map_err(failed)?;
        self.log
            .line(&format!("commit: {sha} on {branch}: {}", message.subject()));
        self.summary.committed = true;
        self.summary.commit = Some(sha.to_string());
        self.summary.subject = Some(message.subject().to_string());
        Ok(())
    }

    /// After a failure: the work tree back at its base, the original branch checked out, and
    /// the feature branch gone (or kept with the work in progress when configured so).
    fn put_back(&mut self, branch: &BranchName, outcome: &BranchOutcome, work_base: &CommitSha) {
        let ready = self.ready;
        let ws = &ready.workspace;
        let keep_branch = ready.config.branch.keep_on_failure;
        if keep_branch && self.keep_work_in_progress(branch, work_base) {
            self.log
                .line(&format!("kept the work in progress on {branch}"));
        } else if let Err(err) = ws.rollback(work_base) {
            self.log.line(&format!("rollback failed: {err}"));
            return;
        }
        if let Err(err) = ws.checkout(&ready.original_branch) {
            self.log.line(&format!(
                "cannot return to {}: {err}",
                ready.original_branch
            ));
            return;
        }
        if !keep_branch && matches!(outcome, BranchOutcome::Created { .. }) {
            match ws.delete_branch(branch) {
                Ok(_) => self.log.line(&format!("deleted {branch}")),
                Err(err) => self.log.line(&format!("cannot delete {branch}: {err}")),
            }
        }
    }

    /// Commits the model's work so far as a work-in-progress commit on the feature branch.
    fn keep_work_in_progress(&mut self, branch: &BranchName, work_base: &CommitSha) -> bool {
        let ready = self.ready;
        let Ok(files) = files_to_commit(self.ready, &self.applied, work_base, "commit") else {
            return false;
        };
        if files.is_empty() {
            return false;
        }
        let Ok(message) = CommitMessage::new(
            CommitKind::Chore,
            "autofix",
            &format!("work in progress on #{}, not passing yet", ready.number),
            None,
            Some(ready.number),
            &self.options.identity,
            Some(&self.job_id()),
        ) else {
            return false;
        };
        let committed = ready
            .workspace
            .commit_contents(branch, work_base, &message, &files, &self.options.identity)
            .is_ok();
        let _ = self.keep_only_the_model_work("commit");
        committed
    }

    /// One LLM exchange for `stage` (its answer capped at `cap` tokens, in `schema` when
    /// given), with its prompt and answer kept as artifacts.
    async fn ask(
        &mut self,
        stage: &'static str,
        prompt: String,
        cap: u32,
        schema: Option<ResponseSchema>,
    ) -> Result<LlmResponse, Failed> {
        self.check_budget(stage)?;
        self.round += 1;
        let stem = format!("{:02}-{stage}", self.round);
        // The prompt quotes command output and files a command may have written: what the
        // model reads is what the artifact shows, secrets redacted.
        let prompt = self.options.redactor.redact(&prompt);
        self.log
            .write_text(&format!("rounds/{stem}-prompt.txt"), &prompt)
            .map_err(io_failure(stage))?;
        let request = LlmRequest {
            stage: stage.to_string(),
            system: None,
            prompt,
            temperature: Some(0.0),
            max_output_tokens: Some(cap),
            schema,
        };
        let response = self
            .llm
            .complete(&request)
            .await
            .map_err(|err| Failed::new(FailureCode::LlmError, stage, err.to_string()))?;
        self.summary.input_tokens += response.usage.input_tokens;
        self.summary.output_tokens += response.usage.output_tokens;
        self.log
            .write_text(&format!("rounds/{stem}-response.txt"), &response.text)
            .map_err(io_failure(stage))?;
        if response.truncated() {
            self.log.line(&format!(
                "{stage}: the answer stopped at the {cap}-token cap ({})",
                response.finish_reason.as_deref().unwrap_or_default()
            ));
        }
        self.check_budget(stage)?;
        Ok(response)
    }

    /// A JSON stage's exchange: the answer in the stage's schema, read by `parse`. An answer
    /// that cannot be read (or was cut off) gets one corrective round naming the problem; a
    /// second failure ends the job.
    async fn ask_json<T>(
        &mut self,
        stage: &'static str,
        prompt: String,
        schema: ResponseSchema,
        cap: u32,
        parse: impl Fn(&str) -> Result<T, StageOutputError>,
    ) -> Result<T, Failed> {
        let read = |response: &LlmResponse| {
            if response.truncated() {
                return Err(Problem::CutOff {
                    cap,
                    finish_reason: response.finish_reason.clone().unwrap_or_default(),
                });
            }
            parse(&response.text).map_err(Problem::Unreadable)
        };
        let first = self
            .ask(stage, prompt.clone(), cap, Some(schema.clone()))
            .await?;
        let problem = match read(&first) {
            Ok(answer) => return Ok(answer),
            Err(problem) => problem,
        };
        self.summary.corrections += 1;
        self.log.line(&format!(
            "{stage}: the answer cannot be used ({}); asking once more",
            problem.describe()
        ));
        let retry = corrective_prompt(&prompt, &problem, &first.text, &schema);
        let second = self.ask(stage, retry, cap, Some(schema)).await?;
        read(&second).map_err(|problem| {
            let (code, reason) = problem.failure(stage, &format!("llm.max_output_tokens_{stage}"));
            Failed::new(code, stage, reason)
        })
    }

    /// A maintainer's `cancel` ends the run at the next stage boundary (and before every
    /// model call and command, which check the budget too).
    fn check_cancelled(&self, stage: &'static str) -> Result<(), Failed> {
        if self.options.cancel.is_cancelled() {
            return Err(Failed::new(
                FailureCode::Cancelled,
                stage,
                "cancelled by a maintainer",
            ));
        }
        Ok(())
    }

    fn check_budget(&self, stage: &'static str) -> Result<(), Failed> {
        self.check_cancelled(stage)?;
        let budget = &self.ready.config.budget;
        let tokens = self.summary.input_tokens + self.summary.output_tokens;
        if tokens > budget.max_tokens {
            return Err(Failed::new(
                FailureCode::BudgetExceeded,
                stage,
                format!(
                    "{tokens} tokens used, over the budget of {}",
                    budget.max_tokens
                ),
            ));
        }
        let elapsed = self.started.elapsed();
        if elapsed > Duration::from_secs(budget.max_wall_secs) {
            return Err(Failed::new(
                FailureCode::BudgetExceeded,
                stage,
                format!(
                    "{} s spent, over the budget of {} s",
                    elapsed.as_secs(),
                    budget.max_wall_secs
                ),
            ));
        }
        Ok(())
    }
}

/// Why a plan cannot be taken, if it cannot: the failure code a second such plan ends the job
/// with, the refusal, and what the planner is told to do instead.
fn plan_refusal(
    ready: &Ready,
    plan: &Plan,
    repo_files: &[String],
) -> Option<(FailureCode, String, &'static str)> {
    if let Err((path, reason)) = plan::check(plan, &ready.root, &ready.protected) {
        return Some((
            FailureCode::WriteScopeViolation,
            format!("the plan touches `{path}`: {reason}"),
            "name only files inside this repository, relative to its root, that no rule protects",
        ));
    }
    let missing = plan_files::missing_files(plan, &ready.root, &ready.protected, repo_files);
    if missing.is_empty() {
        return None;
    }
    Some((
        FailureCode::InvalidInput,
        format!(
            "the plan names files that do not exist: {}",
            plan_files::describe(&missing)
        ),
        "name files that exist in this repository (see the map), and give a file you mean to add \
         the operation CREATE",
    ))
}

/// What a revision stands on instead of a triage: a maintainer asked, so it is actionable, of
/// the change request's own type.
fn revision_triage(revision: &Revision) -> Triage {
    Triage {
        actionable: true,
        classification: revision.kind,
        risk: triage::Risk::Low,
        affected_files: Vec::new(),
        reason: "a maintainer asked for this revision".into(),
    }
}

/// The bytes of the files the plan names, as they are now (a file to create counts nothing).
fn planned_bytes(root: &ProjectRoot, plan: &Plan) -> u64 {
    let Ok(tree) = Tree::open(root.path()) else {
        return 0;
    };
    plan.file_changes
        .iter()
        .filter_map(|change| match tree.entry(&change.path) {
            Ok(Entry::File { bytes, .. }) => Some(bytes),
            _ => None,
        })
        .sum()
}

/// Whether the work tree holds exactly `wanted` at `path` (`None`: nothing there), seen
/// without following a link; a link anywhere on the way means it does not.
fn holds(tree: &Tree, path: &str, wanted: Option<&str>) -> bool {
    match (tree.entry(path), wanted) {
        (Ok(Entry::File { bytes, .. }), Some(text)) if bytes == text.len() as u64 => tree
            .read(path, bytes)
            .is_ok_and(|read| read.as_deref() == Some(text.as_bytes())),
        (Ok(Entry::Missing), None) => true,
        _ => false,
    }
}

/// A write the work tree refused: a link or a file in a folder's way is outside what the job
/// may write; anything else is the machine's fault.
fn tree_failure(stage: &'static str, path: &str, action: &str, err: TreeError) -> Failed {
    let code = match err {
        TreeError::Link { .. } | TreeError::NotAFolder { .. } | TreeError::NotRelative { .. } => {
            FailureCode::WriteScopeViolation
        }
        _ => FailureCode::Preflight,
    };
    Failed::new(code, stage, format!("cannot {action} `{path}`: {err}"))
}

fn argv_of(command: &ValidationCommand) -> Vec<String> {
    let mut argv = vec![command.spec.program.clone()];
    argv.extend(command.spec.args.iter().cloned());
    argv
}

/// The model's files as they will be committed on top of `base`, each checked against the
/// denied paths again: no path a rule protects is committed, however it got into the list.
fn files_to_commit<'a>(
    ready: &Ready,
    applied: &'a BTreeMap<String, Option<String>>,
    base: &CommitSha,
    stage: &'static str,
) -> Result<Vec<FileContent<'a>>, Failed> {
    let mut files = Vec::new();
    for (path, content) in applied {
        if let Some(rule) = ready.protected.rule_for(path, false) {
            return Err(Failed::new(
                FailureCode::WriteScopeViolation,
                stage,
                format!("`{path}` may not be committed: it is protected by `{rule}`"),
            ));
        }
        let unchanged_from_base = ready
            .workspace
            .file_at(base, path)
            .ok()
            .is_some_and(|before| before.as_deref() == content.as_ref().map(|t| t.as_bytes()));
        if !unchanged_from_base {
            files.push((path.as_str(), content.as_ref().map(|text| text.as_bytes())));
        }
    }
    Ok(files)
}

/// Names joined for a log line; "none" for none.
fn listed<'a>(names: impl IntoIterator<Item = &'a String>) -> String {
    let names: Vec<&str> = names.into_iter().map(String::as_str).collect();
    if names.is_empty() {
        "none named".to_string()
    } else {
        names.join(", ")
    }
}

/// The index of the work tree and the files and spans it ranks for the issue.
struct Located {
    index: RepoIndex,
    ranking: Ranking,
}

/// Why a whole-file answer for a file shown only in part cannot be applied: it would drop
/// every line the model did not see.
fn whole_write_of_a_part(edits: &EditSet, context: &Context) -> Option<String> {
    edits.edits.iter().find_map(|edit| {
        let Change::Write { .. } = edit.change else {
            return None;
        };
        let path = paths::normalise(&edit.path).ok()?;
        let file = context.file(&path).filter(|file| !file.whole())?;
        let shown: Vec<String> = file
            .spans()
            .iter()
            .map(|span| format!("{}-{}", span.start, span.end))
            .collect();
        Some(format!(
            "`{path}` was shown only in part (lines {} of {}), so a whole-file answer would drop \
             the rest; send SEARCH/REPLACE blocks for the lines you change",
            shown.join(", "),
            file.total_lines
        ))
    })
}

/// Stops `clock` as `result` says: a failure with its code and reason.
fn finish_stage<T>(clock: StageClock, result: Result<T, Failed>) -> Result<T, Failed> {
    clock.finish(result, |failed| {
        format!("{} {}", failed.code, failed.reason)
    })
}

fn io_failure(stage: &'static str) -> impl Fn(String) -> Failed {
    move |reason| Failed::new(FailureCode::Preflight, stage, reason)
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
