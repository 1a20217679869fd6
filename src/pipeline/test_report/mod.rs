//! TEST_REPORT.json: each validation command's result, with test counts and failing test names
//! parsed from `cargo test`/nextest, pytest, `go test`, Python `unittest`, TAP, Jest and Vitest
//! output and from JUnit XML files it wrote; and, from the same output, why a test failed and
//! which test files could not be loaded at all.

mod failure_line;
mod go_test;
mod jest;
mod junit;
mod libtest;
mod load_failure;
mod pytest;
mod tap;
mod unittest;
mod vitest;

use std::collections::HashSet;
use std::path::Path;
use std::sync::LazyLock;
use std::time::SystemTime;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::exec::CommandOutcome;
use crate::exec::warning_lines;

pub use failure_line::failure_line;
pub use junit::{MAX_JUNIT_DEPTH, MAX_JUNIT_ENTRIES, MAX_JUNIT_FILE_BYTES};
pub use load_failure::load_failure;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestCounts {
    /// Tests that passed (pytest's `xpassed` included).
    pub passed: u64,
    /// Tests that failed or errored (pytest's and JUnit's `errors` included).
    pub failed: u64,
    /// Tests skipped or ignored (pytest's `xfailed` included, as its JUnit XML does, and a failing
    /// TAP `# TODO`).
    pub skipped: u64,
    /// Names of the failing tests, as the runner printed them, each once, in first-seen order.
    pub failures: Vec<String>,
    /// The runner printed only its failures (`go test` without `-v`): `passed` and `skipped`
    /// are not known, so a smaller total than another run's says nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub only_failures_listed: bool,
    /// Names of the passing tests, named as [`TestCounts::failures`] names tests, each once, in
    /// first-seen order; empty when the runner does not print them (pytest without `-v`/`-rA`,
    /// unittest without `-v`, `go test` without `-v`, libtest's `--quiet`, Jest on several
    /// files without `--verbose`). Never a test that is also failing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passes: Vec<String>,
}

impl TestCounts {
    /// Saturating, like the counts: a runner may claim absurd numbers.
    pub fn total(&self) -> u64 {
        self.passed
            .saturating_add(self.failed)
            .saturating_add(self.skipped)
    }

    /// Adds `other`'s counts to these and appends the failing and passing names not already
    /// listed; a test that failed in either is not listed as passing.
    pub fn absorb(&mut self, other: TestCounts) {
        self.add(other.passed, other.failed, other.skipped);
        self.only_failures_listed |= other.only_failures_listed;
        self.failures.extend(other.failures);
        self.failures = unique_in_order(std::mem::take(&mut self.failures));
        self.passes.extend(other.passes);
        self.settle_passes();
    }

    /// The passing names each once, in first-seen order, none of them a failing one (a pytest
    /// test that passed and then errored in its teardown).
    fn settle_passes(&mut self) {
        let failing: HashSet<&String> = self.failures.iter().collect();
        let passes = std::mem::take(&mut self.passes);
        self.passes = unique_in_order(passes)
            .into_iter()
            .filter(|name| !failing.contains(name))
            .collect();
    }

    /// Adds one item of Jest's and Vitest's summary lines, `N outcome` (`3 passed`, `1 failed`,
    /// `2 skipped`, `1 todo`, todo counting as skipped); None for anything else.
    fn add_js_item(&mut self, item: &str) -> Option<()> {
        let (digits, outcome) = item.split_once(' ')?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let count = number(digits);
        match outcome {
            "passed" => self.add(count, 0, 0),
            "failed" => self.add(0, count, 0),
            "skipped" | "todo" => self.add(0, 0, count),
            _ => return None,
        }
        Some(())
    }

    /// Saturating: a runner's line claiming absurd counts must not overflow the sum.
    fn add(&mut self, passed: u64, failed: u64, skipped: u64) {
        self.passed = self.passed.saturating_add(passed);
        self.failed = self.failed.saturating_add(failed);
        self.skipped = self.skipped.saturating_add(skipped);
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandReport {
    pub name: String,
    pub command: Vec<String>,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// Exit 0, not timed out, and no warning lines when the caller fails on warnings.
    pub passed: bool,
    pub duration_ms: u64,
    /// Lines of the output that look like compiler or tool warnings
    /// (see [`crate::code_commit::warning_lines`]), counted whether or not they fail the command.
    #[serde(default)]
    pub warnings: usize,
    /// The output hit the runner's cap and its middle was dropped: counts may be partial.
    #[serde(default)]
    pub output_truncated: bool,
    /// `cargo-test`, `cargo-nextest`, `pytest`, `go-test`, `unittest`, `tap` (joined by `+` when
    /// one command ran several), `junit`, or none when nothing could be parsed.
    pub parser: Option<String>,
    pub tests: Option<TestCounts>,
}

impl CommandReport {
    /// A `pytest` run named `name` as the judge's stories give it: passed or failed, and the
    /// counts when its output could be read.
    #[cfg(test)]
    pub(crate) fn pytest_run(name: &str, passed: bool, tests: Option<TestCounts>) -> CommandReport {
        CommandReport {
            name: name.into(),
            command: vec!["pytest".into()],
            exit_code: Some(if passed { 0 } else { 1 }),
            timed_out: false,
            passed,
            duration_ms: 10,
            warnings: 0,
            output_truncated: false,
            parser: tests.as_ref().map(|_| "pytest".to_string()),
            tests,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TestReport {
    pub commands: Vec<CommandReport>,
}

impl TestReport {
    pub fn passed(&self) -> bool {
        self.commands.iter().all(|c| c.passed)
    }
}

/// Test counts from a command's captured output, if it is one of the known runners'.
///
/// Every runner found in the output is counted (a script may run `cargo nextest run` and then
/// `cargo test --doc`, or `cargo test` and pytest); the parser name then joins theirs with `+`.
pub fn parse_output(output: &str) -> Option<(String, TestCounts)> {
    let text = strip_ansi(output);
    let found: Vec<(&str, TestCounts)> = [
        ("cargo-nextest", libtest::parse_nextest(&text)),
        ("cargo-test", libtest::parse_cargo_test(&text)),
        ("pytest", pytest::parse(&text)),
        ("jest", jest::parse(&text)),
        ("vitest", vitest::parse(&text)),
        ("go-test", go_test::parse(&text)),
        ("unittest", unittest::parse(&text)),
        ("tap", tap::parse(&text)),
    ]
    .into_iter()
    .filter_map(|(name, counts)| counts.map(|counts| (name, counts)))
    .collect();
    if found.is_empty() {
        return None;
    }
    let name = found
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join("+");
    let mut total = TestCounts::default();
    for (_, counts) in found {
        total.absorb(counts);
    }
    Some((name, total))
}

/// Test counts from JUnit XML files under `root` modified at or after `since`.
///
/// The walk skips `.git/`, `node_modules/` and `target/` (but looks into `target/`'s report
/// folders: `surefire-reports`, `failsafe-reports`, `nextest`), stops at
/// [`MAX_JUNIT_DEPTH`] levels and [`MAX_JUNIT_ENTRIES`] entries, and follows no symlinks.
/// Files that are not well-formed XML with a `testsuites` or `testsuite` root are skipped.
/// None when no such file was written.
pub fn parse_junit_written_since(root: &Path, since: SystemTime) -> Option<TestCounts> {
    junit::parse_written_since(root, since)
}

/// Test counts from one JUnit XML document, or None when it is not well-formed XML whose root
/// is `testsuites` or `testsuite`.
pub fn parse_junit_xml(xml: &str) -> Option<TestCounts> {
    junit::tally(xml)
}

/// The report for one validation command the orchestrator ran in `root`, starting at `started`.
///
/// Test counts come from the output when a known runner printed it, else from JUnit XML files
/// the command wrote under `root`. With `fail_on_warnings`, a command that exited 0 but printed
/// warning lines does not pass; the count of such lines is recorded either way.
pub fn report_for(
    name: &str,
    command: &[String],
    outcome: &CommandOutcome,
    root: &Path,
    started: SystemTime,
    fail_on_warnings: bool,
) -> CommandReport {
    let warnings = warning_lines(&outcome.output).len();
    let passed = outcome.passes(fail_on_warnings);
    let (parser, tests) = match parse_output(&outcome.output) {
        Some((parser, counts)) => (Some(parser), Some(counts)),
        None => match parse_junit_written_since(root, started) {
            Some(counts) => (Some("junit".to_string()), Some(counts)),
            None => (None, None),
        },
    };
    CommandReport {
        name: name.to_string(),
        command: command.to_vec(),
        exit_code: outcome.exit_code,
        timed_out: outcome.timed_out,
        passed,
        duration_ms: u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
        warnings,
        output_truncated: outcome.truncated,
        parser,
        tests,
    }
}

/// Colour codes (`CARGO_TERM_COLOR=always`, `pytest --color=yes`) would break every anchor.
fn strip_ansi(output: &str) -> std::borrow::Cow<'_, str> {
    static ANSI: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\x1b\[[0-9;?]*[A-Za-z]").expect("valid ANSI pattern"));
    ANSI.replace_all(output, "")
}

/// Digits as a count; too many of them saturate rather than fail.
fn number(digits: &str) -> u64 {
    digits.parse().unwrap_or(u64::MAX)
}

fn unique_in_order(names: Vec<String>) -> Vec<String> {
    let mut seen = HashSet::new();
    names
        .into_iter()
        .filter(|name| seen.insert(name.clone()))
        .collect()
}

/// Whether a path a runner printed is the repository-relative `file`: the same, or one ends
/// with the other after a `/` (an absolute path, or a runner started in a subfolder).
fn same_file(printed: &str, file: &str) -> bool {
    let printed = printed.trim().trim_start_matches("./");
    let file = file.trim().trim_start_matches("./");
    !printed.is_empty()
        && !file.is_empty()
        && (printed == file
            || printed.ends_with(&format!("/{file}"))
            || file.ends_with(&format!("/{printed}")))
}
