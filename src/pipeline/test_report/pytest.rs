//! pytest: the summary line (`==== 3 passed, 1 failed in 0.12s ====`), the tests its short summary
//! names as failing and `-v`/`-rA` as passing, and why each failed — of the command's own runs,
//! never of runs a test made and printed (pytest's own suite does, by `pytester`).

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
/// `____ test_adds_wrongly ____`, `____ TestInClass.test_method_fails ____`, `____ ERROR at setup of
/// test_x ____`, `____ ERROR collecting tests/test_x.py ____`: one test's part of a section.
static TEST_HEADER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^_{3,} (.+?) _{3,}$").expect("valid pytest test header pattern"));
/// `E       assert 4 == 5`: a line of the error pytest explains a failure with.
static ERROR_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^E( +)(\S.*)$").expect("valid pytest error line pattern"));
/// `-v`'s `test_demo.py::test_adds PASSED     [ 18%]` (and `XPASS (reason)`, which counts as
/// passed).
static VERBOSE_PASS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(\S.*?::.*?) (?:PASSED|XPASS)(?: \(.*\))?\s+\[\s*\d+%\]$")
        .expect("valid pytest verbose pass pattern")
});
/// `-rA`'s `PASSED test_demo.py::test_adds`, `XPASS test_demo.py::test_x - reason`.
static SHORT_SUMMARY_PASS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:PASSED|XPASS) (\S.*?)(?: - .*)?$").expect("valid pytest pass entry pattern")
});
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
    let mut passes = Vec::new();
    let mut in_short_summary = false;
    let mut captured = Captured::default();
    for line in text.lines() {
        if captured.swallows(line) {
            continue;
        }
        if let Some(caps) = VERBOSE_PASS.captures(line) {
            passes.push(caps[1].to_string());
        } else if let Some(summary) = summary_counts(line) {
            saw_summary = true;
            in_short_summary = false;
            counts.absorb(summary);
        } else if SHORT_SUMMARY_HEADER.is_match(line) {
            in_short_summary = true;
        } else if SECTION_HEADER.is_match(line) {
            in_short_summary = false;
        } else if in_short_summary && let Some(caps) = SHORT_SUMMARY_ENTRY.captures(line) {
            names.push(caps[1].to_string());
        } else if in_short_summary && let Some(caps) = SHORT_SUMMARY_PASS.captures(line) {
            passes.push(caps[1].to_string());
        }
    }
    counts.failures = unique_in_order(names);
    counts.passes = passes;
    saw_summary.then_some(counts)
}

/// Where a test's captured output is in the report: from a `Captured … ----` header until the
/// next test's header, one of the sections only the outer run prints, or its summary line. A pytest run printed in there
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
        // The next test's header ends this one's output, as the sections the outer run prints
        // after all of them do.
        if summary_counts(line).is_some()
            || CLOSING_HEADER.is_match(line)
            || TEST_HEADER.is_match(line)
        {
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

/// Where a line sits in the report: in the `FAILURES` or `ERRORS` section, under the header of
/// one test (or of one file it could not collect), or elsewhere.
#[derive(Default)]
struct Sections {
    in_failure_sections: bool,
    current: Option<String>,
}

impl Sections {
    /// Reads `line`; true when it is a section's or a test's header (and so no test's text).
    fn header(&mut self, line: &str) -> bool {
        if SECTION_HEADER.is_match(line) {
            self.in_failure_sections = matches!(
                line.trim_matches(|c| c == '=' || c == ' '),
                "FAILURES" | "ERRORS"
            );
            self.current = None;
            return true;
        }
        if self.in_failure_sections
            && let Some(caps) = TEST_HEADER.captures(line)
        {
            self.current = Some(caps[1].to_string());
            return true;
        }
        false
    }
}

/// The lines pytest printed under the header `title` in its `FAILURES`/`ERRORS` sections
/// (never inside a test's captured output), or None when it printed no such header.
fn section_body<'a>(text: &'a str, titles: &[String]) -> Option<Vec<&'a str>> {
    let mut sections = Sections::default();
    let mut captured = Captured::default();
    let mut body: Option<Vec<&str>> = None;
    for line in text.lines() {
        if captured.swallows(line) {
            continue;
        }
        if sections.header(line) {
            if body.is_some() {
                break;
            }
            if sections
                .current
                .as_ref()
                .is_some_and(|title| titles.contains(title))
            {
                body = Some(Vec::new());
            }
            continue;
        }
        if let Some(body) = body.as_mut() {
            body.push(line);
        }
    }
    body
}

/// The error among `body`'s `E` lines: the first of the least indented (`SyntaxError: …` under
/// its `File …` lines, `assert 4 == 5` above its `+  where …`).
fn error_line(body: &[&str]) -> Option<String> {
    let errors: Vec<(usize, &str)> = body
        .iter()
        .filter_map(|line| ERROR_LINE.captures(line))
        .map(|caps| (caps[1].len(), caps.get(2).map_or("", |m| m.as_str())))
        .collect();
    let least = errors.iter().map(|(indent, _)| *indent).min()?;
    errors
        .into_iter()
        .find(|(indent, _)| *indent == least)
        .map(|(_, error)| error.trim().to_string())
}

/// Why pytest says `test` (`tests/test_x.py::TestY::test_z[1]`, as [`parse`] names it) failed:
/// the error under its header (`E   assert 4 == 5`), else what its short summary line says.
pub(super) fn failure_line(text: &str, test: &str) -> Option<String> {
    let title = match test.split_once("::") {
        Some((_, inside)) => inside.replace("::", "."),
        None => test.to_string(),
    };
    let titles = [
        format!("ERROR at setup of {title}"),
        format!("ERROR at teardown of {title}"),
        format!("ERROR collecting {test}"),
        title,
    ];
    if let Some(line) = section_body(text, &titles).and_then(|body| error_line(&body)) {
        return Some(line);
    }
    short_summary_entries(text)
        .filter_map(|entry| entry.strip_prefix(test)?.strip_prefix(" - "))
        .map(str::trim)
        .find(|message| !message.is_empty())
        .map(str::to_string)
}

/// The entries of the command's own `short test summary info` sections, `FAILED `/`ERROR `
/// taken off: `test_x.py::test_y - assert 1 == 2`.
fn short_summary_entries(text: &str) -> impl Iterator<Item = &str> {
    let mut captured = Captured::default();
    let mut in_short_summary = false;
    text.lines().filter_map(move |line| {
        if captured.swallows(line) {
            return None;
        }
        if SECTION_HEADER.is_match(line) || summary_counts(line).is_some() {
            in_short_summary = SHORT_SUMMARY_HEADER.is_match(line);
            return None;
        }
        if !in_short_summary {
            return None;
        }
        line.strip_prefix("FAILED ")
            .or_else(|| line.strip_prefix("ERROR "))
    })
}

/// The error pytest printed when it could not collect one of `files` (an import that fails, a
/// syntax error): `(file, error)`. A test that fails on a `SyntaxError` of the code it tests is
/// under its own header, never under `ERROR collecting`.
pub(super) fn load_failure(text: &str, files: &[String]) -> Option<(String, String)> {
    let mut sections = Sections::default();
    let mut captured = Captured::default();
    let mut failed: Option<(String, Vec<&str>)> = None;
    for line in text.lines() {
        if captured.swallows(line) {
            continue;
        }
        if sections.header(line) {
            if let Some((file, body)) = failed.take() {
                return Some(collection_error(file, &body));
            }
            let collected = sections
                .current
                .as_deref()
                .and_then(|title| title.strip_prefix("ERROR collecting "));
            failed = collected
                .and_then(|path| files.iter().find(|file| super::same_file(path, file)))
                .map(|file| (file.clone(), Vec::new()));
            continue;
        }
        if let Some((_, body)) = failed.as_mut() {
            body.push(line);
        }
    }
    failed.map(|(file, body)| collection_error(file, &body))
}

/// The file and the error it could not be collected for: the `E` line, else the first line.
fn collection_error(file: String, body: &[&str]) -> (String, String) {
    let error = error_line(body)
        .or_else(|| {
            body.iter()
                .map(|line| line.trim())
                .find(|line| !line.is_empty())
                .map(str::to_string)
        })
        .unwrap_or_else(|| "could not be collected".to_string());
    (file, error)
}
