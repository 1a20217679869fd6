//! The attempt loop of `autofix run`: preflight, then per attempt prompt → strict JSON writes →
//! scope and precondition checks → atomic writes → verification → acceptance, rollback on failure.

use anyhow::Context;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::artifacts::{AttemptDir, RunDir};
use super::prompt::attempt_prompt;
use super::schema::{
    AttemptRecord, CmdResult, FailureBrief, FailureStage, RunSummary, ValidWorkOrder, Verdict,
    WorkOrder,
};
use crate::config::repo::ValidationCommand;
use crate::edits::apply::{self, ApplyError, ApplyPolicy};
use crate::edits::paths::{ProjectRoot, ProtectedPaths};
use crate::edits::{EditFormat, EditSet, json_writes};
use crate::exec::{self, CommandSpec};
use crate::failure::FailureCode;
use crate::git::{CommitSha, Workspace};
use crate::llm::{LlmProvider, LlmRequest};
use crate::pipeline::checkout::Checkout;
use crate::redact::Redactor;
use crate::telemetry::{StageClock, Stages};

/// Size limits of one proposal (docs/local-commands.md).
pub const MAX_WRITE_BYTES: usize = 200 * 1024;
pub const MAX_PROPOSAL_BYTES: usize = 500 * 1024;
/// Most bytes of a command's output quoted to the model in a FailureBrief.
const EXCERPT_BYTES: usize = 4 * 1024;

/// Everything one run needs besides the LLM itself.
pub struct RunOptions {
    pub repo: PathBuf,
    pub work_order: PathBuf,
    pub out: PathBuf,
    pub max_attempts: usize,
    pub llm_provider: String,
    pub llm_model: String,
    pub llm_temperature: f32,
    /// Timeout of each acceptance command.
    pub command_timeout: Duration,
    pub output_limit: usize,
    /// Timeout of a `.autofix.toml` validation command that sets none.
    pub default_validate_timeout: Duration,
    /// Hides every secret the process knows from the artifacts.
    pub redactor: Redactor,
    /// The sandbox the acceptance and verification commands run in.
    pub sandbox: crate::exec::Sandbox,
    /// Told as each stage starts and ends.
    pub stages: Stages,
}

/// The finished run: its summary and where it was written.
pub struct RunOutcome {
    pub summary: RunSummary,
    pub summary_path: PathBuf,
}

/// Runs the work order to PASS or FAIL. `Err` only when not even the artifacts can be written.
pub async fn run(options: &RunOptions, llm: &dyn LlmProvider) -> anyhow::Result<RunOutcome> {
    let raw = std::fs::read(&options.work_order);
    let workspace = Workspace::open(&options.repo);
    let baseline = workspace.as_ref().ok().and_then(|ws| ws.head_commit().ok());
    let run_id = run_id(
        options,
        raw.as_deref().unwrap_or_default(),
        baseline.as_ref(),
    );
    let run_dir = RunDir::create(&options.out, &run_id, options.redactor.clone())?;
    let mut summary = RunSummary {
        run_id,
        work_order_id: String::new(),
        verdict: Verdict::Fail,
        failure_code: None,
        failure_stage: None,
        baseline_commit: baseline.as_ref().map(|sha| sha.to_string()),
        llm_provider: options.llm_provider.clone(),
        llm_model: options.llm_model.clone(),
        llm_temperature: options.llm_temperature,
        max_attempts: options.max_attempts,
        attempts: Vec::new(),
        input_tokens: 0,
        output_tokens: 0,
        repo_tree_hash_after: None,
    };
    let clock = options.stages.start("preflight");
    let checked = preflight(options, raw, workspace);
    match &checked {
        Ok(_) => clock.ok(),
        Err((code, reason)) => clock.failed(&format!("{code} {reason}")),
    }
    match checked {
        Err((code, reason)) => {
            summary.failure_code = Some(code);
            summary.failure_stage = Some(FailureStage::Preflight);
            run_dir.write_text("preflight_error.txt", &format!("{code}: {reason}\n"))?;
        }
        Ok(ready) => {
            summary.work_order_id = ready.order.order.id.clone();
            let mut runner = Runner {
                options,
                llm,
                order: &ready.order,
                workspace: &ready.workspace,
                baseline: &ready.baseline,
                verify: &ready.verify,
                protected: &ready.protected,
                sandbox_failed: std::cell::Cell::new(false),
                run_dir: &run_dir,
                summary: &mut summary,
            };
            runner.attempts().await?;
        }
    }
    let summary_path = run_dir.write_json("run_summary.json", &summary)?;
    Ok(RunOutcome {
        summary,
        summary_path,
    })
}

/// What a run starts from once preflight has passed.
struct Ready {
    order: ValidWorkOrder,
    workspace: Workspace,
    baseline: CommitSha,
    /// Global verification: the repository's own `[[validate]]` commands.
    verify: Vec<ValidationCommand>,
    /// Built-in denied paths plus the repository's `[paths] deny`.
    protected: ProtectedPaths,
}

/// Work order valid, repository a clean git work tree with a commit, its `.autofix.toml`
/// valid and allowing every acceptance command: else nothing is touched.
fn preflight(
    options: &RunOptions,
    raw: std::io::Result<Vec<u8>>,
    workspace: Result<Workspace, crate::git::GitError>,
) -> Result<Ready, (FailureCode, String)> {
    let invalid = |reason: String| (FailureCode::InvalidInput, reason);
    let bytes = raw.map_err(|err| {
        invalid(format!(
            "cannot read the work order {}: {err}",
            options.work_order.display()
        ))
    })?;
    let text =
        String::from_utf8(bytes).map_err(|_| invalid("the work order is not UTF-8 text".into()))?;
    let order = WorkOrder::parse(&text).map_err(|error| invalid(error.to_string()))?;
    let workspace = workspace.map_err(|err| (err.failure_code(), err.to_string()))?;
    let Checkout {
        workspace,
        baseline,
        config,
        protected,
        validation: verify,
        ..
    } = Checkout::prepare(
        workspace,
        options.default_validate_timeout,
        options.output_limit,
        None,
    )?;
    for (index, argv) in order.acceptance_argv.iter().enumerate() {
        config.check_command(argv).map_err(|refusal| {
            invalid(format!(
                "acceptance_commands[{index}] is not allowed: {refusal}"
            ))
        })?;
    }
    Ok(Ready {
        order,
        workspace,
        baseline,
        verify,
        protected,
    })
}

/// `run_id`: the first 16 hex digits of a sha256 over every input that shapes the run.
fn run_id(options: &RunOptions, work_order: &[u8], baseline: Option<&CommitSha>) -> String {
    let mut hasher = Sha256::new();
    for part in [
        &Sha256::digest(work_order)[..],
        baseline
            .map(|sha| sha.to_string())
            .unwrap_or_default()
            .as_bytes(),
        options.llm_provider.as_bytes(),
        options.llm_model.as_bytes(),
        options.llm_temperature.to_string().as_bytes(),
        options.max_attempts.to_string().as_bytes(),
    ] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hex::encode(hasher.finalize())[..16].to_string()
}

struct Runner<'a> {
    options: &'a RunOptions,
    llm: &'a dyn LlmProvider,
    order: &'a ValidWorkOrder,
    workspace: &'a Workspace,
    baseline: &'a CommitSha,
    verify: &'a [ValidationCommand],
    protected: &'a ProtectedPaths,
    run_dir: &'a RunDir,
    summary: &'a mut RunSummary,
    /// Set when a command could not run because the sandbox did not start.
    sandbox_failed: std::cell::Cell<bool>,
}

impl Runner<'_> {
    async fn attempts(&mut self) -> anyhow::Result<()> {
        let mut brief: Option<FailureBrief> = None;
        for index in 1..=self.options.max_attempts.max(1) {
            let dir = self.run_dir.attempt(index)?;
            let mut record = AttemptRecord {
                attempt_index: index,
                baseline_commit: self.baseline.to_string(),
                proposal_path: None,
                touched_files: Vec::new(),
                write_ok: false,
                verify: Vec::new(),
                acceptance: Vec::new(),
                failure_brief: None,
            };
            let failure = self
                .attempt(index, brief.as_ref(), &dir, &mut record)
                .await?;
            match failure {
                None => {
                    self.summary.verdict = Verdict::Pass;
                    self.summary.failure_code = None;
                    self.summary.failure_stage = None;
                    self.summary.repo_tree_hash_after = Some(
                        tree_hash(self.workspace.root()).context("cannot hash the work tree")?,
                    );
                    self.summary.attempts.push(record);
                    return Ok(());
                }
                Some(failed) => {
                    dir.write_json("failure_brief.json", &failed)?;
                    self.workspace
                        .rollback(self.baseline)
                        .context("cannot roll back to the baseline")?;
                    self.summary.failure_code = Some(failed.code);
                    self.summary.failure_stage = Some(failed.stage);
                    record.failure_brief = Some(failed.clone());
                    self.summary.attempts.push(record);
                    if failed.code == FailureCode::SandboxUnavailable {
                        // No attempt can pass while no command can run.
                        return Ok(());
                    }
                    brief = Some(failed);
                }
            }
        }
        Ok(())
    }

    /// One attempt; `Ok(None)` is a PASS, `Ok(Some(brief))` a FAIL to be rolled back.
    async fn attempt(
        &mut self,
        index: usize,
        brief: Option<&FailureBrief>,
        dir: &AttemptDir,
        record: &mut AttemptRecord,
    ) -> anyhow::Result<Option<FailureBrief>> {
        let clock = self.start(if index == 1 { "edit" } else { "repair" });
        let set = match timed(clock, self.propose(index, brief, dir, record).await)? {
            Ok(set) => set,
            Err(failure) => return Ok(Some(failure)),
        };
        let clock = self.start("write");
        if let Some(failure) = timed(clock, self.write(&set, dir, record))? {
            return Ok(Some(failure));
        }
        self.verify_and_accept(dir, record)
    }

    fn start(&self, stage: &str) -> StageClock {
        self.options.stages.start(stage)
    }

    /// Asks the model for this attempt's writes; `Ok(Err(brief))` when it gave none usable.
    async fn propose(
        &mut self,
        index: usize,
        brief: Option<&FailureBrief>,
        dir: &AttemptDir,
        record: &mut AttemptRecord,
    ) -> anyhow::Result<Result<EditSet, FailureBrief>> {
        // What leaves the process is redacted, like every artifact.
        let prompt = self.options.redactor.redact(&attempt_prompt(
            self.workspace.root(),
            self.order,
            index,
            brief,
        ));
        dir.write_text("prompt.txt", &prompt)?;
        let request = LlmRequest {
            stage: if index == 1 { "edit" } else { "repair" }.to_string(),
            system: None,
            prompt,
            temperature: Some(self.options.llm_temperature),
            max_output_tokens: None,
            schema: None,
            candidate: None,
        };
        let response = match self.llm.complete(&request).await {
            Ok(response) => response,
            Err(error) => {
                dir.write_text("llm_error.txt", &format!("{error}\n"))?;
                return Ok(Err(self.brief(
                    FailureStage::Exception,
                    FailureCode::LlmError,
                    None,
                    None,
                    &error.to_string(),
                )));
            }
        };
        self.summary.input_tokens += response.usage.input_tokens;
        self.summary.output_tokens += response.usage.output_tokens;
        dir.write_text("llm_response.txt", &response.text)?;
        dir.write_text("llm_response.json", &response.raw_json)?;

        let (summary, edits) = match json_writes::parse(&response.text) {
            Ok(parsed) => parsed,
            Err(error) => {
                return Ok(Err(self.brief(
                    FailureStage::LlmOutputInvalid,
                    FailureCode::LlmOutputInvalid,
                    None,
                    None,
                    &error.to_string(),
                )));
            }
        };
        record.proposal_path = Some(dir.write_text("proposed_writes.json", &response.text)?);
        Ok(Ok(EditSet {
            format: EditFormat::Json,
            summary: Some(summary),
            edits,
        }))
    }

    /// Scope check, then the atomic application; records `write_result.json`.
    fn write(
        &mut self,
        set: &EditSet,
        dir: &AttemptDir,
        record: &mut AttemptRecord,
    ) -> anyhow::Result<Option<FailureBrief>> {
        let mut touched = Vec::new();
        for edit in &set.edits {
            let path =
                crate::edits::paths::normalise(&edit.path).unwrap_or_else(|_| edit.path.clone());
            if !touched.contains(&path) {
                touched.push(path);
            }
        }
        touched.sort();
        record.touched_files = touched.clone();
        let outside: Vec<&String> = touched
            .iter()
            .filter(|path| !self.order.allowed_files.contains(path))
            .collect();
        let result = if !outside.is_empty() {
            Err((
                FailureStage::WriteScopeViolation,
                FailureCode::WriteScopeViolation,
                format!(
                    "the proposal writes {} outside allowed_files; allowed: {}",
                    quote_list(&outside),
                    self.order.allowed_files.join(", ")
                ),
            ))
        } else {
            self.apply(set)
        };
        let write_ok = result.is_ok();
        record.write_ok = write_ok;
        let error = result.as_ref().err().map(|(_, _, reason)| reason.clone());
        dir.write_json(
            "write_result.json",
            &serde_json::json!({ "write_ok": write_ok, "touched_files": touched, "error": error }),
        )?;
        Ok(result
            .err()
            .map(|(stage, code, reason)| self.brief(stage, code, None, None, &reason)))
    }

    fn apply(&self, set: &EditSet) -> Result<(), (FailureStage, FailureCode, String)> {
        let failed = |reason: String| (FailureStage::WriteFailed, FailureCode::InvalidDiff, reason);
        let root =
            ProjectRoot::new(self.workspace.root()).map_err(|err| failed(err.to_string()))?;
        let policy = ApplyPolicy {
            protected: self.protected.clone(),
            max_file_bytes: MAX_WRITE_BYTES,
            max_total_bytes: MAX_PROPOSAL_BYTES,
        };
        apply::apply(&root, set, &policy)
            .map(|_| ())
            .map_err(|err| match err {
                ApplyError::StaleContext { .. } => (
                    FailureStage::StaleContext,
                    FailureCode::StaleContext,
                    err.to_string(),
                ),
                ApplyError::PathRefused { .. } | ApplyError::Protected { .. } => (
                    FailureStage::WriteScopeViolation,
                    FailureCode::WriteScopeViolation,
                    err.to_string(),
                ),
                other => failed(other.to_string()),
            })
    }

    /// Global verification, then acceptance commands, in order; the first failure ends it.
    fn verify_and_accept(
        &mut self,
        dir: &AttemptDir,
        record: &mut AttemptRecord,
    ) -> anyhow::Result<Option<FailureBrief>> {
        let acceptance: Vec<ValidationCommand> = self
            .order
            .acceptance_argv
            .iter()
            .enumerate()
            .map(|(index, argv)| ValidationCommand {
                name: format!("acceptance-{}", index + 1),
                spec: CommandSpec::new(
                    argv[0].clone(),
                    argv[1..].to_vec(),
                    self.workspace.root().to_path_buf(),
                )
                .with_timeout(self.options.command_timeout)
                .with_output_limit(self.options.output_limit),
                fail_on_warnings: false,
                network: false,
            })
            .collect();
        let phases = [
            (
                self.verify,
                FailureStage::VerifyFailed,
                "verify_result.json",
            ),
            (
                &acceptance[..],
                FailureStage::AcceptanceFailed,
                "acceptance_result.json",
            ),
        ];
        for (commands, stage, artifact) in phases {
            let clock = self.start(match stage {
                FailureStage::VerifyFailed => "verify",
                _ => "acceptance",
            });
            let mut results = Vec::new();
            let mut failure = None;
            for command in commands {
                let (result, output) = self.run_command(dir, command)?;
                let passed = result.passed;
                results.push(result.clone());
                if !passed {
                    let code = if self.sandbox_failed.get() {
                        FailureCode::SandboxUnavailable
                    } else if result.timed_out {
                        FailureCode::Timeout
                    } else {
                        FailureCode::ValidationFailed
                    };
                    failure = Some(self.brief(
                        stage,
                        code,
                        Some(result.command.join(" ")),
                        result.exit_code,
                        &output,
                    ));
                    break;
                }
            }
            match &failure {
                None => clock.ok(),
                Some(failure) => clock.failed(&brief_line(failure)),
            }
            dir.write_json(artifact, &results)?;
            match stage {
                FailureStage::VerifyFailed => record.verify = results,
                _ => record.acceptance = results,
            }
            if failure.is_some() {
                return Ok(failure);
            }
        }
        Ok(None)
    }

    fn run_command(
        &self,
        dir: &AttemptDir,
        command: &ValidationCommand,
    ) -> anyhow::Result<(CmdResult, String)> {
        let jail = self
            .options
            .sandbox
            .jail(self.workspace.root())
            .with_network(command.network);
        let spec = &command.spec.clone().confined(jail);
        let (output, exit_code, timed_out, seconds, passed) = match exec::run(spec) {
            Ok(outcome) => {
                let mut output = outcome.output.clone();
                if outcome.timed_out {
                    output.push_str(&format!("\n[autofix: {}]\n", outcome.describe()));
                }
                (
                    output,
                    outcome.exit_code,
                    outcome.timed_out,
                    outcome.duration.as_secs_f64(),
                    command.passed(&outcome),
                )
            }
            Err(error) => {
                if error.is_sandbox_unavailable() {
                    self.sandbox_failed.set(true);
                }
                (format!("{error}\n"), None, false, 0.0, false)
            }
        };
        let log = dir.write_log(&command.name, &output)?;
        let mut argv = vec![spec.program.clone()];
        argv.extend(spec.args.iter().cloned());
        let result = CmdResult {
            command: argv,
            exit_code,
            timed_out,
            passed,
            stdout_trunc: exec::output_tail(&output, EXCERPT_BYTES),
            stderr_trunc: String::new(),
            stdout_path: log.clone(),
            stderr_path: log,
            duration_seconds: seconds,
        };
        Ok((result, output))
    }

    fn brief(
        &self,
        stage: FailureStage,
        code: FailureCode,
        command: Option<String>,
        exit_code: Option<i32>,
        detail: &str,
    ) -> FailureBrief {
        FailureBrief {
            stage,
            code,
            command,
            exit_code,
            primary_error_excerpt: exec::output_tail(detail, EXCERPT_BYTES),
            constraints_reminder: format!(
                "write only {}; give each write the base_sha256 listed for it; answer with the JSON object only",
                self.order.allowed_files.join(", ")
            ),
        }
    }
}

/// Stops `clock` as a step's outcome says: `Err` (the run cannot go on) and a brief both fail it.
fn timed<T>(clock: StageClock, outcome: anyhow::Result<T>) -> anyhow::Result<T>
where
    T: BriefOf,
{
    match &outcome {
        Err(error) => clock.failed(&format!("{error:#}")),
        Ok(value) => match value.brief() {
            Some(brief) => clock.failed(&brief_line(brief)),
            None => clock.ok(),
        },
    }
    outcome
}

/// The failure brief a step's outcome carries, if any.
trait BriefOf {
    fn brief(&self) -> Option<&FailureBrief>;
}

impl BriefOf for Option<FailureBrief> {
    fn brief(&self) -> Option<&FailureBrief> {
        self.as_ref()
    }
}

impl<T> BriefOf for Result<T, FailureBrief> {
    fn brief(&self) -> Option<&FailureBrief> {
        self.as_ref().err()
    }
}

/// One line for a terminal: the code, the command if any, and the start of the error.
fn brief_line(brief: &FailureBrief) -> String {
    let first = brief
        .primary_error_excerpt
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or_default();
    match &brief.command {
        Some(command) => format!("{} `{command}`: {first}", brief.code),
        None => format!("{} {first}", brief.code),
    }
}

fn quote_list(paths: &[&String]) -> String {
    paths
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// sha256 over `path NUL sha256(content) LF` for every file of the work tree that git would
/// see (ignored files and `.git/` left out), in path order: the same tree gives the same hash.
pub fn tree_hash(root: &Path) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    for path in crate::edits::paths::project_files(root)? {
        let full = root.join(&path);
        // A symlink is hashed as its target path, as git stores it; it is never followed.
        let content = match std::fs::read_link(&full) {
            Ok(target) => target.to_string_lossy().into_owned().into_bytes(),
            Err(_) => std::fs::read(&full)?,
        };
        hasher.update(path.as_bytes());
        hasher.update([0]);
        hasher.update(hex::encode(Sha256::digest(&content)).as_bytes());
        hasher.update(b"\n");
    }
    Ok(hex::encode(hasher.finalize()))
}
