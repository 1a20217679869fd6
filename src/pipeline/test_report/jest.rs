//! Jest's default reporter: the `PASS`/`FAIL path` line per test file, the `● Suite › test`
//! failure headers under a `FAIL` line, and the closing `Tests:` summary line.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

use super::{TestCounts, unique_in_order};

/// `FAIL src/math.test.js`, ` FAIL  src/math.test.js` once its colour badge is stripped, and
/// `PASS src/slow.test.js (5.12 s)` or `(5.12 s, 48 MB heap size)` for a slow file.
static FILE_RESULT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s?(PASS|FAIL) +(\S.*?)(?: \([0-9.]+ m?s(?:, [0-9.]+ MB heap size)?\))?\s*$")
        .expect("valid jest file result pattern")
});
/// `  ● add › adds wrongly on purpose`; two spaces exactly, as Jest indents them.
static FAILURE_HEADER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^  ● (\S.*?)\s*$").expect("valid jest failure header pattern"));
/// `Tests:       2 failed, 1 skipped, 1 todo, 3 passed, 7 total`.
static SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^Tests: +((?:\d+ [a-z]+, )*)\d+ total\s*$").expect("valid jest summary pattern")
});

const SUITE_FAILED_TO_RUN: &str = "Test suite failed to run";

/// Jest's counts, summed over every `Tests:` line (a script may run it more than once): `todo`
/// counts as skipped. A test file that failed to run (`● Test suite failed to run`) ran no test,
/// so Jest counts none; it counts here as one failed test named by its path. Failing tests are
/// named `path > Suite > test`. None when no `Tests:` line was printed.
pub(super) fn parse(text: &str) -> Option<TestCounts> {
    let mut counts = TestCounts::default();
    let mut saw_summary = false;
    let mut names = Vec::new();
    let mut failing_file: Option<String> = None;
    // Files that failed to run since the last summary; Jest may name them twice when it ends
    // with its "Summary of all failing tests".
    let mut files_failed_to_run = HashSet::new();
    for line in text.lines() {
        if let Some(caps) = FILE_RESULT.captures(line) {
            failing_file = (&caps[1] == "FAIL").then(|| caps[2].to_string());
        } else if let Some(caps) = FAILURE_HEADER.captures(line)
            && let Some(file) = &failing_file
        {
            if &caps[1] == SUITE_FAILED_TO_RUN {
                files_failed_to_run.insert(file.clone());
                names.push(file.clone());
            } else {
                names.push(format!("{file} > {}", caps[1].replace(" › ", " > ")));
            }
        } else if let Some(summary) = summary_counts(line) {
            saw_summary = true;
            failing_file = None;
            counts.absorb(summary);
            let failed_to_run = u64::try_from(files_failed_to_run.len()).unwrap_or(u64::MAX);
            counts.add(0, failed_to_run, 0);
            files_failed_to_run.clear();
        }
    }
    counts.failures = unique_in_order(names);
    saw_summary.then_some(counts)
}

/// The counts a `Tests:` line states, or None when it is not one: every item before the total
/// must be one of the outcomes Jest prints.
fn summary_counts(line: &str) -> Option<TestCounts> {
    let items = SUMMARY.captures(line)?.get(1)?.as_str();
    let mut counts = TestCounts::default();
    for item in items.split(", ").filter(|item| !item.is_empty()) {
        counts.add_js_item(item)?;
    }
    Some(counts)
}
