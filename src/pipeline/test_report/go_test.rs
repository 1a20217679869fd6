//! `go test`: the `--- PASS/FAIL/SKIP: Name (0.00s)` result lines, the per-package `ok`, `FAIL`
//! and `[no test files]` lines closing each package's output, and the lines a failing test logged.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

use super::{TestCounts, unique_in_order};

/// Subtests are indented four spaces per level and named `Parent/sub`.
static RESULT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*--- (PASS|FAIL|SKIP): (\S+)(?: \([0-9.]+s\))?\s*$")
        .expect("valid go test result pattern")
});
static RUN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^=== RUN\s+(\S+)\s*$").expect("valid go test run pattern"));
/// `ok  \tpkg\t0.002s`, `ok  \tpkg\t(cached)`.
static PACKAGE_OK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^ok\s+(\S+)\s+(?:[0-9.]+s|\(cached\))").expect("valid go package pattern")
});
/// `FAIL\tpkg\t0.004s`, `FAIL\tpkg [build failed]`, `FAIL\tpkg [setup failed]`.
static PACKAGE_FAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^FAIL\s+(\S+)\s*(?:[0-9.]+s|\[(?:build|setup) failed\])")
        .expect("valid go package pattern")
});
static PACKAGE_WITHOUT_TESTS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\?\s+(\S+)\s+\[no test files\]").expect("valid go package pattern")
});

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Pass,
    Fail,
    Skip,
}

/// One package's output: go prints each package's test output in one piece, then its line.
#[derive(Default)]
struct PackageBlock {
    started: Vec<String>,
    results: Vec<(String, Outcome)>,
}

/// `go test` counts. Subtests count as tests and a parent with reported subtests does not
/// (its result only sums theirs), unless it failed while none of its subtests did. Without
/// `-v`, go prints only failures, so `passed` and `skipped` stay 0 there and the counts say
/// [`TestCounts::only_failures_listed`]. A failed package
/// with no `--- FAIL` line (a timeout, a panic outside a test, a build failure) counts the
/// tests it started without finishing as failed, or else the package itself, by import path.
/// None when no result or package line was printed.
pub(super) fn parse(text: &str) -> Option<TestCounts> {
    let mut counts = TestCounts::default();
    let mut recognised = false;
    let mut verbose = false;
    let mut block = PackageBlock::default();
    for line in text.lines() {
        if let Some(caps) = RUN.captures(line) {
            verbose = true;
            block.started.push(caps[1].to_string());
        } else if let Some(caps) = RESULT.captures(line) {
            recognised = true;
            let outcome = match &caps[1] {
                "PASS" => Outcome::Pass,
                "FAIL" => Outcome::Fail,
                _ => Outcome::Skip,
            };
            block.results.push((caps[2].to_string(), outcome));
        } else if let Some(caps) = PACKAGE_FAIL.captures(line) {
            recognised = true;
            counts.absorb(std::mem::take(&mut block).counts(Some(&caps[1])));
        } else if PACKAGE_OK.is_match(line) || PACKAGE_WITHOUT_TESTS.is_match(line) {
            recognised = true;
            counts.absorb(std::mem::take(&mut block).counts(None));
        }
    }
    counts.absorb(block.counts(None));
    // Without -v go names no test it started and no test that passed: only failures.
    counts.only_failures_listed = !verbose;
    recognised.then_some(counts)
}

impl PackageBlock {
    /// The block's counts; `failed_package` names the package when its line said FAIL.
    fn counts(self, failed_package: Option<&str>) -> TestCounts {
        let mut counts = TestCounts::default();
        let mut names = Vec::new();
        for (name, outcome) in self.counted_results() {
            match outcome {
                Outcome::Pass => {
                    counts.add(1, 0, 0);
                    counts.passes.push(name.to_string());
                }
                Outcome::Skip => counts.add(0, 0, 1),
                Outcome::Fail => {
                    counts.add(0, 1, 0);
                    names.push(name.to_string());
                }
            }
        }
        if let Some(package) = failed_package
            && names.is_empty()
        {
            let finished: HashSet<&str> = self.results.iter().map(|(n, _)| n.as_str()).collect();
            names = self
                .started
                .iter()
                .filter(|name| !finished.contains(name.as_str()))
                .cloned()
                .collect();
            if names.is_empty() {
                names.push(package.to_string());
            }
            let unfinished = u64::try_from(names.len()).unwrap_or(u64::MAX);
            counts.add(0, unfinished, 0);
        }
        counts.failures = unique_in_order(names);
        counts
    }

    /// Leaf results, plus parents that failed on their own account.
    fn counted_results(&self) -> Vec<(&str, Outcome)> {
        let mut parents = HashSet::new();
        let mut parents_of_failures = HashSet::new();
        for (name, outcome) in &self.results {
            for (slash, _) in name.match_indices('/') {
                parents.insert(&name[..slash]);
                if *outcome == Outcome::Fail {
                    parents_of_failures.insert(&name[..slash]);
                }
            }
        }
        self.results
            .iter()
            .map(|(name, outcome)| (name.as_str(), *outcome))
            .filter(|(name, outcome)| {
                !parents.contains(name)
                    || (*outcome == Outcome::Fail && !parents_of_failures.contains(name))
            })
            .collect()
    }
}

/// `=== RUN   TestX`, `=== CONT  TestX`, `=== NAME  TestX`, `=== PAUSE TestX`: the output that
/// follows is TestX's.
static OUTPUT_OWNER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^=== (?:RUN|CONT|NAME|PAUSE)\s+(\S+)\s*$").expect("valid go test owner pattern")
});
/// `    calc_test.go:14: Subtract(5, 3) = 3, want 2`: what `t.Error` and its kin print.
static MESSAGE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s+(\S+\.go:\d+: .*)$").expect("valid go test message pattern"));

/// Why `go test` says `test` (`TestX` or `TestX/sub`) failed: the first `file_test.go:12: …`
/// line it logged (printed after `=== RUN` with `-v`, under `--- FAIL` without), or the panic
/// it died of.
pub(super) fn failure_line(text: &str, test: &str) -> Option<String> {
    let mut owner: Option<&str> = None;
    for line in text.lines() {
        if let Some(caps) = OUTPUT_OWNER.captures(line) {
            owner = caps.get(1).map(|m| m.as_str());
        } else if let Some(caps) = RESULT.captures(line) {
            owner = caps.get(2).map(|m| m.as_str());
        } else if owner == Some(test) {
            if let Some(caps) = MESSAGE.captures(line) {
                return Some(caps[1].trim().to_string());
            }
            if line.starts_with("panic: ") {
                return Some(line.trim().to_string());
            }
        }
    }
    None
}

/// `./calc_test.go:12:2: undefined: Sbutract`: a compiler's or `go vet`'s complaint.
static POSITIONED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(\S+\.go):(\d+(?::\d+)?): (.+)$").expect("valid go position pattern")
});

/// The first complaint about one of `files` in the output of a package that `go test` could not
/// build or set up (`FAIL pkg [build failed]`, `[setup failed]`): `(file, file:line:col: what)`.
/// A failing test's `calc_test.go:14: …` lines belong to a package that built, so never count.
pub(super) fn load_failure(text: &str, files: &[String]) -> Option<(String, String)> {
    let mut block: Vec<&str> = Vec::new();
    for line in text.lines() {
        let package_line = PACKAGE_FAIL.is_match(line)
            || PACKAGE_OK.is_match(line)
            || PACKAGE_WITHOUT_TESTS.is_match(line);
        if !package_line {
            block.push(line);
            continue;
        }
        if line.contains("[build failed]") || line.contains("[setup failed]") {
            let complaint = block.iter().find_map(|line| {
                let caps = POSITIONED.captures(line)?;
                let file = files.iter().find(|file| super::same_file(&caps[1], file))?;
                Some((file.clone(), format!("{file}:{}: {}", &caps[2], &caps[3])))
            });
            if complaint.is_some() {
                return complaint;
            }
        }
        block.clear();
    }
    None
}
