//! The repository's checks as they really are: each validation command's result on the base
//! commit and on the change (a failing run rerun once to tell flaky tests apart), compared.
//!
//! A change is judged by what it makes worse: a command that already failed on the base may
//! still fail, as long as its results are read test by test on both trees (never on exit
//! statuses alone), no test fails that passed before, no new test fails (a test is new when the
//! base's run named its passing and failing tests and not this one), no test disappears or is
//! skipped, and, when tests the change may be about (naming an identifier the issue writes as
//! code, or testing a changed file) already failed, at least one of them now passes or a new
//! test the change adds passes.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::test_report::{CommandReport, TestCounts};

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
fn named_tests(run: &CheckRun) -> Option<BTreeSet<String>> {
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
fn lists_only_failures(run: &CheckRun) -> bool {
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

/// What tells a failing test the change may be about from one that merely already failed:
/// the identifiers the issue writes as code and the files the change writes. Prose words never
/// count: an issue about "an error loading the file" says nothing of `test_loading_error`. The
/// change has to fix only one of the tests it may be about (see [`compare`]).
#[derive(Debug, Clone, Default)]
pub struct Relevance {
    /// Lower-case letters and digits of each identifier: `load_dotenv` → `loaddotenv`.
    issue_identifiers: BTreeSet<String>,
    changed_stems: BTreeSet<String>,
    /// The tests written before the fix that reproduce the issue: when there are any, they
    /// are what the change is about, all of them must pass, and nothing is guessed.
    reproduction: BTreeSet<String>,
}

impl Relevance {
    pub fn new<'a>(issue_text: &str, changed_paths: impl IntoIterator<Item = &'a String>) -> Self {
        Relevance {
            issue_identifiers: code_identifiers(issue_text)
                .filter(|identifier| identifier.len() >= 4)
                .filter(|identifier| !GENERIC_WORDS.contains(&identifier.as_str()))
                .collect(),
            changed_stems: changed_paths
                .into_iter()
                .filter_map(|path| file_stem(path))
                .collect(),
            reproduction: BTreeSet::new(),
        }
    }

    /// The change is about `tests`, the reproduction's: each must pass.
    pub fn reproduced_by<'a>(mut self, tests: impl IntoIterator<Item = &'a String>) -> Self {
        self.reproduction = tests.into_iter().cloned().collect();
        self
    }

    /// Whether `test` may be what the issue is about: its name holds an identifier the issue
    /// writes as code (`clamp` in backticks for `test_clamp_limits_both_ends`, `loadConfig`
    /// for `test_load_config_reads_env`), or the test's file or module tests a file the change
    /// writes (`test_calc.py::…` or `calc::tests::…` for `calc.py`/`calc.rs`; a Rust crate's
    /// root `tests::…` for `lib.rs`/`main.rs`).
    pub fn is_about(&self, test: &str) -> bool {
        let segments: Vec<&str> = test
            .split("::")
            .flat_map(|part| part.split(['/', ' ']))
            .filter(|part| !part.is_empty())
            .collect();
        let Some((function, path)) = segments.split_last() else {
            return false;
        };
        let name = squeezed(function);
        if self
            .issue_identifiers
            .iter()
            .any(|identifier| name.contains(identifier.as_str()))
        {
            return true;
        }
        let modules: Vec<String> = path
            .iter()
            .filter(|segment| !matches!(**segment, "tests" | "test"))
            .filter_map(|segment| test_subject(segment))
            .collect();
        if modules.is_empty() && path.first().is_some_and(|first| *first == "tests") {
            return ["lib", "main"]
                .iter()
                .any(|root| self.changed_stems.contains(*root));
        }
        modules
            .iter()
            .any(|module| self.changed_stems.contains(module))
    }
}

/// The identifiers `text` writes as code, squeezed (see [`squeezed`]): every word inside
/// backticks, and outside them the words shaped like code — `snake_case`, `camelCase`,
/// `dotted.paths` and `rust::paths` (each part), letters with digits inside.
fn code_identifiers(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split('`').enumerate().flat_map(|(index, piece)| {
        let quoted = index % 2 == 1;
        piece
            .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':')))
            .flat_map(|token| {
                let parts: Vec<&str> = token
                    .split(['.', ':'])
                    .filter(|part| !part.is_empty())
                    .collect();
                let path = parts.len() > 1 && parts.iter().all(|part| part.len() >= 2);
                parts
                    .into_iter()
                    .filter(move |part| quoted || path || looks_like_code(part))
                    .map(squeezed)
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
    })
}

/// `parse_line`, `parseLine`, `utf8_decode`, `v2Api`: not a word of prose.
fn looks_like_code(word: &str) -> bool {
    let letters = word.chars().any(|c| c.is_ascii_alphabetic());
    let inner_underscore = word.trim_matches('_').contains('_');
    let camel = word
        .as_bytes()
        .windows(2)
        .any(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase());
    let digits = word.chars().any(|c| c.is_ascii_digit());
    letters && (inner_underscore || camel || digits)
}

/// Lower-case letters and digits only, so `load_dotenv`, `loadDotenv` and
/// `test_load_dotenv_error` compare: `loaddotenv` is in `testloaddotenverror`.
fn squeezed(text: &str) -> String {
    text.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Identifiers that say nothing about what is tested, even written as code.
const GENERIC_WORDS: [&str; 16] = [
    "test", "tests", "should", "when", "with", "returns", "return", "works", "error", "errors",
    "case", "check", "that", "file", "files", "none",
];

/// `src/calc.py` → `calc`.
fn file_stem(path: &str) -> Option<String> {
    let name = path.rsplit('/').next()?;
    let stem = name.split('.').next()?;
    (!stem.is_empty()).then(|| stem.to_lowercase())
}

/// What a test file or module tests: `test_calc.py`, `calc_test.go`, `calc.test.ts`,
/// `CalcTest.java` and the Rust module `calc` all test `calc`.
fn test_subject(segment: &str) -> Option<String> {
    let stem = file_stem(segment)?;
    let subject = stem
        .strip_prefix("test_")
        .or_else(|| stem.strip_suffix("_test"))
        .or_else(|| stem.strip_suffix("_tests"))
        .or_else(|| stem.strip_suffix("test").filter(|rest| !rest.is_empty()))
        .unwrap_or(&stem);
    (!subject.is_empty()).then(|| subject.to_string())
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn run(passed: bool, counts: Option<(u64, u64, u64, &[&str])>) -> CommandReport {
        CommandReport {
            name: "test".into(),
            command: vec!["pytest".into()],
            exit_code: Some(if passed { 0 } else { 1 }),
            timed_out: false,
            passed,
            duration_ms: 10,
            warnings: 0,
            output_truncated: false,
            parser: counts.map(|_| "pytest".to_string()),
            tests: counts.map(|(passed, failed, skipped, names)| TestCounts {
                passed,
                failed,
                skipped,
                failures: names.iter().map(|name| name.to_string()).collect(),
                ..TestCounts::default()
            }),
        }
    }

    fn failing(names: &[&str], passed: u64) -> CommandReport {
        run(false, Some((passed, names.len() as u64, 0, names)))
    }

    /// A run whose runner names its passing tests too (`pytest -v`, `go test -v`, …).
    fn naming(failing_names: &[&str], passing: &[&str]) -> CommandReport {
        let mut report = run(
            failing_names.is_empty(),
            Some((
                passing.len() as u64,
                failing_names.len() as u64,
                0,
                failing_names,
            )),
        );
        if let Some(tests) = report.tests.as_mut() {
            tests.passes = passing.iter().map(|name| name.to_string()).collect();
        }
        report
    }

    fn why(comparison: &Comparison) -> &str {
        match &comparison.verdict {
            Verdict::Worse { why } => why,
            _ => panic!("accepted: {comparison:?}"),
        }
    }

    /// An issue about something else, a change to `calc.py`.
    fn unrelated() -> Relevance {
        Relevance::new(
            "The parser drops the last line.",
            &["src/calc.py".to_string()],
        )
    }

    fn consistently(report: CommandReport) -> CheckRun {
        CheckRun::new(report.clone(), Some(report))
    }

    #[test]
    fn a_test_that_already_failed_on_the_base_does_not_count_against_the_change() {
        let base = consistently(failing(&["test_old"], 9));
        let change = consistently(failing(&["test_old"], 10));
        let comparison = compare(Some(&base), change, &unrelated());
        assert!(comparison.acceptable(), "{comparison:?}");
        assert_eq!(comparison.still_failing, vec!["test_old"]);
        assert!(comparison.new_failures.is_empty());
    }

    #[test]
    fn a_test_that_passed_on_the_base_and_fails_now_makes_the_change_worse() {
        let base = consistently(failing(&["test_old"], 9));
        let change = consistently(failing(&["test_old", "test_new"], 8));
        let comparison = compare(Some(&base), change, &unrelated());
        assert!(!comparison.acceptable());
        assert_eq!(comparison.new_failures, vec!["test_new"]);
        let Verdict::Worse { why } = &comparison.verdict else {
            unreachable!()
        };
        assert!(why.contains("test_new"), "{why}");
    }

    #[test]
    fn a_command_that_passed_on_the_base_must_pass_on_the_change() {
        let base = CheckRun::new(run(true, Some((10, 0, 0, &[]))), None);
        let change = consistently(failing(&["test_a"], 9));
        assert!(!compare(Some(&base), change, &unrelated()).acceptable());
        let unparsed = consistently(run(false, None));
        assert!(!compare(Some(&base), unparsed, &unrelated()).acceptable());
    }

    #[test]
    fn without_a_base_run_any_failure_is_the_change_s_fault() {
        let change = consistently(failing(&["test_a"], 9));
        assert!(!compare(None, change, &unrelated()).acceptable());
    }

    #[test]
    fn deleting_the_failing_test_is_not_a_fix() {
        let base = consistently(failing(&["test_old"], 9));
        let change = CheckRun::new(run(true, Some((9, 0, 0, &[]))), None);
        let comparison = compare(Some(&base), change, &unrelated());
        let Verdict::Worse { why } = &comparison.verdict else {
            panic!("deleting a test was accepted: {comparison:?}")
        };
        assert!(why.contains("10 → 9"), "{why}");
    }

    #[test]
    fn skipping_the_failing_test_is_not_a_fix() {
        let base = consistently(failing(&["test_old"], 9));
        let change = CheckRun::new(run(true, Some((9, 0, 1, &[]))), None);
        let comparison = compare(Some(&base), change, &unrelated());
        let Verdict::Worse { why } = &comparison.verdict else {
            panic!("skipping a test was accepted: {comparison:?}")
        };
        assert!(why.contains("skip"), "{why}");
    }

    #[test]
    fn a_failing_test_made_to_pass_is_listed_as_fixed() {
        let base = consistently(failing(&["test_old"], 9));
        let change = CheckRun::new(run(true, Some((10, 0, 0, &[]))), None);
        let comparison = compare(Some(&base), change, &unrelated());
        assert_eq!(comparison.verdict, Verdict::Passed);
        assert_eq!(comparison.fixed, vec!["test_old"]);
    }

    #[test]
    fn a_test_that_fails_then_passes_on_the_rerun_is_flaky_and_not_blamed() {
        let base = CheckRun::new(run(true, Some((10, 0, 0, &[]))), None);
        let change = CheckRun::new(
            failing(&["test_race"], 9),
            Some(run(true, Some((10, 0, 0, &[])))),
        );
        let comparison = compare(Some(&base), change, &unrelated());
        assert_eq!(comparison.verdict, Verdict::Passed);
        assert_eq!(comparison.flaky, vec!["test_race"]);
        assert!(comparison.new_failures.is_empty());
    }

    #[test]
    fn a_flaky_test_on_the_base_is_neither_fixed_nor_new() {
        let base = CheckRun::new(
            failing(&["test_old", "test_race"], 8),
            Some(failing(&["test_old"], 9)),
        );
        let change = CheckRun::new(
            failing(&["test_old", "test_race"], 8),
            Some(failing(&["test_old", "test_race"], 8)),
        );
        let comparison = compare(Some(&base), change, &unrelated());
        assert!(comparison.acceptable(), "{comparison:?}");
        assert_eq!(comparison.flaky, vec!["test_race"]);
        assert!(comparison.fixed.is_empty() && comparison.new_failures.is_empty());
    }

    #[test]
    fn a_failing_command_whose_results_cannot_be_read_on_either_tree_is_never_accepted() {
        let base = consistently(run(false, None));
        let same = compare(Some(&base), consistently(run(false, None)), &unrelated());
        assert_eq!(
            same.verdict,
            Verdict::Worse {
                why: CANNOT_TELL.into()
            }
        );
        assert!(!CANNOT_TELL.contains('\n'), "one line");
        // Passing on the change is enough, whatever its output.
        let passes = CheckRun::new(run(true, None), None);
        assert_eq!(
            compare(Some(&base), passes, &unrelated()).verdict,
            Verdict::Passed
        );
    }

    #[test]
    fn a_runner_that_lists_only_its_failures_never_runs_fewer_tests() {
        // `go test ./...` without -v: one failure on the base, `ok` lines only on the change.
        let mut base_report = failing(&["TestClamp"], 0);
        base_report.tests.as_mut().unwrap().only_failures_listed = true;
        let mut clean = run(true, Some((0, 0, 0, &[])));
        clean.tests.as_mut().unwrap().only_failures_listed = true;
        let comparison = compare(
            Some(&consistently(base_report)),
            CheckRun::new(clean, None),
            &unrelated(),
        );
        assert_eq!(comparison.verdict, Verdict::Passed, "{comparison:?}");
        assert_eq!(comparison.fixed, vec!["TestClamp"]);
    }

    #[test]
    fn tests_that_no_longer_run_at_all_make_it_worse() {
        let base = consistently(failing(&["test_old"], 9));
        let broken_build = consistently(run(false, None));
        assert!(!compare(Some(&base), broken_build, &unrelated()).acceptable());
    }

    #[test]
    fn a_timeout_is_never_acceptable_even_when_the_base_timed_out_too() {
        let base = consistently(failing(&["test_old"], 9));
        let mut slow = failing(&["test_old"], 9);
        slow.timed_out = true;
        assert!(!compare(Some(&base), consistently(slow.clone()), &unrelated()).acceptable());
        let slow_base = consistently(slow.clone());
        assert!(!compare(Some(&slow_base), consistently(slow), &unrelated()).acceptable());
    }

    #[test]
    fn a_failing_test_the_issue_is_about_must_pass() {
        let base = consistently(failing(&["test_calc.py::test_clamp_limits_both_ends"], 3));
        let change = consistently(failing(&["test_calc.py::test_clamp_limits_both_ends"], 3));
        let relevance = Relevance::new("clamp ignores its bounds", &["src/calc.py".to_string()]);
        let comparison = compare(Some(&base), change, &relevance);
        let Verdict::Worse { why } = &comparison.verdict else {
            panic!("the issue's own test was left failing: {comparison:?}")
        };
        assert!(why.contains("test_clamp_limits_both_ends"), "{why}");
        assert_eq!(
            comparison.demanded,
            vec!["test_calc.py::test_clamp_limits_both_ends"]
        );
        assert!(
            comparison.left_alone().is_empty(),
            "a demanded test is never also to be left alone"
        );
    }

    #[test]
    fn which_failing_tests_the_issue_or_the_change_may_be_about() {
        let calc = Relevance::new("`clamp` ignores its bounds", &["src/calc.py".to_string()]);
        assert!(calc.is_about("test_calc.py::test_limits"));
        assert!(calc.is_about("tests/test_calc.py::TestClamp::test_limits"));
        assert!(calc.is_about("test_other.py::test_clamp_limits_both_ends"));
        assert!(!calc.is_about("test_network.py::test_timeout"));
        let prose = Relevance::new("clamp ignores its bounds", &["src/calc.py".to_string()]);
        assert!(
            !prose.is_about("test_other.py::test_clamp_limits_both_ends"),
            "a word of prose is not an identifier"
        );
        let dotted = Relevance::new("flask.cli.load_dotenv fails", &["src/x.py".to_string()]);
        assert!(dotted.is_about("test_helpers.py::test_load_dotenv_path"));
        let named = Relevance::new("`test_timeout` hangs on CI", &["src/net.py".to_string()]);
        assert!(named.is_about("test_network.py::test_timeout"));
        let rust = Relevance::new("add subtracts", &["src/lib.rs".to_string()]);
        assert!(rust.is_about("tests::sum_of_two"));
        assert!(!rust.is_about("parser::tests::empty"));
        let module = Relevance::new("x", &["src/parser.rs".to_string()]);
        assert!(module.is_about("parser::tests::empty"));
        let go = Relevance::new("x", &["calc.go".to_string()]);
        assert!(go.is_about("calc_test.go::TestClamp"));
        let camel = Relevance::new("parseInput drops the last line", &["x.go".to_string()]);
        assert!(camel.is_about("TestParseInputKeepsTheLastLine"));
        let java = Relevance::new("x", &["src/main/java/Calc.java".to_string()]);
        assert!(java.is_about("CalcTest.java::testClamp"));
    }

    #[test]
    fn common_words_the_issue_shares_with_unrelated_failing_tests_demand_nothing() {
        // flask's case: click moved on and three CLI tests fail on the base; the issue's prose
        // shares "error" and "loading" with their names, and the fix is in helpers.py.
        let unrelated_failures = [
            "tests/test_cli.py::test_help_echo_loading_error",
            "tests/test_cli.py::test_help_echo_exception",
            "tests/test_cli.py::test_flaskgroup_nested",
        ];
        let base = consistently(failing(&unrelated_failures, 400));
        let change = consistently(failing(&unrelated_failures, 401));
        let relevance = Relevance::new(
            "An error when loading a file from the instance folder: send_file gets the wrong path",
            &[
                "src/flask/helpers.py".to_string(),
                "tests/test_helpers.py".to_string(),
            ],
        );
        let comparison = compare(Some(&base), change, &relevance);
        assert_eq!(comparison.verdict, Verdict::NoWorse, "{comparison:?}");
        assert_eq!(comparison.still_failing.len(), 3);
    }

    #[test]
    fn fixing_one_of_the_failing_tests_of_the_changed_file_is_enough() {
        // Every test of textkit.py failed on the base; the issue is about one of them.
        let base = consistently(failing(
            &[
                "test_textkit.py::test_clamp",
                "test_textkit.py::test_median",
            ],
            0,
        ));
        let change = consistently(failing(&["test_textkit.py::test_median"], 1));
        let relevance =
            Relevance::new("clamp ignores the upper bound", &["textkit.py".to_string()]);
        let comparison = compare(Some(&base), change, &relevance);
        assert!(comparison.acceptable(), "{comparison:?}");
        assert_eq!(comparison.fixed, vec!["test_textkit.py::test_clamp"]);
        assert_eq!(
            comparison.still_failing,
            vec!["test_textkit.py::test_median"]
        );
    }

    #[test]
    fn a_failing_test_the_base_never_ran_is_reported_as_new_not_as_one_that_passed_there() {
        let base = consistently(naming(&["test_old"], &["test_a"]));
        let change = consistently(naming(&["test_old", "test_added"], &["test_a"]));
        let comparison = compare(Some(&base), change, &unrelated());
        assert_eq!(
            why(&comparison),
            "new tests fail with this change: test_added"
        );
        assert_eq!(comparison.new_tests, vec!["test_added"]);
        assert_eq!(comparison.new_failing_tests, vec!["test_added"]);
        assert!(comparison.new_failures.is_empty(), "{comparison:?}");
    }

    #[test]
    fn a_test_that_passed_on_the_base_and_a_new_one_failing_are_each_named_for_what_they_are() {
        let base = consistently(naming(&["test_old"], &["test_a"]));
        let change = consistently(naming(&["test_old", "test_a", "test_added"], &[]));
        let comparison = compare(Some(&base), change, &unrelated());
        assert_eq!(
            why(&comparison),
            "tests that pass on the base commit fail with this change: test_a; \
             new tests fail with this change: test_added"
        );
        assert_eq!(comparison.new_failures, vec!["test_a"]);
    }

    #[test]
    fn a_new_failing_test_on_a_base_that_passed_is_named_as_new() {
        let base = CheckRun::new(naming(&[], &["test_a", "test_b"]), None);
        let change = consistently(naming(&["test_added"], &["test_a", "test_b"]));
        let comparison = compare(Some(&base), change, &unrelated());
        assert_eq!(
            why(&comparison),
            "new tests fail with this change: test_added"
        );
    }

    #[test]
    fn without_passing_names_on_the_base_a_test_failing_only_now_keeps_today_s_wording() {
        let base = consistently(failing(&["test_old"], 9));
        let change = consistently(naming(&["test_old", "test_added"], &["test_a"]));
        let comparison = compare(Some(&base), change, &unrelated());
        assert_eq!(
            why(&comparison),
            "tests that pass on the base commit fail with this change: test_added"
        );
        assert!(comparison.new_tests.is_empty() && comparison.new_failing_tests.is_empty());
        let json = serde_json::to_value(&comparison).expect("json");
        assert!(json.get("new_tests").is_none(), "{json}");
    }

    #[test]
    fn a_new_passing_test_is_the_evidence_a_change_about_still_failing_tests_needs() {
        let about = "test_calc.py::test_clamp_limits_both_ends";
        let base = consistently(naming(&[about], &["test_calc.py::test_add"]));
        let change = consistently(naming(
            &[about],
            &[
                "test_calc.py::test_add",
                "test_calc.py::test_clamp_keeps_the_upper_bound",
            ],
        ));
        let relevance = Relevance::new("`clamp` ignores its bounds", &["src/calc.py".to_string()]);
        let comparison = compare(Some(&base), change, &relevance);
        assert_eq!(comparison.verdict, Verdict::NoWorse, "{comparison:?}");
        assert!(comparison.demanded.is_empty());
        assert_eq!(
            comparison.new_tests,
            vec!["test_calc.py::test_clamp_keeps_the_upper_bound"]
        );
        assert!(comparison.new_failing_tests.is_empty());
        assert_eq!(comparison.left_alone(), vec![about]);
    }

    #[test]
    fn a_new_test_that_flaked_on_the_change_is_no_evidence() {
        let about = "test_calc.py::test_clamp_limits_both_ends";
        let base = consistently(naming(&[about], &["test_calc.py::test_add"]));
        let change = CheckRun::new(
            naming(
                &[about, "test_calc.py::test_race"],
                &["test_calc.py::test_add"],
            ),
            Some(naming(
                &[about],
                &["test_calc.py::test_add", "test_calc.py::test_race"],
            )),
        );
        let relevance = Relevance::new("`clamp` ignores its bounds", &["src/calc.py".to_string()]);
        let comparison = compare(Some(&base), change, &relevance);
        assert_eq!(comparison.flaky, vec!["test_calc.py::test_race"]);
        assert!(comparison.new_tests.is_empty(), "{comparison:?}");
        assert_eq!(comparison.demanded, vec![about]);
    }

    #[test]
    fn a_runner_that_lists_only_its_failures_never_makes_a_test_look_new() {
        // `go test ./...` without -v and `pytest -v` in one script: pytest names its passing
        // tests, go names none, so TestClamp failing now may well have passed on the base.
        let mut base_report = naming(&["test_x.py::test_old"], &["test_x.py::test_a"]);
        base_report.tests.as_mut().unwrap().only_failures_listed = true;
        let mut change_report = naming(
            &["test_x.py::test_old", "TestClamp"],
            &["test_x.py::test_a", "test_x.py::test_b"],
        );
        change_report.tests.as_mut().unwrap().only_failures_listed = true;
        let relevance = Relevance::new("x misbehaves", &["x.py".to_string()]);
        let comparison = compare(
            Some(&consistently(base_report)),
            consistently(change_report),
            &relevance,
        );
        assert_eq!(
            why(&comparison),
            "tests that pass on the base commit fail with this change: TestClamp"
        );
        assert!(comparison.new_tests.is_empty(), "{comparison:?}");
        assert_eq!(
            comparison.demanded,
            vec!["test_x.py::test_old"],
            "test_b proves nothing"
        );
    }
}
