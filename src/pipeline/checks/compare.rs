//! A command's result on the change compared with the base, test by test: the verdict and why,
//! the tests fixed, still failing, new or flaky, and the judgement over every command.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::relevance::Relevance;
use super::run::{CheckRun, lists_only_failures, named_tests};

/// How a command's result on the change compares with the base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "verdict")]
pub enum Verdict {
    /// It passes on the change.
    Passed,
    /// It failed on the base and still fails, and the runner's results, read test by test on
    /// both trees, show nothing that passed there failing now.
    NoWorse,
    /// The change made it worse: this must be repaired.
    Worse { why: String },
}

/// One command's base and change results side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub name: String,
    pub command: Vec<String>,
    /// `None` when the command was not run on the base.
    pub base: Option<CheckRun>,
    pub change: CheckRun,
    #[serde(flatten)]
    pub verdict: Verdict,
    /// Failing now, passing on the base (or not named there, when the base's run named no
    /// passing test: then a new test cannot be told from one that passed).
    pub new_failures: Vec<String>,
    /// Tests the change's run names (passing or failing) that the base's run did not, though it
    /// named its passing and its failing tests: tests the change adds. Flaky ones aside.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub new_tests: Vec<String>,
    /// The new tests that fail: the change must not add a failing test.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub new_failing_tests: Vec<String>,
    /// Failing on the base and on the change.
    pub still_failing: Vec<String>,
    /// Failing on the base, no longer failing.
    pub fixed: Vec<String>,
    /// Failed in one run and passed in the other, on either tree.
    pub flaky: Vec<String>,
    /// Still failing tests the change may be about, when it fixed none of them and added no
    /// passing test: one must pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub demanded: Vec<String>,
}

impl Comparison {
    pub fn acceptable(&self) -> bool {
        !matches!(self.verdict, Verdict::Worse { .. })
    }

    /// The tests that already failed on the base and may go on failing: never one the verdict
    /// demands, so no repair is told both to make a test pass and to leave it alone.
    pub fn left_alone(&self) -> Vec<String> {
        self.still_failing
            .iter()
            .filter(|name| !self.demanded.contains(name))
            .cloned()
            .collect()
    }
}

/// Compares a command's run on the change with its run on the base.
pub fn compare(base: Option<&CheckRun>, change: CheckRun, relevance: &Relevance) -> Comparison {
    let base_failing = base.map(CheckRun::failing).unwrap_or_default();
    let mut flaky: BTreeSet<String> = change.flaky();
    if let Some(base) = base {
        flaky.extend(base.flaky());
    }
    let change_failing = change.failing();
    let failing_only_now: Vec<String> = change_failing
        .difference(&base_failing)
        .filter(|name| !flaky.contains(*name))
        .cloned()
        .collect();
    // A test is new only when the base's run named its passing tests and neither run's runner
    // prints only its failures: a quiet runner never makes a test look new.
    let known_on_base = base
        .and_then(named_tests)
        .filter(|_| !lists_only_failures(&change));
    let is_new = |name: &String| {
        known_on_base
            .as_ref()
            .is_some_and(|known| !known.contains(name))
    };
    let (new_failing_tests, new_failures): (Vec<String>, Vec<String>) =
        failing_only_now.into_iter().partition(|name| is_new(name));
    let passing_now: BTreeSet<String> = change
        .tests()
        .map(|tests| tests.passes.iter().cloned().collect())
        .unwrap_or_default();
    let new_passing_tests: Vec<String> = passing_now
        .into_iter()
        .filter(|name| is_new(name) && !flaky.contains(name) && !change_failing.contains(name))
        .collect();
    let new_tests: Vec<String> = new_passing_tests
        .iter()
        .chain(&new_failing_tests)
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let still_failing: Vec<String> = change_failing
        .intersection(&base_failing)
        .cloned()
        .collect();
    let fixed: Vec<String> = base_failing
        .difference(&change_failing)
        .filter(|name| !flaky.contains(*name))
        .cloned()
        .collect();
    // A reproduction's tests must all pass. Without one, of the tests the change may be about
    // it must fix at least one, or add a test that passes (the evidence a reproduction would
    // have given); the rest may be other tests of the same file that merely already failed.
    let reproduced = !relevance.reproduction.is_empty();
    let fixed_one_it_is_about = fixed.iter().any(|name| relevance.is_about(name));
    let about_the_issue: Vec<String> = if reproduced {
        still_failing
            .iter()
            .filter(|name| relevance.reproduction.contains(*name))
            .cloned()
            .collect()
    } else if fixed_one_it_is_about || !new_passing_tests.is_empty() {
        Vec::new()
    } else {
        still_failing
            .iter()
            .filter(|name| relevance.is_about(name))
            .cloned()
            .collect()
    };
    let failing = NewlyFailing {
        passed_on_base: &new_failures,
        new_tests: &new_failing_tests,
    };
    let verdict = verdict(base, &change, &failing, &about_the_issue, reproduced);
    Comparison {
        name: change.first.name.clone(),
        command: change.first.command.clone(),
        base: base.cloned(),
        change,
        verdict,
        new_failures,
        new_tests,
        new_failing_tests,
        still_failing,
        fixed,
        flaky: flaky.into_iter().collect(),
        demanded: about_the_issue,
    }
}

/// The tests failing with the change and not on the base: those that passed there, and new ones.
struct NewlyFailing<'a> {
    passed_on_base: &'a [String],
    new_tests: &'a [String],
}

impl NewlyFailing<'_> {
    /// Why they make the change worse, or None when there are none.
    fn why(&self) -> Option<String> {
        let mut reasons = Vec::new();
        if !self.passed_on_base.is_empty() {
            reasons.push(format!(
                "tests that pass on the base commit fail with this change: {}",
                self.passed_on_base.join(", ")
            ));
        }
        if !self.new_tests.is_empty() {
            reasons.push(format!(
                "new tests fail with this change: {}",
                self.new_tests.join(", ")
            ));
        }
        (!reasons.is_empty()).then(|| reasons.join("; "))
    }
}

fn verdict(
    base: Option<&CheckRun>,
    change: &CheckRun,
    newly_failing: &NewlyFailing,
    about_the_issue: &[String],
    reproduced: bool,
) -> Verdict {
    let worse = |why: String| Verdict::Worse { why };
    if change.passed() {
        return match shrinkage(base, change) {
            Some(why) => worse(why),
            None => Verdict::Passed,
        };
    }
    if change.last().timed_out {
        // A run cut short says nothing about what the change did, whatever the base did.
        return worse("it timed out, so its result is unknown".into());
    }
    let Some(base) = base.filter(|base| !base.passed()) else {
        // Only new tests failing, on a base that passed: they are what is wrong.
        if base.is_some()
            && newly_failing.passed_on_base.is_empty()
            && let Some(why) = newly_failing.why()
        {
            return worse(why);
        }
        return worse("it passes on the base commit and fails with this change".into());
    };
    if let Some(why) = newly_failing.why() {
        return worse(why);
    }
    if let Some(why) = shrinkage(Some(base), change) {
        return worse(why);
    }
    if !about_the_issue.is_empty() && reproduced {
        return worse(format!(
            "the tests that reproduce the issue still fail (this change must make them pass): {}",
            about_the_issue.join(", ")
        ));
    }
    if !about_the_issue.is_empty() {
        return worse(format!(
            "the tests this change may be about still fail as on the base commit (it must make \
             at least one of them pass): {}",
            about_the_issue.join(", ")
        ));
    }
    match (base.tests(), change.tests()) {
        (Some(_), None) => worse(
            "its tests ran on the base commit but not with this change (does it still build?)"
                .into(),
        ),
        // Fail closed: two failing exit statuses say nothing about which tests fail.
        (None, None) => worse(CANNOT_TELL.into()),
        _ => Verdict::NoWorse,
    }
}

/// Why a command that fails on both trees, its results unreadable on both, is not accepted.
pub const CANNOT_TELL: &str = "it fails on the base commit and with this change, and its output \
    names no test results autofix can read, so autofix cannot tell whether this change made it \
    worse: make the runner's results readable (a verbose flag such as `pytest -rA`, `go test -v`, \
    `python -m unittest -v`, or a JUnit XML report)";

/// Tests removed or newly skipped: a failing test is never "fixed" by deleting or skipping it.
/// A runner that lists only its failures (`go test` without `-v`) shows no total to compare.
fn shrinkage(base: Option<&CheckRun>, change: &CheckRun) -> Option<String> {
    let (before, after) = (base?.tests()?, change.tests()?);
    if before.only_failures_listed || after.only_failures_listed {
        return None;
    }
    let (ran_before, ran_after) = (before.passed + before.failed, after.passed + after.failed);
    if after.skipped > before.skipped && ran_after < ran_before {
        return Some(format!(
            "it skips {} more tests than on the base commit ({} → {} skipped); do not skip \
             tests, fix the code",
            after.skipped - before.skipped,
            before.skipped,
            after.skipped
        ));
    }
    if after.total() < before.total() {
        return Some(format!(
            "it runs {} fewer tests than on the base commit ({} → {}); do not delete tests, \
             fix the code",
            before.total() - after.total(),
            before.total(),
            after.total()
        ));
    }
    None
}

/// The whole validation of a change, command by command, against the base.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    pub comparisons: Vec<Comparison>,
}

impl Judgement {
    /// No command is worse than on the base.
    pub fn acceptable(&self) -> bool {
        self.comparisons.iter().all(Comparison::acceptable)
    }

    /// The first command the change made worse.
    pub fn first_worse(&self) -> Option<&Comparison> {
        self.comparisons.iter().find(|c| !c.acceptable())
    }

    pub fn flaky(&self) -> Vec<String> {
        let all: BTreeSet<&String> = self.comparisons.iter().flat_map(|c| &c.flaky).collect();
        all.into_iter().cloned().collect()
    }
}
