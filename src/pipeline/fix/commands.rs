//! The repository's own commands run in the job's sandbox: `[[setup]]` once on the base, and
//! each validation command with its rerun and its report.

use std::time::SystemTime;

use super::{FEEDBACK_TAIL_BYTES, Job, io_failure};
use crate::config::repo::ValidationCommand;
use crate::exec::{self, Access, ExecError, Jail};
use crate::failure::{Failure, FailureCode, Stage};
use crate::pipeline::checks::CheckRun;
use crate::pipeline::test_report::{self, CommandReport};

impl Job<'_> {
    /// Runs the repository's `[[setup]]` commands once, on the base commit, with network and
    /// the job's cache writable — or puts back what they left last time, when the dependency
    /// cache holds it for the same commands and dependency files. What they leave in the tree
    /// is kept for validation and never committed.
    pub(super) async fn setup(&mut self) -> Result<(), Failure> {
        let files = match self.options.dep_cache.max_bytes {
            0 => Vec::new(),
            _ => self.listed_files(),
        };
        self.open_caches(&files);
        if self.ready.setup.is_empty() {
            self.caches_after_setup();
            return Ok(());
        }
        let cache = &self.ready.cache_dir;
        std::fs::create_dir_all(cache).map_err(|err| {
            Failure::new(
                FailureCode::Preflight,
                Stage::Setup,
                format!("cannot create the cache folder {}: {err}", cache.display()),
            )
        })?;
        let key = self.setup_key();
        if let Some(key) = &key
            && self.restored_setup(key)?
        {
            self.record_setup_outputs()?;
            self.caches_after_setup();
            return Ok(());
        }
        let before = key.as_ref().and_then(|_| self.tree_before_setup(&files));
        for command in &self.ready.setup {
            if let Err(failed) = self.run_setup_command(command).await {
                self.caches_after_failed_setup();
                return Err(failed);
            }
        }
        self.record_setup_outputs()?;
        if let (Some(key), Some(before)) = (&key, &before) {
            self.keep_setup(key, before);
        }
        self.caches_after_setup();
        Ok(())
    }

    async fn run_setup_command(&mut self, command: &ValidationCommand) -> Result<(), Failure> {
        self.check_budget(Stage::Setup)?;
        let outcome = self
            .run_confined(Stage::Setup, command, Access::Writable)
            .await?;
        self.log
            .write_command_log(&format!("setup-{}", command.name), &outcome.output)
            .map_err(io_failure(Stage::Setup))?;
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
        if outcome.success() {
            return Ok(());
        }
        self.summary.last_failing_output = Some(
            self.options
                .redactor
                .redact(&exec::output_tail(&outcome.output, FEEDBACK_TAIL_BYTES)),
        );
        let code = if outcome.timed_out {
            FailureCode::Timeout
        } else {
            FailureCode::ValidationFailed
        };
        Err(Failure::new(
            code,
            Stage::Setup,
            format!("`{}` failed", argv_of(command).join(" ")),
        ))
    }

    /// What setup left in the tree, kept through every later command and never committed.
    fn record_setup_outputs(&mut self) -> Result<(), Failure> {
        let ws = &self.ready.workspace;
        self.setup_outputs = ws
            .changed_paths()
            .map_err(|err| Failure::new(err.failure_code(), Stage::Setup, err.to_string()))?;
        if !self.setup_outputs.is_empty() {
            self.log.line(&format!(
                "setup: left {} file(s) in the tree, kept for validation and never committed",
                self.setup_outputs.len()
            ));
        }
        Ok(())
    }

    /// One validation command on the tree as it is, rerun once at once when it fails without
    /// timing out (on the same tree: what the first run wrote is put back first), with the
    /// whole output of the last run.
    pub(super) async fn run_check(
        &mut self,
        stage: Stage,
        command: &ValidationCommand,
    ) -> Result<(CheckRun, String), Failure> {
        let (first, output) = self.run_reported(stage, command, "").await?;
        if first.passed || first.timed_out {
            // A hang is not a flake worth waiting out twice.
            return Ok((CheckRun::new(first, None), output));
        }
        self.keep_only_the_model_work(stage)?;
        let (rerun, output) = self.run_reported(stage, command, "-rerun").await?;
        Ok((CheckRun::new(first, Some(rerun)), output))
    }

    /// One run of a validation command, its output kept as an artifact and its report read.
    pub(super) async fn run_reported(
        &mut self,
        stage: Stage,
        command: &ValidationCommand,
        suffix: &str,
    ) -> Result<(CommandReport, String), Failure> {
        self.check_budget(stage)?;
        let started = SystemTime::now();
        let outcome = self.run_confined(stage, command, Access::ReadOnly).await?;
        let log_name = match stage {
            Stage::Base | Stage::Reproduce => format!("{stage}-{}{suffix}", command.name),
            _ => format!("{}{suffix}", command.name),
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
        if stage == Stage::Validate {
            self.summary.validation_ms += outcome.duration.as_millis() as u64;
        }
        self.log.line(&format!(
            "{stage}: ran {}{suffix} ({})",
            command.name,
            outcome.describe()
        ));
        Ok((report, outcome.output))
    }

    /// Runs one repository command in the job's sandbox: the work tree writable, its `.git` not,
    /// the cache folders with `cache` access (a job's own copy of the build folders writable in
    /// validation), the network only when the step asks for it.
    pub(super) async fn run_confined(
        &mut self,
        stage: Stage,
        command: &ValidationCommand,
        cache: Access,
    ) -> Result<exec::CommandOutcome, Failure> {
        let ready = self.ready;
        let mut jail: Jail = self
            .options
            .settings
            .sandbox
            .jail(ready.workspace.root())
            .with_network(command.network);
        let mut spec = command.spec.clone();
        if ready.cache_dir.is_dir() {
            jail = jail.with_dir(&ready.cache_dir, cache);
            spec = spec.with_env("CACHE_DIR", ready.cache_dir.display().to_string());
        }
        let (jail, spec) = self.with_caches(jail, spec, cache);
        if command.network {
            let shown = argv_of(command).join(" ");
            let line = if command.name == shown {
                format!("`{shown}`")
            } else {
                format!("{} (`{shown}`)", command.name)
            };
            if !self.summary.networked_commands.contains(&line) {
                self.summary.networked_commands.push(line);
            }
        }
        let spec = spec.confined(jail).stopped_by(self.stop.clone());
        let outcome = exec::run_async(spec).await;
        // A command stopped by a maintainer's cancel (or because another candidate won) ends
        // the job's work here, whatever it printed.
        self.check_cancelled(stage)?;
        outcome.map_err(|err| match err {
            ExecError::SandboxUnavailable { .. } => Failure::new(
                FailureCode::SandboxUnavailable,
                stage,
                self.options.redactor.redact(&err.to_string()),
            ),
            ExecError::Spawn { .. } => Failure::new(
                FailureCode::ValidationFailed,
                stage,
                self.options.redactor.redact(&err.to_string()),
            ),
        })
    }
}

pub(super) fn argv_of(command: &ValidationCommand) -> Vec<String> {
    let mut argv = vec![command.spec.program.clone()];
    argv.extend(command.spec.args.iter().cloned());
    argv
}
