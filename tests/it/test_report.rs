//! TEST_REPORT.json's parsers against real captured runner output (`tests/data/test_reports/`,
//! whose README says how each file was made), JUnit XML on disk, and whole command reports.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use autofix::exec::{CommandSpec, run};
use autofix::pipeline::test_report::{
    CommandReport, MAX_JUNIT_DEPTH, MAX_JUNIT_ENTRIES, TestCounts, TestReport,
    parse_junit_written_since, parse_output, report_for,
};

use crate::support::reports;

use reports::{captured, counts, data_dir, parsed, without_passes};

/// What a runner that prints only its failures (`go test` without `-v`) tells.
fn failures_only(failed: u64, failures: &[&str]) -> TestCounts {
    TestCounts {
        only_failures_listed: true,
        ..counts(0, failed, 0, failures)
    }
}

const TINY_FAILURES: &[&str] = &[
    "tests::adds_wrongly_on_purpose",
    "tests::nested::panics_on_purpose",
    "integration_fails",
    "src/lib.rs - double (line 14)",
];

// ---- cargo test ----

#[test]
fn a_failing_cargo_test_run_sums_every_test_binary_and_the_doc_tests() {
    let (parser, tests) = parsed("cargo_test_failing.txt");
    assert_eq!(parser, "cargo-test");
    // lib 1/2/1, integration 1/1/1, second 1/0/0, doc tests 1/1/0.
    assert_eq!(tests, counts(4, 4, 2, TINY_FAILURES));
}

#[test]
fn the_quiet_form_of_cargo_test_gives_the_same_report() {
    assert_eq!(
        parsed("cargo_test_quiet.txt"),
        parsed("cargo_test_failing.txt")
    );
}

#[test]
fn a_passing_cargo_test_run_names_no_failures() {
    assert_eq!(
        parsed("cargo_test_passing.txt"),
        ("cargo-test".to_string(), counts(1, 0, 0, &[]))
    );
}

#[test]
fn a_crate_that_does_not_compile_ran_no_tests_so_nothing_is_recognised() {
    assert_eq!(
        parse_output(&captured("cargo_test_compile_error.txt")),
        None
    );
}

#[test]
fn compiler_warnings_do_not_disturb_the_counts() {
    assert_eq!(
        parsed("cargo_test_warnings.txt"),
        ("cargo-test".to_string(), counts(1, 0, 0, &[]))
    );
}

// ---- cargo nextest ----

#[test]
fn nextest_counts_come_from_its_summary_and_not_from_the_libtest_output_it_shows() {
    let (parser, tests) = parsed("nextest_failing.txt");
    assert_eq!(parser, "cargo-nextest");
    assert_eq!(
        tests,
        counts(
            3,
            3,
            2,
            &[
                "tiny tests::adds_wrongly_on_purpose",
                "tiny tests::nested::panics_on_purpose",
                "tiny::integration integration_fails",
            ]
        )
    );
}

#[test]
fn a_passing_nextest_run_names_no_failures() {
    assert_eq!(
        parsed("nextest_passing.txt"),
        ("cargo-nextest".to_string(), counts(1, 0, 0, &[]))
    );
}

#[test]
fn a_test_that_passed_on_retry_is_not_a_failure_but_one_that_timed_out_is() {
    let (parser, tests) = parsed("nextest_retries_and_timeout.txt");
    assert_eq!(parser, "cargo-nextest");
    assert_eq!(
        tests,
        counts(
            2,
            2,
            0,
            &["flaky tests::always_fails", "flaky tests::hangs_forever"]
        )
    );
}

#[test]
fn nextest_followed_by_cargo_test_doc_counts_both() {
    let output = captured("nextest_failing.txt") + &captured("cargo_test_doc_only.txt");
    let (parser, tests) = parse_output(&output).expect("recognised");
    assert_eq!(parser, "cargo-nextest+cargo-test");
    assert_eq!(tests.passed, 3 + 1);
    assert_eq!(tests.failed, 3 + 1);
    assert_eq!(tests.skipped, 2);
    assert_eq!(
        tests.failures.last().map(String::as_str),
        Some("src/lib.rs - double (line 14)")
    );
}

// ---- pytest ----

const PYTEST_FAILURES: &[&str] = &[
    "test_demo.py::test_adds_wrongly",
    "test_demo.py::test_parametrized[2-3-6]",
    "test_demo.py::TestInClass::test_method_fails",
    "test_demo.py::test_uses_broken_fixture",
];

#[test]
fn pytest_counts_xpass_as_passed_errors_as_failed_and_xfail_as_skipped() {
    let (parser, tests) = parsed("pytest_mixed.txt");
    assert_eq!(parser, "pytest");
    // 3 failed + 1 error, 4 passed + 1 xpassed, 1 skipped + 1 xfailed.
    assert_eq!(tests, counts(5, 4, 2, PYTEST_FAILURES));
}

#[test]
fn the_quiet_form_of_pytest_gives_the_same_report() {
    assert_eq!(parsed("pytest_mixed_quiet.txt"), parsed("pytest_mixed.txt"));
}

#[test]
fn colour_codes_in_pytest_output_are_looked_through() {
    assert_eq!(parsed("pytest_mixed_color.txt"), parsed("pytest_mixed.txt"));
}

#[test]
fn a_passing_pytest_run_with_a_warning_names_no_failures() {
    assert_eq!(
        parsed("pytest_passing.txt"),
        ("pytest".to_string(), counts(1, 0, 0, &[]))
    );
}

#[test]
fn pytest_that_found_no_tests_is_recognised_with_zero_counts() {
    assert_eq!(
        parsed("pytest_empty.txt"),
        ("pytest".to_string(), TestCounts::default())
    );
    assert_eq!(
        parsed("pytest_all_deselected_quiet.txt"),
        ("pytest".to_string(), TestCounts::default())
    );
}

#[test]
fn a_module_that_fails_to_import_is_a_failure_named_by_its_file() {
    assert_eq!(
        parsed("pytest_collection_error.txt"),
        ("pytest".to_string(), counts(0, 1, 0, &["test_broken.py"]))
    );
    assert_eq!(
        parsed("pytest_collection_error_continue.txt"),
        ("pytest".to_string(), counts(1, 1, 0, &["test_broken.py"]))
    );
}

#[test]
fn a_failed_line_printed_before_the_short_summary_is_not_a_failing_test() {
    let output = captured("pytest_passing.txt").replace(
        "sub/test_other.py .",
        "FAILED to reach the mirror, retrying\nERROR root:db.py:3 connection refused\nsub/test_other.py .",
    );
    assert_eq!(
        parse_output(&output),
        Some(("pytest".to_string(), counts(1, 0, 0, &[])))
    );
}

// ---- go test ----

#[test]
fn go_test_verbose_counts_subtests_and_not_the_parents_that_sum_them() {
    let (parser, tests) = parsed("go_test_verbose.txt");
    assert_eq!(parser, "go-test");
    // calc: TestAdd, by_one, halves, negative pass; TestSubtract, by_zero fail; huge, TestSlow
    // skip (TestDivide and TestRound only sum their subtests). parse: TestParse passes.
    assert_eq!(
        tests,
        counts(5, 2, 2, &["TestSubtract", "TestDivide/by_zero"])
    );
}

#[test]
fn go_test_without_v_prints_and_so_counts_only_the_failures() {
    assert_eq!(
        parsed("go_test_plain.txt"),
        (
            "go-test".to_string(),
            failures_only(2, &["TestSubtract", "TestDivide/by_zero"])
        )
    );
}

#[test]
fn a_test_killed_by_the_timeout_and_a_package_that_did_not_build_are_failures() {
    assert_eq!(
        parsed("go_test_timeout_and_build_failure.txt"),
        (
            "go-test".to_string(),
            counts(1, 2, 0, &["TestWaitsForever", "example.com/calc/parse"])
        )
    );
}

#[test]
fn a_parent_test_that_fails_itself_while_its_subtests_pass_is_counted_as_failed() {
    let output = "=== RUN   TestTable\n=== RUN   TestTable/a\n=== RUN   TestTable/b\n    \
                  table_test.go:30: cleanup left files behind\n--- FAIL: TestTable (0.00s)\n    \
                  --- PASS: TestTable/a (0.00s)\n    --- PASS: TestTable/b (0.00s)\nFAIL\n\
                  FAIL\texample.com/table\t0.003s\nFAIL\n";
    let passing = TestCounts {
        passes: vec!["TestTable/a".to_string(), "TestTable/b".to_string()],
        ..counts(2, 1, 0, &["TestTable"])
    };
    assert_eq!(parse_output(output), Some(("go-test".to_string(), passing)));
}

// ---- several runners, or none ----

#[test]
fn a_script_that_runs_cargo_test_and_pytest_reports_both() {
    let output = captured("cargo_test_passing.txt") + &captured("pytest_mixed.txt");
    let (parser, tests) = parse_output(&output).expect("recognised");
    assert_eq!(parser, "cargo-test+pytest");
    assert_eq!(tests.passes, vec!["second_binary_passes"]);
    assert_eq!(without_passes(tests), counts(1 + 5, 4, 2, PYTEST_FAILURES));
}

#[test]
fn output_from_no_known_runner_is_not_recognised() {
    assert_eq!(parse_output(""), None);
    assert_eq!(
        parse_output("make: Nothing to be done for 'all'.\n2 files checked in 0.3s\n"),
        None
    );
}

#[test]
fn absurd_counts_saturate_instead_of_overflowing() {
    let line = "test result: ok. 99999999999999999999999 passed; 0 failed; 0 ignored; 0 measured; \
                0 filtered out; finished in 0.00s\n";
    let (_, tests) = parse_output(&line.repeat(2)).expect("recognised");
    assert_eq!(tests.passed, u64::MAX);
}

#[test]
fn a_total_of_absurd_counts_saturates_too() {
    // Found by the test_output fuzz target: nextest's summary with a failure count this large
    // overflowed the sum of the three counts.
    let summary = "     Summary [   4.021s] 4 tests run: 2 passed (1 flaky), \
                   99999999999999999999999991 failed, 1 timed out, 0 skipped\n";
    let (parser, tests) = parse_output(summary).expect("recognised");
    assert_eq!(parser, "cargo-nextest");
    assert_eq!((tests.passed, tests.failed), (2, u64::MAX));
    assert_eq!(tests.total(), u64::MAX);
}

// ---- JUnit XML ----

/// A scratch repository and the moment the validation command started.
struct Repo {
    dir: tempfile::TempDir,
    started: SystemTime,
}

impl Repo {
    fn new() -> Self {
        Repo {
            dir: tempfile::tempdir().expect("temp dir"),
            started: SystemTime::now() - Duration::from_secs(1),
        }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn write(&self, relative: &str, contents: &str) -> PathBuf {
        let path = self.root().join(relative);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(&path, contents).expect("write");
        path
    }

    fn write_stale(&self, relative: &str, contents: &str) {
        let path = self.write(relative, contents);
        let file = fs::File::options().write(true).open(path).expect("open");
        file.set_modified(self.started - Duration::from_secs(3600))
            .expect("set mtime");
    }

    /// The counts of the JUnit reports written, passing names aside (see
    /// `tests/test_report_passes.rs`).
    fn junit(&self) -> Option<TestCounts> {
        parse_junit_written_since(self.root(), self.started).map(without_passes)
    }
}

const JUNIT_MIXED_FAILURES: &[&str] = &[
    "test_demo.test_adds_wrongly",
    "test_demo.test_parametrized[2-3-6]",
    "test_demo.test_uses_broken_fixture",
    "test_demo.TestInClass.test_method_fails",
];

#[test]
fn a_junit_report_written_by_the_command_is_counted() {
    let repo = Repo::new();
    repo.write("reports/junit.xml", &captured("junit_pytest_mixed.xml"));
    // tests=11 errors=1 failures=3 skipped=2: the same totals pytest printed.
    assert_eq!(repo.junit(), Some(counts(5, 4, 2, JUNIT_MIXED_FAILURES)));
}

#[test]
fn a_report_left_over_from_an_earlier_run_is_ignored() {
    let repo = Repo::new();
    repo.write_stale("reports/junit.xml", &captured("junit_pytest_mixed.xml"));
    assert_eq!(repo.junit(), None);
}

#[test]
fn a_suite_without_count_attributes_is_counted_from_its_testcases() {
    let repo = Repo::new();
    let stripped = regex::Regex::new(r#" (errors|failures|skipped|tests)="\d+""#)
        .expect("pattern")
        .replace_all(&captured("junit_pytest_mixed.xml"), "")
        .into_owned();
    assert!(
        !stripped.contains("tests=\""),
        "the attributes were removed"
    );
    repo.write("junit.xml", &stripped);
    assert_eq!(repo.junit(), Some(counts(5, 4, 2, JUNIT_MIXED_FAILURES)));
}

#[test]
fn reports_from_several_files_are_summed_and_an_empty_classname_leaves_the_bare_name() {
    let repo = Repo::new();
    repo.write("a/junit.xml", &captured("junit_pytest_xunit1.xml"));
    repo.write(
        "b/junit.xml",
        &captured("junit_pytest_collection_error.xml"),
    );
    assert_eq!(repo.junit(), Some(counts(1, 1, 0, &["test_broken"])));
}

#[test]
fn nested_suites_are_counted_once() {
    let repo = Repo::new();
    repo.write(
        "build/test-results/test/TEST-calc.xml",
        r#"<?xml version="1.0"?>
<testsuites tests="3" failures="1">
  <testsuite name="calc" tests="3" failures="1">
    <testcase classname="calc" name="top_level"/>
    <testsuite name="calc.rounding" tests="2" failures="1" skipped="0">
      <testcase classname="calc.rounding" name="halves"/>
      <testcase classname="calc.rounding" name="negative"><failure message="off by one"/></testcase>
    </testsuite>
  </testsuite>
</testsuites>"#,
    );
    assert_eq!(
        repo.junit(),
        Some(counts(2, 1, 0, &["calc.rounding.negative"]))
    );
}

#[test]
fn a_truncated_report_is_skipped_and_the_others_still_count() {
    let repo = Repo::new();
    let whole = captured("junit_pytest_mixed.xml");
    repo.write("a/junit.xml", &whole[..whole.len() / 2]);
    repo.write("b/junit.xml", &captured("junit_pytest_xunit1.xml"));
    assert_eq!(repo.junit(), Some(counts(1, 0, 0, &[])));
}

#[test]
fn xml_files_that_are_not_junit_are_not_reports() {
    let repo = Repo::new();
    repo.write(
        "pom.xml",
        "<project><modelVersion>4.0.0</modelVersion></project>",
    );
    repo.write("broken.xml", "<testsuite tests=\"1\"><testcase name=\"x\">");
    repo.write("notes.xml", "this is not XML at all <<<");
    assert_eq!(repo.junit(), None);
}

#[test]
fn git_dependency_and_build_folders_are_not_searched_except_targets_report_folders() {
    let repo = Repo::new();
    let report = captured("junit_pytest_xunit1.xml");
    repo.write(".git/junit.xml", &report);
    repo.write("node_modules/pkg/junit.xml", &report);
    repo.write("target/debug/junit.xml", &report);
    assert_eq!(repo.junit(), None);

    repo.write("target/surefire-reports/TEST-calc.xml", &report);
    repo.write("target/nextest/ci/junit.xml", &report);
    assert_eq!(repo.junit(), Some(counts(2, 0, 0, &[])));
}

#[test]
fn reports_deeper_than_the_walk_goes_are_not_found() {
    let repo = Repo::new();
    let report = captured("junit_pytest_xunit1.xml");
    let deepest_allowed = "d/".repeat(MAX_JUNIT_DEPTH - 1) + "junit.xml";
    repo.write(&deepest_allowed, &report);
    assert_eq!(repo.junit(), Some(counts(1, 0, 0, &[])));

    let too_deep = "e/".repeat(MAX_JUNIT_DEPTH) + "junit.xml";
    repo.write(&too_deep, &report);
    assert_eq!(
        repo.junit(),
        Some(counts(1, 0, 0, &[])),
        "the deeper one is not added"
    );
}

#[test]
fn the_walk_stops_after_its_entry_budget() {
    let repo = Repo::new();
    let fillers = repo.root().join("a");
    fs::create_dir(&fillers).expect("mkdir");
    // The root's `a` and `z`, the fillers and `z/junit.xml` make exactly the budget.
    for i in 0..MAX_JUNIT_ENTRIES - 3 {
        fs::write(fillers.join(format!("{i:05}.txt")), "").expect("filler");
    }
    repo.write("z/junit.xml", &captured("junit_pytest_xunit1.xml"));
    assert_eq!(repo.junit(), Some(counts(1, 0, 0, &[])));

    fs::write(fillers.join("one-more.txt"), "").expect("filler");
    assert_eq!(repo.junit(), None);
}

#[test]
fn symlinks_are_not_followed() {
    let repo = Repo::new();
    let elsewhere = Repo::new();
    elsewhere.write("reports/junit.xml", &captured("junit_pytest_xunit1.xml"));
    std::os::unix::fs::symlink(
        elsewhere.root().join("reports"),
        repo.root().join("reports"),
    )
    .expect("dir symlink");
    std::os::unix::fs::symlink(
        elsewhere.root().join("reports/junit.xml"),
        repo.root().join("junit.xml"),
    )
    .expect("file symlink");
    assert_eq!(repo.junit(), None);
}

// ---- whole command reports ----

fn sh(script: &str, cwd: &Path) -> autofix::exec::CommandOutcome {
    run(&CommandSpec::new("sh", ["-c", script], cwd)).expect("sh runs")
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

#[test]
fn a_failing_test_command_is_reported_with_its_exit_code_and_failing_tests() {
    let repo = Repo::new();
    let fixture = data_dir().join("cargo_test_failing.txt");
    let outcome = sh(
        &format!("cat '{}'; exit 101", fixture.display()),
        repo.root(),
    );
    let report = report_for(
        "test",
        &argv(&["cargo", "test"]),
        &outcome,
        repo.root(),
        repo.started,
        true,
    );
    assert_eq!(
        report,
        CommandReport {
            name: "test".to_string(),
            command: argv(&["cargo", "test"]),
            exit_code: Some(101),
            timed_out: false,
            passed: false,
            duration_ms: report.duration_ms,
            warnings: 0,
            output_truncated: false,
            parser: Some("cargo-test".to_string()),
            tests: Some(TestCounts {
                passes: [
                    "tests::adds_small_numbers",
                    "integration_passes",
                    "second_binary_passes",
                    "src/lib.rs - add (line 5)",
                ]
                .map(String::from)
                .to_vec(),
                ..counts(4, 4, 2, TINY_FAILURES)
            }),
        }
    );
    assert!(
        !TestReport {
            commands: vec![report]
        }
        .passed()
    );
}

#[test]
fn warnings_fail_a_command_that_exited_zero_only_when_the_caller_asks() {
    let repo = Repo::new();
    let fixture = data_dir().join("cargo_test_warnings.txt");
    let outcome = sh(&format!("cat '{}'", fixture.display()), repo.root());
    let command = argv(&["cargo", "test"]);

    let strict = report_for("test", &command, &outcome, repo.root(), repo.started, true);
    assert_eq!(strict.exit_code, Some(0));
    // `warning: unused variable` and cargo's two `generated 1 warning` lines.
    assert_eq!(strict.warnings, 3);
    assert!(!strict.passed);

    let lenient = report_for("test", &command, &outcome, repo.root(), repo.started, false);
    assert_eq!(lenient.warnings, 3);
    assert!(lenient.passed);
    assert_eq!(
        lenient.tests.map(without_passes),
        Some(counts(1, 0, 0, &[]))
    );
}

#[test]
fn a_python_deprecation_warning_counts_as_a_warning_too() {
    let repo = Repo::new();
    let fixture = data_dir().join("pytest_passing.txt");
    let outcome = sh(&format!("cat '{}'", fixture.display()), repo.root());
    let report = report_for(
        "pytest",
        &argv(&["python3", "-m", "pytest"]),
        &outcome,
        repo.root(),
        repo.started,
        true,
    );
    assert_eq!(report.warnings, 1);
    assert!(!report.passed);
}

#[test]
fn a_command_whose_output_says_nothing_is_counted_from_the_junit_report_it_wrote() {
    let repo = Repo::new();
    let fixture = data_dir().join("junit_pytest_mixed.xml");
    let outcome = sh(
        &format!(
            "mkdir -p build/reports && cp '{}' build/reports/junit.xml && echo done; exit 1",
            fixture.display()
        ),
        repo.root(),
    );
    let report = report_for(
        "tests",
        &argv(&["./gradlew", "test"]),
        &outcome,
        repo.root(),
        repo.started,
        false,
    );
    assert_eq!(report.parser.as_deref(), Some("junit"));
    assert_eq!(
        report.tests.map(without_passes),
        Some(counts(5, 4, 2, JUNIT_MIXED_FAILURES))
    );
    assert!(!report.passed);
}

#[test]
fn a_command_with_nothing_to_parse_has_no_parser_and_passes_on_its_exit_code() {
    let repo = Repo::new();
    let outcome = sh("echo formatted 3 files", repo.root());
    let report = report_for(
        "fmt",
        &argv(&["cargo", "fmt", "--check"]),
        &outcome,
        repo.root(),
        repo.started,
        true,
    );
    assert_eq!((report.parser, report.tests), (None, None));
    assert!(report.passed);
}

#[test]
fn a_command_killed_by_its_timeout_does_not_pass() {
    let repo = Repo::new();
    let spec = CommandSpec::new("sh", ["-c", "echo starting; sleep 30"], repo.root())
        .with_timeout(Duration::from_millis(300));
    let outcome = run(&spec).expect("sh runs");
    let report = report_for(
        "slow",
        &argv(&["sh"]),
        &outcome,
        repo.root(),
        repo.started,
        false,
    );
    assert!(report.timed_out);
    assert!(!report.passed);
    assert!(report.duration_ms >= 300);
}

#[test]
fn a_report_reads_back_from_json_as_it_was_written() {
    let report = TestReport {
        commands: vec![CommandReport {
            name: "test".to_string(),
            command: argv(&["cargo", "test"]),
            exit_code: Some(0),
            timed_out: false,
            passed: true,
            duration_ms: 1234,
            warnings: 0,
            output_truncated: false,
            parser: Some("cargo-test".to_string()),
            tests: Some(counts(3, 0, 1, &[])),
        }],
    };
    let json = serde_json::to_string_pretty(&report).expect("serialise");
    assert_eq!(
        serde_json::from_str::<TestReport>(&json).expect("parse"),
        report
    );
}

#[test]
fn a_pytest_run_printed_inside_a_test_s_captured_output_is_not_read_as_results() {
    // A test of pytest itself (via `pytester`) printed the inner run it made: its
    // `test_constant_not_picked_as_module_docstring.py::test_inner_fails` is no result.
    let outer = counts(
        2,
        1,
        0,
        &["test_outer.py::test_nested_run_reports_a_failure"],
    );
    assert_eq!(
        parsed("pytest_nested_run.txt"),
        ("pytest".to_string(), outer.clone())
    );
    assert_eq!(
        parsed("pytest_nested_run_quiet.txt"),
        ("pytest".to_string(), outer)
    );
}
