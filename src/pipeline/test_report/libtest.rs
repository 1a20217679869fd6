//! Rust's test runners: libtest as `cargo test` prints it (`test x ... ok`, one `test result:` line
//! per binary and for doc tests), cargo-nextest's status and `Summary` lines, and their panics.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use super::{TestCounts, number, unique_in_order};

static LIBTEST_RESULT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored;")
        .expect("valid libtest result pattern")
});
static LIBTEST_FAILED_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^test (.+) \.\.\. FAILED$").expect("valid libtest failed-line pattern")
});
static LIBTEST_OK_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^test (.+) \.\.\. ok$").expect("valid libtest ok-line pattern"));
/// `--quiet` prints only the failures, as `NAME --- FAILED`.
static LIBTEST_QUIET_FAILED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(\S.*) --- FAILED$").expect("valid libtest quiet failed-line pattern")
});

static NEXTEST_START: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*Starting \d+ tests? across \d+ binar(?:y|ies)")
        .expect("valid nextest start pattern")
});
/// `Summary [   0.031s] 6 tests run: 3 passed, 3 failed, 2 skipped` (`3/6 tests run` when
/// the run was cancelled).
static NEXTEST_SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*Summary \[[^\]]*\]\s+(?:\d+/)?\d+ tests? run: (.+)$")
        .expect("valid nextest summary pattern")
});
/// `FAIL [   0.007s] (1/6) tiny tests::name`, `TRY 2 PASS [   0.007s] (───) bin test`,
/// `FLAKY 2/2 [ 0.1s] (2/4) bin test`, `FAIL + LEAK [ 0.2s] bin test`; the counter is absent in
/// older nextest.
static NEXTEST_STATUS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*(?:TRY \d+ )?([A-Z][A-Z0-9/+ -]*?)\s+\[[^\]]*\]\s+(?:\([^)]*\)\s+)?(\S+)\s+(\S+)\s*$",
    )
    .expect("valid nextest status pattern")
});
/// The short signal names nextest prints after `TRY n` (`TRY 2 SEGV`); alone they read `SIGSEGV`.
const SIGNAL_NAMES: &[&str] = &[
    "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "SEGV", "PIPE", "ALRM",
    "TERM", "XCPU", "XFSZ", "VTALRM", "SYS",
];
static PARENTHESISED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\s*\([^)]*\)").expect("valid parenthesis pattern"));

/// libtest's counts, summed over every `test result:` line outside nextest's own run (whose
/// captured per-test libtest output would count each test again). Ignored tests are skipped.
/// None when no `test result:` line was printed (for instance when compilation failed).
pub(super) fn parse_cargo_test(text: &str) -> Option<TestCounts> {
    let mut counts = TestCounts::default();
    let mut saw_result = false;
    // libtest sorts its `failures:` list, while `... FAILED` lines come in completion order:
    // the lists go first so that the names keep one order from run to run.
    let mut listed = Vec::new();
    let mut reported = Vec::new();
    let mut in_failure_list = false;
    let mut passes = Vec::new();
    for line in lines_outside_nextest_runs(text) {
        if in_failure_list {
            // The second `failures:` list names one test per line, indented by four spaces;
            // the first is followed by a blank line and `---- name stdout ----` blocks.
            if let Some(name) = line.strip_prefix("    ").filter(|n| !n.trim().is_empty()) {
                listed.push(name.trim().to_string());
                continue;
            }
            in_failure_list = false;
        }
        if line == "failures:" {
            in_failure_list = true;
        } else if let Some(caps) = LIBTEST_RESULT.captures(line) {
            saw_result = true;
            counts.add(number(&caps[1]), number(&caps[2]), number(&caps[3]));
        } else if let Some(caps) = LIBTEST_FAILED_LINE
            .captures(line)
            .or_else(|| LIBTEST_QUIET_FAILED.captures(line))
        {
            reported.push(caps[1].to_string());
        } else if let Some(caps) = LIBTEST_OK_LINE.captures(line) {
            passes.push(caps[1].to_string());
        }
    }
    listed.extend(reported);
    counts.failures = unique_in_order(listed);
    counts.passes = passes;
    saw_result.then_some(counts)
}

/// nextest's counts from its `Summary` lines (summed when it ran more than once): `failed`,
/// `exec failed` and `timed out` are failures. Failing tests are named `binary-id test-name`
/// as nextest prints them; a test's last verdict counts, so a flaky test that passed on retry
/// is not listed. None without a `Summary` line.
pub(super) fn parse_nextest(text: &str) -> Option<TestCounts> {
    let mut counts = TestCounts::default();
    let mut saw_summary = false;
    let mut order = Vec::new();
    let mut last_verdict: HashMap<String, Verdict> = HashMap::new();
    for line in text.lines() {
        if let Some(caps) = NEXTEST_SUMMARY.captures(line) {
            saw_summary = true;
            counts.absorb(summary_counts(&caps[1]));
        } else if let Some(caps) = NEXTEST_STATUS.captures(line) {
            let Some(verdict) = status_verdict(&caps[1]) else {
                continue;
            };
            let name = format!("{} {}", &caps[2], &caps[3]);
            if last_verdict.insert(name.clone(), verdict).is_none() {
                order.push(name);
            }
        }
    }
    let named = |wanted: Verdict| -> Vec<String> {
        order
            .iter()
            .filter(|name| last_verdict[*name] == wanted)
            .cloned()
            .collect()
    };
    counts.failures = named(Verdict::Fail);
    counts.passes = named(Verdict::Pass);
    saw_summary.then_some(counts)
}

/// `3 passed (1 slow, 1 flaky), 2 failed (1 due to being leaky), 1 exec failed, 1 timed out,
/// 2 skipped`: the parenthesised details are part of the counts before them.
fn summary_counts(list: &str) -> TestCounts {
    let mut counts = TestCounts::default();
    let list = PARENTHESISED.replace_all(list, "");
    for item in list.split(',') {
        let Some((count, what)) = item.trim().split_once(' ') else {
            continue;
        };
        if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let count = number(count);
        match what.trim() {
            "passed" => counts.add(count, 0, 0),
            "failed" | "exec failed" | "timed out" => counts.add(0, count, 0),
            "skipped" => counts.add(0, 0, count),
            _ => {}
        }
    }
    counts
}

/// What a nextest status line says of its test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Pass,
    Fail,
    Skip,
}

/// Whether a nextest status is a failing verdict, a passing or skipping one, or no verdict at
/// all (`SLOW`, `START`, `RETRY`, `TRMNTG`, …: notes about a test still running). Statuses come
/// long (`TIMEOUT`, `SIGSEGV`) or, after `TRY n`, short (`TMT`, `SEGV`).
fn status_verdict(status: &str) -> Option<Verdict> {
    let status = status.trim();
    let failed = status.contains("FAIL")
        || matches!(status, "TIMEOUT" | "TMT" | "ABORT")
        || status.starts_with("SIG")
        || status.starts_with("ABORT ")
        || SIGNAL_NAMES.contains(&status);
    if failed {
        Some(Verdict::Fail)
    } else if status == "SKIP" {
        Some(Verdict::Skip)
    } else if matches!(status, "PASS" | "LEAK")
        || status.starts_with("PASS ")
        || status.starts_with("FLAKY")
    {
        Some(Verdict::Pass)
    } else {
        None
    }
}

/// The lines libtest printed itself: everything except what lies between nextest's
/// `Starting … tests across … binaries` and its `Summary` line.
fn lines_outside_nextest_runs(text: &str) -> impl Iterator<Item = &str> {
    let mut inside_run = false;
    text.lines().filter(move |line| {
        if NEXTEST_START.is_match(line) {
            inside_run = true;
            return false;
        }
        if inside_run {
            if NEXTEST_SUMMARY.is_match(line) {
                inside_run = false;
            }
            return false;
        }
        true
    })
}

/// `---- tests::name stdout ----`: the captured output of one failing test, under `failures:`.
static LIBTEST_OUTPUT_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^---- (.+) stdout ----$").expect("valid libtest output header pattern")
});

/// Why libtest or nextest says `test` (as [`parse_cargo_test`] or [`parse_nextest`] names it)
/// failed: the message of the panic in its output, with the `left`/`right` of a failed
/// `assert_eq!`.
pub(super) fn failure_line(text: &str, test: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let libtest = lines.iter().position(|line| {
        LIBTEST_OUTPUT_HEADER
            .captures(line)
            .is_some_and(|caps| &caps[1] == test)
    });
    if let Some(start) = libtest {
        let end = lines[start + 1..]
            .iter()
            .position(|line| LIBTEST_OUTPUT_HEADER.is_match(line) || *line == "failures:")
            .map_or(lines.len(), |offset| start + 1 + offset);
        return panic_message(&lines[start + 1..end]);
    }
    let nextest = lines.iter().position(|line| {
        NEXTEST_STATUS.captures(line).is_some_and(|caps| {
            status_verdict(&caps[1]) == Some(Verdict::Fail)
                && format!("{} {}", &caps[2], &caps[3]) == test
        })
    })?;
    let end = lines[nextest + 1..]
        .iter()
        .position(|line| NEXTEST_STATUS.is_match(line) || NEXTEST_SUMMARY.is_match(line))
        .map_or(lines.len(), |offset| nextest + 1 + offset);
    panic_message(&lines[nextest + 1..end])
}

/// The message of the first panic in a test's output: the line after `panicked at file:l:c:`
/// (or the quoted one before the location, as Rust printed it before 1.73), with the `left:`
/// and `right:` lines after an `assertion … failed`.
fn panic_message(output: &[&str]) -> Option<String> {
    let at = output
        .iter()
        .position(|line| line.contains(" panicked at "))?;
    let panic_line = output[at].trim();
    if let Some((_, rest)) = panic_line.split_once(" panicked at '")
        && let Some((message, _)) = rest.rsplit_once("', ")
    {
        return Some(message.trim().to_string());
    }
    let mut following = output[at + 1..].iter().map(|line| line.trim());
    let message = following.next().filter(|line| !line.is_empty())?;
    if !message.starts_with("assertion ") {
        return Some(message.to_string());
    }
    let sides: Vec<&str> = following
        .take_while(|line| line.starts_with("left:") || line.starts_with("right:"))
        .collect();
    if sides.is_empty() {
        return Some(message.to_string());
    }
    Some(format!("{message} ({})", sides.join(", ")))
}

/// `error[E0425]: cannot find function …`, `error: expected expression, found …`.
static COMPILER_ERROR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^error(?:\[E\d+\])?: (.+)$").expect("valid rustc error pattern"));
/// ` --> tests/broken.rs:3:26`: where the error above it is.
static COMPILER_LOCATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*--> (\S+?):(\d+:\d+)$").expect("valid rustc location pattern")
});

/// The first compiler error located in one of `files`: `(file, file:line:col: error[E…]: …)`.
/// An error in the code the tests build on (`src/lib.rs`) is not one of the test files'.
pub(super) fn load_failure(text: &str, files: &[String]) -> Option<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    lines.iter().enumerate().find_map(|(at, line)| {
        COMPILER_ERROR.captures(line)?;
        let located = lines[at + 1..]
            .iter()
            .take(3)
            .find_map(|next| COMPILER_LOCATION.captures(next))?;
        let file = files
            .iter()
            .find(|file| super::same_file(&located[1], file))?;
        Some((
            file.clone(),
            format!("{file}:{}: {}", &located[2], line.trim()),
        ))
    })
}
