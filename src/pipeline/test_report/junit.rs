//! JUnit XML reports a validation command wrote: a bounded walk of the repository for fresh
//! `.xml` files, and a tally of each one whose root is `testsuites` or `testsuite`.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use quick_xml::XmlVersion;
use quick_xml::events::{BytesStart, Event};
use quick_xml::reader::Reader;

use super::{TestCounts, number, unique_in_order};

/// Levels below the root the walk looks at: `module/build/test-results/test/TEST-x.xml` is 5.
pub const MAX_JUNIT_DEPTH: usize = 6;
/// Directory entries the walk looks at before it stops, so a huge checkout costs little.
pub const MAX_JUNIT_ENTRIES: usize = 10_000;
/// Larger files are skipped: a report that big is mostly captured output.
pub const MAX_JUNIT_FILE_BYTES: u64 = 32 * 1024 * 1024;

/// Never walked: version control, dependencies, and build output.
const SKIPPED_DIRS: &[&str] = &[".git", "node_modules", "target"];
/// The folders of `target/` where Maven (Surefire, Failsafe) and cargo-nextest write JUnit.
const REPORT_DIRS_IN_TARGET: &[&str] = &["surefire-reports", "failsafe-reports", "nextest"];

pub(super) fn parse_written_since(root: &Path, since: SystemTime) -> Option<TestCounts> {
    let mut walk = Walk {
        since,
        entries_left: MAX_JUNIT_ENTRIES,
        found: Vec::new(),
    };
    walk.visit(root, 1);
    let mut total: Option<TestCounts> = None;
    for path in walk.found {
        if let Some(counts) = read_report(&path) {
            total.get_or_insert_with(TestCounts::default).absorb(counts);
        }
    }
    total
}

struct Walk {
    since: SystemTime,
    entries_left: usize,
    found: Vec<PathBuf>,
}

impl Walk {
    /// Looks at `dir`'s entries, which lie `depth` levels below the root, in name order.
    fn visit(&mut self, dir: &Path, depth: usize) {
        if depth > MAX_JUNIT_DEPTH || self.entries_left == 0 {
            return;
        }
        let Ok(read) = fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<fs::DirEntry> = read
            .filter_map(Result::ok)
            .take(self.entries_left)
            .collect();
        entries.sort_by_key(fs::DirEntry::file_name);
        for entry in entries {
            if self.entries_left == 0 {
                return;
            }
            self.entries_left -= 1;
            // file_type does not follow symlinks: a link is neither walked nor read.
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            if kind.is_dir() {
                self.visit_dir(&entry.path(), &name, depth);
            } else if kind.is_file() && is_xml(&name) && self.written_since(&entry) {
                self.found.push(entry.path());
            }
        }
    }

    fn visit_dir(&mut self, path: &Path, name: &OsStr, depth: usize) {
        if name == "target" {
            for report_dir in REPORT_DIRS_IN_TARGET {
                let report_path = path.join(report_dir);
                let is_real_dir = fs::symlink_metadata(&report_path).is_ok_and(|m| m.is_dir());
                if is_real_dir {
                    self.visit(&report_path, depth + 2);
                }
            }
        } else if !SKIPPED_DIRS.iter().any(|skipped| name == *skipped) {
            self.visit(path, depth + 1);
        }
    }

    fn written_since(&self, entry: &fs::DirEntry) -> bool {
        entry
            .metadata()
            .and_then(|meta| meta.modified())
            .is_ok_and(|modified| modified >= self.since)
    }
}

fn is_xml(name: &OsStr) -> bool {
    Path::new(name)
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("xml"))
}

/// A file's tally, or None when it is too big, unreadable, malformed, or not JUnit.
fn read_report(path: &Path) -> Option<TestCounts> {
    let size = fs::metadata(path).ok()?.len();
    if size > MAX_JUNIT_FILE_BYTES {
        return None;
    }
    let bytes = fs::read(path).ok()?;
    tally(&String::from_utf8_lossy(&bytes))
}

/// The counts in one JUnit document, or None when it is not well-formed XML whose root is
/// `testsuites` or `testsuite`. A suite's `tests`/`failures`/`errors`/`skipped` attributes
/// count when it has no nested suites; otherwise (or without a `tests` attribute) its
/// `<testcase>` children do. Failing tests are always named from the `<testcase>`s.
pub(super) fn tally(xml: &str) -> Option<TestCounts> {
    let mut reader = Reader::from_str(xml);
    let mut tally = Tally::default();
    let mut open_elements = 0usize;
    loop {
        match reader.read_event().ok()? {
            Event::Start(element) => {
                tally.open(&element)?;
                open_elements += 1;
            }
            Event::Empty(element) => {
                tally.open(&element)?;
                tally.close(element.local_name().as_ref());
            }
            Event::End(element) => {
                open_elements = open_elements.checked_sub(1)?;
                tally.close(element.local_name().as_ref());
            }
            Event::Eof => break,
            _ => {}
        }
    }
    // A truncated file (the runner was killed mid-write) ends with elements still open.
    if open_elements != 0 || !tally.saw_root {
        return None;
    }
    tally.total.failures = unique_in_order(tally.failing_names);
    let passes = std::mem::take(&mut tally.passing_names);
    tally.total.absorb(TestCounts {
        passes,
        ..TestCounts::default()
    });
    Some(tally.total)
}

#[derive(Default)]
struct Tally {
    saw_root: bool,
    suites: Vec<Suite>,
    case: Option<Case>,
    total: TestCounts,
    failing_names: Vec<String>,
    passing_names: Vec<String>,
}

#[derive(Default)]
struct Suite {
    declared: Option<TestCounts>,
    cases: TestCounts,
    has_nested_suites: bool,
}

struct Case {
    name: String,
    outcome: CaseOutcome,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum CaseOutcome {
    Passed,
    Failed,
    Skipped,
}

impl Tally {
    /// None when the document's root element is not a JUnit one.
    fn open(&mut self, element: &BytesStart<'_>) -> Option<()> {
        let tag = element.local_name();
        let tag = tag.as_ref();
        if !self.saw_root {
            self.saw_root = true;
            if tag != "testsuites" && tag != "testsuite" {
                return None;
            }
        }
        match tag {
            "testsuite" => {
                if let Some(parent) = self.suites.last_mut() {
                    parent.has_nested_suites = true;
                }
                self.suites.push(Suite {
                    declared: declared_counts(element),
                    ..Suite::default()
                });
            }
            "testcase" => {
                self.case = Some(Case {
                    name: case_name(element),
                    outcome: CaseOutcome::Passed,
                });
            }
            "failure" | "error" => {
                if let Some(case) = self.case.as_mut() {
                    case.outcome = CaseOutcome::Failed;
                }
            }
            "skipped" => {
                if let Some(case) = self.case.as_mut()
                    && case.outcome == CaseOutcome::Passed
                {
                    case.outcome = CaseOutcome::Skipped;
                }
            }
            _ => {}
        }
        Some(())
    }

    fn close(&mut self, tag: &str) {
        match tag {
            "testcase" => {
                if let Some(case) = self.case.take() {
                    self.record(case);
                }
            }
            "testsuite" => {
                if let Some(suite) = self.suites.pop() {
                    let counts = match suite.declared {
                        Some(declared) if !suite.has_nested_suites => declared,
                        _ => suite.cases,
                    };
                    self.total.absorb(counts);
                }
            }
            _ => {}
        }
    }

    fn record(&mut self, case: Case) {
        let (passed, failed, skipped) = match case.outcome {
            CaseOutcome::Passed => (1, 0, 0),
            CaseOutcome::Failed => (0, 1, 0),
            CaseOutcome::Skipped => (0, 0, 1),
        };
        match case.outcome {
            CaseOutcome::Failed => self.failing_names.push(case.name),
            CaseOutcome::Passed => self.passing_names.push(case.name),
            CaseOutcome::Skipped => {}
        }
        // A testcase outside any suite (directly under `testsuites`) counts on its own.
        match self.suites.last_mut() {
            Some(suite) => suite.cases.add(passed, failed, skipped),
            None => self.total.add(passed, failed, skipped),
        }
    }
}

/// The suite's own counts, when it states `tests` and every count it states is a number.
fn declared_counts(element: &BytesStart<'_>) -> Option<TestCounts> {
    let tests = count_attribute(element, "tests")??;
    let failures = count_attribute(element, "failures").unwrap_or(Some(0))?;
    let errors = count_attribute(element, "errors").unwrap_or(Some(0))?;
    let skipped = count_attribute(element, "skipped").unwrap_or(Some(0))?;
    let failed = failures.saturating_add(errors);
    let mut counts = TestCounts::default();
    counts.add(
        tests.saturating_sub(failed).saturating_sub(skipped),
        failed,
        skipped,
    );
    Some(counts)
}

/// None when absent; Some(None) when present but not a whole number.
fn count_attribute(element: &BytesStart<'_>, name: &str) -> Option<Option<u64>> {
    let value = attribute(element, name)?;
    let value = value.trim();
    let digits = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
    Some(digits.then(|| number(value)))
}

/// `classname.name`, or whichever of the two the testcase has.
fn case_name(element: &BytesStart<'_>) -> String {
    let classname = attribute(element, "classname").unwrap_or_default();
    let name = attribute(element, "name").unwrap_or_default();
    match (classname.is_empty(), name.is_empty()) {
        (false, false) => format!("{classname}.{name}"),
        (true, false) => name,
        (false, true) => classname,
        (true, true) => "(unnamed testcase)".to_string(),
    }
}

fn attribute(element: &BytesStart<'_>, name: &str) -> Option<String> {
    element
        .attributes()
        .filter_map(Result::ok)
        .find(|attr| attr.key.local_name().as_ref() == name)
        .and_then(|attr| attr.normalized_value(XmlVersion::Implicit1_0).ok())
        .map(|value| value.into_owned())
}
