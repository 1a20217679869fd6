//! Jest's default reporter: the `PASS`/`FAIL path` line per test file, the `✓ test` lines of its
//! tree, the `● Suite › test` failure headers (and why) and the closing `Tests:` summary line.

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

/// A line of the tree Jest prints under a file's result (for one file, or with `--verbose`):
/// `  add` (a `describe`), `    ✓ adds small numbers (2 ms)`, `    ✕ …`, `    ○ skipped …`,
/// two spaces per level.
static TREE_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^((?:  )+)(?:([✓✕○✎√×]) )?(\S.*?)(?: \(\d+(?:\.\d+)? m?s\))?$")
        .expect("valid jest tree line pattern")
});

const SUITE_FAILED_TO_RUN: &str = "Test suite failed to run";

/// The passing tests of the trees Jest printed under its `PASS`/`FAIL` lines, named
/// `path > Suite > test` as failures are.
fn tree_passes(text: &str) -> Vec<String> {
    let mut passes = Vec::new();
    // The file whose tree is being read, and the `describe` titles above the current line.
    let mut tree: Option<(String, Vec<String>)> = None;
    for line in text.lines() {
        if let Some(caps) = FILE_RESULT.captures(line) {
            tree = Some((caps[2].to_string(), Vec::new()));
            continue;
        }
        let Some((file, suites)) = tree.as_mut() else {
            continue;
        };
        // The tree ends at the first line that is not one of its own: a blank line, `●`.
        let Some(caps) = TREE_LINE
            .captures(line)
            .filter(|caps| !caps[3].starts_with('●'))
        else {
            tree = None;
            continue;
        };
        let level = caps[1].len() / 2 - 1;
        suites.truncate(level);
        match caps.get(2).map(|mark| mark.as_str()) {
            None => suites.push(caps[3].to_string()),
            Some("✓" | "√") => {
                let mut name = file.clone();
                for part in suites.iter().map(String::as_str).chain([&caps[3]]) {
                    name.push_str(" > ");
                    name.push_str(part);
                }
                passes.push(name);
            }
            Some(_) => {}
        }
    }
    passes
}

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
    counts.passes = tree_passes(text);
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

/// `    > 9 |     expect(…)` or `      10 |   });`: the code frame that ends a failure's message.
static CODE_FRAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*>?\s*\d+ \|").expect("valid jest code frame pattern"));

/// One failure Jest explains: the name [`parse`] gives it and the lines under its `●` header.
struct Explained<'a> {
    name: String,
    /// Its file failed to run (`● Test suite failed to run`): the name is the file's path.
    suite: bool,
    body: Vec<&'a str>,
}

fn explained(text: &str) -> Vec<Explained<'_>> {
    let mut found: Vec<Explained> = Vec::new();
    let mut failing_file: Option<String> = None;
    let mut open = false;
    for line in text.lines() {
        if let Some(caps) = FILE_RESULT.captures(line) {
            failing_file = (&caps[1] == "FAIL").then(|| caps[2].to_string());
            open = false;
        } else if let Some(caps) = FAILURE_HEADER.captures(line)
            && let Some(file) = &failing_file
        {
            let suite = &caps[1] == SUITE_FAILED_TO_RUN;
            let name = if suite {
                file.clone()
            } else {
                format!("{file} > {}", caps[1].replace(" › ", " > "))
            };
            found.push(Explained {
                name,
                suite,
                body: Vec::new(),
            });
            open = true;
        } else if summary_counts(line).is_some() || line.starts_with("Test Suites:") {
            open = false;
        } else if open && let Some(last) = found.last_mut() {
            last.body.push(line);
        }
    }
    found
}

/// The message under a `●` header: its first line, and for a failed `expect(…)` the
/// `Expected:`/`Received:` lines before the code frame.
fn message(body: &[&str]) -> Option<String> {
    let mut lines = body
        .iter()
        .map(|line| line.trim())
        .take_while(|line| !CODE_FRAME.is_match(line) && !line.starts_with("at "));
    let first = lines.find(|line| !line.is_empty())?;
    if !first.starts_with("expect(") {
        return Some(first.to_string());
    }
    let sides: Vec<&str> = lines
        .filter(|line| line.starts_with("Expected") || line.starts_with("Received"))
        .collect();
    if sides.is_empty() {
        return Some(first.to_string());
    }
    Some(format!("{first} ({})", sides.join(", ")))
}

/// Why Jest says `test` (`path > Suite > test`, as [`parse`] names it) failed.
pub(super) fn failure_line(text: &str, test: &str) -> Option<String> {
    explained(text)
        .into_iter()
        .find(|failure| failure.name == test)
        .and_then(|failure| message(&failure.body))
}

/// Why one of `files` failed to run (`● Test suite failed to run`): `(file, message)`.
pub(super) fn load_failure(text: &str, files: &[String]) -> Option<(String, String)> {
    explained(text)
        .into_iter()
        .filter(|failure| failure.suite)
        .find_map(|failure| {
            let file = files
                .iter()
                .find(|file| super::same_file(&failure.name, file))?;
            Some((file.clone(), message(&failure.body)?))
        })
}
