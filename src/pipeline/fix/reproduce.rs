//! The reproduce stage: a test that shows the issue, asked of the model, applied alone on the
//! base commit and run with the repository's checks — the proof the fix must then make pass.

use super::commands::argv_of;
use super::edit::{planned_bytes, whole_write_of_a_part};
use super::validate::listed;
use super::{FEEDBACK_TAIL_BYTES, Job, io_failure};
use crate::config::repo::ReproduceMode;
use crate::edits::apply::{self, ApplyPolicy};
use crate::edits::detect;
use crate::exec;
use crate::failure::{Failure, FailureCode, Stage};
use crate::git::CommitKind;
use crate::index::Ranking;
use crate::pipeline::checks::CheckRun;
use crate::pipeline::context;
use crate::pipeline::plan::Plan;
use crate::pipeline::prompts::ProofShown;
use crate::pipeline::proof::{BaseFailure, Reproduction, TestOutcome};
use crate::pipeline::reproduce::{self as rules, NotReproduced, RunPair, Written};
use crate::pipeline::triage::Triage;

impl Job<'_> {
    /// Settles the reproduction without asking the model when none is to be asked for: a
    /// revision or a replay keeps the one its change request was opened with (its files may not
    /// be changed, its tests must pass), and a repository that turned it off or an issue no test
    /// shows records why there is none. `false`: the reproduce stage is to run.
    pub(super) fn reproduction_settled(&mut self, triage: Option<&Triage>) -> bool {
        let mode = self.ready.config.reproduce.mode;
        if let Some(earlier) = &self.options.earlier_reproduction {
            self.log.line(&format!(
                "reproduce: the change request's reproduction is kept ({})",
                listed(&earlier.tests)
            ));
            let mut kept = earlier.clone();
            kept.change = None;
            if !kept.files.is_empty() {
                self.proof = Some(ProofShown {
                    section: rules::kept_section(&kept),
                    files: kept.files.clone(),
                });
            }
            self.summary.reproduction = Some(kept);
            return true;
        }
        let Some(triage) = triage else {
            return true;
        };
        if let Some(why) = self.reproduction_not_asked(triage, mode) {
            self.log.line(&format!("reproduce: not asked: {why}"));
            self.summary.reproduction = Some(Reproduction::none(mode, 0, why));
            return true;
        }
        false
    }

    /// Finds the tests that reproduce the issue, asking the model at most
    /// [`rules::MAX_ANSWERS`] times, or records why there are none: an error only when the
    /// repository requires a reproduction (`REPRODUCTION_FAILED`).
    pub(super) async fn reproduce(
        &mut self,
        plan: &Plan,
        ranking: &Ranking,
        repo_files: &[String],
    ) -> Result<(), Failure> {
        let mode = self.ready.config.reproduce.mode;
        let mut refusals: Vec<String> = Vec::new();
        let mut previous: Option<NotReproduced> = None;
        let mut attempts = 0;
        if self.ready.validation.is_empty() {
            refusals.push(
                "the repository configures no validation commands and none were found in it to run a test"
                    .into(),
            );
        }
        while refusals.len() == attempts as usize && attempts < rules::MAX_ANSWERS {
            attempts += 1;
            let answer = self
                .reproduce_once(attempts, plan, ranking, repo_files, previous.as_ref())
                .await?;
            let not = match answer {
                Ok(()) => return Ok(()),
                Err(not) => not,
            };
            self.log.line(&format!(
                "reproduce: answer {attempts} is not a reproduction: {}",
                not.why
            ));
            refusals.push(not.why.clone());
            previous = Some(not);
        }
        let why = refusals.last().cloned().unwrap_or_default();
        // The reason is said after "no test reproduces the issue" wherever it is shown.
        self.summary.reproduction = Some(Reproduction::none(mode, attempts, why));
        if mode != ReproduceMode::Required {
            self.log
                .line("reproduce: none found; going on without a proof (mode \"preferred\")");
            return Ok(());
        }
        let numbered: Vec<String> = refusals
            .iter()
            .enumerate()
            .map(|(index, why)| format!("{}) {why}", index + 1))
            .collect();
        Err(Failure::new(
            FailureCode::ReproductionFailed,
            Stage::Reproduce,
            format!(
                "no test reproduces the issue after {attempts} answer(s), and this repository \
                 requires one ([reproduce] mode = \"required\"): {}",
                numbered.join("; ")
            ),
        ))
    }

    /// Why no reproduction is asked for: the repository turned it off, or the issue is not a
    /// bug or a feature (a `docs` or `refactor` change shows nothing in a test).
    fn reproduction_not_asked(&self, triage: &Triage, mode: ReproduceMode) -> Option<String> {
        if mode == ReproduceMode::Off {
            return Some("reproduction is off ([reproduce] mode = \"off\")".into());
        }
        let kind = self.commit_kind(triage);
        if !matches!(kind, CommitKind::Fix | CommitKind::Feat) {
            return Some(format!("a `{kind}` change is not shown by a test"));
        }
        None
    }

    /// One reproduce answer: applied alone on the base, the checks run, judged. A refused
    /// answer's files are taken out again.
    async fn reproduce_once(
        &mut self,
        attempt: u32,
        plan: &Plan,
        ranking: &Ranking,
        repo_files: &[String],
        previous: Option<&NotReproduced>,
    ) -> Result<Result<(), NotReproduced>, Failure> {
        let ready = self.ready;
        let shown = rules::plan_shown(plan, repo_files, ranking);
        let layout = rules::test_layout(repo_files);
        let (prompt, context) = rules::prompt(
            &ready.issue,
            plan,
            &self.instructions,
            &layout,
            previous,
            self.budgets().reproduce,
            |tokens| context::build(&ready.root, &ready.protected, &shown, ranking, tokens),
        );
        let cap = self
            .options
            .settings
            .output_caps
            .edit_for(planned_bytes(&ready.root, &shown));
        let response = self.ask(Stage::Reproduce, prompt, cap, None).await?;
        if response.truncated() {
            return Ok(Err(NotReproduced::new(format!(
                "the answer was cut off at the {cap}-token output cap, so none of it was \
                 applied; write one short test"
            ))));
        }
        let edits = match detect::parse(&response.text, None) {
            Ok(edits) => edits,
            Err(err) => return Ok(Err(NotReproduced::new(err.to_string()))),
        };
        if let Some(edit) = edits
            .edits
            .iter()
            .find(|edit| !rules::may_write(&edit.path))
        {
            return Ok(Err(NotReproduced::new(format!(
                "`{}` is not a test file, and the reproduction may write only tests (the fix \
                 comes later); put the test in the repository's test files",
                edit.path
            ))));
        }
        if let Some(refusal) = whole_write_of_a_part(&edits, &context) {
            return Ok(Err(NotReproduced::new(refusal)));
        }
        let policy = ApplyPolicy::new(ready.protected.clone());
        let files = match apply::apply(&ready.root, &edits, &policy) {
            Ok(files) => files,
            Err(err) => return Ok(Err(NotReproduced::new(err.to_string()))),
        };
        let mut written = Vec::new();
        let mut added_text = String::new();
        for file in &files {
            self.log.line(&format!("reproduce: {}", file.summary()));
            self.applied.insert(file.path.clone(), file.after.clone());
            written.push(file.path.clone());
            let before = file
                .before
                .as_deref()
                .map(String::from_utf8_lossy)
                .unwrap_or_default();
            added_text.push_str(&rules::added_lines(
                &before,
                file.after.as_deref().unwrap_or_default(),
            ));
        }
        let judged = self.run_with_tests(&written, &added_text).await;
        match judged {
            Ok(Ok((runs, failures, tail))) => {
                self.reproduced(attempt, runs, failures, written, &tail)?;
                Ok(Ok(()))
            }
            Ok(Err(not)) => {
                self.take_back(&written)?;
                Ok(Err(not))
            }
            Err(failed) => Err(failed),
        }
    }

    /// The checks on the base with the new tests, judged against the base's own runs: the
    /// runs, each reproducing test's failure, and the output tail that shows them.
    #[allow(clippy::type_complexity)]
    async fn run_with_tests(
        &mut self,
        written: &[String],
        added_text: &str,
    ) -> Result<Result<(Vec<CheckRun>, Vec<BaseFailure>, String), NotReproduced>, Failure> {
        let mut runs = Vec::new();
        let mut outputs = Vec::new();
        for command in &self.ready.validation {
            let (run, output) = self.run_check(Stage::Reproduce, command).await?;
            runs.push(run);
            outputs.push(output);
        }
        self.keep_only_the_model_work(Stage::Reproduce)?;
        let pairs: Vec<RunPair<'_>> = self
            .ready
            .validation
            .iter()
            .zip(&self.base_runs)
            .zip(runs.iter().zip(&outputs))
            .map(|((command, base), (with_tests, output))| RunPair {
                command: argv_of(command).join(" "),
                base,
                with_tests,
                output,
            })
            .collect();
        let written = Written {
            files: written,
            added_text,
        };
        let failures = match rules::judge(&pairs, &written) {
            Ok(failures) => failures,
            Err(not) => {
                return Ok(Err(NotReproduced {
                    output_tail: self.options.redactor.redact(&not.output_tail),
                    why: self.options.redactor.redact(&not.why),
                }));
            }
        };
        let tail = runs
            .iter()
            .zip(&outputs)
            .find(|(run, _)| !run.passed())
            .map(|(_, output)| exec::output_tail(output, FEEDBACK_TAIL_BYTES))
            .unwrap_or_default();
        Ok(Ok((runs, failures, tail)))
    }

    /// Records the reproduction: from now on the change is judged against the base with the
    /// new tests, which must pass, and their files may not be edited.
    fn reproduced(
        &mut self,
        attempt: u32,
        runs: Vec<CheckRun>,
        failures: Vec<BaseFailure>,
        files: Vec<String>,
        output_tail: &str,
    ) -> Result<(), Failure> {
        let redactor = &self.options.redactor;
        let failures: Vec<BaseFailure> = failures
            .into_iter()
            .map(|failure| BaseFailure {
                line: redactor.redact(&failure.line),
                test: failure.test,
            })
            .collect();
        let reproduction = Reproduction {
            mode: self.ready.config.reproduce.mode,
            tests: failures
                .iter()
                .map(|failure| failure.test.clone())
                .collect(),
            base: Some(TestOutcome::Failed),
            change: None,
            attempts: attempt,
            failures,
            files,
            unproven: None,
        };
        self.log.line(&format!(
            "reproduce: reproduced by {} ({})",
            listed(&reproduction.tests),
            listed(&reproduction.files)
        ));
        self.log
            .write_json("REPRODUCTION.json", &reproduction)
            .map_err(io_failure(Stage::Reproduce))?;
        self.log
            .write_json("REPRODUCTION_REPORT.json", &runs)
            .map_err(io_failure(Stage::Reproduce))?;
        self.proof = Some(ProofShown {
            section: rules::edit_section(&reproduction, &redactor.redact(output_tail)),
            files: reproduction.files.clone(),
        });
        self.base_runs = runs;
        self.summary.reproduction = Some(reproduction);
        Ok(())
    }

    /// Takes a refused reproduction's files out of the tree and out of the change.
    fn take_back(&mut self, written: &[String]) -> Result<(), Failure> {
        for path in written {
            self.applied.remove(path);
        }
        self.ready
            .workspace
            .discard(written)
            .map_err(|err| Failure::new(err.failure_code(), Stage::Reproduce, err.to_string()))
    }

    /// After the edits: how the reproducing tests fared with the change as last judged.
    pub(super) fn record_proof_outcome(&mut self) {
        let Some(reproduction) = self.summary.reproduction.as_mut() else {
            return;
        };
        let checks = &self.summary.checks;
        if reproduction.tests.is_empty() || checks.is_empty() {
            return;
        }
        let failing = checks.iter().any(|check| {
            let failing = check.change.failing();
            reproduction.tests.iter().any(|test| failing.contains(test))
        });
        let all_read = checks.len() == self.ready.validation.len()
            && checks
                .iter()
                .all(|check| check.change.passed() || check.change.tests().is_some());
        reproduction.change = if failing {
            Some(TestOutcome::Failed)
        } else if all_read {
            Some(TestOutcome::Passed)
        } else {
            None
        };
    }

    /// The reproducing tests the judge demands pass, when there are any.
    pub(super) fn reproducing_tests(&self) -> &[String] {
        self.summary
            .reproduction
            .as_ref()
            .map_or(&[], |reproduction| reproduction.tests.as_slice())
    }

    /// The files holding the reproduction, which an edit may not change.
    pub(super) fn proof_files(&self) -> &[String] {
        self.proof
            .as_ref()
            .map_or(&[], |proof| proof.files.as_slice())
    }
}
