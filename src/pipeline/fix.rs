//! `autofix fix`: the whole pipeline on a local repository — preflight, triage, plan, feature
//! branch, edit ⇄ validate (repair) ⇄ audit, one commit; on failure, everything put back.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use super::audit::{self, Review};
use super::checkout::Checkout;
use super::context;
use super::issue::Issue;
use super::plan::{self, Plan};
use super::prompts::{Feedback, edit_prompt};
use super::run_log::RunLog;
use super::test_report::{self, CommandReport, TestReport};
use super::triage::{self, Triage};
use crate::config::repo::{RepoConfig, ValidationCommand};
use crate::edits::apply::{self, ApplyError, ApplyPolicy};
use crate::edits::detect;
use crate::edits::paths::{self, ProjectRoot, ProtectedPaths};
use crate::exec;
use crate::failure::FailureCode;
use crate::git::{
    BranchName, BranchOutcome, CommitKind, CommitMessage, CommitSha, Identity, Workspace, slugify,
};
use crate::llm::{LlmProvider, LlmRequest};
use crate::redact::Redactor;

/// Most bytes of a failing command's output quoted back to the model.
const FEEDBACK_TAIL_BYTES: usize = 6 * 1024;

/// Where the issue comes from: a file (`autofix fix`) or the forge (the bot's worker).
pub enum IssueInput {
    File(PathBuf),
    Given(Issue),
}

/// Everything one `autofix fix` needs besides the LLM.
pub struct FixOptions {
    pub repo: PathBuf,
    pub issue: IssueInput,
    /// Overrides the number in the issue file.
    pub issue_number: Option<u64>,
    /// The `Autofix-Job` trailer of the commit; `fix-<issue>` when not given.
    pub job_id: Option<String>,
    /// Artifact folder; by default `<git dir>/autofix/runs/<issue>-<time>`.
    pub artifacts: Option<PathBuf>,
    pub identity: Identity,
    pub default_validate_timeout: Duration,
    pub output_limit: usize,
    pub context_tokens: usize,
    /// Hides every secret the process knows from the artifacts.
    pub redactor: Redactor,
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
    pub validated: bool,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The plan's steps, the change's summary for people.
    pub plan_steps: Vec<String>,
    /// The files the commit changed, in path order.
    pub changed_files: Vec<String>,
    /// The last run of the validation commands.
    pub validation: Vec<CommandReport>,
    /// The end of the output of the command that failed last (secrets redacted).
    pub failure_output_tail: Option<String>,
    pub artifacts: PathBuf,
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
    let workspace = Workspace::open(&options.repo);
    let artifacts = match (&options.artifacts, &workspace) {
        (Some(dir), _) => dir.clone(),
        (None, Ok(ws)) => ws
            .git_dir()
            .join("autofix")
            .join("runs")
            .join(run_name(options)),
        (None, Err(_)) => std::env::temp_dir()
            .join("autofix-runs")
            .join(run_name(options)),
    };
    let log = RunLog::create(&artifacts, options.redactor.clone())?;
    let mut summary = FixSummary {
        committed: false,
        failure_code: None,
        failure_stage: None,
        reason: None,
        branch: None,
        commit: None,
        subject: None,
        repairs: 0,
        reviews: 0,
        validated: false,
        input_tokens: 0,
        output_tokens: 0,
        plan_steps: Vec::new(),
        changed_files: Vec::new(),
        validation: Vec::new(),
        failure_output_tail: None,
        artifacts: artifacts.clone(),
    };
    let outcome = match preflight(options, workspace, &log) {
        Err(failed) => Err(failed),
        Ok(ready) => {
            let mut job = Job {
                options,
                llm,
                ready: &ready,
                log: &log,
                summary: &mut summary,
                started: Instant::now(),
                round: 0,
            };
            job.run().await
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

fn run_name(options: &FixOptions) -> String {
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
    match options.issue_number {
        Some(number) => format!("issue-{number}-{stamp}"),
        None => format!("issue-{stamp}"),
    }
}

fn read_issue_file(path: &std::path::Path) -> Result<Issue, String> {
    let bytes = std::fs::read(path)
        .map_err(|err| format!("cannot read the issue file {}: {err}", path.display()))?;
    let text = String::from_utf8(bytes).map_err(|_| "the issue file is not UTF-8 text")?;
    Issue::parse(&text)
}

/// What the job starts from once preflight has passed.
struct Ready {
    workspace: Workspace,
    root: ProjectRoot,
    issue: Issue,
    number: u64,
    config: RepoConfig,
    protected: ProtectedPaths,
    validation: Vec<ValidationCommand>,
    instructions: String,
    original_branch: BranchName,
    baseline: CommitSha,
}

fn preflight(
    options: &FixOptions,
    workspace: Result<Workspace, crate::git::GitError>,
    log: &RunLog,
) -> Result<Ready, Failed> {
    let invalid = |reason: String| Failed::new(FailureCode::InvalidInput, "preflight", reason);
    let git =
        |err: crate::git::GitError| Failed::new(err.failure_code(), "preflight", err.to_string());
    let issue = match &options.issue {
        IssueInput::Given(issue) => issue.clone(),
        IssueInput::File(path) => read_issue_file(path).map_err(invalid)?,
    };
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
    Ok(Ready {
        workspace,
        root,
        issue,
        number,
        config,
        protected,
        validation,
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
}

impl Job<'_> {
    async fn run(&mut self) -> Result<(), Failed> {
        let repo_files = paths::project_files(self.ready.workspace.root()).map_err(|err| {
            Failed::new(
                FailureCode::Preflight,
                "preflight",
                format!("cannot list the files: {err}"),
            )
        })?;
        let triage = self.triage(&repo_files).await?;
        let plan = self.plan(&triage, &repo_files).await?;
        let (branch, outcome) = self.branch(&triage).await?;
        let work_base = outcome.head().clone();
        let result = self
            .edit_until_accepted(&plan, &repo_files, &work_base)
            .await;
        match result {
            Ok(()) => self.commit(&triage, &plan, &branch),
            Err(failed) => {
                self.put_back(&branch, &outcome, &work_base);
                Err(failed)
            }
        }
    }

    async fn triage(&mut self, repo_files: &[String]) -> Result<Triage, Failed> {
        let ready = self.ready;
        let prompt = triage::prompt(&ready.issue, repo_files, &ready.instructions);
        let text = self.ask("triage", prompt).await?;
        let triage = triage::parse(&text)
            .map_err(|err| Failed::new(FailureCode::LlmOutputInvalid, "triage", err.to_string()))?;
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

    async fn plan(&mut self, triage: &Triage, repo_files: &[String]) -> Result<Plan, Failed> {
        let ready = self.ready;
        let prompt = plan::prompt(&ready.issue, triage, repo_files, &ready.instructions);
        let text = self.ask("plan", prompt).await?;
        let plan = plan::parse(&text)
            .map_err(|err| Failed::new(FailureCode::LlmOutputInvalid, "plan", err.to_string()))?;
        self.summary.plan_steps = plan.plan_steps.clone();
        self.log
            .write_json("PLAN.json", &plan)
            .map_err(io_failure("plan"))?;
        plan::check(&plan, &ready.root, &ready.protected).map_err(|(path, reason)| {
            Failed::new(
                FailureCode::WriteScopeViolation,
                "plan",
                format!("the plan touches `{path}`: {reason}"),
            )
        })?;
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
        repo_files: &[String],
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
            let failure = match self
                .edit(stage, plan, repo_files, feedback.as_ref())
                .await?
            {
                Err((failed, refusal)) => (failed, refusal),
                Ok(()) => {
                    let (report, failing_tail) = self.validate()?;
                    if let Some(failing) = report.commands.iter().find(|c| !c.passed) {
                        let code = if failing.timed_out {
                            FailureCode::Timeout
                        } else {
                            FailureCode::ValidationFailed
                        };
                        let tail = failing_tail.unwrap_or_default();
                        (
                            Failed::new(
                                code,
                                "validate",
                                format!("`{}` failed", failing.command.join(" ")),
                            ),
                            Feedback::ValidationFailed {
                                command: failing.command.join(" "),
                                output_tail: tail,
                            },
                        )
                    } else {
                        self.summary.validated = !self.ready.validation.is_empty();
                        if !config.audit.enabled {
                            return Ok(());
                        }
                        reviews_left -= 1;
                        let review = self.audit(plan, work_base, &report).await?;
                        if review.accepts(&report) {
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
        repo_files: &[String],
        feedback: Option<&Feedback>,
    ) -> Result<Result<(), (Failed, Feedback)>, Failed> {
        let ready = self.ready;
        let context = context::build(
            &ready.root,
            &ready.protected,
            &ready.issue,
            plan,
            repo_files,
            self.options.context_tokens,
        );
        let prompt = edit_prompt(&ready.issue, plan, &context, &ready.instructions, feedback);
        let text = self.ask(stage, prompt).await?;
        let refused = |code: FailureCode, reason: String| {
            Ok(Err((
                Failed::new(code, "edit", reason.clone()),
                Feedback::EditRefused { reason },
            )))
        };
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
        let policy = ApplyPolicy::new(ready.protected.clone());
        match apply::apply(&ready.root, &edits, &policy) {
            Ok(files) => {
                for file in &files {
                    self.log.line(&format!("{stage}: {}", file.summary()));
                }
                Ok(Ok(()))
            }
            Err(err @ (ApplyError::PathRefused { .. } | ApplyError::Protected { .. })) => {
                refused(FailureCode::WriteScopeViolation, err.to_string())
            }
            Err(err) => refused(FailureCode::InvalidDiff, err.to_string()),
        }
    }

    /// Runs the repository's validation commands in order, stopping at the first failure,
    /// whose output tail is returned for the next prompt.
    fn validate(&mut self) -> Result<(TestReport, Option<String>), Failed> {
        let root = self.ready.workspace.root();
        let mut report = TestReport::default();
        let mut failing_tail = None;
        for ValidationCommand {
            name,
            spec,
            fail_on_warnings,
        } in &self.ready.validation
        {
            self.check_budget("validate")?;
            let started = SystemTime::now();
            let mut command = vec![spec.program.clone()];
            command.extend(spec.args.iter().cloned());
            let outcome = exec::run(spec).map_err(|err| {
                Failed::new(FailureCode::ValidationFailed, "validate", err.to_string())
            })?;
            self.log
                .write_command_log(name, &outcome.output)
                .map_err(io_failure("validate"))?;
            let entry =
                test_report::report_for(name, &command, &outcome, root, started, *fail_on_warnings);
            self.log.line(&format!(
                "validate: {name} {} ({})",
                if entry.passed { "passed" } else { "FAILED" },
                outcome.describe()
            ));
            let passed = entry.passed;
            report.commands.push(entry);
            if !passed {
                failing_tail = Some(exec::output_tail(&outcome.output, FEEDBACK_TAIL_BYTES));
                break;
            }
        }
        self.summary.validation = report.commands.clone();
        self.summary.failure_output_tail = failing_tail
            .as_deref()
            .map(|tail| self.options.redactor.redact(tail));
        self.log
            .write_json("TEST_REPORT.json", &report)
            .map_err(io_failure("validate"))?;
        Ok((report, failing_tail))
    }

    async fn audit(
        &mut self,
        plan: &Plan,
        work_base: &CommitSha,
        report: &TestReport,
    ) -> Result<Review, Failed> {
        let ready = self.ready;
        let diff = ready
            .workspace
            .diff_from(work_base)
            .map_err(|err| Failed::new(err.failure_code(), "audit", err.to_string()))?;
        let prompt = audit::prompt(&ready.issue, plan, &diff, report);
        let text = self.ask("audit", prompt).await?;
        let review = audit::parse(&text)
            .map_err(|err| Failed::new(FailureCode::LlmOutputInvalid, "audit", err.to_string()))?;
        self.summary.reviews += 1;
        self.log
            .write_json("REVIEW.json", &review)
            .map_err(io_failure("audit"))?;
        self.log
            .line(&format!("audit: {:?}", review.decision).to_lowercase());
        Ok(review)
    }

    fn commit(&mut self, triage: &Triage, plan: &Plan, branch: &BranchName) -> Result<(), Failed> {
        let ready = self.ready;
        let failed =
            |err: crate::git::GitError| Failed::new(err.failure_code(), "commit", err.to_string());
        let scope = plan
            .scope
            .clone()
            .unwrap_or_else(|| ready.config.commit.default_scope.clone());
        let mut body = String::from("Plan:\n");
        for step in &plan.plan_steps {
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
        let mut changed = ready.workspace.changed_paths().map_err(failed)?;
        changed.sort();
        self.summary.changed_files = changed;
        let sha = ready
            .workspace
            .commit_all(&message, &self.options.identity, &self.options.identity)
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
        if keep_branch && self.keep_work_in_progress() {
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

    /// Commits whatever changed as a work-in-progress commit on the feature branch.
    fn keep_work_in_progress(&mut self) -> bool {
        let ready = self.ready;
        let Ok(changed) = ready.workspace.changed_paths() else {
            return false;
        };
        if changed.is_empty() {
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
        ready
            .workspace
            .commit_all(&message, &self.options.identity, &self.options.identity)
            .is_ok()
    }

    /// One LLM exchange for `stage`, with its prompt and answer kept as artifacts.
    async fn ask(&mut self, stage: &'static str, prompt: String) -> Result<String, Failed> {
        self.check_budget(stage)?;
        self.round += 1;
        let stem = format!("{:02}-{stage}", self.round);
        self.log
            .write_text(&format!("rounds/{stem}-prompt.txt"), &prompt)
            .map_err(io_failure(stage))?;
        let request = LlmRequest {
            stage: stage.to_string(),
            system: None,
            prompt,
            temperature: Some(0.0),
            max_output_tokens: None,
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
        self.check_budget(stage)?;
        Ok(response.text)
    }

    fn check_budget(&self, stage: &'static str) -> Result<(), Failed> {
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

fn io_failure(stage: &'static str) -> impl Fn(String) -> Failed {
    move |reason| Failed::new(FailureCode::Preflight, stage, reason)
}
