//! One validation command on one tree, its run and the rerun of a failure: which tests failed
//! every time, which flaked, and which the run names at all.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::pipeline::test_report::{CommandReport, TestCounts};

/// One validation command on one tree: its run and, when that failed, an immediate rerun.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckRun {
    pub first: CommandReport,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun: Option<CommandReport>,
}

impl CheckRun {
    pub fn new(first: CommandReport, rerun: Option<CommandReport>) -> Self {
        CheckRun { first, rerun }
    }

    /// The run that counts: the rerun when there was one.
    pub fn last(&self) -> &CommandReport {
        self.rerun.as_ref().unwrap_or(&self.first)
    }

    /// Passed the first time, or on the rerun (then the failures of the first run were flaky).
    pub fn passed(&self) -> bool {
        self.last().passed
    }

    /// Tests that failed in every run.
    pub fn failing(&self) -> BTreeSet<String> {
        let first = failures(&self.first);
        match &self.rerun {
            None => first,
            Some(rerun) => first.intersection(&failures(rerun)).cloned().collect(),
        }
    }

    /// Tests that failed in one run and not in the other, when both runs were counted (a
    /// rerun that passed counts as no failure at all).
    pub fn flaky(&self) -> BTreeSet<String> {
        let Some(rerun) = &self.rerun else {
            return BTreeSet::new();
        };
        if !counted(rerun) || !counted(&self.first) {
            return BTreeSet::new();
        }
        let first = failures(&self.first);
        let second = failures(rerun);
        first.symmetric_difference(&second).cloned().collect()
    }

    /// The test counts of the run that counts, when its runner's output could be read.
    pub fn tests(&self) -> Option<&TestCounts> {
        self.last().tests.as_ref()
    }
}

/// Every test the run names, passing or failing, in any of its runs; None when it cannot tell
/// a test that did not run from one it did not name: no run named a passing test, or one's
/// runner prints only its failures (`go test` without `-v`).
pub(super) fn named_tests(run: &CheckRun) -> Option<BTreeSet<String>> {
    if lists_only_failures(run) {
        return None;
    }
    let mut names = BTreeSet::new();
    let mut named_passes = false;
    for report in [Some(&run.first), run.rerun.as_ref()].into_iter().flatten() {
        let Some(tests) = &report.tests else {
            continue;
        };
        named_passes |= !tests.passes.is_empty();
        names.extend(tests.passes.iter().cloned());
        names.extend(tests.failures.iter().cloned());
    }
    named_passes.then_some(names)
}

/// One of the run's runners printed only its failures (`go test` without `-v`).
pub(super) fn lists_only_failures(run: &CheckRun) -> bool {
    [Some(&run.first), run.rerun.as_ref()]
        .into_iter()
        .flatten()
        .filter_map(|report| report.tests.as_ref())
        .any(|tests| tests.only_failures_listed)
}

/// A run whose failures are known: it passed, or its runner's failing names were read.
fn counted(report: &CommandReport) -> bool {
    report.passed || report.tests.is_some()
}

fn failures(report: &CommandReport) -> BTreeSet<String> {
    report
        .tests
        .as_ref()
        .map(|tests| tests.failures.iter().cloned().collect())
        .unwrap_or_default()
}
