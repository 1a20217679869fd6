//! Python `unittest`: the `Ran N tests in 0.001s` line, the `OK`/`FAILED (failures=1, …)` line
//! that closes the run, and the `FAIL:`/`ERROR:` headers naming each failing test before them.

use std::sync::LazyLock;

use regex::Regex;

use super::{TestCounts, number, unique_in_order};

/// `Ran 8 tests in 0.001s`, `Ran 1 test in 0.000s`.
static RAN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^Ran (\d+) tests? in [0-9.]+s$").expect("valid unittest ran pattern")
});
/// `OK`, `OK (skipped=1)`, `FAILED (failures=1, errors=2)`, and 3.12's `NO TESTS RAN`.
static CLOSING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:(OK|FAILED)(?: \(([a-z =0-9,]+)\))?|NO TESTS RAN)$")
        .expect("valid unittest closing pattern")
});
static CLOSING_ITEM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^([a-z ]+)=(\d+)$").expect("valid unittest closing item pattern")
});
/// unittest's separator above each failure's header: seventy `=`.
static SEPARATOR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^={70}$").expect("valid unittest separator pattern"));
/// `FAIL: test_add (tests.test_calc.CalcTest.test_add)` (3.11 and later),
/// `ERROR: test_add (tests.test_calc.CalcTest)` (older), a subtest's `… (i=1)` after it.
static HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:FAIL|ERROR): (\S+) \(([^()\s]+)\)(?: (.+))?$")
        .expect("valid unittest header pattern")
});

/// The class unittest's loader reports a module it could not import as.
const FAILED_IMPORT: &str = "unittest.loader._FailedTest";

/// unittest's counts, summed over every run in the output: `failures` and `errors` are failed,
/// `skipped` is skipped, and the rest of the tests that ran passed (expected failures and
/// unexpected successes included). A `Ran` line counts only when a closing line follows it.
/// None when no run was closed.
pub(super) fn parse(text: &str) -> Option<TestCounts> {
    let mut counts = TestCounts::default();
    let mut recognised = false;
    let mut names = Vec::new();
    let mut pending_names = Vec::new();
    let mut ran: Option<u64> = None;
    let mut previous = "";
    for line in text.lines() {
        if let Some(caps) = RAN.captures(line) {
            ran = Some(number(&caps[1]));
        } else if let Some(tests_ran) = ran
            && let Some(closing) = closing_counts(line, tests_ran)
        {
            recognised = true;
            ran = None;
            counts.absorb(closing);
            names.append(&mut pending_names);
        } else if SEPARATOR.is_match(previous)
            && let Some(caps) = HEADER.captures(line)
        {
            pending_names.push(failure_name(&caps[1], &caps[2], caps.get(3)));
        } else if !line.is_empty() {
            ran = None;
        }
        previous = line;
    }
    counts.failures = unique_in_order(names);
    recognised.then_some(counts)
}

/// The counts a closing line states for a run of `ran` tests, or None when it is not one.
fn closing_counts(line: &str, ran: u64) -> Option<TestCounts> {
    let caps = CLOSING.captures(line)?;
    let (mut failed, mut skipped) = (0u64, 0u64);
    if let Some(items) = caps.get(2) {
        for item in items.as_str().split(", ") {
            let item = CLOSING_ITEM.captures(item)?;
            let count = number(&item[2]);
            match &item[1] {
                "failures" | "errors" => failed = failed.saturating_add(count),
                "skipped" => skipped = skipped.saturating_add(count),
                "expected failures" | "unexpected successes" => {}
                _ => return None,
            }
        }
    }
    let passed = ran.saturating_sub(failed).saturating_sub(skipped);
    let mut counts = TestCounts::default();
    counts.add(passed, failed, skipped);
    Some(counts)
}

/// The dotted path of a failing test, the same whichever Python printed it:
/// `tests.test_calc.CalcTest.test_add`, or the module's for one that could not be imported.
fn failure_name(method: &str, owner: &str, subtest: Option<regex::Match>) -> String {
    let mut name = if owner.starts_with(FAILED_IMPORT) {
        method.to_string()
    } else if owner.ends_with(&format!(".{method}")) {
        owner.to_string()
    } else {
        format!("{owner}.{method}")
    };
    if let Some(subtest) = subtest {
        name.push(' ');
        name.push_str(subtest.as_str());
    }
    name
}
