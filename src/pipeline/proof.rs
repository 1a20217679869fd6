//! What shows that a change fixes its issue: the reproduction — tests written before the fix
//! that fail on the base commit — and how they fared with the change, as `RESULT.json` says it.

use serde::{Deserialize, Serialize};

use crate::config::repo::ReproduceMode;
use crate::quote::one_line;

/// A job's reproduction of its issue, or why it has none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reproduction {
    pub mode: ReproduceMode,
    /// The tests that reproduce the issue: they fail on the base commit. Empty when none does.
    pub tests: Vec<String>,
    /// `failed` when `tests` failed on the base commit; `None` without a reproduction.
    pub base: Option<TestOutcome>,
    /// How `tests` fared with the change; `None` without a reproduction or before the change
    /// was judged.
    pub change: Option<TestOutcome>,
    /// How many reproduce answers were asked for.
    pub attempts: u32,
    /// Each reproducing test's failure on the base commit, in `tests` order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<BaseFailure>,
    /// The test files the reproduce stage wrote; the fix may not change them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// Why there is no reproduction, one line (when `tests` is empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unproven: Option<String>,
}

/// How the reproducing tests ran on one tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TestOutcome {
    Passed,
    Failed,
}

/// One reproducing test and the line that shows its failure on the base commit (the assertion,
/// secrets redacted, cut to [`MAX_FAILURE_LINE`] characters).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaseFailure {
    pub test: String,
    pub line: String,
}

/// Most characters of a failure line shown as proof.
pub const MAX_FAILURE_LINE: usize = 200;

impl Reproduction {
    /// No reproduction was tried, or none was found: `unproven` says why.
    pub fn none(mode: ReproduceMode, attempts: u32, unproven: impl Into<String>) -> Reproduction {
        Reproduction {
            mode,
            tests: Vec::new(),
            base: None,
            change: None,
            attempts,
            failures: Vec::new(),
            files: Vec::new(),
            unproven: Some(unproven.into()),
        }
    }

    /// A reproduction was expected and none was found: the pipeline tried (`attempts > 0`,
    /// mode not `off`) and no test failed on the base commit. Its change request is a draft,
    /// whatever `pull_request.draft` says.
    pub fn forces_draft(&self) -> bool {
        self.tests.is_empty() && self.mode != ReproduceMode::Off && self.attempts > 0
    }

    /// Whether a reproduction was asked for at all (not with mode `off`, nor for an issue a
    /// test cannot show, such as a `docs` change).
    pub fn tried(&self) -> bool {
        !self.tests.is_empty() || self.attempts > 0
    }

    /// Why there is no reproduction, one line (a stand-in when none was recorded).
    pub fn why_unproven(&self) -> String {
        match self.unproven.as_deref().map(str::trim) {
            Some(why) if !why.is_empty() => one_line(why),
            _ => "no reason was recorded".to_owned(),
        }
    }

    /// What the reproduction shows, one part per reproducing test, or the one part that says
    /// why there is no proof.
    pub fn proof(&self) -> Vec<ProofLine<'_>> {
        if self.tests.is_empty() {
            return vec![ProofLine::NotProven];
        }
        self.tests
            .iter()
            .map(|test| ProofLine::Test {
                name: test,
                failure: self
                    .failures
                    .iter()
                    .find(|failure| &failure.test == test)
                    .map(|failure| failure.line.as_str())
                    .filter(|line| !line.trim().is_empty()),
                change: self.change,
            })
            .collect()
    }

    /// The proof in plain words, one line each, as `autofix fix` prints it:
    /// `test_x failed on the base commit (assert …) and passes with this change`, or
    /// `not proven: <why>`.
    pub fn lines(&self) -> Vec<String> {
        self.proof()
            .iter()
            .map(|line| line.words(one_line, &self.why_unproven()))
            .collect()
    }
}

/// One line of proof: a reproducing test and how it fared, or the lack of any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProofLine<'a> {
    Test {
        name: &'a str,
        /// The line that shows its failure on the base commit, when one was kept.
        failure: Option<&'a str>,
        change: Option<TestOutcome>,
    },
    /// No test reproduces the issue.
    NotProven,
}

impl ProofLine<'_> {
    /// The line in words; `quote` shows a test name or a failure line (plain, or as a
    /// Markdown code span), `why` is the reason shown when nothing is proven, already quoted.
    pub fn words(&self, quote: impl Fn(&str) -> String, why: &str) -> String {
        match self {
            ProofLine::Test {
                name,
                failure,
                change,
            } => {
                let failure = failure
                    .map(|line| format!(" ({})", quote(&failure_line(line))))
                    .unwrap_or_default();
                let after = match change {
                    Some(TestOutcome::Passed) => "passes with this change",
                    Some(TestOutcome::Failed) => "still fails with this change",
                    None => "has not been run with this change",
                };
                format!(
                    "{} failed on the base commit{failure} and {after}",
                    quote(name)
                )
            }
            ProofLine::NotProven => format!("not proven: {why}"),
        }
    }
}

/// A failure line as proof shows it: on one line, its spaces trimmed, cut to
/// [`MAX_FAILURE_LINE`] characters (with `…` when cut).
pub fn failure_line(line: &str) -> String {
    let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= MAX_FAILURE_LINE {
        return one_line(&line);
    }
    let cut: String = line.chars().take(MAX_FAILURE_LINE - 1).collect();
    one_line(&format!("{}…", cut.trim_end()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reproduced(change: Option<TestOutcome>) -> Reproduction {
        Reproduction {
            mode: ReproduceMode::Preferred,
            tests: vec!["tests/test_calc.py::test_clamp_low".into()],
            base: Some(TestOutcome::Failed),
            change,
            attempts: 1,
            failures: vec![BaseFailure {
                test: "tests/test_calc.py::test_clamp_low".into(),
                line: "assert clamp(-5, 0, 3) == 0\nE   assert -5 == 0".into(),
            }],
            files: vec!["tests/test_calc.py".into()],
            unproven: None,
        }
    }

    #[test]
    fn a_proven_reproduction_names_each_test_its_base_failure_and_the_change() {
        let reproduction = reproduced(Some(TestOutcome::Passed));
        assert_eq!(
            reproduction.lines(),
            [
                "tests/test_calc.py::test_clamp_low failed on the base commit \
              (assert clamp(-5, 0, 3) == 0 E assert -5 == 0) and passes with this change"
            ]
        );
    }

    #[test]
    fn a_test_without_a_kept_failure_line_is_named_without_one() {
        let mut reproduction = reproduced(None);
        reproduction.failures.clear();
        assert_eq!(
            reproduction.lines(),
            [
                "tests/test_calc.py::test_clamp_low failed on the base commit and has not been run \
              with this change"
            ]
        );
    }

    #[test]
    fn no_reproduction_says_not_proven_and_why() {
        let reproduction = Reproduction::none(
            ReproduceMode::Preferred,
            2,
            "the test the model wrote passes on the base commit",
        );
        assert_eq!(
            reproduction.lines(),
            ["not proven: the test the model wrote passes on the base commit"]
        );
        let mut silent = reproduction.clone();
        silent.unproven = None;
        assert_eq!(silent.lines(), ["not proven: no reason was recorded"]);
    }

    #[test]
    fn a_long_failure_line_is_cut_to_the_most_proof_shows() {
        let line = "x".repeat(MAX_FAILURE_LINE * 2);
        let shown = failure_line(&line);
        assert_eq!(shown.chars().count(), MAX_FAILURE_LINE);
        assert!(shown.ends_with('…'));
        assert_eq!(failure_line("short"), "short");
    }

    #[test]
    fn only_a_reproduction_tried_and_missed_forces_a_draft() {
        let missed = Reproduction::none(ReproduceMode::Preferred, 2, "no test failed");
        assert!(missed.forces_draft());
        let required = Reproduction::none(ReproduceMode::Required, 1, "no test failed");
        assert!(required.forces_draft());
        let off = Reproduction::none(
            ReproduceMode::Off,
            0,
            "reproduction is off in .autofix.toml",
        );
        assert!(!off.forces_draft());
        let skipped = Reproduction::none(
            ReproduceMode::Preferred,
            0,
            "a `docs` change is not shown by a test",
        );
        assert!(!skipped.forces_draft());
        assert!(!reproduced(Some(TestOutcome::Passed)).forces_draft());
    }

    #[test]
    fn a_reproduction_is_tried_unless_it_was_skipped() {
        assert!(Reproduction::none(ReproduceMode::Preferred, 1, "none failed").tried());
        assert!(!Reproduction::none(ReproduceMode::Off, 0, "off").tried());
        assert!(reproduced(None).tried());
    }
}
