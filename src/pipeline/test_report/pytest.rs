//! pytest: the closing summary line (`==== 3 passed, 1 failed in 0.12s ====`, or bare with
//! `-q`) and the failing tests its `short test summary info` section names — of the runs the
//! command made, never of runs a test made and printed (pytest's own suite does, by `pytester`).

use std::sync::LazyLock;

use regex::Regex;

use super::{TestCounts, number, unique_in_order};

/// The body between the `=` bars, then ` in 0.07s` or ` in 65.12s (0:01:05)`.
static SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:=+ )?(.+?) in [0-9.]+s(?: \([0-9:.]+\))?(?: =+)?$")
        .expect("valid pytest summary pattern")
});
static SUMMARY_ITEM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(\d+) ([a-z][a-z ]*)$").expect("valid pytest summary item pattern")
});
static SHORT_SUMMARY_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^=+ short test summary info =+$").expect("valid pytest section pattern")
});
/// `---- Captured stdout call ----`, `---- Captured log setup ----`: a test's own output follows.
static CAPTURED_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^-+ Captured (?:stdout|stderr|log) \S+ -+$").expect("valid pytest capture pattern")
});
/// The sections that only the command's own run prints after its tests' output.
static CLOSING_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^=+ (?:short test summary info|warnings summary) =+$")
        .expect("valid pytest section pattern")
});
static SECTION_HEADER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^=+ .* =+$").expect("valid pytest section pattern"));
/// `FAILED test_demo.py::test_x[2-3] - assert 5 == 6`, `ERROR test_broken.py`.
static SHORT_SUMMARY_ENTRY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:FAILED|ERROR) (\S.*?)(?: - .*)?$").expect("valid pytest entry pattern")
});

/// pytest's counts, summed over every summary line (a script may run it more than once):
/// `xpassed` counts as passed, `error`s as failed, `xfailed` as skipped (as pytest's JUnit XML
/// has it). None when no summary line was printed.
pub(super) fn parse(text: &str) -> Option<TestCounts> {
    let mut counts = TestCounts::default();
    let mut saw_summary = false;
    let mut names = Vec::new();
    let mut in_short_summary = false;
    let mut captured = Captured::default();
    for line in text.lines() {
        if captured.swallows(line) {
            continue;
        }
        if let Some(summary) = summary_counts(line) {
            saw_summary = true;
            in_short_summary = false;
            counts.absorb(summary);
        } else if SHORT_SUMMARY_HEADER.is_match(line) {
            in_short_summary = true;
        } else if SECTION_HEADER.is_match(line) {
            in_short_summary = false;
        } else if in_short_summary && let Some(caps) = SHORT_SUMMARY_ENTRY.captures(line) {
            names.push(caps[1].to_string());
        }
    }
    counts.failures = unique_in_order(names);
    saw_summary.then_some(counts)
}

/// Where a test's captured output is in the report: from a `Captured … ----` header until one
/// of the sections only the outer run prints, or its summary line. A pytest run printed in there
/// (its own header and sections, up to its own summary line) is the test's output, not results.
#[derive(Default)]
struct Captured {
    inside: bool,
    nested_run: bool,
}

impl Captured {
    /// Whether `line` belongs to a test's captured output (and so is not read as results).
    fn swallows(&mut self, line: &str) -> bool {
        if CAPTURED_HEADER.is_match(line) {
            self.inside = true;
            return true;
        }
        if !self.inside {
            return false;
        }
        if self.nested_run {
            if summary_counts(line).is_some() {
                self.nested_run = false;
            }
            return true;
        }
        if summary_counts(line).is_some() || CLOSING_HEADER.is_match(line) {
            self.inside = false;
            return false;
        }
        if SECTION_HEADER.is_match(line) {
            // `test session starts`, or a quiet run's `FAILURES`: a run inside the output.
            self.nested_run = true;
        }
        true
    }
}

/// The counts a summary line states, or None when the line is not one: every item must read
/// `N words` and at least one must be an outcome pytest reports, unless it says `no tests ran`.
fn summary_counts(line: &str) -> Option<TestCounts> {
    let body = SUMMARY.captures(line)?.get(1)?.as_str();
    let mut counts = TestCounts::default();
    if body == "no tests ran" {
        return Some(counts);
    }
    let mut known = false;
    for item in body.split(", ") {
        let caps = SUMMARY_ITEM.captures(item)?;
        let count = number(&caps[1]);
        known |= match &caps[2] {
            "passed" | "xpassed" => {
                counts.add(count, 0, 0);
                true
            }
            "failed" | "error" | "errors" => {
                counts.add(0, count, 0);
                true
            }
            "skipped" | "xfailed" => {
                counts.add(0, 0, count);
                true
            }
            "deselected" | "warning" | "warnings" | "rerun" | "reruns" => true,
            _ => false,
        };
    }
    known.then_some(counts)
}
