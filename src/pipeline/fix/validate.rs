//! The validate stage: the checks on the base commit (cached) and on the change, compared
//! command by command, with the artifacts that show them.

use std::path::PathBuf;

use super::{FEEDBACK_TAIL_BYTES, Job, io_failure};
use crate::exec;
use crate::failure::{Failure, Stage};
use crate::pipeline::baseline_cache::{self, BaselineCache};
use crate::pipeline::checks::{self, Judgement, Relevance, Verdict};
use crate::pipeline::test_report::TestReport;

impl Job<'_> {
    /// Runs the repository's validation commands in order on the change, each compared with
    /// its run on the base commit, stopping at the first one the change made worse (its
    /// output tail is returned for the next prompt). Afterwards the tree holds the model's work
    /// and nothing else the commands wrote.
    pub(super) async fn validate(&mut self) -> Result<(Judgement, Option<String>), Failure> {
        let result = self.run_validation().await;
        self.keep_only_the_model_work(Stage::Validate)?;
        result
    }

    pub(super) async fn run_validation(&mut self) -> Result<(Judgement, Option<String>), Failure> {
        let mut judgement = Judgement::default();
        let mut failing_tail = None;
        let issue = &self.ready.issue;
        let relevance = Relevance::new(
            &format!("{}\n{}", issue.title, issue.body),
            self.applied.keys(),
        )
        .reproduced_by(self.reproducing_tests());
        for (index, command) in self.ready.validation.iter().enumerate() {
            let (run, output) = self.run_check(Stage::Validate, command).await?;
            let tail = (!run.passed()).then(|| exec::output_tail(&output, FEEDBACK_TAIL_BYTES));
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
        self.summary.last_failing_output = failing_tail
            .as_deref()
            .map(|tail| self.options.redactor.redact(tail));
        let report = TestReport {
            commands: self.summary.validation.clone(),
        };
        self.log
            .write_json("TEST_REPORT.json", &report)
            .map_err(io_failure(Stage::Validate))?;
        self.log
            .write_json("CHECKS.json", &judgement)
            .map_err(io_failure(Stage::Validate))?;
        Ok((judgement, failing_tail))
    }

    /// Runs the validation commands on the base commit (before any edit) so the change is
    /// judged by what it makes worse; the results are cached per base commit and configuration.
    pub(super) async fn check_base(&mut self) -> Result<(), Failure> {
        let ready = self.ready;
        if ready.validation.is_empty() {
            return Ok(());
        }
        let cache = BaselineCache::new(self.baseline_dir());
        let key = baseline_cache::key(
            &ready.baseline.to_string(),
            self.options.settings.sandbox.mode().as_str(),
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
                    let (run, _) = self.run_check(Stage::Base, command).await?;
                    runs.push(run);
                }
                self.keep_only_the_model_work(Stage::Base)?;
                if let Err(reason) = cache.store(&key, &ready.baseline.to_string(), &runs) {
                    self.log
                        .line(&format!("base: results not cached: {reason:#}"));
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
            .map_err(io_failure(Stage::Base))?;
        self.base_runs = runs;
        Ok(())
    }

    pub(super) fn baseline_dir(&self) -> PathBuf {
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
}

/// Names joined for a log line; "none" for none.
pub(super) fn listed<'a>(names: impl IntoIterator<Item = &'a String>) -> String {
    let names: Vec<&str> = names.into_iter().map(String::as_str).collect();
    if names.is_empty() {
        "none named".to_string()
    } else {
        names.join(", ")
    }
}
