//! Vitest's default reporter (`vitest run`): the `Tests` summary line, the `✓` tests under a file's
//! line, and the `FAIL  file > suite > test` headers (and why) of its failure sections.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

use super::{TestCounts, unique_in_order};

/// `      Tests  2 failed | 3 passed | 1 skipped | 1 todo (7)`, or `      Tests  no tests`.
static SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^ *Tests  (?:no tests|(.+) \(\d+\))\s*$").expect("valid vitest summary pattern")
});
/// ` Test Files  2 failed | 1 passed (3)`: files, not tests, but it ends the failure sections.
static FILES_SUMMARY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^ *Test Files  ").expect("valid vitest files pattern"));
/// `⎯⎯⎯⎯ Failed Tests 2 ⎯⎯⎯⎯`, `⎯⎯⎯⎯ Unhandled Errors ⎯⎯⎯⎯`; not the `⎯⎯⎯[1/3]⎯` dividers.
static SECTION_BANNER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^⎯+ (.+?) ⎯+\s*$").expect("valid vitest banner pattern"));
/// ` FAIL  src/math.test.js > add > adds wrongly on purpose`, and for a file that failed to load
/// ` FAIL  src/broken.test.js [ src/broken.test.js ]`.
static FAILURE_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^ FAIL  (\S.*?)(?: \[ .+ \])?\s*$").expect("valid vitest failure header pattern")
});

/// ` ❯ src/math.test.js (6 tests | 2 failed) 14ms`, ` ✓ src/other.test.js (1 test) 3ms`: a file's
/// line, its tests listed under it when any failed.
static FILE_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^ [❯✓×↓] (\S.*?) \(\d+ tests?[ |)]").expect("valid vitest file line pattern")
});
/// `   ✓ add > adds small numbers 1ms`: a passing test under its file's line.
static PASS_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^   ✓ (\S.*?)(?: \d+ms)?\s*$").expect("valid vitest pass line pattern")
});

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Other,
    FailedSuites,
    FailedTests,
}

/// Vitest's counts, summed over every `Tests` line (a script may run it more than once): `todo`
/// counts as skipped. A suite that failed on its own account (a file that failed to load, a
/// `beforeAll` that threw) is listed under `Failed Suites` while its tests are skipped or never
/// collected; it counts here as one failed test, named as Vitest names it. Failing tests are
/// named `file > suite > test`. None when no `Tests` line was printed.
pub(super) fn parse(text: &str) -> Option<TestCounts> {
    let mut counts = TestCounts::default();
    let mut saw_summary = false;
    let mut names = Vec::new();
    let mut section = Section::Other;
    // Vitest prints a suite once per error it had: count it once.
    let mut failed_suites = HashSet::new();
    let mut passes = Vec::new();
    let mut file: Option<String> = None;
    for line in text.lines() {
        if let Some(caps) = FILE_LINE.captures(line) {
            file = Some(caps[1].to_string());
        } else if let Some(caps) = PASS_LINE.captures(line)
            && let Some(file) = &file
        {
            passes.push(format!("{file} > {}", &caps[1]));
        } else if let Some(caps) = SECTION_BANNER.captures(line) {
            section = match &caps[1] {
                title if title.starts_with("Failed Suites") => Section::FailedSuites,
                title if title.starts_with("Failed Tests") => Section::FailedTests,
                _ => Section::Other,
            };
        } else if section != Section::Other
            && let Some(caps) = FAILURE_HEADER.captures(line)
        {
            let name = caps[1].to_string();
            if section == Section::FailedSuites {
                failed_suites.insert(name.clone());
            }
            names.push(name);
        } else if let Some(summary) = summary_counts(line) {
            saw_summary = true;
            section = Section::Other;
            counts.absorb(summary);
            let suites = u64::try_from(failed_suites.len()).unwrap_or(u64::MAX);
            counts.add(0, suites, 0);
            failed_suites.clear();
        } else if FILES_SUMMARY.is_match(line) {
            section = Section::Other;
        }
    }
    counts.failures = unique_in_order(names);
    counts.passes = passes;
    saw_summary.then_some(counts)
}

/// The counts a `Tests` line states, or None when it is not one: every item must be one of the
/// outcomes Vitest prints.
fn summary_counts(line: &str) -> Option<TestCounts> {
    let caps = SUMMARY.captures(line)?;
    let mut counts = TestCounts::default();
    let Some(items) = caps.get(1) else {
        return Some(counts);
    };
    for item in items.as_str().split(" | ") {
        counts.add_js_item(item)?;
    }
    Some(counts)
}

/// ` FAIL  src/broken.test.js [ src/broken.test.js ]`: a file that failed to load at all.
static FILE_FAILURE_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^ FAIL  (\S.*?) \[ (.+) \]\s*$").expect("valid vitest file failure pattern")
});

/// The first line Vitest printed under the header ` FAIL  {name}` in its failure sections.
fn first_line_under(text: &str, wanted: impl Fn(&str) -> bool) -> Option<String> {
    let mut section = Section::Other;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(caps) = SECTION_BANNER.captures(line) {
            section = match &caps[1] {
                title if title.starts_with("Failed Suites") => Section::FailedSuites,
                title if title.starts_with("Failed Tests") => Section::FailedTests,
                _ => Section::Other,
            };
        } else if section != Section::Other && wanted(line) {
            return lines
                .map(str::trim)
                .find(|line| !line.is_empty())
                .map(str::to_string);
        }
    }
    None
}

/// Why Vitest says `test` (`file > suite > test`, as [`parse`] names it) failed: the error line
/// under its header.
pub(super) fn failure_line(text: &str, test: &str) -> Option<String> {
    first_line_under(text, |line| {
        FAILURE_HEADER
            .captures(line)
            .is_some_and(|caps| &caps[1] == test)
    })
}

/// Why one of `files` failed to load (a `Failed Suites` header naming the file alone, `[ file
/// ]` after it): `(file, error)`.
pub(super) fn load_failure(text: &str, files: &[String]) -> Option<(String, String)> {
    files.iter().find_map(|file| {
        let error = first_line_under(text, |line| {
            FILE_FAILURE_HEADER
                .captures(line)
                .is_some_and(|caps| caps[1] == caps[2] && super::same_file(&caps[1], file))
        })?;
        Some((file.clone(), error))
    })
}
