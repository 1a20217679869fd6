//! Python `unittest`: the `Ran N tests in 0.001s` line and the `OK`/`FAILED (…)` line closing the
//! run, the `FAIL:`/`ERROR:` headers (and why), and `-v`'s `... ok` lines naming passing tests.

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

/// A line of dashes, seventy of them: between a failure's header and its traceback, and before
/// the `Ran` line.
static DASHES: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^-{70}$").expect("valid unittest separator pattern"));

/// `-v`'s `test_add (tests.test_calc.CalcTest.test_add) ... ok` (the description after the
/// parentheses, or on the next line when the test has a docstring), and its outcomes that count
/// as passed.
static VERBOSE_PASS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:(\S+) \(([^()\s]+)\)(?: .*)?|.*) \.\.\. (?:ok|expected failure|unexpected success)$",
    )
    .expect("valid unittest verbose pass pattern")
});
/// `test_add (tests.test_calc.CalcTest.test_add)` alone on its line: a docstring follows.
static VERBOSE_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(\S+) \(([^()\s]+)\)$").expect("valid unittest verbose name pattern")
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
    let mut passes = Vec::new();
    let mut pending_passes = Vec::new();
    let mut ran: Option<u64> = None;
    let mut previous = "";
    for line in text.lines() {
        if let Some(caps) = VERBOSE_PASS.captures(line) {
            let named = match (caps.get(1), caps.get(2)) {
                (Some(method), Some(owner)) => Some((method.as_str(), owner.as_str())),
                _ => VERBOSE_NAME
                    .captures(previous)
                    .and_then(|caps| Some((caps.get(1)?.as_str(), caps.get(2)?.as_str()))),
            };
            if let Some((method, owner)) = named {
                pending_passes.push(failure_name(method, owner, None));
            }
            ran = None;
        } else if let Some(caps) = RAN.captures(line) {
            ran = Some(number(&caps[1]));
        } else if let Some(tests_ran) = ran
            && let Some(closing) = closing_counts(line, tests_ran)
        {
            recognised = true;
            ran = None;
            counts.absorb(closing);
            names.append(&mut pending_names);
            passes.append(&mut pending_passes);
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
    counts.passes = passes;
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

/// One failure unittest explains: the test's name as [`parse`] gives it, whether it is a module
/// the loader could not import, and the traceback under its header.
struct Explained<'a> {
    name: String,
    failed_import: bool,
    body: Vec<&'a str>,
}

/// Every failure unittest explains, in the order printed.
fn explained(text: &str) -> Vec<Explained<'_>> {
    let mut found: Vec<Explained> = Vec::new();
    let mut open = false;
    let mut previous = "";
    for line in text.lines() {
        if SEPARATOR.is_match(previous)
            && let Some(caps) = HEADER.captures(line)
        {
            found.push(Explained {
                name: failure_name(&caps[1], &caps[2], caps.get(3)),
                failed_import: caps[2].starts_with(FAILED_IMPORT),
                body: Vec::new(),
            });
            open = true;
        } else if SEPARATOR.is_match(line) || (DASHES.is_match(line) && !HEADER.is_match(previous))
        {
            // The dashes right under a header open its traceback; any others close it.
            open = false;
        } else if open
            && !DASHES.is_match(line)
            && let Some(last) = found.last_mut()
        {
            last.body.push(line);
        }
        previous = line;
    }
    found
}

/// The exception a traceback ends with: the last line at the margin that follows an indented
/// one (`AssertionError: 4 != 5`, the `ModuleNotFoundError` under a failed import's `File`
/// lines), else its first line.
fn exception_line(body: &[&str]) -> Option<String> {
    let at_margin = |line: &str| !line.is_empty() && !line.starts_with(char::is_whitespace);
    let last_raised = body
        .windows(2)
        .filter(|pair| pair[0].starts_with(char::is_whitespace) && !pair[0].trim().is_empty())
        .map(|pair| pair[1])
        .rfind(|line| at_margin(line));
    last_raised
        .or_else(|| body.iter().copied().find(|line| !line.trim().is_empty()))
        .map(|line| line.trim().to_string())
}

/// Why unittest says `test` (its dotted path, as [`parse`] names it) failed: the exception its
/// traceback ends with.
pub(super) fn failure_line(text: &str, test: &str) -> Option<String> {
    explained(text)
        .into_iter()
        .find(|failure| failure.name == test)
        .and_then(|failure| exception_line(&failure.body))
}

/// The exception unittest's loader met importing one of `files` (its `_FailedTest`): `(file,
/// exception)`. A test that fails on an exception of the code it tests is not a failed import.
pub(super) fn load_failure(text: &str, files: &[String]) -> Option<(String, String)> {
    explained(text)
        .into_iter()
        .filter(|failure| failure.failed_import)
        .find_map(|failure| {
            let file = files.iter().find(|file| same_module(&failure.name, file))?;
            Some((file.clone(), exception_line(&failure.body)?))
        })
}

/// Whether the dotted `module` is the file `file`: `tests.test_x` is `tests/test_x.py`, and so
/// is `test_x` (a discovery started inside `tests/`).
fn same_module(module: &str, file: &str) -> bool {
    let Some(stem) = file.strip_suffix(".py") else {
        return false;
    };
    let dotted = stem.trim_start_matches("./").replace('/', ".");
    dotted == module
        || dotted.ends_with(&format!(".{module}"))
        || module.ends_with(&format!(".{dotted}"))
}
